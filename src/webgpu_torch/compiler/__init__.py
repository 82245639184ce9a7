"""`compile`: options -> torch.export program -> frontend -> passes -> lowering -> memory planning -> Program.

torch is imported on the first call, so `import webgpu_torch` stays torch-free for processes that only load
and run saved programs.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import Any

from ..runtime.session import Session
from . import lowering
from .options import Options, parse


def compile(ep, **options: Any) -> Session:
    """Compile a `torch.export.ExportedProgram` for WebGPU.

    options (compiler/options.py, where each is described): max_binding_size (bytes, default 128 MiB: the most
    any dispatch binds in one buffer), contiguous_outputs, weights="float32" | "float16" | "int8" | "int4" with
    group_size (int4), precision="float32" | "float16", and the op families' kernel choices (gemm=, conv=,
    attention=, scatter=, norm_chunks=: ops.OPTIONS), each checked before the frontend runs.
    Raises UnsupportedError naming every node that cannot run, its op, shapes and the reason, before anything
    touches a GPU. Returns a Session: calling it runs the program on the default WebGPU engine (opened on the
    first call); `.program` is the compiled Program (plain data), `.save(path)` writes the artifact.
    """
    return _compile(ep, parse(**options))


def import_graph(ep, options: Options | None = None):
    """The graph lowering sees: `ep` through the frontend, then the passes (passes.PIPELINE)."""
    from . import frontend, passes

    with _quiet_torch():
        graph = frontend.import_program(ep)
    return passes.run(graph, options or Options())


def compile_module(model, args: tuple, kwargs: dict | None = None, dynamic_shapes=None, **options: Any) -> Session:
    """Export `model(*args, **kwargs)` with torch.export and compile it (options as for `compile`)."""
    import torch

    parsed = parse(**options)
    with _quiet_torch():
        ep = torch.export.export(model, tuple(args), kwargs or {}, dynamic_shapes=dynamic_shapes)
    return _compile(ep, parsed)


def _compile(ep, options: Options) -> Session:
    return Session(lowering.lower(import_graph(ep, options), options))


@contextmanager
def _quiet_torch():
    """Hide a deprecation warning torch's own export code raises about its pytree internals (not actionable)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        yield
