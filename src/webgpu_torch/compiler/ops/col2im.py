"""col2im (`F.fold`, and `nn.Fold`): sliding-block columns summed back into an image, each output pixel
pulling the column entries that cover it (col2im.wgsl). Its inverse, im2col (`F.unfold`), exports as a gather
(index.Tensor over padded input) and needs no kernel of its own."""

from __future__ import annotations

from ...format import dtypes
from ...format.program import Tensor
from .. import layout
from ..builder import Builder, KernelSpec
from .registry import NodeView, OpCase, register

FILE = "col2im.wgsl"


def _check(node: NodeView) -> str | None:
    x = node.args["self"]
    if not dtypes.is_float(x.dtype) and x.dtype != "bool":
        return f"col2im of {x.dtype} is not supported (floating point or bool, as torch)"
    return None


def _pair(v) -> tuple[int, int]:
    return (v[0], v[-1])


@register("aten.col2im.default", check=_check)
def col2im(ctx: Builder, node: NodeView) -> Tensor:
    a = node.args
    x = a["self"] if a["self"].ndim == 3 else layout.unsqueeze(a["self"], 0)
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (_pair(a[k]) for k in ("kernel_size", "dilation", "padding", "stride"))
    h, w = node.out.shape[-2:]
    blocks = [(n + 2 * pad - dil * (k - 1) - 1) // s + 1 for n, pad, dil, k, s in
              ((h, ph, dh, kh, sh), (w, pw, dw, kw, sw))]
    shape = (x.shape[0], x.shape[1] // (kh * kw), h, w)
    out = ctx.new(shape, x.dtype)
    x = ctx.walkable(x, kh * kw)  # the kernel bounds its taps by the columns' length (ops/bounded.wgsl)
    params = {"numel": out.numel, "C": shape[1], "H": h, "W": w, "KH": kh, "KW": kw, "LH": blocks[0],
              "LW": blocks[1], "stride": (sh, sw), "pad": (ph, pw), "dil": (dh, dw), "cols_offset": x.offset,
              "cols_strides": x.strides}
    spec = KernelSpec.of(FILE, f"col2im[{x.dtype}]", consts={"T": dtypes.dtype(x.dtype).wgsl},
                         overrides={"SATURATE": x.dtype == "bool"})
    ctx.dispatch(spec, [x, out], params, elements=out.numel)
    return layout.view(out, node.out.shape)


def cases() -> list[OpCase]:
    import torch

    F = torch.nn.functional

    def mask(*shape):
        return lambda: torch.rand(shape, generator=torch.Generator().manual_seed(12)) > 0.7

    return [
        OpCase("fold_overlapping_blocks", lambda c: F.fold(c, (17, 19), (3, 2), stride=(2, 1)), [(2, 5 * 6, 8 * 18)]),
        OpCase("fold_dilated_padded_strided", lambda c: F.fold(c, (13, 11), (2, 3), dilation=(2, 1), padding=(1, 2),
                                                               stride=(3, 2)), [(3, 7 * 6, 5 * 7)]),
        OpCase("fold_unbatched_transposed_and_bool", lambda c, m: (F.fold(c.t(), (7, 9), 2), F.fold(m, (5, 6), 2)),
               [(48, 4 * 3 * 4), mask(3 * 4, 4 * 5)]),
        OpCase("fold_of_unfold", lambda x: F.fold(F.unfold(x, 3, padding=1, stride=2), (13, 11), 3, padding=1,
                                                  stride=2), [(2, 3, 13, 11)]),
    ]
