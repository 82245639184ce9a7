"""Our Python runtime's side of `bench llm`, in a process of its own as the other sides are (each a Node
process), so that no side runs after another in the same process: a saved CausalLM folder loaded (tuned at
load, as by default) and its generate.json's prompt generated for `--warm-up` seconds, then `--runs` timed
generations. Prints one JSON line, as js/bench/llm.js does for llama.cpp: seconds to the first token and per
token after it (medians over the runs), the step's GPU seconds (timestamp queries), the last run's ids, and
bytes: the process's peak resident set (`peakRss`: Linux's VmHWM, which starts afresh at exec where
getrusage's ru_maxrss carries the parent's peak over; torch is not imported) and the most bytes of WebGPU
buffers alive at once (`gpuPeak`: created and neither destroyed nor collected, since Python releases a
dropped buffer at once; js/bench/sides.js counts one until it is destroyed, JavaScript's collector being late).

    python -m webgpu_torch.tools.bench._ours FOLDER [--runs 3] [--warm-up 2]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
import weakref
from pathlib import Path

from ...runtime import timing
from ...runtime.engine import get_engine
from ...runtime.generation import CausalLM


def track_buffers(device) -> dict:
    """Counts the buffers `device`'s class creates from now on: {"live": bytes, "peak": bytes}; a buffer is
    live until it is destroyed or collected."""
    counts = {"live": 0, "peak": 0}
    sizes = {}  # id(buffer) -> bytes, of the live buffers
    create_buffer = type(device).create_buffer

    def gone(key):
        counts["live"] -= sizes.pop(key, 0)

    def destroying(destroy):
        def wrapped(buffer, *args, **kwargs):
            gone(id(buffer))
            return destroy(buffer, *args, **kwargs)
        wrapped.counted = True
        return wrapped

    def counted(self, *args, **kwargs):
        buffer = create_buffer(self, *args, **kwargs)
        if not getattr(type(buffer).destroy, "counted", False):
            type(buffer).destroy = destroying(type(buffer).destroy)
        weakref.finalize(buffer, gone, id(buffer))
        sizes[id(buffer)] = buffer.size
        counts["live"] += buffer.size
        counts["peak"] = max(counts["peak"], counts["live"])
        return buffer

    type(device).create_buffer = counted
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warm-up", type=float, default=2.0)
    args = parser.parse_args(argv)
    engine = get_engine()
    counts = track_buffers(engine.device)
    record = json.loads((Path(args.folder) / "generate.json").read_text())
    lm = CausalLM.load(args.folder)

    def generate():
        return lm.generate(record["prompt_ids"], record["max_new_tokens"])

    # A CPU adapter compiles shaders at their first dispatch; an idle GPU and CPU take a moment to reach their
    # clocks (on the H100 one warm-up generation was not enough).
    warm = time.perf_counter() + args.warm_up
    generate()
    while time.perf_counter() < warm:
        generate()
    runs = [generate() for _ in range(args.runs)]
    gpu = timing.gpu_time(lm.step.executor(), repeats=2, samples=3).seconds  # the one that generated
    peak_rss = 1024 * int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text())[1])  # kB there
    print(json.dumps({"firstToken": statistics.median(r.first_token for r in runs),
                      "perToken": statistics.median(statistics.median(r.steps[1:]) for r in runs),
                      "stepGpu": gpu, "ids": runs[-1].ids, "peakRss": peak_rss, "gpuPeak": counts["peak"]}))


if __name__ == "__main__":
    main()
