"""`compile`: torch.export program -> frontend -> lowering -> memory planning -> Program.

torch is imported on the first call, so `import webgpu_torch` stays torch-free for processes that only load
and run saved programs.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import Any

from ..runtime.session import Session
from . import lowering
from .builder import DEFAULT_MAX_BINDING, CompileOptions
from .ops import OPTIONS


def compile(ep, *, max_binding_size: int = DEFAULT_MAX_BINDING, contiguous_outputs: bool = False,
            **extra: Any) -> Session:
    """Compile a `torch.export.ExportedProgram` for WebGPU.

    max_binding_size: the most bytes any dispatch binds in one buffer; WebGPU guarantees 128 MiB on every
          adapter, so that default runs anywhere. Larger weights read by linear or embedding are split into
          row chunks under it; any other tensor over it is refused at compile time.
    contiguous_outputs: give outputs that are strided views (a transpose, say) a copy of their own, so that
          kept on the device (Session.on_device) they can be passed to other programs as inputs.
    extra: the op families' own options (ops.OPTIONS), e.g. gemm="auto" | "gemv" | a name in ops.gemm.CONFIGS
          ("pr" for the ExecuTorch PR's kernel): one GEMM kernel configuration forced everywhere, "auto"
          routing by shape and layout; conv="auto" | "im2col" | "direct", and
          weights="float32" | "float16" | "int8" | "int4": float16 stores every constant a GEMM reads as its
          B operand (Linear and conv weights) in half precision, with float32 products; adapters without
          `shader-f16` run the same numbers from float32 copies made at load; int8 and int4 quantize those
          weights the kernels can decode packed, and embedding tables, round to nearest (symmetric): int8 per
          output channel, int4 in groups of group_size (32, 16, 64, 128 or 256) along K; each weight is then
          within max|w over its group| / (2^bits − 2) of the float one (docs/design.md, "Quantized weights"),
          and the weights stay packed on the device, decoded in registers; precision="float32" | "float16":
          float16 stores the activations that pass between the kernels taking them (elementwise, norms,
          softmax, GEMMs, attention) as float16 where the device has `shader-f16` (float32 arithmetic; the
          float32 kernels of the same file run elsewhere: docs/design.md, "float16 activations"), and lets
          GEMMs and channels-last convs multiply float16 operands (float32 sums) on the GPU's matrix units,
          where the device has them and tuning finds them faster (docs/design.md, "GEMM on matrix units").
    Raises UnsupportedError naming every node that cannot run, its op, shapes and the reason, before anything
    touches a GPU. Returns a Session: calling it runs the program on the default WebGPU engine (opened on the
    first call); `.program` is the compiled Program (plain data), `.save(path)` writes the artifact.
    """
    _check_options(extra)
    graph = import_graph(ep)
    if max_binding_size < 2**16:
        raise ValueError(f"max_binding_size={max_binding_size}: must be at least 64 KiB")
    program = lowering.lower(graph, CompileOptions(max_binding=max_binding_size,
                                                   contiguous_outputs=contiguous_outputs, extra=extra))
    return Session(program)


def import_graph(ep):
    """The graph lowering sees: `ep` through the frontend, then the graph rewrites."""
    from . import frontend
    from .passes import (
        attention_fusion,
        cache_attention,
        conv_folding,
        fusion,
        linear_merging,
        norm_fusion,
        quantized_weights,
        rope_fusion,
    )

    with _quiet_torch():
        graph = frontend.import_program(ep)
    graph = conv_folding.fold(quantized_weights.rewrite(graph))
    graph = cache_attention.rewrite(attention_fusion.fuse_attention(graph))
    graph = rope_fusion.fuse_rotary(norm_fusion.fuse_rms_norms(graph))
    return fusion.fuse_epilogues(linear_merging.merge_linears(graph))


def _check_options(extra: dict[str, Any]) -> None:
    for name, value in extra.items():
        if name not in OPTIONS:
            raise TypeError(f"compile() got an unknown option {name!r}; options: {', '.join(sorted(OPTIONS))}")
        if value not in OPTIONS[name]:
            raise ValueError(f"{name}={value!r}: choose one of {', '.join(map(repr, OPTIONS[name]))}")


def compile_module(model, args: tuple, kwargs: dict | None = None, dynamic_shapes=None, **options: Any) -> Session:
    """Export `model(*args, **kwargs)` with torch.export and compile it (options as for `compile`)."""
    import torch

    with _quiet_torch():
        ep = torch.export.export(model, tuple(args), kwargs or {}, dynamic_shapes=dynamic_shapes)
    return compile(ep, **options)


@contextmanager
def _quiet_torch():
    """Hide a deprecation warning torch's own export code raises about its pytree internals (not actionable)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        yield
