"""What the costliest sources the format accepts take to load and run once: each shape of tests/wgsl_cost.py's
WORST grown to the largest size compile_cost.py accepts, in golden `tiny`, loaded and called once in a fresh
process per runtime (Dawn and wgpu-native from Python, Node) under an address-space limit; its peak resident
memory and wall and CPU seconds, as the table in docs/artifact.md ("Compile cost").

    python benchmarks/compile_cost.py [--limit-gib 3] [--runtimes dawn,wgpu,node] [SHAPE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT))

from tests import wgsl_cost  # noqa: E402

TIMEOUT = 600  # seconds
COMMANDS = {"dawn": [sys.executable, "-m", "tests.fuzz"], "wgpu": [sys.executable, "-m", "tests.fuzz"],
            "node": ["node", "js/testkit/fuzz_worker.js"]}


def measure(runtime: str, path: Path, limit: int) -> dict:
    """Load and call `path` once in a fresh process under an address-space `limit`: its outcome, peak RSS
    (MiB), wall and CPU seconds (killed after TIMEOUT)."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = {**os.environ, "WEBGPU_TORCH_ENGINE": runtime, "WEBGPU_TORCH_TUNE": "0", "PYTHONPATH": str(ROOT / "src")}
    args = [*COMMANDS[runtime], *([] if runtime == "node" else [str(path)])]
    start = time.perf_counter()
    child = subprocess.Popen(args, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, preexec_fn=cap)
    child.stdin.write(f"{path}\n" if runtime == "node" else "")
    child.stdin.close()
    timer = threading.Timer(TIMEOUT, child.kill)
    timer.start()
    _, status, usage = os.wait4(child.pid, 0)  # the child's own resource usage
    timer.cancel()
    wall = time.perf_counter() - start
    lines = [line for line in child.stdout.read().splitlines() if line.startswith("{")]
    outcome = json.loads(lines[-1])["outcome"] if lines else f"crashed ({os.waitstatus_to_exitcode(status)})"
    return {"outcome": outcome, "rss": usage.ru_maxrss / 1024, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit-gib", type=float, default=3.0)
    parser.add_argument("--runtimes", default="dawn,wgpu,node")
    parser.add_argument("shapes", nargs="*", default=list(wgsl_cost.WORST))
    a = parser.parse_args()
    limit = int(a.limit_gib * 2**30)
    worst = wgsl_cost.worst()
    runtimes = a.runtimes.split(",")
    print(f"| shape | {' | '.join(runtimes)} |\n|---|{'---|' * len(runtimes)}")
    with tempfile.TemporaryDirectory() as folder:
        for shape in ["(tiny as compiled)", *a.shapes]:
            what, data = ((shape, wgsl_cost.TINY.read_bytes()) if shape.startswith("(") else
                          (worst[shape][0], wgsl_cost.hostile(*worst[shape][1])))
            path = Path(folder) / "worst.wgpt"
            path.write_bytes(data)
            cells = []
            for runtime in runtimes:
                r = measure(runtime, path, limit)
                cells.append(f"{r['outcome']}: {r['rss']:.0f} MiB, {r['wall']:.1f} s ({r['cpu']:.1f} s CPU)")
            print(f"| {shape}: {what.split(': ')[-1]} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
