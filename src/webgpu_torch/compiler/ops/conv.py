"""Convolution: `aten.convolution.default` with one or two spatial dims, every form models use.

Routing (`plan`, a pure function of the geometry and the options: the routes to try, in order; a route
whose operands' layout does not suit it — a view that does not merge, an unaligned one — passes to the
next, and the last always takes the conv). Channels-last first: a conv with 4k input channels, groups 1 or
depthwise, not transposed, static sizes, runs on kernels that read the channels as vec4s and write a
channels-last output (returned as an NCHW view); an NCHW input is copied to channels-last once, and the
outputs keep the next conv's input so:
  * 1×1 at stride 1: the vec4 GEMM, pixels [B·H·W, IC] by the weight [IC, OC] read in place;
  * other groups == 1: the implicit-im2col vec4 GEMM (`gemm.im2col_gemm`: M = B·OH·OW, N = OC,
    K = KH·KW·IC, the weight permuted to [OC, KH, KW, IC] at compile time), with split-K and tuning;
  * depthwise: depthwise_nhwc.wgsl, four channels per thread, the weight permuted to [KH, KW, C].
Then, over x as it is:
  * groups == 1, a 1×1 kernel at stride 1 with no padding: a plain batched GEMM (`gemm.gemm`) over views,
    out[b] = W[OC, IC] @ x[b][IC, H·W], with no copy; else the channels-last im2col GEMM where x already is
    channels-last, else conv.wgsl `im2col`;
  * other groups == 1, not transposed: conv.wgsl `im2col` (M = OC, N = B·OH·OW, K = IC·KH·KW, loads by
    element, on the GEMM kernel's main loop tiled_matmul.wgsl and its element configurations) for large
    outputs (after the channels-last im2col GEMM where x already is channels-last), else the direct kernel;
  * grouped, depthwise and transposed convs: depthwise_nhwc.wgsl where x already is channels-last and fits,
    else the direct kernel (conv.wgsl `direct`), one thread per output.
The compile option `conv` ("auto", "im2col", "direct") sends every groups == 1 conv through one of the two
element kernels instead (no channels-last route), so the im2col GEMM can be measured against the direct
kernel (bench/conv.py).

A conv1d runs as a conv2d of height 1: input and weight get a unit H dim as views. Every kernel reads x
through its strides, reads out-of-range positions as zero and takes the output size from the node, so
`padding` is only the leading padding: a larger trailing one (a constant_pad_nd folded in by
conv_folding.py, which makes padding asymmetric) needs nothing more. Bias, a fused residual and a fused
activation (`node.epilogue`, `Finish`) are applied in every route's kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from ...format import dtypes
from ...format.program import Tensor
from .. import layout
from ..builder import Builder, KernelSpec
from ..graph import Epilogue
from . import epilogue, gemm
from .registry import NodeView, OpCase, register, register_option

FILE = "conv.wgsl"
CONV = register_option("conv", "auto", "im2col", "direct")


@dataclass(frozen=True)
class Geometry:
    """A convolution as 2-d: input [batch, ic, h, w], output [batch, oc, oh, ow], taps kh × kw."""

    batch: int
    ic: int
    h: int
    w: int
    oc: int
    oh: int
    ow: int
    kh: int
    kw: int
    stride: tuple[int, int]
    padding: tuple[int, int]  # leading
    dilation: tuple[int, int]
    groups: int
    transposed: bool

    @property
    def pointwise(self) -> bool:
        """1×1 at stride 1 without padding: every output pixel is its input pixel."""
        return (self.kh, self.kw, self.stride, self.padding, self.oh, self.ow) == (1, 1, (1, 1), (0, 0), self.h,
                                                                                   self.w)

    @staticmethod
    def of(node: NodeView) -> Geometry:
        a = node.args
        b, ic, h, w = _as_2d(a["input"].shape)
        _, oc, oh, ow = _as_2d(node.out.shape)
        _, _, kh, kw = _as_2d(a["weight"].shape)
        return Geometry(b, ic, h, w, oc, oh, ow, kh, kw, _as_pair(a["stride"], 1), _as_pair(a["padding"], 0),
                        _as_pair(a["dilation"], 1), a["groups"], a["transposed"])


def _as_2d(shape: tuple[int, ...]) -> tuple[int, ...]:
    """[n, c, w] -> [n, c, 1, w]: a conv1d is a conv2d of height 1."""
    return shape if len(shape) == 4 else (shape[0], shape[1], 1, shape[2])


def _as_pair(v: list[int], fill: int) -> tuple[int, int]:
    return (v[0], v[1]) if len(v) == 2 else (fill, v[0])


# The implicit-im2col GEMM pays for its tiles only on large outputs: measured on an H200 (Dawn), it beat
# the direct kernel 1.35-8.3x on DaViT's stem and downsamples (OC·N from 0.59M to 4.7M outputs) and lost
# 0.33-0.5x on ResNet-18's layers (0.1M-0.2M), with N = batch·OH·OW; the threshold sits between.
IM2COL_MIN_OUTPUTS = 1 << 19


def plan(g: Geometry, conv: str, static: bool) -> tuple[tuple[str, bool], ...]:
    """The routes to try for a conv of geometry `g` under the `conv` option, in order, each with whether it
    reads x copied to channels-last (the copy pays for itself on the first conv, and as every output of those
    kernels is channels-last, a chain of convs pays it once); `static`: x's sizes, strides and offset are
    integers. The last route always takes the conv."""
    depthwise = not g.transposed and g.groups == g.ic == g.oc
    nhwc = conv == "auto" and static and not g.transposed and g.ic % 4 == 0 and (g.groups == 1 or depthwise)
    first = ("depthwise_nhwc" if depthwise else "pointwise_nhwc" if g.pointwise else "im2col_nhwc",) if nhwc else ()
    if g.transposed or g.groups != 1:
        rest = ("depthwise_nhwc", "direct")
    elif conv != "auto":
        rest = (conv,)
    elif g.pointwise:
        rest = ("pointwise", "im2col_nhwc", "im2col")
    elif g.oc * g.batch * g.oh * g.ow >= IM2COL_MIN_OUTPUTS:
        rest = ("im2col_nhwc", "im2col")
    else:
        rest = ("direct",)
    return (*((name, True) for name in first), *((name, False) for name in rest))


def _to_channels_last(ctx: Builder, x: Tensor) -> Tensor:
    """x [batch, C, H, W] as a view of channels-last memory: x itself when its channels are contiguous, else a
    copy made once per input, however many convs read it (a ResNet block's two branches)."""
    if x.strides[1] == 1:
        return x
    return ctx.once(("channels_last", x), lambda: layout.permute(ctx.contiguous(layout.permute(x, [0, 2, 3, 1])),
                                                                 [0, 3, 1, 2]))


def _check(node: NodeView) -> str | None:
    a = node.args
    x, w, bias = a["input"], a["weight"], a["bias"]
    if x.ndim not in (3, 4):
        return f"{x.ndim - 2}-d convolution is not supported (1-d and 2-d are)"
    if w.ndim != x.ndim:
        return f"weight {list(w.shape)} and input {list(x.shape)} differ in rank"
    for name, t in (("input", x), ("weight", w), ("bias", bias)):
        if t is not None and not dtypes.is_float(t.dtype):
            return f"{name} is {t.dtype}; convolution kernels are floating point only"
    if bias is not None and bias.ndim != 1:
        return f"bias must be 1-d, got shape {list(bias.shape)}"
    return None


@register("aten.convolution.default", check=_check, epilogue=True, residual=True)
def convolution(ctx: Builder, node: NodeView) -> Tensor:
    g = Geometry.of(node)
    x, w = (t if t.ndim == 4 else layout.unsqueeze(t, 2) for t in (node.args["input"], node.args["weight"]))
    out_shape = (g.batch, g.oc, g.oh, g.ow)
    res = epilogue.residual(node)
    fin = Finish(node.args["bias"], None if res is None else ctx.reshaped(res, out_shape), node.epilogue)
    static = all(isinstance(v, int) for v in (*x.shape, *x.strides, x.offset))
    for name, channels_last in plan(g, CONV.of(ctx.options), static):
        out = ROUTES[name](ctx, g, _to_channels_last(ctx, x) if channels_last else x, w, fin)
        if out is not None:
            return layout.view(out, node.out.shape)
    raise AssertionError(f"no conv route took {g}")  # plan's last route takes every conv


@dataclass(frozen=True)
class Finish:
    """What every route adds to the convolution and applies after: bias [OC], residual [batch, OC, OH, OW]
    (either may be None), then the activation of `ep`."""

    bias: Tensor | None
    residual: Tensor | None
    ep: Epilogue | None

    def overrides(self) -> dict:
        return {"HAS_BIAS": self.bias is not None, "HAS_RESIDUAL": self.residual is not None,
                **epilogue.overrides(self.ep)}

    def params(self) -> dict:
        b, r = self.bias, self.residual
        return {"bias_offset": 0 if b is None else b.offset, "bias_stride": 0 if b is None else b.strides[0],
                "res_offset": 0 if r is None else r.offset, "res_strides": (0,) if r is None else r.strides,
                **epilogue.params(self.ep)}

    def buffers(self, ctx: Builder) -> list[Tensor]:
        return [self.bias or ctx.dummy(), self.residual or ctx.dummy()]


def _pointwise(ctx: Builder, g: Geometry, x: Tensor, w: Tensor, fin: Finish) -> Tensor | None:
    """out[b] = W[OC, IC] @ x[b][IC, H·W] + bias[:, None] (+ residual); None where x's H and W do not merge
    into one view."""
    x3 = layout.view(x, (g.batch, g.ic, g.h * g.w))
    if x3 is None:
        return None
    w2 = ctx.reshaped(w, (g.oc, g.ic))
    bias2 = None if fin.bias is None else layout.unsqueeze(fin.bias, 1)  # [OC, 1]: broadcast over batch, H·W
    return gemm.gemm(ctx, w2, x3, bias2, out_shape=(g.batch, g.oc, g.oh, g.ow), ep=fin.ep, residual=fin.residual)


def _pointwise_channels_last(ctx: Builder, g: Geometry, x: Tensor, w: Tensor, fin: Finish) -> Tensor | None:
    """out[b, h, w, :] = x[b, h, w, :] @ Wᵀ: a GEMM of pixels [B·H·W, IC] (read along the channels) by the
    weight [IC, OC] (W read in place, along IC), written channels-last; None where x's pixels do not merge into
    one view."""
    pixels = layout.view(layout.permute(x, [0, 2, 3, 1]), (g.batch * g.h * g.w, g.ic))
    if pixels is None:
        return None
    weight = layout.permute(ctx.reshaped(w, (g.oc, g.ic)), [1, 0])
    res = None if fin.residual is None else layout.permute(fin.residual, [0, 2, 3, 1])
    out = gemm.gemm(ctx, pixels, weight, fin.bias, out_shape=(g.batch, g.oh, g.ow, g.oc), ep=fin.ep, residual=res)
    return layout.permute(out, [0, 3, 1, 2])


def _im2col_channels_last(ctx: Builder, g: Geometry, x: Tensor, w: Tensor, fin: Finish) -> Tensor | None:
    """The vec4 im2col GEMM's output, [batch, OC, OH, OW] as a view of channels-last memory; None when x is
    not channels-last with 4k channels, or a forced element configuration asks for the other kernel."""
    image = layout.permute(x, [0, 2, 3, 1])
    forced = gemm.GEMM.of(ctx.options)
    if not gemm.Im2col.fits(image) or (forced not in ("auto", "gemv") and not gemm.CONFIGS[forced].vec4):
        return None
    a = gemm.Im2col(image, (g.kh, g.kw), (g.oh, g.ow), g.stride, g.padding, g.dilation)
    # B[k, oc] with k = (kh, kw, ic): the weight as [OC, KH·KW·IC] (a constant is permuted now), read along k.
    w2 = layout.view(ctx.contiguous(layout.permute(w, [0, 2, 3, 1])), (g.oc, a.shape[2]))
    res = None if fin.residual is None else layout.permute(fin.residual, [0, 2, 3, 1])
    out = gemm.im2col_gemm(ctx, a, layout.permute(w2, [1, 0]), fin.bias, (g.batch, g.oh, g.ow, g.oc), fin.ep, res)
    return layout.permute(out, [0, 3, 1, 2])


def _im2col(ctx: Builder, g: Geometry, x: Tensor, w: Tensor, fin: Finish) -> Tensor:
    """conv.wgsl `im2col`'s output, [batch, OC, OH, OW]."""
    out = ctx.new((g.batch, g.oc, g.oh, g.ow))
    w = ctx.contiguous(w)  # A[m, k] reads (ic, kh, kw) as one contiguous run
    n = g.batch * g.oh * g.ow
    # The im2col loader reads by element: a forced vec4 configuration runs as its element twin, gemv as auto.
    forced = "auto" if gemm.GEMM.of(ctx.options) == "gemv" else gemm.GEMM.of(ctx.options)
    name = gemm.choose_config(1, g.oc, n, False, forced)

    def variant(name: str) -> None:
        cfg = gemm.CONFIGS[name]
        tiles = (-(-g.oc // cfg.tile_m), -(-n // cfg.tile_n))
        spec = KernelSpec.of(FILE, f"conv[im2col,{name}]{epilogue.suffix(fin.ep)}", entry="im2col",
                             consts=cfg.consts, overrides=fin.overrides())
        ctx.dispatch(spec, _buffers(ctx, x, w, fin, out), _params(g, x, w, fin, out, tiles), tiles[0] * tiles[1])

    # Unforced, the other tile configurations are alternatives for the runtime to time (runtime/tuning.py).
    others = [o for o in gemm.SCALAR_BY_SIZE if o != name] if forced == "auto" else []
    ctx.alternatives([partial(variant, c) for c in (name, *others)], out)
    return out


def _depthwise_channels_last(ctx: Builder, g: Geometry, x: Tensor, w: Tensor, fin: Finish) -> Tensor | None:
    """depthwise_nhwc.wgsl's output, [batch, C, OH, OW] as a view of channels-last memory; None unless the conv
    is depthwise (one channel per group, no multiplier, not transposed) over an image whose channels are
    contiguous, 4k of them, 16-byte aligned (what the vec4 loads need)."""
    image = layout.permute(x, [0, 2, 3, 1])
    if g.transposed or not g.groups == g.ic == g.oc or not gemm.Im2col.fits(image):
        return None
    taps = ctx.contiguous(layout.permute(ctx.reshaped(w, (g.oc, g.kh, g.kw)), [1, 2, 0]))  # [KH, KW, C]
    if taps.offset % 4:
        return None
    out = ctx.new((g.batch, g.oh, g.ow, g.oc))
    spec = KernelSpec.of("depthwise_nhwc.wgsl", f"conv[depthwise_nhwc]{epilogue.suffix(fin.ep)}",
                         overrides=fin.overrides())
    params = {**_params(g, x, w, fin, out, (0, 0)), "w_offset": taps.offset}  # w_strides unused
    ctx.dispatch(spec, _buffers(ctx, x, taps, fin, out), params, elements=-(-out.numel // 4))
    return layout.permute(out, [0, 3, 1, 2])


def _direct(ctx: Builder, g: Geometry, x: Tensor, w: Tensor, fin: Finish) -> Tensor:
    """The direct kernel's output, [batch, OC, OH, OW]: a view of channels-last memory when x's channels are
    its contiguous axis (a token-major [B, H·W, C] activation seen as NCHW, as DaViT's and Swin's position
    convs take it), so threads read x at stride 1 and the transpose back to tokens is a free view."""
    vec4 = (g.ic // g.groups) % 4 == 0
    channels_last = g.ic > 1 and x.strides[1] == 1
    if channels_last:
        out = layout.permute(ctx.new((g.batch, g.oh, g.ow, g.oc)), [0, 3, 1, 2])
    else:
        out = ctx.new((g.batch, g.oc, g.oh, g.ow))
    name = ",".join(["direct"] + ["transposed"] * g.transposed + ["vec4"] * vec4 + ["nhwc"] * channels_last)
    spec = KernelSpec.of(FILE, f"conv[{name}]{epilogue.suffix(fin.ep)}", entry="direct", overrides={
        "TRANSPOSED": g.transposed, "VEC4": vec4, "CHANNELS_LAST": channels_last, **fin.overrides()})
    ctx.dispatch(spec, _buffers(ctx, x, w, fin, out), _params(g, x, w, fin, out, (0, 0)), elements=out.numel)
    return out


ROUTES = {"pointwise_nhwc": _pointwise_channels_last, "im2col_nhwc": _im2col_channels_last,
          "depthwise_nhwc": _depthwise_channels_last, "pointwise": _pointwise, "im2col": _im2col, "direct": _direct}


def _buffers(ctx: Builder, x: Tensor, w: Tensor, fin: Finish, out: Tensor) -> list[Tensor]:
    bias, residual = fin.buffers(ctx)
    return [x, w, bias, out, residual]  # binding order


def _params(g: Geometry, x: Tensor, w: Tensor, fin: Finish, out: Tensor, tiles: tuple[int, int]) -> dict:
    icg, ocg = g.ic // g.groups, g.oc // g.groups
    ws = w.strides
    # The kernel indexes the weight by (group, ocg, icg, kh, kw); a transposed weight is [IC, OC/g, KH, KW].
    group_stride, w_strides = (icg * ws[0], (ws[1], ws[0], ws[2], ws[3])) if g.transposed else (ocg * ws[0], ws)
    return {
        "numel": out.numel, "H": g.h, "W": g.w, "OC": g.oc, "OH": g.oh, "OW": g.ow, "KH": g.kh, "KW": g.kw,
        "ICg": icg, "OCg": ocg, "stride_h": g.stride[0], "stride_w": g.stride[1], "pad_h": g.padding[0],
        "pad_w": g.padding[1], "dil_h": g.dilation[0], "dil_w": g.dilation[1],
        "N": g.batch * g.oh * g.ow, "K": g.ic * g.kh * g.kw, "tiles_m": tiles[0], "tiles_n": tiles[1],
        "x_offset": x.offset, "w_offset": w.offset, "w_group_stride": group_stride,
        "x_strides": x.strides, "w_strides": w_strides, **fin.params(),
    }


def cases() -> list[OpCase]:
    import torch

    F = torch.nn.functional
    g = ("gemm",)

    def conv(stride=1, padding=0, dilation=1, groups=1):
        return lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups)

    def conv1d(stride=1, padding=0, dilation=1, groups=1):
        return lambda x, w, b: F.conv1d(x, w, b, stride, padding, dilation, groups)

    def tconv(stride=1, padding=0, output_padding=0, groups=1, dilation=1, dims=2):
        fn = F.conv_transpose2d if dims == 2 else F.conv_transpose1d
        return lambda x, w, b: fn(x, w, b, stride, padding, output_padding, groups, dilation)

    return [
        # groups == 1: the implicit-im2col GEMM, every tile configuration, batch 1 and 3.
        OpCase("im2col_k3_p1_batch3", conv(padding=1), [(3, 5, 17, 19), (13, 5, 3, 3), (13,)], marks=g,
               kwargs={"conv": "im2col"}),
        OpCase("im2col_stride_pad_dilation", conv((2, 3), (2, 1), (2, 1)), [(1, 7, 23, 29), (11, 7, 3, 5), (11,)],
               marks=g, kwargs={"conv": "im2col"}),
        OpCase("im2col_64x64_tiles", conv(2, 3), [(3, 3, 37, 41), (67, 3, 7, 7), (67,)], marks=g,
               kwargs={"conv": "im2col", "gemm": "64x64"}),
        OpCase("im2col_128x128_tiles_relu", lambda x, w, b: torch.relu(F.conv2d(x, w, b, 1, 1)),
               [(1, 5, 17, 19), (257, 5, 3, 3), (257,)], marks=g, kwargs={"conv": "im2col", "gemm": "128x128"}),
        OpCase("im2col_vec4_config_runs_its_element_twin", conv(padding=1), [(1, 4, 17, 19), (68, 4, 3, 3), (68,)],
               marks=g, kwargs={"conv": "im2col", "gemm": "vec4_128x128"}),
        OpCase("im2col_pointwise_stride2_no_bias", lambda x, w: F.conv2d(x, w, None, 2),
               [(3, 37, 13, 11), (41, 37, 1, 1)], marks=g, kwargs={"conv": "im2col"}),
        OpCase("im2col_channels_last_input", lambda x, w, b: F.conv2d(x.permute(0, 3, 1, 2), w, b, 1, 1),
               [(3, 11, 13, 7), (5, 7, 3, 3), (5,)], marks=g, kwargs={"conv": "im2col"}),
        # A channels-last input with 4k channels (a token-major activation seen as NCHW, as DaViT's
        # downsamples take it): the vec4 GEMM kernels, output channels-last; with split-K for a long K.
        OpCase("im2col_nhwc_stride2_batch2", lambda x, w, b: F.conv2d(x.permute(0, 3, 1, 2), w, b, 2, 1),
               [(2, 11, 13, 12), (13, 12, 3, 3), (13,)], marks=g, kwargs={"conv": "im2col"}),
        OpCase("im2col_nhwc_dilated_relu", lambda x, w, b: torch.relu(F.conv2d(x.permute(0, 3, 1, 2), w, b, (2, 1),
                                                                              (2, 1), (2, 1))),
               [(1, 17, 15, 8), (11, 8, 3, 5), (11,)], marks=g, kwargs={"conv": "im2col"}),
        OpCase("im2col_nhwc_split_k", lambda x, w, b: F.conv2d(x.permute(0, 3, 1, 2), w, b, 1, 1),
               [(1, 7, 5, 128), (37, 128, 3, 3), (37,)], marks=g, kwargs={"conv": "im2col"}),
        OpCase("im2col_nhwc_forced_config_no_bias", lambda x, w: F.conv2d(x.permute(0, 3, 1, 2), w, None, 1, 1),
               [(1, 13, 11, 4), (7, 4, 3, 3)], marks=g, kwargs={"conv": "im2col", "gemm": "vec4_64x64"}),
        OpCase("conv1d_im2col_nhwc_tokens", lambda x, w, b: F.conv1d(x.transpose(1, 2), w, b, 2, 2),
               [(2, 29, 8), (5, 8, 5), (5,)], marks=g, kwargs={"conv": "im2col"}),
        OpCase("im2col_forced_pointwise", conv(), [(3, 37, 11, 13), (41, 37, 1, 1), (41,)], marks=g,
               kwargs={"conv": "im2col"}),
        OpCase("im2col_folded_asymmetric_pad", lambda x, w, b: F.conv2d(F.pad(x, (0, 1, 2, 1)), w, b, 2, 1),
               [(3, 5, 17, 19), (7, 5, 3, 3), (7,)], marks=g, kwargs={"conv": "im2col"}),
        OpCase("im2col_folded_pad_pointwise", lambda x, w: F.conv2d(F.pad(x, (1, 0, 0, 2)), w),
               [(1, 37, 11, 13), (41, 37, 1, 1)], marks=g, kwargs={"conv": "im2col"}),
        OpCase("auto_routes_a_large_output_to_im2col", conv(padding=1), [(1, 3, 97, 97), (59, 3, 3, 3), (59,)],
               marks=g),
        OpCase("im2col_grid_beyond_65535", conv(), [(1, 1, 1451, 1451), (1, 1, 1, 1), (1,)], marks=g,
               kwargs={"conv": "im2col"}),
        # 1×1 stride 1 unpadded: a plain batched GEMM over views (a channels-last input is a transposed B);
        # an input whose H and W do not merge into one view takes the im2col kernel instead.
        OpCase("pointwise_gemm_batch3", conv(), [(3, 37, 11, 13), (41, 37, 1, 1), (41,)], marks=g),
        OpCase("pointwise_gemm_clamp", lambda x, w, b: torch.clamp(F.conv2d(x, w, b), -0.5, 0.5),
               [(1, 37, 11, 13), (41, 37, 1, 1), (41,)], marks=g),
        OpCase("pointwise_channels_last", lambda x, w, b: F.conv2d(x.permute(0, 3, 1, 2), w, b),
               [(3, 11, 13, 37), (41, 37, 1, 1), (41,)], marks=g),
        OpCase("pointwise_hw_transposed", lambda x, w, b: F.conv2d(x.transpose(2, 3), w, b),
               [(3, 37, 13, 11), (41, 37, 1, 1), (41,)], marks=g),
        # NCHW inputs with 4k channels: copied to channels-last once, then a chain of channels-last convs
        # (1×1 GEMM, im2col GEMM, depthwise) whose outputs stay channels-last, with a fused residual.
        OpCase("channels_last_chain_from_nchw", lambda x, w1, b1, w2, b2, w3, w4: torch.relu(F.conv2d(F.conv2d(
            torch.relu(F.conv2d(x, w1, b1)), w2, b2, 1, 1), w4, None, 1, 1, 1, 16) + F.conv2d(x, w3)),
               [(2, 8, 13, 11), (12, 8, 1, 1), (12,), (16, 12, 3, 3), (16,), (16, 8, 1, 1), (16, 1, 3, 3)],
               marks=g),
        OpCase("channels_last_strided_3x3_from_nchw", conv(2, 1), [(1, 8, 17, 19), (13, 8, 3, 3), (13,)], marks=g),
        # A residual add fused into every route (ResNet's relu(conv(x) + identity) and friends).
        OpCase("im2col_residual_relu", lambda x, w, b, r: torch.relu(F.conv2d(x, w, b, 1, 1) + r),
               [(3, 5, 17, 19), (13, 5, 3, 3), (13,), (3, 13, 17, 19)], marks=g, kwargs={"conv": "im2col"}),
        OpCase("im2col_nhwc_residual", lambda x, w, b, r: F.conv2d(x.permute(0, 3, 1, 2), w, b, 2, 1) + r,
               [(2, 11, 13, 12), (13, 12, 3, 3), (13,), (2, 13, 6, 7)], marks=g, kwargs={"conv": "im2col"}),
        OpCase("pointwise_residual_broadcast", lambda x, w, b, r: F.conv2d(x, w, b) + r,
               [(3, 37, 11, 13), (41, 37, 1, 1), (41,), (41, 1, 13)], marks=g),
        OpCase("depthwise_residual_relu6", lambda x, w, b: F.relu6(x + F.conv2d(x, w, b, 1, 1, 1, 13)),
               [(3, 13, 17, 19), (13, 1, 3, 3), (13,)]),
        OpCase("direct_channels_last_residual", lambda x, w, b, r: F.conv2d(x.permute(0, 3, 1, 2), w, b, 1, 1, 1, 12)
               + r.permute(0, 3, 1, 2), [(2, 11, 13, 12), (12, 1, 3, 3), (12,), (2, 11, 13, 12)]),
        # The direct kernel: forced for groups == 1, and every grouped, depthwise and transposed form.
        OpCase("direct_forced_stride2", conv(2, 1), [(3, 5, 17, 19), (13, 5, 3, 3), (13,)],
               kwargs={"conv": "direct"}),
        OpCase("direct_forced_vec4_dilated", conv(1, 2, 2), [(1, 8, 13, 11), (7, 8, 3, 3), (7,)],
               kwargs={"conv": "direct"}),
        OpCase("depthwise_k3_relu6_batch3", lambda x, w, b: F.relu6(F.conv2d(x, w, b, 1, 1, 1, 13)),
               [(3, 13, 17, 19), (13, 1, 3, 3), (13,)]),
        OpCase("depthwise_k5_stride2_dilated", conv(2, 3, 2, 11), [(1, 11, 23, 19), (11, 1, 5, 5), (11,)]),
        OpCase("depthwise_folded_tf_pad", lambda x, w, b: F.conv2d(F.pad(x, (0, 1, 0, 1)), w, b, 2, 0, 1, 11),
               [(3, 11, 18, 16), (11, 1, 3, 3), (11,)]),
        OpCase("depthwise_multiplier", conv(1, 1, 1, 5), [(1, 5, 13, 11), (15, 1, 3, 3), (15,)]),
        # Token-major input seen as NCHW (DaViT's position conv): the channels-last direct kernel, whose
        # output view transposes back to tokens for free; also grouped and strided forms of it.
        OpCase("depthwise_nhwc_vec4_tokens_residual", lambda x, w, b: (lambda v: F.conv2d(v, w, b, 1, 1, 1, 12) + v)(
            x.transpose(1, 2).view(2, 12, 11, 7)).flatten(2).transpose(1, 2), [(2, 77, 12), (12, 1, 3, 3), (12,)]),
        OpCase("depthwise_nhwc_vec4_stride2_dilated_gelu", lambda x, w: F.gelu(F.conv2d(
            x.permute(0, 3, 1, 2), w, None, 2, 3, 2, 8)), [(3, 13, 17, 8), (8, 1, 5, 3)]),
        OpCase("depthwise_channels_last_tokens", lambda x, w, b: F.conv2d(
            x.transpose(1, 2).reshape(2, 13, 11, 7), w, b, 1, 1, 1, 13).flatten(2).transpose(1, 2),
               [(2, 77, 13), (13, 1, 3, 3), (13,)]),
        OpCase("grouped_channels_last_stride2_gelu", lambda x, w, b: F.gelu(F.conv2d(
            x.permute(0, 3, 1, 2), w, b, 2, 1, 1, 3)), [(3, 17, 13, 12), (9, 4, 3, 3), (9,)]),
        OpCase("grouped_vec4", conv(1, 1, 1, 3), [(3, 24, 13, 11), (15, 8, 3, 3), (15,)]),
        OpCase("grouped_odd_channels", conv((2, 1), (0, 2), 1, 5), [(1, 15, 13, 11), (10, 3, 3, 5), (10,)]),
        OpCase("depthwise_grid_beyond_65535", conv(1, 0, 1, 3), [(1, 3, 2381, 2381), (3, 1, 1, 1), (3,)]),
        OpCase("transposed_stride2_output_padding", tconv(2, 1, 1), [(1, 7, 11, 13), (7, 5, 3, 3), (5,)]),
        OpCase("transposed_grouped_dilated_batch3", tconv((3, 2), (2, 0), (1, 1), 2, (2, 1)),
               [(3, 8, 7, 9), (8, 3, 3, 2), (6,)]),
        OpCase("transposed_depthwise", tconv(2, 0, 0, 7), [(1, 7, 9, 11), (7, 1, 4, 4), (7,)]),
        # conv1d: a conv2d of height 1.
        OpCase("conv1d_im2col_batch3", conv1d(2, 3, 2), [(3, 7, 101), (11, 7, 5), (11,)], marks=g,
               kwargs={"conv": "im2col"}),
        OpCase("conv1d_channels_last_from_ncw_gelu", lambda x, w, b: F.gelu(F.conv1d(x, w, b, 2, 1)),
               [(2, 8, 37), (12, 8, 3), (12,)], marks=g),
        OpCase("conv1d_grouped_speech", lambda x, w, b: F.gelu(F.conv1d(x, w, b, 1, 3, 1, 4)),
               [(1, 16, 97), (16, 4, 7), (16,)]),
        OpCase("conv1d_transposed", tconv(2, 1, dims=1), [(3, 5, 37), (5, 3, 4), (3,)]),
    ]
