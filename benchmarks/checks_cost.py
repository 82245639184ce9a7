"""What the device-side index checks cost a call: each artifact run as saved and with its checks list emptied
(the kernels still compare each index and would set a status word; only the status words' copy into the
staging buffer and their test after the map go), calls interleaved, median wall time of each.

    python benchmarks/checks_cost.py CALLS NAME.wgpt ...     (inputs: the first call of NAME.json beside it)
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "js" / "bench"))

from python_calls import first_call

import webgpu_torch
from webgpu_torch.runtime.session import Session


def main(calls: int, paths: list[str]) -> None:
    print(webgpu_torch.device_info()["adapter"])
    for path in paths:
        checked = webgpu_torch.load(path)
        unchecked = Session(replace(checked.program, checks=()))
        args, kwargs = first_call(Path(path).with_suffix(".json"))
        times: dict[str, list[float]] = {"checked": [], "unchecked": []}
        for _ in range(calls + 2):  # the first two calls of each are warm-up
            for name, session in (("checked", checked), ("unchecked", unchecked)):
                start = time.perf_counter()
                session.run(args, kwargs)
                times[name].append(time.perf_counter() - start)
        a, b = (statistics.median(times[k][2:]) * 1e3 for k in ("checked", "unchecked"))
        print(f"{path}: {len(checked.program.checks)} checks; checked {a:.3f} ms, unchecked {b:.3f} ms per call "
              f"(median of {calls}); checked / unchecked {a / b:.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
