"""The GEMM family: mm, bmm, addmm, baddbmm and linear, as one tiled kernel with named tile configurations.

Every operand is read in place through its strides: `linear`'s weight [N, K] is B = weightᵀ as a view,
a bias [N], [1, N], [M, 1], [M, N] or scalar is the same bias view broadcast to [M, N] (stride 0), and
batch broadcasting is a batch stride of 0. Only C is written, contiguous.

Two tiled kernels: `gemm.wgsl` reads any strided operand by element; `gemm_vec4.wgsl` reads 16-byte vectors
along each operand's contiguous axis and takes operands whose contiguous axis is a multiple of 4 long and
aligned. Beside them, `gemv.wgsl` for few rows and `gemm_split_sum.wgsl`, the last step of a split K. Each
adds `beta*bias + residual` (a fused add, `epilogue.residual`) and applies the fused activation itself.
A B operand that is a constant (a weight) of a float16 or bfloat16 model, or of a float32 one under the compile
option weights="float16", is stored in 16 bits and widened as it is read; products accumulate in float32 (on
an adapter without `shader-f16` the runtime widens float16 constants at load and runs the float32 build of
the same kernels: runtime/fit.py; bfloat16 needs no feature).
`CONFIGS["pr"]` is the kernel of the ExecuTorch WebGPU addmm PR (32×32 tiles, a 4×4 register tile per
thread, 8×8 threads, k-steps of 32), kept so other configurations are measured against it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from numbers import Number
from typing import ClassVar

from ....format import dtypes, symbolic
from ....format.packing import Packing
from ....format.program import F16, SUBGROUP_MATRIX, Tensor
from ... import layout, wgsl
from ...builder import Builder, KernelSpec, Packed
from ...graph import Epilogue
from ...wgsl import SUBGROUPS
from .. import epilogue
from ..elementwise import copy, emit
from ..layer_norm import rms_rows
from ..registry import NodeView, OpCase, register, register_option

FILE = "gemm.wgsl"
MAX_THREADS = 256  # WebGPU's default maxComputeInvocationsPerWorkgroup
WORKGROUP_BYTES = 16384  # WebGPU's default maxComputeWorkgroupStorageSize (one stage of tiles must fit)


@dataclass(frozen=True)
class GemmConfig:
    """A configuration of gemm.wgsl: any layout, loads by element."""

    tile_m: int
    tile_n: int
    tile_k: int
    thread_m: int
    thread_n: int
    file: ClassVar[str] = FILE
    requires: ClassVar[tuple[str, ...]] = ()  # the optional WebGPU features its kernel needs
    vec4: ClassVar[bool] = False
    engine_files: ClassVar[dict[str, str]] = {}
    targets: ClassVar[tuple[str, ...]] = ()  # kinds of adapter it is shaped for (program.Kernel.targets)
    overrides: ClassVar[dict[str, bool]] = {}  # override constants of its kernel beyond the operand layout

    def __post_init__(self):
        wg_m, wg_n = self.tile_m // self.thread_m, self.tile_n // self.thread_n
        threads = wg_m * wg_n
        if wg_m * self.thread_m != self.tile_m or wg_n * self.thread_n != self.tile_n:
            raise ValueError(f"{self}: tiles must be multiples of the register tile")
        if threads > MAX_THREADS or (self.tile_m * self.tile_k) % threads or (self.tile_n * self.tile_k) % threads:
            raise ValueError(f"{self}: {threads} threads must be <= {MAX_THREADS} and divide each tile load")

    @property
    def consts(self) -> dict[str, int]:
        return {"TILE_M": self.tile_m, "TILE_N": self.tile_n, "TILE_K": self.tile_k,
                "THREAD_M": self.thread_m, "THREAD_N": self.thread_n}


@dataclass(frozen=True)
class Vec4Config:
    """A configuration of gemm_vec4.wgsl: WG_M x WG_N threads, each GM x GN blocks of 4 x 4 outputs; `pad`
    gives each k-row of the workgroup tiles a spare vec4 (gemm_vec4_io.wgsl, ROW_PAD), which measured
    1.0-1.35x faster on an H200 (docs/benchmarks.md). One stage of tiles must fit WebGPU's default 16 KiB;
    wgpu-native's double-buffered kernel takes two, which desktop adapters' limits (32 KiB and more) hold."""

    tile_m: int
    tile_n: int
    tile_k: int
    wg_m: int
    wg_n: int
    pad: bool = True
    file: ClassVar[str] = "gemm_vec4.wgsl"
    requires: ClassVar[tuple[str, ...]] = ()
    vec4: ClassVar[bool] = True
    # wgpu-native's shader compiler spills gemm_vec4.wgsl's accumulator array; this style keeps registers.
    engine_files: ClassVar[dict[str, str]] = {"wgpu": "gemm_vec4_regs.wgsl"}
    targets: ClassVar[tuple[str, ...]] = ()
    overrides: ClassVar[dict[str, bool]] = {}

    def __post_init__(self):
        threads = self.wg_m * self.wg_n
        if self.tile_m % (4 * self.wg_m) or self.tile_n % (4 * self.wg_n) or self.tile_k % 4:
            raise ValueError(f"{self}: tiles must be multiples of 4 x the thread grid, tile_k of 4")
        if threads > MAX_THREADS or (self.tile_m * self.tile_k) % (4 * threads) or (
                self.tile_n * self.tile_k) % (4 * threads):
            raise ValueError(f"{self}: {threads} threads must be <= {MAX_THREADS} and divide each tile load")
        if self.tile_m > 8 * self.wg_m or self.tile_n > 8 * self.wg_n:
            raise ValueError(f"{self}: at most 2 x 2 blocks of 4 x 4 per thread (gemm_vec4_regs.wgsl)")
        if 16 * self.tile_k * (self.tile_m // 4 + self.tile_n // 4 + 2 * self.pad) > WORKGROUP_BYTES:
            raise ValueError(f"{self}: its tiles exceed {WORKGROUP_BYTES} bytes of workgroup memory")

    @property
    def consts(self) -> dict[str, int]:
        return {"TILE_M": self.tile_m, "TILE_N": self.tile_n, "TILE_K": self.tile_k,
                "WG_M": self.wg_m, "WG_N": self.wg_n, "ROW_PAD": int(self.pad)}


MATRIX_WORKGROUP_BYTES = 32768  # what every adapter that offers subgroup matrices gives (docs/artifact.md)
MATRIX_FRAG = 16  # gemm_subgroup_matrix.wgsl's subgroup matrices are 16 x 16 x 16
MATRIX_BLOCK = (64, 32)  # … and a subgroup owns a 64 x 32 block of outputs
MATRIX_SUBGROUP = 32  # … laid out for subgroups of 32 invocations
MATRIX_PAD = 8  # f16s of padding per row of its staged fragments


@dataclass(frozen=True)
class MatrixConfig:
    """A configuration of gemm_subgroup_matrix.wgsl, which multiplies on the GPU's matrix units (WGSL subgroup
    matrices): sg_m x sg_n subgroups, each a 64 x 32 block of outputs; k-steps of tile_k through `stages`
    stages of workgroup memory; `parts` f16 parts per operand: 1 (float16 products) or 2 (split operands,
    float32-accurate). Its kernel needs the chromium-experimental-subgroup-matrix feature, so it runs only
    where tuning picks it on a device that has it, or when forced."""

    sg_m: int
    sg_n: int
    tile_k: int
    stages: int
    parts: int
    file: ClassVar[str] = "gemm_subgroup_matrix.wgsl"
    requires: ClassVar[tuple[str, ...]] = (F16, SUBGROUPS, SUBGROUP_MATRIX)
    vec4: ClassVar[bool] = True
    engine_files: ClassVar[dict[str, str]] = {}
    targets: ClassVar[tuple[str, ...]] = ()
    overrides: ClassVar[dict[str, bool]] = {}

    @property
    def tile_m(self) -> int:
        return MATRIX_BLOCK[0] * self.sg_m

    @property
    def tile_n(self) -> int:
        return MATRIX_BLOCK[1] * self.sg_n

    @property
    def workgroup_bytes(self) -> int:
        """Its tiles (16 x 16 f16 fragments, each row padded) and the staging of one accumulator per subgroup
        (f32), as the kernel declares them."""
        fragments = self.tile_k * (self.tile_m + self.tile_n) // MATRIX_FRAG ** 2
        tiles = 2 * self.stages * self.parts * fragments * MATRIX_FRAG * (MATRIX_FRAG + MATRIX_PAD)
        return tiles + 4 * self.sg_m * self.sg_n * MATRIX_FRAG ** 2

    def __post_init__(self):
        threads = MATRIX_SUBGROUP * self.sg_m * self.sg_n
        if self.tile_k % MATRIX_FRAG or self.stages not in (1, 2) or self.parts not in (1, 2):
            raise ValueError(f"{self}: tile_k must be a multiple of {MATRIX_FRAG}, stages and parts 1 or 2")
        if threads > MAX_THREADS or (self.tile_m * self.tile_k) % (4 * threads) or (
                self.tile_n * self.tile_k) % (4 * threads):
            raise ValueError(f"{self}: {threads} threads must be <= {MAX_THREADS} and divide each tile load")
        if self.workgroup_bytes > MATRIX_WORKGROUP_BYTES:
            raise ValueError(f"{self}: {self.workgroup_bytes} bytes of workgroup memory exceed "
                             f"{MATRIX_WORKGROUP_BYTES}")

    @property
    def consts(self) -> dict[str, int]:
        return {"SG_M": self.sg_m, "SG_N": self.sg_n, "TILE_K": self.tile_k, "STAGES": self.stages,
                "PARTS": self.parts}


@dataclass(frozen=True)
class CpuConfig:
    """A configuration of gemm_cpu.wgsl, shaped for adapters whose invocations run on CPU threads (SwiftShader,
    lavapipe): no workgroup memory, no barrier; WG_M x WG_N invocations, each GM x GN blocks of 4 x 4 outputs
    read straight from A and B in k-steps of 4. A tuning option on every vec4 GEMM, never the default; its
    kernels declare that they target CPU adapters, where tuning ranks them first (runtime/tuning.py)."""

    wg_m: int
    wg_n: int
    gm: int
    gn: int
    tile_k: ClassVar[int] = 4
    file: ClassVar[str] = "gemm_cpu.wgsl"
    requires: ClassVar[tuple[str, ...]] = ()
    vec4: ClassVar[bool] = True
    engine_files: ClassVar[dict[str, str]] = {}
    targets: ClassVar[tuple[str, ...]] = ("cpu",)
    overrides: ClassVar[dict[str, bool]] = {}

    def __post_init__(self):
        if self.gm not in (1, 2) or self.gn not in (1, 2) or self.wg_m * self.wg_n > MAX_THREADS:
            raise ValueError(f"{self}: GM and GN must be 1 or 2, and at most {MAX_THREADS} invocations")

    @property
    def tile_m(self) -> int:
        return 4 * self.gm * self.wg_m

    @property
    def tile_n(self) -> int:
        return 4 * self.gn * self.wg_n

    @property
    def consts(self) -> dict[str, int]:
        return {"WG_M": self.wg_m, "WG_N": self.wg_n, "GM": self.gm, "GN": self.gn}


CONFIGS = {
    "pr": GemmConfig(32, 32, 32, 4, 4),
    "64x64": GemmConfig(64, 64, 16, 4, 4),
    "128x128": GemmConfig(128, 128, 8, 8, 8),
    "vec4_64x64": Vec4Config(64, 64, 8, 8, 8),
    "vec4_128x64": Vec4Config(128, 64, 8, 16, 8),
    "vec4_128x128": Vec4Config(128, 128, 8, 16, 16),
    "vec4_128x128_k16": Vec4Config(128, 128, 16, 16, 16, pad=False),  # padded, its tiles exceed 16 KiB
    "vec4_32x64": Vec4Config(32, 64, 8, 8, 8),
    "vec4_64x64_k16": Vec4Config(64, 64, 16, 8, 8),
    "vec4_32x64_k16": Vec4Config(32, 64, 16, 8, 8),
    "vec4_64x64_t256": Vec4Config(64, 64, 16, 16, 16),
    # 4096³ (docs/benchmarks.md): one stage of k-steps of 32 beat two of 16 (H100: 84.6 against 66.6 TFLOP/s);
    # 64 x 128 ran 61.1 where 64 x 64 (1, 2, 32, 2, 1) fell to 16.9 once the tiles were cut into fragments.
    "sm_f16_128x128": MatrixConfig(2, 4, 32, 1, 1),
    "sm_f16_128x64": MatrixConfig(2, 2, 16, 2, 1),
    "sm_f16_64x128": MatrixConfig(1, 4, 32, 1, 1),
    "sm_f16x3_128x128": MatrixConfig(2, 4, 16, 1, 2),
    "cpu_4x8": CpuConfig(1, 16, 1, 2),
    "cpu_8x8": CpuConfig(1, 16, 2, 2),
}
# Force one configuration on every GEMM (`compile(ep, gemm="pr")`; "gemv" the matrix-vector kernel): tests and
# benchmarks of one kernel. "auto" routes by shape and layout, and offers the others for tuning.
GEMM = register_option("gemm", "auto", "gemv", *CONFIGS)


def vec4_axis(t: Tensor) -> int | None:
    """The axis (2 or 1) of a 3-d operand view that can be read in aligned vec4s: it has stride 1 and a
    length that is a multiple of 4, and every other stride and the offset are multiples of 4."""
    for axis, other in ((2, 1), (1, 2)):
        aligned = all(s % 4 == 0 for s in (t.strides[0], t.strides[other], t.offset))
        if t.strides[axis] == 1 and t.shape[axis] % 4 == 0 and aligned:
            return axis
    return None


# Tile configurations in decreasing size; the first that gives the GPU enough blocks to fill it is used.
# (A fixed guess at a large GPU's width: 132 multiprocessors on an H200, two blocks each.)
VEC4_BY_SIZE = ("vec4_128x128", "vec4_128x64", "vec4_64x64", "vec4_32x64")
# Tuning candidates only, never the default: the small tiles with k-steps of 16 (two barriers per k-step,
# so half as many per FMA, which 64-thread workgroups feel most), and 64 x 64 tiles over 256 threads of 4 x 4
# outputs each, for a prompt's few dozen rows against a long N (a 1B LM's 33 x 16384 x 2048 over int4 weights:
# 0.178 ms on an H100 where the best of the others took 0.285).
VEC4_TUNED_ONLY = ("vec4_64x64_k16", "vec4_32x64_k16", "vec4_64x64_t256")
SCALAR_BY_SIZE = ("128x128", "64x64", "pr")
# Tuning candidates only, shaped for CPU adapters (tuning times them first there): unsplit, since a CPU has a
# few cores to fill, not a GPU's hundreds of blocks.
CPU_OPTIONS = ("cpu_4x8", "cpu_8x8")
# Matrix-unit configurations: under precision="float16", tuning options beside the float32 ones wherever both
# operands are vec4-readable. The split, float32-accurate configuration is offered nowhere (only forced): on an
# H200 it ran 4096³ slower than the float32 kernel (37.0 against 42.0 TFLOP/s) with 2.2x its error.
MATRIX_F16 = ("sm_f16_128x128", "sm_f16_128x64", "sm_f16_64x128")
ENOUGH_BLOCKS = 256
GEMV_MAX_ROWS = 8
SPLIT_K_MIN_DEPTH = 256  # each split keeps at least this much of K
SPLIT_K_MAX = 64


def _blocks(cfg, batch: int, m: int, n: int) -> int:
    return batch * -(-m // cfg.tile_m) * -(-n // cfg.tile_n)


def choose_config(batch: int, m: int, n: int, vec4: bool, forced: str) -> str:
    """A forced configuration, or the largest tiles that still give the GPU enough blocks. A forced vec4
    configuration falls back to the element kernel of the same tiles when the operands are not aligned."""
    if forced != "auto":
        cfg = CONFIGS[forced]
        if cfg.vec4 and not vec4:
            return "128x128" if cfg.tile_m >= 128 else "64x64"
        return forced
    order = VEC4_BY_SIZE if vec4 else SCALAR_BY_SIZE
    for name in order:
        if _blocks(CONFIGS[name], batch, m, n) >= ENOUGH_BLOCKS:
            return name
    return order[-1]


def split_k(batch: int, m: int, n: int, k: int, name: str) -> tuple[int, int]:
    """(slices, slice length) for K when the output alone gives too few blocks ((1, k): no split): enough
    slices to fill the GPU, as K allows (each slice a multiple of TILE_K, at least SPLIT_K_MIN_DEPTH long)."""
    cfg = CONFIGS[name]
    blocks = _blocks(cfg, batch, m, n)
    splits = min(-(-ENOUGH_BLOCKS // blocks), k // SPLIT_K_MIN_DEPTH, SPLIT_K_MAX)
    if splits <= 1:
        return 1, k
    part = -(-k // splits)
    part = -(-part // cfg.tile_k) * cfg.tile_k
    return -(-k // part), part


@dataclass(frozen=True)
class Im2col:
    """The A operand of a convolution as a GEMM: the implicit im2col matrix [batch·OH·OW, KH·KW·C] of a
    channels-last image, which the vec4 kernels sample per tile (gemm_operands.wgsl's fetch_im2col) and
    nothing materialises. `image` is [batch, H, W, C] with C contiguous and a multiple of 4 (see `fits`)."""

    image: Tensor
    taps: tuple[int, int]  # KH, KW
    out: tuple[int, int]  # OH, OW
    stride: tuple[int, int]
    padding: tuple[int, int]  # leading
    dilation: tuple[int, int]

    @staticmethod
    def fits(image: Tensor) -> bool:
        """Whether the vec4 loader can read `image` ([batch, H, W, C]): C contiguous, a multiple of 4, and
        every other stride and the offset multiples of 4 (16-byte aligned vectors)."""
        return (image.strides[3] == 1 and image.shape[3] % 4 == 0
                and all(isinstance(v, int) and v % 4 == 0 for v in (*image.strides[:3], image.offset)))

    @property
    def shape(self) -> tuple[int, int, int]:
        b, _, _, c = self.image.shape
        return (1, b * self.out[0] * self.out[1], self.taps[0] * self.taps[1] * c)

    @property
    def offset(self) -> int:
        return self.image.offset

    @property
    def strides(self) -> tuple[int, int, int]:
        return self.image.strides[:3]  # (b, h, w): the kernel's a_strides

    def params(self) -> dict[str, int]:
        _, h, w, c = self.image.shape
        return {"im_h": h, "im_w": w, "im_c": c, "im_kw": self.taps[1], "im_ow": self.out[1],
                "im_ohw": self.out[0] * self.out[1], "im_stride_h": self.stride[0], "im_stride_w": self.stride[1],
                "im_pad_h": self.padding[0], "im_pad_w": self.padding[1], "im_dil_h": self.dilation[0],
                "im_dil_w": self.dilation[1]}


_NO_IM2COL = dict.fromkeys(("im_h", "im_w", "im_c", "im_kw", "im_ow", "im_ohw", "im_stride_h", "im_stride_w",
                            "im_pad_h", "im_pad_w", "im_dil_h", "im_dil_w"), 0)


def gemm(ctx: Builder, a: Tensor, b: Tensor, bias: Tensor | None, *, alpha: float = 1.0, beta: float = 1.0,
         out_shape: tuple[int, ...], ep: Epilogue | None = None, residual: Tensor | None = None,
         out_dtype: str = "float32", norm: tuple[Tensor, float] | None = None,
         gate: Epilogue | None = None) -> Tensor:
    """C = act(alpha*(a @ b) + beta*bias + residual) with a [z, M, K] or [M, K], b [z, K, N] or [K, N]; bias
    broadcastable to [z, M, N] or None; residual of `out_shape` or None; `norm` = (weight [K], eps): A's rows
    RMS-normalized first (rms_norm's); `gate`: the product's columns pair up, 2j a gate's and 2j + 1 an up
    projection's, and C[..., j] = gate's activation of the first times the second (gated_linears.py: no
    residual, epilogue or scaling; `out_shape` has N / 2 columns). The result is a fresh contiguous tensor of
    `out_shape` (same element count) and `out_dtype` (f16: an activation stored in half precision; a split K's
    result stays float32).

    Routing: few rows (M <= 8) with K-contiguous A -> gemv.wgsl (which takes a norm over K-contiguous B as its
    prologue, and stores a gated product itself); aligned operands -> gemm_vec4.wgsl, K split across blocks
    when the output is too small to fill the GPU; anything else -> gemm.wgsl. Elsewhere a norm is computed
    first and a gated product after, each a dispatch of its own. An outer product (K = 1, no bias, residual,
    epilogue or scaling) is an elementwise multiply."""
    for t in (a, bias, residual):  # only B is read packed; the others are computed first, outside alternatives
        if isinstance(t, Tensor):
            ctx.materialize(t)
    a3 = a if a.ndim == 3 else layout.unsqueeze(a, 0)
    b3 = b if b.ndim == 3 else layout.unsqueeze(b, 0)
    batch = max(a3.shape[0], b3.shape[0])
    (_, m, k), n = a3.shape, b3.shape[2]
    a3 = layout.broadcast_to(a3, (batch, m, k))
    forced = GEMM.of(ctx.options)
    plain = alpha == 1 and (bias is None or beta == 0) and all(v is None for v in (residual, ep, norm, gate))
    if isinstance(k, int) and k == 1 and plain and forced == "auto":
        b_row = layout.broadcast_to(b3, (batch, 1, n))
        if ctx.packed_view(b_row) is None:  # an outer product: each output one product (a sum of one term)
            return layout.view(emit(ctx, "mul", [a3, b_row], (batch, m, n), out_dtype=out_dtype), out_shape)
    vec4_kernel = forced in ("auto", "gemv") or CONFIGS[forced].vec4
    b3 = _stored(ctx, layout.broadcast_to(b3, (batch, k, n)), vec4_kernel and vec4_axis(a3) is not None)
    if not ctx.holds(b3, k):  # the kernels bound K by the longer operand (ops/bounded.wgsl)
        a3 = ctx.walkable(a3, k)
    use_bias = bias is not None and beta != 0  # torch ignores `self` (even NaN) when beta == 0
    bias3 = layout.broadcast_to(bias, (batch, m, n)) if use_bias else None
    res3 = None if residual is None else ctx.reshaped(residual, (batch, m, n))
    axes = (vec4_axis(a3), vec4_axis(b3))
    gemv = forced in ("gemv", "auto") and symbolic.bound(m) <= GEMV_MAX_ROWS and axes[0] == 2 and axes[1]
    if norm is not None and not (gemv and axes[1] == 1 and norm[0].strides == (1,) and norm[0].offset == 0):
        a3 = rms_rows(ctx, a3, *norm)
        axes, norm = (vec4_axis(a3), axes[1]), None
    gated_after = gate is not None and not (gemv and axes[1] == 1)  # else the GEMV stores the gated product
    shape = (*out_shape[:-1], n) if gated_after else out_shape
    if gemv:
        out = _gemv(ctx, a3, b3, bias3, res3, alpha, beta, shape, ep, out_dtype, axes[1] == 1, norm,
                    None if gated_after else gate)
    else:
        out = _blocked(ctx, a3, b3, bias3, res3, alpha, beta, shape, ep, axes, out_dtype)
    return gated_columns(ctx, out, gate, out_dtype) if gated_after else out


def gated_columns(ctx: Builder, full: Tensor, gate: Epilogue, out_dtype: str) -> Tensor:
    """act(gate) * up over the even (gate) and odd (up) columns of `full`: what a gated GEMV stores."""
    last, width = full.ndim - 1, full.shape[-1]
    gates, ups = (layout.slice_(full, last, start, width, 2) for start in (0, 1))
    return emit(ctx, "gated", [gates, ups], gates.shape, out_dtype=out_dtype, gate=gate)


def im2col_gemm(ctx: Builder, a: Im2col, b: Tensor, bias: Tensor | None, out_shape: tuple[int, ...],
                ep: Epilogue | None, residual: Tensor | None) -> Tensor:
    """C = act(A @ b + bias + residual) for the implicit im2col matrix A of a convolution and b [K, N] (the
    weight, read along K, so K-contiguous); bias broadcastable to [M, N]; residual of `out_shape` or None.
    Always on the vec4 kernels."""
    _, m, _ = a.shape
    b3 = _stored(ctx, layout.unsqueeze(b, 0), True)
    bias3 = None if bias is None else layout.broadcast_to(bias, (1, m, b.shape[1]))
    res3 = None if residual is None else ctx.reshaped(residual, (1, m, b.shape[1]))
    axes = (2, vec4_axis(b3))
    if axes[1] is None:
        raise ValueError(f"im2col_gemm needs a vec4-readable weight, got {b}")
    return _blocked(ctx, a, b3, bias3, res3, 1.0, 1.0, out_shape, ep, axes)


def _stored(ctx: Builder, b3: Tensor, vec4: bool) -> Tensor:
    """B as the kernels read it: a dequantized weight's packed words where a kernel decodes them (a vec4
    kernel, `vec4`, over B = Wᵀ: see `decodable`), else its float32 values (Builder.materialize); under
    weights="int8" | "int4" a float32 constant weight quantized and packed where a kernel decodes it; else
    as every weight-reading kernel binds a float (Builder.stored_float: 16-bit where it is stored so)."""
    decodable = vec4 and _decodable(b3)
    packed = ctx.packed_view(b3)
    if packed is not None:
        if decodable and packed.packing.cols == b3.shape[1] and b3.shape[2] <= packed.packing.rows:
            return packed
        ctx.materialize(b3)
        return b3
    weights = ctx.options.weights
    if weights.packed and b3.dtype == "float32" and decodable and ctx.buffers[b3.buffer].role == "constant" and \
            b3.shape[1] * b3.shape[2] == ctx.constants[b3.buffer].size:
        return ctx.quantized(b3)
    return ctx.stored_float(b3)


def _decodable(b3: Tensor) -> bool:
    """Whether B [batch, K, N] is Wᵀ of a row-major W [≥ N, K] that the vec4 kernels can decode packed: read
    along K from offset 0, the same for every batch, K a multiple of 4 (each vec4 fetch is in one word)."""
    _, k, _ = b3.shape
    return (isinstance(k, int) and k % 4 == 0 and b3.strides[1] == 1 and b3.strides[2] == k and b3.offset == 0
            and (b3.strides[0] == 0 or b3.shape[0] == 1))


def refusals(vec4: bool, precision: str) -> dict[str, str | None]:
    """Each configuration, and why a GEMM does not offer it for tuning (None: offered) when its operands are or
    are not vec4-readable (`vec4`) under the compile option `precision`. Every configuration offered computes
    what the default does on every storage the compiler emits (tests/test_cross_product.py)."""
    offered = (*VEC4_BY_SIZE, *VEC4_TUNED_ONLY, *CPU_OPTIONS) if vec4 else SCALAR_BY_SIZE
    matrix = MATRIX_F16 if vec4 and precision == "float16" else ()
    why = {}
    for name, cfg in CONFIGS.items():
        if name in (*offered, *matrix):
            why[name] = None
        elif cfg.vec4 != vec4:
            why[name] = ("its kernel reads 16-byte vectors, which these operands do not allow" if cfg.vec4 else
                         "operands read as 16-byte vectors are offered the vec4 kernels only")
        elif name in MATRIX_F16:
            why[name] = 'it multiplies in float16: offered under precision="float16" only'
        elif isinstance(cfg, MatrixConfig):
            why[name] = "forced only: on an H200 it ran 4096³ slower than the float32 kernel, with 2.2x its error"
        else:
            why[name] = "forced only: the unpadded twin of vec4_128x128, kept to measure the padding"
    return why


def _offered(ctx: Builder, vec4: bool) -> tuple[str, ...]:
    """The configurations a GEMM offers for tuning."""
    return tuple(c for c, why in refusals(vec4, ctx.options.precision).items() if why is None)


def _stored_types(a3: Tensor | Im2col, b3: Tensor | Packed, out: Tensor,
                  res3: Tensor | None) -> tuple[dict, dict, str, tuple]:
    """The consts and overrides for the operands' stored dtypes (gemm_params.wgsl: B_T and B_BF16 for B's, A_T,
    C_T and R_T for f16 activations; for packed weights, packed.wgsl's PACKED_BITS and PACKED_ZERO_POINTS),
    what a kernel's label adds for them, and the features they need."""
    overrides = {}
    if isinstance(b3, Packed):
        p = b3.packing
        consts, overrides, label = {"B_T": "u32", "PACKED_BITS": p.bits}, {"PACKED_ZERO_POINTS": p.zero_points}, \
            f",{p.dtype}"
    elif b3.dtype == dtypes.BF16.name:
        consts, label = {"B_T": "u32", "B_BF16": True}, ",bf16"
    else:
        wgsl = dtypes.dtype(b3.dtype).wgsl
        consts, label = {"B_T": wgsl}, "" if wgsl == "f32" else f",{wgsl}"
    image = a3.image if isinstance(a3, Im2col) else a3
    half = {alias: "f16" for alias, t in (("A_T", image), ("C_T", out), ("R_T", res3))
            if t is not None and t.dtype == dtypes.F16.name}
    consts = {**consts, **half}
    label += ",f16" if half and ",f16" not in label else ""
    return consts, overrides, label, (F16,) if "f16" in consts.values() else ()


def _blocked(ctx: Builder, a3: Tensor | Im2col, b3: Tensor, bias3: Tensor | None, res3: Tensor | None,
             alpha: float, beta: float, out_shape: tuple[int, ...], ep: Epilogue | None,
             axes: tuple[int | None, int | None], out_dtype: str = "float32") -> Tensor:
    """The tiled kernels' part of `gemm`: a configuration by size, and K split when the output is small.
    Unforced, the other configurations of the kernel family (and, for a split, other splits and none) are
    alternatives for the runtime to time (Builder.alternatives)."""
    forced = GEMM.of(ctx.options)
    (batch, m, k), n = a3.shape, b3.shape[2]
    # Tile sizes and K splits only change speed, so dynamic sizes are judged by their hints.
    hb, hm, hn = (symbolic.hint(v) for v in (batch, m, n))
    name = choose_config(hb, hm, hn, None not in axes, "auto" if forced == "gemv" else forced)
    offered = _offered(ctx, CONFIGS[name].vec4)
    family = [c for c in offered if c not in CPU_OPTIONS]  # those a split of K may run
    others = [c for c in offered if c != name] if forced == "auto" else []
    static = isinstance(k, int) and isinstance(batch, int)
    splits, part = split_k(hb, hm, hn, k, name) if forced == "auto" and CONFIGS[name].vec4 and static else (1, k)
    if splits == 1:
        out = ctx.new(out_shape, out_dtype)
        ctx.alternatives([partial(_tiled, ctx, c, a3, b3, bias3, res3, alpha, beta, out, ep, axes)
                          for c in (name, *others)], out)
        return out
    # A candidate is a configuration and a split of K (the rule's first; then every configuration split as
    # `split_k` has it, and unsplit): slice s of its product lands in slices[s], then gemm_split_sum.wgsl adds
    # the slices into slice 0 (the result) with bias, residual and activation. Both dispatches belong to the
    # candidate, so an unsplit one costs a pass over its (small: the rule splits only small outputs) output.
    plans = list(dict.fromkeys([(name, splits, part), *((c, *split_k(hb, hm, hn, k, c)) for c in family),
                                *((c, 1, k) for c in offered)]))
    slices = ctx.new((max(s for _, s, _ in plans), batch, m, n))
    residual_type = {"R_T": "f16"} if res3 is not None and res3.dtype == dtypes.F16.name else {}
    spec = KernelSpec.of("gemm_split_sum.wgsl", "gemm_split_sum" + (",f16" if residual_type else "")
                         + epilogue.suffix(ep), consts=residual_type, requires=(F16,) if residual_type else (),
                         overrides={**_addend_overrides(bias3, res3), **epilogue.overrides(ep)})

    def candidate(config: str, count: int, length: int) -> None:
        _tiled(ctx, config, a3, b3, None, None, alpha, beta, slices, None, axes, (count, length))
        params = {"M": m, "N": n, "K": k, "batch": batch, "tiles_m": 0, "tiles_n": 0, "splits": count,
                  "k_part": length, **_operand_params(a3, b3, bias3, res3, 1.0, beta, ep)}
        ctx.dispatch(spec, [bias3 or ctx.dummy(), slices, res3 or ctx.dummy()], params,
                     elements=batch * m * n)

    out = layout.view(layout.slice_(slices, 0, 0, 1, 1), out_shape)
    ctx.alternatives([partial(candidate, *plan) for plan in plans], out)
    return out


def _tiled(ctx: Builder, name: str, a3: Tensor | Im2col, b3: Tensor, bias3: Tensor | None, res3: Tensor | None,
           alpha: float, beta: float, out: Tensor, ep: Epilogue | None, axes: tuple[int | None, int | None],
           split: tuple[int, int] | None = None) -> None:
    """One dispatch of configuration `name`; with `split` = (slices, slice length), slice s of K writes
    out[s] (out is [slices, batch, M, N]; vec4 configurations only)."""
    cfg = CONFIGS[name]
    batch, m, k = a3.shape
    n = b3.shape[2]
    splits, part = split or (1, k)
    im2col = isinstance(a3, Im2col)
    tiles_m, tiles_n = -(-m // cfg.tile_m), -(-n // cfg.tile_n)
    a_k = axes[0] == 2 if cfg.vec4 else (a3.strides[2] == 1 or k == 1)
    b_n = axes[1] == 2 if cfg.vec4 else (b3.strides[2] == 1 or n == 1)
    b_type, b_overrides, b_label, b_needs = _stored_types(a3, b3, out, res3)
    label = f"conv[im2col_nhwc,{name}{b_label}]" if im2col else f"gemm[{name}{b_label}]"
    spec = KernelSpec.of(cfg.file, label + epilogue.suffix(ep), consts={**cfg.consts, **b_type}, overrides={
        "A_K_CONTIGUOUS": a_k, "B_N_CONTIGUOUS": b_n, **_addend_overrides(bias3, res3), **epilogue.overrides(ep),
        **cfg.overrides, **b_overrides, **({"A_IM2COL": True} if im2col else {})}, engine_files=cfg.engine_files,
        requires=(*cfg.requires, *b_needs), targets=cfg.targets)
    params = {"M": m, "N": n, "K": k, "batch": batch, "tiles_m": tiles_m, "tiles_n": tiles_n,
              "splits": splits, "k_part": part, **_operand_params(a3, b3, bias3, res3, alpha, beta, ep)}
    ctx.dispatch(spec, [a3.image if im2col else a3, b3, bias3 or ctx.dummy(), out, res3 or ctx.dummy()], params,
                 tiles_m * tiles_n * batch * splits)


# dot_k's (lanes per team, columns per team): the default for GPUs, then teams of one lane (CPU adapters: each
# invocation streams its own rows) over one column or four, which read each float of A once for the four (on
# lavapipe, float16 weights were slower than float32 with one: converting them and loading A cost more than
# the bytes saved).
GEMV_TEAMS = ((32, 1), (1, 1), (1, 4))
# Over packed weights a row is 4-8x fewer bytes than A's floats for it (768 q4 values: 24 chunks of 16 bytes,
# fewer than 32 lanes), so teams of 8 lanes (four times the columns per workgroup) are offered too, and teams
# of 4 columns, which read each float of A once for the 4 (gemv.wgsl's packed_sums); 128 lanes over 4 columns
# for a long K over few columns (a 1B LM's 2048 x 8192: 2x the 32-lane team on the H100), 16 lanes over 4 for
# a short K over many (its 128256 x 2048 LM head).
PACKED_GEMV_TEAMS = ((32, 1), (8, 1), (1, 1), (32, 4), (8, 4), (1, 4), (128, 4), (16, 4))


def _gemv(ctx: Builder, a3: Tensor, b3: Tensor, bias3: Tensor | None, res3: Tensor | None, alpha: float,
          beta: float, out_shape: tuple[int, ...], ep: Epilogue | None, out_dtype: str,
          b_k_contiguous: bool, norm: tuple[Tensor, float] | None, gate: Epilogue | None) -> Tensor:
    """gemv.wgsl; with B contiguous along K, each team of GEMV_TEAMS is an alternative to time (each taking
    the norm, if any, as its prologue, and storing the gated product, if any)."""
    out = ctx.new(out_shape, out_dtype)
    teams = PACKED_GEMV_TEAMS if isinstance(b3, Packed) else GEMV_TEAMS
    teams = teams if b_k_contiguous and GEMM.of(ctx.options) == "auto" else teams[:1]
    ctx.alternatives([partial(_gemv_dispatch, ctx, a3, b3, bias3, res3, alpha, beta, out, ep, b_k_contiguous,
                              norm, gate, *t) for t in teams], out)
    return out


def _gemv_dispatch(ctx: Builder, a3: Tensor, b3: Tensor, bias3: Tensor | None, res3: Tensor | None,
                   alpha: float, beta: float, out: Tensor, ep: Epilogue | None, b_k_contiguous: bool,
                   norm: tuple[Tensor, float] | None, gate: Epilogue | None, team: int, cols: int) -> None:
    batch, m, k = a3.shape
    n = b3.shape[2]
    rows = 1 << (symbolic.bound(m) - 1).bit_length()  # the register rows: M (at most) up to a power of two
    width = wgsl.constant(wgsl.kernel_source("gemv.wgsl"), "WORKGROUP")
    per_block = width // team * cols if b_k_contiguous else 32  # sweep_n: 8 vec4 of columns
    blocks_n = -(-n // per_block)
    entry = "dot_k" if b_k_contiguous else "sweep_n"
    b_type, b_overrides, b_label, b_needs = _stored_types(a3, b3, out, res3)
    team_label = (f",team{team}" if team != GEMV_TEAMS[0][0] else "") + (f"x{cols}" if cols > 1 else "")
    group_words = _group_words(b3.packing) if isinstance(b3, Packed) else 4
    team_label += f",groups of {group_words} words" if group_words != 4 else ""
    prologue = {"NORM": True, "NORM_EPS": norm[1]} if norm else {}
    if gate is not None:  # the gate's activation is the kernel's (the gated product has no other epilogue)
        ep, prologue["GATED"] = gate, True
        b_type = {**b_type, "C_HALF": out.dtype == dtypes.F16.name}
    spec = KernelSpec.of("gemv.wgsl", f"gemv[{entry},{rows}{b_label}{team_label}]{'+rms' * bool(norm)}"
                         f"{epilogue.suffix(ep)}{'*' * bool(gate)}",
                         entry=entry, consts={"ROWS": rows, "COLS": cols, "GROUP_WORDS": group_words, **b_type},
                         requires=b_needs,
                         overrides={**_addend_overrides(bias3, res3), **epilogue.overrides(ep), **b_overrides,
                                    **({"TEAM": team} if b_k_contiguous else {}), **prologue},
                         targets=("cpu",) if team == 1 else ())
    params = {"M": m, "N": n, "K": k, "batch": batch, "tiles_m": 1, "tiles_n": blocks_n, "splits": 1,
              "k_part": k, **_operand_params(a3, b3, bias3, res3, alpha, beta, ep)}
    ctx.dispatch(spec, [a3, b3, bias3 or ctx.dummy(), out, res3 or ctx.dummy(), norm[0] if norm else ctx.dummy()],
                 params, blocks_n * batch)


def _group_words(packing: Packing) -> int:
    """gemv.wgsl's GROUP_WORDS: how many consecutive words of a 16-byte chunk (4 words, starting on a multiple
    of 4) always share a group: groups span whole words, so this is gcd(4, words per group), or 4 for a
    group a row."""
    return 4 if packing.group >= packing.cols else math.gcd(4, packing.group // packing.per_word)


def _addend_overrides(bias3: Tensor | None, res3: Tensor | None) -> dict[str, bool]:
    return {"HAS_BIAS": bias3 is not None, "HAS_RESIDUAL": res3 is not None}


def _operand_params(a3, b3, bias3, res3, alpha, beta, ep) -> dict:
    return {"alpha": float(alpha), "beta": float(beta),
            "a_offset": a3.offset, "b_offset": b3.offset, "bias_offset": bias3.offset if bias3 else 0,
            "res_offset": res3.offset if res3 else 0, "a_strides": a3.strides, "b_strides": b3.strides,
            "bias_strides": bias3.strides if bias3 else (0,), "res_strides": res3.strides if res3 else (0,),
            "packed": b3.packing.layout() if isinstance(b3, Packed) else (0, 0, 0, 0),
            **epilogue.params(ep), **(a3.params() if isinstance(a3, Im2col) else _NO_IM2COL)}


def _check_float(node: NodeView) -> str | None:
    for name, v in node.args.items():
        if hasattr(v, "dtype") and not dtypes.is_float(v.dtype):
            return f"argument {name} is {v.dtype}; the GEMM kernels are floating point only"
    return None


def _check_ranks(**ranks: int):
    def check(node: NodeView) -> str | None:
        for name, rank in ranks.items():
            v = node.args[name]
            if v.ndim != rank:
                return f"{name} must be {rank}-d, got shape {list(v.shape)}"
        return _check_float(node)

    return check


def _check_bias(node: NodeView) -> str | None:
    bias = node.args["self"]
    if isinstance(bias, Number):
        return None
    out = node.out.shape
    if bias.ndim > len(out) or any(s not in (1, o) for s, o in zip(bias.shape[::-1], out[::-1], strict=False)):
        return f"bias of shape {list(bias.shape)} does not broadcast to the output {list(out)}"
    return _check_float(node)


def _check_addmm(node: NodeView) -> str | None:
    return _check_ranks(mat1=2, mat2=2)(node) or _check_bias(node)


def _check_baddbmm(node: NodeView) -> str | None:
    return _check_ranks(batch1=3, batch2=3)(node) or _check_bias(node)


def _check_addmv(node: NodeView) -> str | None:
    return _check_ranks(mat=2, vec=1)(node) or _check_bias(node)


_check_addbmm = _check_baddbmm  # the same operands; only the output (summed over the batch) differs


def _bias_tensor(ctx: Builder, node: NodeView, bias) -> Tensor:
    if isinstance(bias, Number):
        import numpy as np

        return ctx.constant(f"{node.name}_bias", np.full((), bias, np.float32))
    return bias


# The GEMM family reads its operands and a fused residual as f16 activations and stores its result so under
# precision="float16" (half_storage.py); a bias stays float32.
@register("aten.mm.default", check=_check_ranks(self=2, mat2=2), epilogue=True, residual=True, dynamic=True,
          half=("self", "mat2", "residual"), packed=True)
def mm(ctx: Builder, node: NodeView) -> Tensor:
    return gemm(ctx, node.args["self"], node.args["mat2"], None, out_shape=node.out.shape, ep=node.epilogue,
                residual=epilogue.residual(node), out_dtype=node.storage())


@register("aten.bmm.default", check=_check_ranks(self=3, mat2=3), epilogue=True, residual=True, dynamic=True,
          half=("self", "mat2", "residual"), packed=True)
def bmm(ctx: Builder, node: NodeView) -> Tensor:
    return gemm(ctx, node.args["self"], node.args["mat2"], None, out_shape=node.out.shape, ep=node.epilogue,
                residual=epilogue.residual(node), out_dtype=node.storage())


@register("aten.addmm.default", check=_check_addmm, epilogue=True, residual=True, dynamic=True,
          half=("mat1", "mat2", "residual"), packed=True)
def addmm(ctx: Builder, node: NodeView) -> Tensor:
    a = node.args
    return gemm(ctx, a["mat1"], a["mat2"], _bias_tensor(ctx, node, a["self"]), alpha=a["alpha"], beta=a["beta"],
                out_shape=node.out.shape, ep=node.epilogue, residual=epilogue.residual(node),
                out_dtype=node.storage())


@register("aten.baddbmm.default", check=_check_baddbmm, epilogue=True, residual=True, dynamic=True,
          half=("batch1", "batch2", "residual"), packed=True)
def baddbmm(ctx: Builder, node: NodeView) -> Tensor:
    a = node.args
    return gemm(ctx, a["batch1"], a["batch2"], _bias_tensor(ctx, node, a["self"]), alpha=a["alpha"],
                beta=a["beta"], out_shape=node.out.shape, ep=node.epilogue, residual=epilogue.residual(node),
                out_dtype=node.storage())


@register("aten.addmv.default", check=_check_addmv, epilogue=True, residual=True, dynamic=True)
def addmv(ctx: Builder, node: NodeView) -> Tensor:
    """beta·self + alpha·(mat @ vec): a GEMM of N = 1, the vector a [K, 1] view and the bias [M] one of [M, 1]."""
    a = node.args
    bias = _bias_tensor(ctx, node, a["self"])
    return gemm(ctx, a["mat"], layout.unsqueeze(a["vec"], 1), layout.unsqueeze(bias, 1) if bias.ndim else bias,
                alpha=a["alpha"], beta=a["beta"], out_shape=node.out.shape, ep=node.epilogue,
                residual=epilogue.residual(node))


@register("aten.addbmm.default", check=_check_addbmm, epilogue=True, residual=True, dynamic=True)
def addbmm(ctx: Builder, node: NodeView) -> Tensor:
    """beta·self + alpha·Σ_z batch1[z] @ batch2[z]: one GEMM whose K runs over (z, k), batch1 as [M, z·K]
    (a copy unless M is 1) and batch2 as [z·K, N] (a view where its batches are contiguous)."""
    a = node.args
    (z, m, k), n = a["batch1"].shape, a["batch2"].shape[2]
    lhs = ctx.reshaped(layout.permute(a["batch1"], [1, 0, 2]), (m, z * k))
    rhs = ctx.reshaped(a["batch2"], (z * k, n))
    return gemm(ctx, lhs, rhs, _bias_tensor(ctx, node, a["self"]), alpha=a["alpha"], beta=a["beta"],
                out_shape=node.out.shape, ep=node.epilogue, residual=epilogue.residual(node))


def _check_linear(node: NodeView) -> str | None:
    x, w, bias = node.args["input"], node.args["weight"], node.args["bias"]
    if x.ndim < 1 or w.ndim != 2:
        return f"linear needs input of >= 1 dims and a 2-d weight, got {list(x.shape)} and {list(w.shape)}"
    if bias is not None and bias.ndim > 1:
        return f"linear bias must be 1-d, got {list(bias.shape)}"
    return _check_float(node)


@register("aten.linear.default", check=_check_linear, epilogue=True, residual=True, dynamic=True,
          half=("input", "weight", "residual"), packed=True)
def linear(ctx: Builder, node: NodeView) -> Tensor:
    """y = x @ wᵀ + bias over any leading dims of x: x is viewed as [M, K] (copied only if its strides do not
    allow that view), wᵀ is a view. With `norm_weight` and `norm_eps` (norm_prologues.py), x is first
    RMS-normalized over K: rms_norm(x, [K], norm_weight, norm_eps)."""
    x, w, bias = node.args["input"], node.args["weight"], node.args["bias"]
    k = x.shape[-1]
    rows = x.numel // k if k else 0
    x2 = ctx.reshaped(x, (rows, k))
    norm = (node.args["norm_weight"], float(node.args["norm_eps"])) if "norm_weight" in node.args else None
    gate = node.args.get("gate")
    residual = epilogue.residual(node)
    packed_row = ctx.packed_row_bytes(w)
    if not ctx.too_large(w) or (packed_row and w.shape[0] * packed_row <= ctx.options.max_binding):
        return gemm(ctx, x2, layout.permute(w, [1, 0]), bias, out_shape=node.out.shape, ep=node.epilogue,
                    residual=residual, out_dtype=node.storage(), norm=norm, gate=gate)
    if norm is not None:  # normalized once for all the chunks
        x2 = rms_rows(ctx, x2, *norm)
    # A weight over the binding limit as stored (a tied vocabulary projection; packed under weights="int8" |
    # "int4", which packs each chunk as the whole would be): one GEMM per chunk of its rows, each result
    # copied into its columns of the output (then gated, for a gate).
    out = ctx.new((*node.out.shape[:-1], w.shape[0]))
    out2 = layout.view(out, (rows, w.shape[0]))
    res2 = None if residual is None else ctx.reshaped(residual, (rows, w.shape[0]))
    for lo, hi, chunk in ctx.row_chunks(w, packed_row):
        part_bias, part_res = (None if t is None else layout.slice_(t, t.ndim - 1, lo, hi, 1) for t in (bias, res2))
        part = gemm(ctx, x2, layout.permute(chunk, [1, 0]), part_bias, out_shape=(rows, hi - lo), ep=node.epilogue,
                    residual=part_res)
        copy(ctx, part, out=layout.slice_(out2, 1, lo, hi, 1))
    return out if gate is None else gated_columns(ctx, out, gate, node.storage())


def cases() -> list[OpCase]:
    import torch

    g = ("gemm",)
    big = torch.randn(293, 64, generator=torch.Generator().manual_seed(9))  # 75 KB: a constant, split in two
    gate_up = torch.randn(2, 131, 132, generator=torch.Generator().manual_seed(3)) / 132**0.5
    gate_up_bias = torch.randn(2, 131, generator=torch.Generator().manual_seed(4))
    F = torch.nn.functional

    def gated(act, x, bias=None):  # act(gate(x)) * up(x), stacked and interleaved (gated_linears.py)
        gate, up = (F.linear(x, gate_up[i].to(x.dtype), None if bias is None else bias[i].to(x.dtype)) for i in (0, 1))
        return act(gate) * up

    def addmm(**kw):
        return lambda s, a, b: torch.addmm(s, a, b, **kw)

    return [
        # The ExecuTorch addmm PR's own cases.
        OpCase("addmm_pr_4x16x32", addmm(), [(32,), (4, 16), (16, 32)], marks=g),
        OpCase("addmm_pr_16x768x768", addmm(), [(768,), (16, 768), (768, 768)], marks=g),
        OpCase("addmm_pr_odd_k", addmm(), [(32,), (4, 15), (15, 32)], marks=g),
        # Every bias broadcast, beta/alpha as ints and floats, prime sizes straddling every tile edge.
        OpCase("addmm_bias_mn", addmm(beta=0.5, alpha=2.0), [(37, 41), (37, 89), (89, 41)], marks=g),
        OpCase("addmm_bias_1n", addmm(beta=2, alpha=3), [(1, 41), (37, 89), (89, 41)], marks=g),
        OpCase("addmm_bias_m1", addmm(), [(37, 1), (37, 89), (89, 41)], marks=g),
        OpCase("addmm_bias_scalar", addmm(alpha=-1), [(), (113, 37), (37, 89)], marks=g),
        OpCase("addmm_beta0_ignores_nan", lambda a, b: torch.addmm(torch.full((41,), float("nan")), a, b,
                                                                   beta=0), [(37, 89), (89, 41)], marks=g),
        OpCase("addmm_large_tiles", addmm(), [(263,), (269, 257), (257, 263)], marks=g),
        OpCase("mm_1x1x1", lambda a, b: a @ b, [(1, 1), (1, 1)], marks=g),
        OpCase("mm_k1", lambda a, b: a @ b, [(37, 1), (1, 41)], marks=g),
        OpCase("mm_transposed_both", lambda a, b: a.t() @ b.t(), [(89, 37), (41, 89)], marks=g),
        OpCase("mm_gemv_row", lambda a, b: a @ b, [(1, 113), (113, 89)], marks=g),
        OpCase("linear_3d", lambda x, w, b: torch.nn.functional.linear(x, w, b), [(3, 37, 89), (41, 89), (41,)],
               marks=g),
        OpCase("linear_no_bias_1d", lambda x, w: torch.nn.functional.linear(x, w), [(89,), (41, 89)], marks=g),
        OpCase("linear_transposed_input", lambda x, w: torch.nn.functional.linear(x.transpose(0, 1), w),
               [(37, 3, 89), (41, 89)], marks=g),
        OpCase("bmm", lambda a, b: torch.bmm(a, b), [(3, 37, 89), (3, 89, 41)], marks=g),
        OpCase("bmm_transposed_rhs", lambda a, b: torch.bmm(a, b.transpose(1, 2)), [(5, 37, 41), (5, 89, 41)],
               marks=g),
        OpCase("baddbmm", lambda s, a, b: torch.baddbmm(s, a, b, beta=0.25, alpha=1.5),
               [(1, 37, 41), (3, 37, 89), (3, 89, 41)], marks=g),
        OpCase("addmv", lambda s, m, v: torch.addmv(s, m, v, beta=0.5, alpha=2), [(37,), (37, 89), (89,)], marks=g),
        OpCase("addmv_bias_broadcast_gemv", lambda s, m, v: torch.addmv(s, m, v), [(1,), (7, 131), (131,)],
               marks=g),
        OpCase("addmv_transposed_mat", lambda s, m, v: torch.addmv(s, m.t(), v, alpha=-1), [(), (89, 37), (89,)],
               marks=g),
        OpCase("addbmm", lambda s, a, b: torch.addbmm(s, a, b, beta=0.25, alpha=1.5),
               [(37, 41), (3, 37, 89), (3, 89, 41)], marks=g),
        OpCase("addbmm_one_row_bias_row", lambda s, a, b: torch.addbmm(s, a, b), [(41,), (5, 1, 29), (5, 29, 41)],
               marks=g),
        OpCase("matmul_broadcast_batch", lambda a, b: a @ b, [(2, 3, 37, 41), (41, 7)], marks=g),
        OpCase("linear_fused_relu", lambda x, w, b: torch.relu(torch.nn.functional.linear(x, w, b)),
               [(37, 89), (41, 89), (41,)], marks=g),
        OpCase("addmm_fused_gelu", lambda s, a, b: torch.nn.functional.gelu(torch.addmm(s, a, b)),
               [(41,), (37, 89), (89, 41)], marks=g),
        OpCase("bmm_fused_relu6", lambda a, b: torch.nn.functional.relu6(torch.bmm(a, b)),
               [(3, 37, 89), (3, 89, 41)], marks=g),
        # 70,000 blocks of 32x32 (M = 1, N = 2,240,000 / ...) need a folded grid.
        # The vec4 kernel, every operand layout: row-major, transposed A, linear's Wᵀ, batched with bias.
        OpCase("vec4_addmm_row_major", addmm(beta=0.5), [(268,), (260, 132), (132, 268)], marks=g),
        OpCase("vec4_mm_transposed_a", lambda a, b: a.t() @ b, [(132, 260), (132, 268)], marks=g),
        OpCase("vec4_linear_weight_t", lambda x, w, b: torch.nn.functional.linear(x, w, b),
               [(3, 89, 132), (76, 132), (76,)], marks=g),
        OpCase("vec4_bmm_fused_relu", lambda a, b: torch.relu(torch.bmm(a, b)), [(3, 68, 36), (3, 36, 44)],
               marks=g),
        OpCase("vec4_forced_on_odd_layout_falls_back", lambda a, b: a @ b, [(37, 41), (41, 43)], marks=g,
               kwargs={"gemm": "vec4_128x128"}),
        # GEMV (M <= 8) in both B layouts, and split-K (a small output with a long K).
        OpCase("gemv_linear_rows3", lambda x, w, b: torch.relu(torch.nn.functional.linear(x, w, b)),
               [(3, 772), (1031, 772), (1031,)], marks=g),
        OpCase("gemv_row_major_b_batched", lambda x, w: x @ w, [(3, 1, 516), (3, 516, 1036)], marks=g),
        OpCase("gemv_8_rows", lambda x, w: torch.nn.functional.linear(x, w), [(8, 260), (37, 260)], marks=g),
        OpCase("linear_split_k_3d_bias", lambda x, w, b: torch.nn.functional.linear(x, w, b),
               [(3, 19, 1536), (384, 1536), (384,)], marks=g),
        OpCase("split_k_bias_gelu", lambda s, a, b: torch.nn.functional.gelu(torch.addmm(s, a, b, beta=0.5)),
               [(44,), (68, 2048), (2048, 44)], marks=g),
        # Batched split-K with a ragged last slice (DaViT's channel attention: q @ kᵀ over thousands of tokens).
        OpCase("bmm_split_k_ragged_slice", lambda a, c: torch.bmm(a, c.transpose(1, 2)),
               [(3, 29, 2052), (3, 31, 2052)], marks=g),
        OpCase("baddbmm_split_k_bias_relu", lambda s, a, b: torch.relu(torch.baddbmm(s, a, b, alpha=0.25)),
               [(2, 1, 36), (2, 20, 1540), (2, 1540, 36)], marks=g),
        # A residual add fused into the product (fusion.py), on every kernel: element, vec4, gemv, split-K (then
        # in gemm_split_sum.wgsl), a chunked weight; read through strides, broadcast.
        OpCase("linear_residual", lambda x, w, b, r: torch.nn.functional.linear(x, w, b) + r,
               [(3, 37, 89), (41, 89), (41,), (3, 37, 41)], marks=g),
        OpCase("vec4_residual_first_then_relu", lambda x, w, b, r: torch.relu(r + torch.nn.functional.linear(x, w, b)),
               [(89, 132), (76, 132), (76,), (89, 76)], marks=g),
        OpCase("mm_residual_transposed", lambda a, b, r: (lambda t: a @ b + t)(r.t()),  # t exists before a @ b
               [(37, 44), (44, 41), (41, 37)], marks=g),
        # Outer products (K = 1) are elementwise multiplies (a rotary embedding's positions times its
        # frequencies); one with a bias stays a GEMM.
        OpCase("outer_products", lambda a, b, c, d, s: (torch.bmm(a, b), c @ d, torch.addmm(s, c, d)),
               [(2, 37, 1), (2, 1, 41), (37, 1), (1, 41), (41,)], marks=g),
        OpCase("bmm_residual_broadcast_row", lambda a, b, r: torch.bmm(a, b) + r, [(3, 37, 44), (3, 44, 41), (41,)],
               marks=g),
        # An rms_norm folded into the linear it feeds (norm_prologues.py): the GEMV's prologue for few rows (a
        # residual too, as a decoder's MLP has), the norm's own dispatch for more; rows whose squares overflow
        # float32, a zero row (rstd = 1 / sqrt(eps)).
        OpCase("gemv_rms_norm_prologue", lambda x, g, w, r: (
            torch.nn.functional.linear(torch.nn.functional.rms_norm(x, (772,), g, 1e-5), w) + r,
            torch.nn.functional.linear(torch.nn.functional.rms_norm(x * 1e30, (772,), g, 1e-6), w),
            torch.nn.functional.linear(torch.nn.functional.rms_norm(x * 0.0, (772,), g, 1e-6), w)),
            [(3, 772), (772,), (1031, 772), (3, 1031)], marks=g),
        # A gated MLP's gate and up projections, one linear storing act(gate) * up: a GEMV's product (with a
        # norm, a bias) or the tiled product's and then an elementwise one (13 rows).
        OpCase("gated_linears", lambda x, y, norm_weight: (
            gated(F.silu, F.rms_norm(x, (132,), norm_weight, 1e-5)), gated(lambda v: F.gelu(v, approximate="tanh"), x,
                                                                 gate_up_bias), gated(F.silu, y)),
            [(3, 132), (13, 132), (132,)], marks=g),
        OpCase("rms_norm_linear_many_rows", lambda x, g, w: torch.nn.functional.linear(
            torch.nn.functional.rms_norm(x, (260,), g), w), [(2, 13, 260), (260,), (37, 260)], marks=g),
        OpCase("gemv_residual", lambda x, w, r: torch.nn.functional.linear(x, w) + r,
               [(3, 772), (1031, 772), (3, 1031)], marks=g),
        OpCase("split_k_bias_residual_gelu", lambda s, a, b, r: torch.nn.functional.gelu(torch.addmm(s, a, b) + r),
               [(44,), (68, 2048), (2048, 44), (68, 44)], marks=g),
        # A weight over the binding limit (forced down to 64 KiB here) is split into row chunks.
        OpCase("linear_weight_over_binding_limit", lambda x: torch.nn.functional.linear(x, big.to(x.dtype),
                                                                                      big[:, 0].to(x.dtype)),
               [(3, 64)], marks=g, kwargs={"max_binding_size": 65536}),
        OpCase("linear_chunked_weight_residual", lambda x, r: torch.nn.functional.linear(x, big.to(x.dtype)) + r,
               [(3, 64), (3, 293)], marks=g, kwargs={"max_binding_size": 65536}),
        OpCase("mm_grid_beyond_65535", lambda a, b: a @ b, [(1, 3), (3, 70_001 * 32)], marks=g),
    ]
