"""Our Python runtime's peak memory over a saved CausalLM folder, in a process of its own as `bench llm`'s other
sides are (each a Node process, js/bench/memory.js): the folder loaded and its generate.json's prompt generated
once, then one JSON line of bytes: the process's peak resident set (`peakRss`: Linux's VmHWM, which starts
afresh at exec where getrusage's ru_maxrss carries the parent's peak over; torch is not imported) and the most
bytes of WebGPU buffers alive at once (`gpuPeak`: created and not yet destroyed, as memory.js counts them).

    python -m webgpu_torch.tools.bench._memory FOLDER
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from ...runtime.engine import get_engine
from ...runtime.generation import CausalLM


def track_buffers(device) -> dict:
    """Counts the buffers `device`'s class creates from now on: {"live": bytes, "peak": bytes}."""
    counts = {"live": 0, "peak": 0}
    sizes = {}  # id(buffer) -> bytes, of the live buffers
    create_buffer = type(device).create_buffer

    def destroying(destroy):
        def wrapped(buffer, *args, **kwargs):
            counts["live"] -= sizes.pop(id(buffer), 0)
            return destroy(buffer, *args, **kwargs)
        wrapped.counted = True
        return wrapped

    def counted(self, *args, **kwargs):
        buffer = create_buffer(self, *args, **kwargs)
        if not getattr(type(buffer).destroy, "counted", False):
            type(buffer).destroy = destroying(type(buffer).destroy)
        sizes[id(buffer)] = buffer.size
        counts["live"] += buffer.size
        counts["peak"] = max(counts["peak"], counts["live"])
        return buffer

    type(device).create_buffer = counted
    return counts


def main(folder: str) -> None:
    counts = track_buffers(get_engine().device)
    record = json.loads((Path(folder) / "generate.json").read_text())
    CausalLM.load(folder).generate(record["prompt_ids"], record["max_new_tokens"])
    peak_rss = 1024 * int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text())[1])  # kB there
    print(json.dumps({"peakRss": peak_rss, "gpuPeak": counts["peak"]}))


if __name__ == "__main__":
    main(*sys.argv[1:])
