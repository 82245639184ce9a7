"""Host cost per dispatch: encode and submit one call of a program of N small dispatches.

The program is a chain of N dependent elementwise ops on a small tensor, so the GPU work is negligible and
the figure is what the runtime itself costs per dispatch: set pipeline (when it changes), set bind group,
dispatch, inside one compute pass of one command encoder, and one submit.
"""

from __future__ import annotations

import torch

import webgpu_torch

from ...runtime import timing

COLUMNS = ["dispatches", "pipelines", "encode+submit µs per dispatch", "call ms (host in/out)"]


class _Chain(torch.nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.n = n

    def forward(self, x):
        for i in range(self.n):
            x = x * 1.0001 + 0.5 if i % 2 else torch.sigmoid(x)
        return x


def add_arguments(parser) -> None:
    parser.add_argument("--dispatches", type=int, nargs="*", default=[100, 1000])


def run(args) -> tuple[list[dict], dict]:
    rows = []
    info = webgpu_torch.device_info(args.engine)
    for n in args.dispatches:
        x = torch.randn(64, 64)
        # About one dispatch per step after fusion (sigmoid folds into the add before it); the table reports
        # the count the program really has.
        program = webgpu_torch.compile_module(_Chain(n), (x,))
        ex = program.executor(args.engine)
        program(x)
        per_dispatch = timing.encode_cost(ex)
        call = timing.wall_time(lambda p=program, x=x: p(x), args.repeat)
        rows.append({"dispatches": len(program.program.dispatches), "pipelines": len(program.program.kernels),
                     "encode+submit µs per dispatch": per_dispatch * 1e6, "call ms (host in/out)": call * 1e3})
    return rows, {"title": "Host cost", "baseline": "none (absolute figures)",
                  "device": f"{info['adapter']} via {info['engine_module']} ({info['backend']})"}
