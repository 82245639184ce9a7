"""grid_sampler_2d (`F.grid_sample` on 4-d inputs, and the sampling step of spatial transformers and
deformable attention): bilinear, nearest and bicubic interpolation, zeros, border and reflection padding,
align_corners either way; one thread per output element follows torch's CPU kernel in float32."""

from __future__ import annotations

from ...format import dtypes
from ...format.program import Tensor
from ..builder import Builder, KernelSpec
from .registry import NodeView, OpCase, register

FILE = "grid_sample.wgsl"


def _check(node: NodeView) -> str | None:
    x, grid = node.args["input"], node.args["grid"]
    if not dtypes.is_float(x.dtype) or not dtypes.is_float(grid.dtype):
        return f"grid_sampler_2d of {x.dtype} input and {grid.dtype} grid (floating point only)"
    if node.args["interpolation_mode"] not in (0, 1, 2) or node.args["padding_mode"] not in (0, 1, 2):
        return f"interpolation mode {node.args['interpolation_mode']}, padding mode {node.args['padding_mode']}"
    return None


@register("aten.grid_sampler_2d.default", check=_check)
def grid_sampler_2d(ctx: Builder, node: NodeView) -> Tensor:
    a = node.args
    x, grid = a["input"], a["grid"]
    out = ctx.new(node.out.shape)
    _, c, oh, ow = out.shape
    params = {"numel": out.numel, "C": c, "H": x.shape[2], "W": x.shape[3], "OH": oh, "OW": ow,
              "x_offset": x.offset, "grid_offset": grid.offset, "x_strides": x.strides, "grid_strides": grid.strides}
    mode = ("bilinear", "nearest", "bicubic")[a["interpolation_mode"]]
    padding = ("zeros", "border", "reflection")[a["padding_mode"]]
    spec = KernelSpec.of(FILE, f"grid_sample[{mode},{padding}{',align_corners' * a['align_corners']}]",
                         overrides={"MODE": a["interpolation_mode"], "PADDING": a["padding_mode"],
                                    "ALIGN_CORNERS": a["align_corners"]})
    ctx.dispatch(spec, [x, grid, out], params, elements=out.numel)
    return out


def cases() -> list[OpCase]:
    import torch

    F = torch.nn.functional

    def grid(*shape, spread=1.2):  # points inside and a little outside [-1, 1], as transformers produce
        return lambda: (torch.rand(shape, generator=torch.Generator().manual_seed(11)) * 2 - 1) * spread

    def sample(mode, align_corners):
        return lambda x, g: tuple(F.grid_sample(x, g, mode=mode, padding_mode=pad, align_corners=align_corners)
                                  for pad in ("zeros", "border", "reflection"))

    return [
        OpCase(f"grid_sample_{mode}{'_align_corners' * ac}", sample(mode, ac), [(2, 3, 13, 11), grid(2, 7, 17, 2)])
        for mode in ("bilinear", "nearest", "bicubic") for ac in (False, True)
    ] + [
        OpCase("grid_sample_far_outside_transposed_input", lambda x, g: tuple(
            F.grid_sample(x.transpose(2, 3), g, padding_mode=pad, align_corners=False)
            for pad in ("zeros", "border", "reflection")), [(1, 5, 13, 11), grid(1, 37, 5, 2, spread=3.5)]),
        OpCase("grid_sample_affine_grid", lambda x, t: F.grid_sample(x, F.affine_grid(t, [2, 3, 19, 23],
                                                                                     align_corners=False),
                                                                     align_corners=False),
               [(2, 3, 13, 11), lambda: torch.tensor([[[0.9, 0.2, 0.1], [-0.3, 1.1, 0.0]],
                                                      [[1.2, 0.0, -0.2], [0.1, 0.8, 0.3]]])]),
    ]
