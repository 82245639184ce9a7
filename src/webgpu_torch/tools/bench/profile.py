"""Where a program's GPU time goes: each dispatch timed with timestamp queries, summed per ATen node and per
kernel, the largest first, with the rate each reads its constants (weights) at and, given a peak bandwidth
(`--peak`, or a device-to-device copy timed by torch where CUDA is present), that rate's fraction of it: what a
memory-bound kernel (a decode step's GEMV) is judged by. Runs a saved program (`--file`), a demo model or a
`bench models` model (`--model`).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

import webgpu_torch

from ...format import symbolic
from ...runtime import timing
from . import baseline_seconds

COLUMNS = ["rank", "node", "kernel", "dispatches", "µs", "share", "weights MB", "GB/s", "of peak"]


def add_arguments(parser) -> None:
    parser.add_argument("--file", help="a saved program (.wgpt)")
    parser.add_argument("--model", default="mlp", help="a demo or `bench models` model, when no --file is given")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--by", choices=["node", "kernel"], default="node",
                        help="sum per ATen node (and its kernel), or per kernel over all its nodes")
    parser.add_argument("--dispatch-repeats", type=int, default=16,
                        help="times each dispatch runs in its timed pass (resolves short ones)")
    parser.add_argument("--peak", type=float, help="the device's memory bandwidth in GB/s (default: a copy timed by "
                                                   "torch where CUDA is present)")


def copy_bandwidth() -> float | None:
    """Bytes per second a device-to-device copy of 1 GiB moves (read + written), by torch, or None without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return None
    src = torch.empty(2**28, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    return 2 * src.nbytes / baseline_seconds(lambda: dst.copy_(src), repeats=10, cuda=True)


def _session(args):
    if args.file:
        session = webgpu_torch.load(args.file)
        rng = np.random.default_rng(0)
        specs = session.program.inputs
        shapes = [tuple(symbolic.hint(s) for s in i.shape) for i in specs]  # dynamic: the hints
        inputs = [rng.standard_normal(s).astype(i.dtype) if i.dtype.startswith("float") else np.zeros(s, i.dtype)
                  for i, s in zip(specs, shapes, strict=True)]
        return session, inputs
    from .. import demo
    from . import models

    if args.model in models.MODELS:
        model, example = models.MODELS[args.model]()
    else:
        model, example = demo.MODELS[args.model].build()
    return webgpu_torch.compile_module(model.eval(), example), list(example)


def run(args) -> tuple[list[dict], dict]:
    session, inputs = _session(args)
    from ...format.tree import unflatten

    call_args, call_kwargs = unflatten(session.program.input_tree, inputs)
    ex = session.executor(args.engine)
    session(*call_args, **call_kwargs)
    times = timing.dispatch_times(ex, samples=args.repeat, repeats=args.dispatch_repeats)
    program = ex.program  # as tuned for this device
    per_row: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)  # (seconds, constant bytes)
    nodes: dict[str, set[str]] = defaultdict(set)  # kernel -> the nodes it ran for
    for d, t in zip(program.dispatches, times, strict=True):
        kernel = program.kernels[d.kernel].name
        nodes[kernel].add(d.node)
        read = sum(program.buffers[b].size for b in set(d.buffers) if program.buffers[b].role == "constant")
        per_row[(d.node if args.by == "node" else kernel, kernel)].append((t, read))
    if args.by == "kernel":
        per_row = {(f"{len(nodes[k])} nodes", k): ts for (_, k), ts in per_row.items()}
    total = sum(times)
    peak = args.peak * 1e9 if args.peak else copy_bandwidth()
    ranked = sorted(per_row.items(), key=lambda kv: -sum(t for t, _ in kv[1]))[: args.top]
    rows = []
    for i, ((node, kernel), runs) in enumerate(ranked):
        seconds, read = sum(t for t, _ in runs), sum(b for _, b in runs)
        rate = read / seconds if seconds and read else None
        rows.append({"rank": i + 1, "node": node, "kernel": kernel, "dispatches": len(runs), "µs": seconds * 1e6,
                     "share": f"{seconds / total:.1%}", "weights MB": read / 1e6 if read else "-",
                     "GB/s": rate / 1e9 if rate else "-",
                     "of peak": f"{rate / peak:.0%}" if rate and peak else "-"})
    info = webgpu_torch.device_info(args.engine)
    return rows, {"title": f"GPU time per {args.by} ({len(ex.program.dispatches)} dispatches, {total * 1e3:.3f} ms "
                           f"summed; each dispatch {args.dispatch_repeats}× in its own pass"
                           + (f"; peak {peak / 1e9:.0f} GB/s" if peak else "") + ")",
                  "baseline": "none", "device": f"{info['adapter']} via {info['engine_module']}"}
