"""Where a program's GPU time goes: each dispatch timed with timestamp queries, summed per ATen node and per
kernel, the largest first. Runs a saved program (`--file`), a demo model or a `bench models` model (`--model`).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

import webgpu_torch

from ...format import symbolic
from ...runtime import timing

COLUMNS = ["rank", "node", "kernel", "dispatches", "µs", "share"]


def add_arguments(parser) -> None:
    parser.add_argument("--file", help="a saved program (.wgpt)")
    parser.add_argument("--model", default="mlp", help="a demo or `bench models` model, when no --file is given")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--by", choices=["node", "kernel"], default="node",
                        help="sum per ATen node (and its kernel), or per kernel over all its nodes")
    parser.add_argument("--dispatch-repeats", type=int, default=16,
                        help="times each dispatch runs in its timed pass (resolves short ones)")


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
    per_node: dict[tuple[str, str], list[float]] = defaultdict(list)
    nodes: dict[str, set[str]] = defaultdict(set)  # kernel -> the nodes it ran for
    for d, t in zip(ex.program.dispatches, times, strict=True):  # as tuned for this device
        kernel = ex.program.kernels[d.kernel].name
        nodes[kernel].add(d.node)
        per_node[(d.node if args.by == "node" else kernel, kernel)].append(t)
    if args.by == "kernel":
        per_node = {(f"{len(nodes[k])} nodes", k): ts for (_, k), ts in per_node.items()}
    total = sum(times)
    ranked = sorted(per_node.items(), key=lambda kv: -sum(kv[1]))[: args.top]
    rows = [{"rank": i + 1, "node": node, "kernel": kernel, "dispatches": len(ts), "µs": sum(ts) * 1e6,
             "share": f"{sum(ts) / total:.1%}"} for i, ((node, kernel), ts) in enumerate(ranked)]
    info = webgpu_torch.device_info(args.engine)
    return rows, {"title": f"GPU time per {args.by} ({len(ex.program.dispatches)} dispatches, {total * 1e3:.3f} ms "
                           f"summed; each dispatch {args.dispatch_repeats}× in its own pass)",
                  "baseline": "none", "device": f"{info['adapter']} via {info['engine_module']}"}
