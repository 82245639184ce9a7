"""Fused attention: scaled_dot_product_attention, and the eager form matched in the graph, as one dispatch.

`aten.scaled_dot_product_attention.default` stays whole (registered ops are not decomposed). The eager form
models spell out (bmm, scale, mask add, softmax, bmm) is rewritten into `webgpu.eager_attention.default` by
attention_fusion.py; it differs from sdpa only in what a fully masked row gives (NaN, as softmax does).
q, k, v and the mask are read in place through their strides, so transposed heads and broadcast masks cost no
copy. Head dims up to 256 (register arrays per thread); beyond that the eager form is left unfused.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from math import log2, prod

import numpy as np

from ...format import dtypes, symbolic
from ...format.program import F16, Tensor
from .. import layout
from ..builder import Builder, KernelSpec
from . import elementwise, gemm, reduce, softmax
from .registry import NodeView, OpCase, register, register_option

FILE = "attention.wgsl"
SPLIT = "attention_split.wgsl"
MAX_HEAD_DIM = 256
# A query this short leaves the fused kernel few rows to share the keys among (2 ms for 587 keys on an H200
# with one thread per row): the split kernel spreads each row's keys over workgroups instead.
DECODE_ROWS = 4
CHUNKS = (64, 128, 256, 512, 1024)  # keys a workgroup of the split kernel scores (its tuning options)
SPLIT_WORKGROUPS = 1024  # the default chunk is the smallest that keeps rows x splits within this
# Workgroup memory for the K and V tiles (also the row sums at the end): WebGPU's guaranteed 16 KiB less the
# lanes' max and denominator (2 x 64 floats).
TILE_FLOATS = (16384 - 512) // 4
KEYS_PER_LANE = 8  # keys a lane scores per tile, at most (its loop is unrolled)
ROWS_TO_FILL = 32768  # query rows (over every head) below which more lanes per row pay: a guess for big GPUs


@dataclass(frozen=True)
class Config:
    """attention.wgsl's thread layout: `rows` query rows per workgroup, `lanes` threads per row; with `cpu`,
    its `rows` entry (one invocation per row, no workgroup memory: targets CPU adapters, never the default)."""

    rows: int
    lanes: int
    cpu: bool = False

    @property
    def name(self) -> str:
        return f"cpu{self.rows}" if self.cpu else f"{self.rows}x{self.lanes}"

    def tile_keys(self, d4: int, dv4: int) -> int | None:
        """Keys per K/V tile for head dims of d4 and dv4 vec4s (a power of two, at most KEYS_PER_LANE per
        lane), or None where the tiles or the row sums would not fit workgroup memory (the `rows` entry has
        no tiles: any head fits)."""
        if self.cpu:
            return KEYS_PER_LANE
        bc = min(KEYS_PER_LANE * self.lanes, 1 << ((TILE_FLOATS // (4 * (d4 + dv4))).bit_length() - 1))
        sums = self.rows * dv4 * 4 if self.lanes > 1 else 0
        return bc if bc >= self.lanes and sums <= TILE_FLOATS else None


# One lane per row is the plain flash kernel; more lanes split each row's keys (for short
# sequences over few heads, where rows alone leave the GPU idle). 64 threads, but 8x4 (32) for the longest heads.
# cpu16: the barrier-free entry for CPU adapters, 16 rows a workgroup.
CONFIGS = {c.name: c for c in (Config(64, 1), Config(32, 2), Config(16, 4), Config(8, 8), Config(8, 4),
                               Config(16, 1, cpu=True))}
SPLIT_CONFIGS = tuple(f"split{c}" for c in CHUNKS)  # the split kernel's chunk sizes, by name
ATTENTION = register_option("attention", "auto", *CONFIGS, *SPLIT_CONFIGS)


def layouts_for(d4: int, dv4: int) -> list[Config]:
    """The layouts whose tiles and row sums fit workgroup memory for head dims of d4 and dv4 vec4s."""
    return [c for c in CONFIGS.values() if c.tile_keys(d4, dv4)]


def _default(fits: list[Config], rows: int) -> Config:
    """The layout whose lanes per row come nearest ROWS_TO_FILL / rows (1 to 8), the most threads on a tie."""
    want = min(8, max(1, ROWS_TO_FILL // max(rows, 1)))
    return min(fits, key=lambda c: (abs(log2(c.lanes / want)), -c.rows * c.lanes))


def _as_4d(t: Tensor) -> Tensor:
    return t if t.ndim == 4 else layout.unsqueeze(t, 0)


def attention(ctx: Builder, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, scale: float,
              causal: bool, safe: bool, key_limit: Tensor | None = None, out_dtype: str = "float32") -> Tensor:
    """softmax(scale · q @ kᵀ + mask) @ v for q [B, H, Sq, D] (or [H, Sq, D]), k [B, Hkv, Skv, D],
    v [B, Hkv, Skv, Dv], Hkv dividing H; the mask broadcastable to [B, H, Sq, Skv], float (added) or bool.
    `key_limit` (instead of a mask), broadcastable to [B, H, Sq, 1], is each row's last visible key (the live
    prefix of a static cache: cache_attention.py). Decode steps (Sq ≤ DECODE_ROWS) take the split kernel;
    head dims over MAX_HEAD_DIM the unfused path (never with a key limit). The result is of `out_dtype` (f16:
    an activation stored in half precision, as q, k and v may be)."""
    if max(q.shape[-1], v.shape[-1]) > MAX_HEAD_DIM:
        return _unfused(ctx, q, k, v, mask, scale=scale, safe=safe, out_dtype=out_dtype)
    q4, k4, v4 = _as_4d(q), _as_4d(k), _as_4d(v)
    b, h, sq, d = q4.shape
    hkv, skv, dv = k4.shape[1], k4.shape[2], v4.shape[3]
    k4 = layout.broadcast_to(k4, (b, hkv, skv, d))
    v4 = layout.broadcast_to(v4, (b, hkv, skv, dv))
    if not ctx.holds(v4, skv):  # the kernel bounds its key loop by the longer of k and v (ops/bounded.wgsl)
        k4 = ctx.walkable(k4, skv)
    # Heads interleaved: [B, Sq, H, Dv] in memory, returned as the [B, H, Sq, Dv] view of it.
    out4 = layout.permute(ctx.new((b, sq, h, dv), out_dtype), [0, 2, 1, 3])
    if key_limit is not None:
        m4, mask_kind = layout.broadcast_to(key_limit, (b, h, sq, 1)), 3
    else:
        m4 = layout.broadcast_to(mask, (b, h, sq, skv)) if mask is not None else None
        mask_kind = 0 if mask is None else 2 if mask.dtype == "bool" else 1
    stored = tuple(alias for alias, t in (("Q_T", q4), ("K_T", k4), ("V_T", v4), ("O_T", out4))
                   if t.dtype == dtypes.F16.name)
    shape = _Shape(b, h, hkv, sq, skv, d, dv, mask_kind, stored)
    operands = (q4, k4, v4, m4, out4)
    if symbolic.hint(sq) <= DECODE_ROWS and not causal:
        _split(ctx, operands, shape, scale=scale, safe=safe)
    else:
        _flash(ctx, operands, shape, scale=scale, causal=causal, safe=safe)
    return out4 if q.ndim == 4 else layout.squeeze(out4, [0])


@dataclass(frozen=True)
class _Shape:
    b: object
    h: int
    hkv: int
    sq: object
    skv: object
    d: int
    dv: int
    mask_kind: int  # 0 none, 1 additive, 2 bool, 3 a key limit per row
    stored: tuple[str, ...]  # the aliases of the operands stored as f16 activations (Q_T, K_T, V_T, O_T)

    @property
    def mask_type(self) -> str:
        return {2: "u32", 3: "i32"}.get(self.mask_kind, "f32")

    def consts(self) -> dict:
        """The kernels' type aliases: the mask's and each f16 operand's."""
        return {"MaskT": self.mask_type, **dict.fromkeys(self.stored, "f16")}

    @property
    def suffix(self) -> str:
        return ",f16" if self.stored else ""

    @property
    def requires(self) -> tuple:
        return (F16,) if self.stored else ()


def _params(operands: tuple, s: _Shape, scale: float) -> dict:
    """What attention.wgsl's and attention_split.wgsl's Params share."""
    q4, k4, v4, m4, out4 = operands
    return {"heads": s.h, "group": s.h // s.hkv, "sq": s.sq, "skv": s.skv, "d": s.d, "dv": s.dv,
            "scale": float(scale), "q_offset": q4.offset, "k_offset": k4.offset, "v_offset": v4.offset,
            "m_offset": m4.offset if m4 else 0, "q_strides": q4.strides, "k_strides": k4.strides,
            "v_strides": v4.strides, "m_strides": m4.strides if m4 else (0,), "o_strides": out4.strides[:3]}


def _flash(ctx: Builder, operands: tuple, s: _Shape, *, scale: float, causal: bool, safe: bool) -> None:
    q4, k4, v4, m4, out4 = operands
    d4, dv4 = -(-s.d // 4), -(-s.dv // 4)
    fits = layouts_for(d4, dv4)
    forced = ATTENTION.of(ctx.options)
    if forced not in ("auto", *SPLIT_CONFIGS):
        fits = [c for c in fits if c.name == forced] or fits  # a layout that cannot hold these heads: the rest
    gpu_fits = [c for c in fits if not c.cpu] or fits
    first = _default(gpu_fits, symbolic.hint(s.b) * s.h * symbolic.hint(s.sq))  # a speed choice: judged at the hints

    def emit(c: Config) -> None:
        tiles_q = -(-s.sq // c.rows)
        spec = KernelSpec.of(FILE, f"attention[{d4 * 4}x{dv4 * 4},{c.name}{s.suffix}]", consts={
            "D4": d4, "DV4": dv4, "BC": c.tile_keys(d4, dv4), "BR": c.rows, "LANES": c.lanes, **s.consts()},
            requires=s.requires, overrides={"MASK_KIND": s.mask_kind, "CAUSAL": causal, "SAFE": safe},
            entry="rows" if c.cpu else "main", targets=("cpu",) if c.cpu else ())
        params = {**_params(operands, s, scale), "batch": s.b, "tiles_q": tiles_q}
        ctx.dispatch(spec, [q4, k4, v4, m4 or ctx.dummy(), out4], params, s.b * s.h * tiles_q)

    # Unforced, the other layouts are alternatives for the runtime to time (runtime/tuning.py).
    others = [c for c in fits if c != first] if forced == "auto" else []
    ctx.alternatives([partial(emit, c) for c in (first, *others)], out4)


def _split(ctx: Builder, operands: tuple, s: _Shape, *, scale: float, safe: bool) -> None:
    """A decode step's attention as flash-decoding (attention_split.wgsl): each row's keys in chunks, one
    workgroup per (row, chunk), then a merge of the chunks. The chunk sizes are the tuning options; every one
    writes the same partials buffer, sized for the most chunks."""
    q4, k4, v4, m4, out4 = operands
    d4, dv4 = -(-s.d // 4), -(-s.dv // 4)
    rows, keys = s.b * s.h * s.sq, symbolic.bound(s.skv)
    chunks = [c for c in CHUNKS if c == CHUNKS[0] or c < 2 * keys]
    forced = ATTENTION.of(ctx.options)
    if forced in SPLIT_CONFIGS:
        chunks = [c for c in chunks if f"split{c}" == forced] or chunks
    most = -(-keys // chunks[0])
    partials = ctx.new((symbolic.bound(rows) * most * (1 + dv4) * 4,))
    hinted = symbolic.hint(rows)
    first = next((c for c in chunks if hinted * -(-keys // c) <= SPLIT_WORKGROUPS), chunks[-1])

    def emit(chunk: int) -> None:
        splits = -(-keys // chunk)
        consts = {"D4": d4, "DV4": dv4, "CHUNK": chunk, **s.consts()}
        params = {**_params(operands, s, scale), "rows": rows, "splits": splits}
        buffers = [q4, k4, v4, m4 or ctx.dummy(), partials, out4]
        overrides = {"MASK_KIND": s.mask_kind, "SAFE": safe}
        name = f"attention_split[{d4 * 4}x{dv4 * 4},{chunk}{s.suffix}]"
        ctx.dispatch(KernelSpec.of(SPLIT, name, entry="split", consts=consts, overrides=overrides,
                                   requires=s.requires), buffers, params, rows * splits)
        ctx.dispatch(KernelSpec.of(SPLIT, name.replace("split[", "merge["), entry="merge", consts=consts,
                                   overrides=overrides, requires=s.requires), buffers, params, elements=rows * dv4)

    others = [c for c in chunks if c != first] if forced == "auto" else []
    ctx.alternatives([partial(emit, c) for c in (first, *others)], out4)


def _unfused(ctx: Builder, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, scale: float,
             safe: bool, out_dtype: str) -> Tensor:
    """Attention as a batched GEMM for the scores, a row softmax and a batched GEMM for the output: for head
    dims too long for the fused kernel's registers (DaViT's channel attention: the head dim is the token
    count, thousands long, while S_q = S_kv are a few dozen channels) and for decode steps (S_q of 1: the
    two GEMMs are GEMVs over the keys). The scores ([B·H, S_q, S_kv]) are small either way."""
    lead = q.shape[:-2]
    bh = prod(lead)
    sq, skv, dv = q.shape[-2], k.shape[-2], v.shape[-1]
    scores = _scores(ctx, q, k, mask, scale=scale)
    probs = softmax.softmax(ctx, "safe_softmax" if safe else "softmax", scores, -1)
    out = gemm.gemm(ctx, probs, _batched(ctx, layout.broadcast_to(v, (*lead, skv, dv)), bh), None,
                    out_shape=(bh, sq, dv), out_dtype=out_dtype)
    return layout.view(out, (*lead, sq, dv))


def _scores(ctx: Builder, q: Tensor, k: Tensor, mask: Tensor | None, *, scale: float) -> Tensor:
    """scale · q @ kᵀ + mask as [B·H, S_q, S_kv] (a bool mask's False as -inf), k's heads as many as q's."""
    lead = q.shape[:-2]
    bh = prod(lead)
    (sq, d), skv = q.shape[-2:], k.shape[-2]
    q3, k3 = _batched(ctx, q, bh), _batched(ctx, layout.broadcast_to(k, (*lead, skv, d)), bh)
    scores = gemm.gemm(ctx, q3, layout.permute(k3, [0, 2, 1]), None, alpha=scale, out_shape=(bh, sq, skv))
    if mask is not None:
        m3 = layout.view(layout.broadcast_to(mask, (*lead, sq, skv)), (bh, sq, skv))
        m3 = m3 or layout.view(ctx.contiguous(layout.broadcast_to(mask, (*lead, sq, skv))), (bh, sq, skv))
        if mask.dtype == "bool":  # True keeps a score, False masks it out
            masked = ctx.constant("-inf", np.full((), -np.inf, np.float32))
            scores = elementwise.emit(ctx, "where", [m3, scores, masked], (bh, sq, skv), compute="float32")
        else:
            scores = elementwise.emit(ctx, "add", [scores, m3], (bh, sq, skv))
    return scores


def _batched(ctx: Builder, t: Tensor, bh) -> Tensor:
    """[..., S, D] as [B·H, S, D] (a view where the leading dims merge, else a contiguous copy)."""
    return ctx.reshaped(t, (bh, *t.shape[-2:]))


def _check(node: NodeView) -> str | None:
    a = node.args
    q, k, v, mask = a["query"], a["key"], a["value"], a["attn_mask"]
    for name, t in (("query", q), ("key", k), ("value", v)):
        if not dtypes.is_float(t.dtype):
            return f"{name} is {t.dtype}; attention is floating point only"
        if t.ndim not in (3, 4) or t.ndim != q.ndim:
            return f"q, k, v must all be 3-d or 4-d, got {list(q.shape)}, {list(k.shape)}, {list(v.shape)}"
    if a.get("dropout_p", 0.0):
        return f"dropout_p={a['dropout_p']} is not supported (inference only)"
    if max(q.shape[-1], v.shape[-1]) > MAX_HEAD_DIM and a.get("is_causal"):
        return f"causal attention with head dims over {MAX_HEAD_DIM} ({q.shape[-1]}, {v.shape[-1]}) is not supported"
    if k.shape[-1] != q.shape[-1] or k.shape[-2] != v.shape[-2]:
        return f"key {list(k.shape)} does not match query {list(q.shape)} and value {list(v.shape)}"
    if q.shape[-3] % k.shape[-3] or (k.shape[-3] != q.shape[-3] and not a.get("enable_gqa", True)):
        return f"{k.shape[-3]} key heads for {q.shape[-3]} query heads need enable_gqa and a divisor"
    if q.ndim == 4 and (k.shape[0] not in (1, q.shape[0]) or v.shape[0] not in (1, q.shape[0])):
        return f"batch {q.shape[0]} against key/value batches {k.shape[0]}, {v.shape[0]}"
    if mask is not None:
        want = (*q.shape[:-1], k.shape[-2])
        if not dtypes.is_float(mask.dtype) and mask.dtype != "bool":
            return f"attn_mask is {mask.dtype}; floating point (additive) or bool masks are supported"
        if mask.ndim > len(want) or any(m not in (1, w) for m, w in zip(mask.shape[::-1], want[::-1],
                                                                        strict=False)):
            return f"attn_mask {list(mask.shape)} does not broadcast to the scores {list(want)}"
    return None


def _scale(node: NodeView) -> float:
    scale = node.args.get("scale")
    return node.args["query"].shape[-1] ** -0.5 if scale is None else float(scale)


@register("aten.scaled_dot_product_attention.default", check=_check, dynamic=True,
          half=("query", "key", "value"))
def scaled_dot_product_attention(ctx: Builder, node: NodeView) -> Tensor:
    a = node.args
    return attention(ctx, a["query"], a["key"], a["value"], a["attn_mask"], scale=_scale(node),
                     causal=bool(a["is_causal"]), safe=True, key_limit=a.get("key_limit"),
                     out_dtype=node.storage())


def _check_flash_for_cpu(node: NodeView) -> str | None:
    q, k = node.args["query"], node.args["key"]
    if 1 in node.outputs_read and k.shape[-3] != q.shape[-3]:
        return f"the logsumexp of grouped-query attention ({k.shape[-3]} key heads for {q.shape[-3]}) is not supported"
    if 1 in node.outputs_read and node.args["is_causal"] and not all(isinstance(n, int) for n in q.shape[-2:]):
        return "the logsumexp of causal attention over dynamic sequence lengths is not supported"
    return _check(node)


@register("aten._scaled_dot_product_flash_attention_for_cpu.default", check=_check_flash_for_cpu, dynamic=True)
def flash_attention_for_cpu(ctx: Builder, node: NodeView) -> list[Tensor | None]:
    """sdpa in the form torch.export records on CPU: the output, and (where the graph reads it) each query
    row's logsumexp of its scaled, masked scores, [B, H, S_q]. Not torch's decomposition, which returns the
    attention weights in the logsumexp's place."""
    a = node.args
    q, k, mask, scale, causal = a["query"], a["key"], a["attn_mask"], _scale(node), bool(a["is_causal"])
    out = attention(ctx, q, k, a["value"], mask, scale=scale, causal=causal, safe=True)
    if 1 not in node.outputs_read:
        return [out, None]
    scores = _scores(ctx, q, k, mask, scale=scale)
    bh, sq, skv = scores.shape
    if causal:  # the top-left triangle: query i sees keys 0..i
        keep = ctx.constant(f"{node.name}_causal", np.tril(np.ones((sq, skv), bool)), "bool")
        masked = ctx.constant("-inf", np.full((), -np.inf, np.float32))
        scores = elementwise.emit(ctx, "where", [keep, scores, masked], (bh, sq, skv), compute="float32")
    lse = reduce.reduce(ctx, "logsumexp", scores, [2], (bh, sq))[0]
    return [out, layout.view(lse, node.outputs[1].shape)]


@register("webgpu.eager_attention.default", check=_check, dynamic=True, half=("query", "key", "value"))
def eager_attention(ctx: Builder, node: NodeView) -> Tensor:
    """softmax(scale · q @ kᵀ + mask, -1) @ v as the eager form computes it (made by attention_fusion.py)."""
    a = node.args
    return attention(ctx, a["query"], a["key"], a["value"], a["attn_mask"], scale=a["scale"], causal=False,
                     safe=False, key_limit=a.get("key_limit"), out_dtype=node.storage())


def cases() -> list[OpCase]:
    import torch

    sdpa = torch.nn.functional.scaled_dot_product_attention
    flash_cpu = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    g = ("gemm",)

    def bool_mask(shape, seed=0, masked_row=None):
        def make():
            m = torch.rand(shape, generator=torch.Generator().manual_seed(seed)) > 0.3
            if masked_row is not None:
                m[..., masked_row, :] = False
            return m
        return make

    def padding_mask():
        m = torch.zeros(2, 1, 1, 41)
        m[1, ..., 29:] = torch.finfo(torch.float32).min
        return m

    def window(q, k, v):  # DaViT window attention: scale q, q @ kᵀ, softmax, @ v
        return torch.softmax((q * 32 ** -0.5) @ k.transpose(-2, -1), dim=-1) @ v

    def channel(q, k, v):  # DaViT channel attention: the scores are channels × channels, summed over tokens
        attn = torch.softmax((q * 49 ** -0.5).transpose(-1, -2) @ k, dim=-1)
        return (attn @ v.transpose(-1, -2)).transpose(-1, -2)

    def hf_eager(q, k, v, mask):  # transformers' eager_attention_forward
        w = torch.matmul(q, k.transpose(2, 3)) * 0.125 + mask
        return torch.matmul(torch.softmax(w, dim=-1), v).transpose(1, 2).contiguous()

    def position(p):
        return lambda: torch.tensor([p])

    def live(keys, rows, pos):  # a static cache's causal mask: row i sees keys 0 ..= pos + i
        return torch.arange(keys).view(1, 1, 1, keys) <= (pos + torch.arange(rows)).view(1, 1, rows, 1)

    def sdpa_live(q, k, v, pos):  # what transformers exports over a StaticCache (cache_attention.py)
        return sdpa(q, k, v, attn_mask=live(k.shape[2], q.shape[2], pos).expand(q.shape[0], -1, -1, -1))

    def eager_live(q, k, v, pos):  # BART's form: the mask as 0 / -inf added to the scores
        mask = torch.where(live(k.shape[2], q.shape[2], pos), 0.0, float("-inf"))
        return hf_eager(q, k, v, mask)

    def gqa_live(q, k, v, pos):  # repeat_kv's copies of the cache, then sdpa
        repeat = [t[:, :, None].expand(1, 2, 2, *t.shape[2:]).reshape(1, 4, *t.shape[2:]) for t in (k, v)]
        return sdpa_live(q, *repeat, pos)

    return [
        # The CPU flash form torch.export records, its logsumexp read too ([B, H, S_q]): plain, causal, masked.
        OpCase("flash_attention_for_cpu_logsumexp", lambda q, k, v, m: (
            flash_cpu(q, k, v), flash_cpu(q, k, v, is_causal=True, scale=0.2), flash_cpu(q, k, v, attn_mask=m)),
               [(2, 3, 37, 19), (2, 3, 41, 19), (2, 3, 41, 19), (2, 1, 37, 41)]),
        OpCase("flash_attention_for_cpu_output_only", lambda q, k, v: flash_cpu(q, k, v)[0] * 2.0,
               [(1, 5, 13, 32), (1, 5, 13, 32), (1, 5, 13, 32)]),
        OpCase("sdpa_cross_sq_ne_skv", lambda q, k, v: sdpa(q, k, v), [(2, 3, 37, 64), (2, 3, 41, 64),
                                                                         (2, 3, 41, 64)], marks=g),
        OpCase("sdpa_causal_two_query_tiles", lambda q, k, v: sdpa(q, k, v, is_causal=True),
               [(1, 2, 67, 32), (1, 2, 67, 32), (1, 2, 67, 32)], marks=g),
        OpCase("sdpa_additive_padding_mask", lambda q, k, v, m: sdpa(q, k, v, attn_mask=m),
               [(2, 3, 37, 32), (2, 3, 41, 32), (2, 3, 41, 32), padding_mask], marks=g),
        OpCase("sdpa_bool_mask_fully_masked_row", lambda q, k, v, m: sdpa(q, k, v, attn_mask=m),
               [(2, 2, 13, 16), (2, 2, 19, 16), (2, 2, 19, 16), bool_mask((13, 19), masked_row=4)], marks=g),
        OpCase("sdpa_gqa_scale_dv_ne_d", lambda q, k, v: sdpa(q, k, v, scale=0.3, enable_gqa=True),
               [(1, 4, 11, 24), (1, 2, 7, 24), (1, 2, 7, 40)], marks=g),
        OpCase("sdpa_decode_step_transposed_heads", lambda q, k, v: sdpa(q.transpose(1, 2), k.transpose(1, 2),
                                                                           v.transpose(1, 2)),
               [(2, 1, 4, 16), (2, 67, 4, 16), (2, 67, 4, 16)], marks=g),
        OpCase("sdpa_decode_step_bool_mask_587_keys", lambda q, k, v, m: sdpa(q, k, v, attn_mask=m),
               [(1, 12, 1, 64), (1, 12, 587, 64), (1, 12, 587, 64), bool_mask((1, 1, 587), masked_row=None)],
               marks=g),
        # Decode steps run the split kernel (keys in chunks across workgroups, then a merge): splits that end
        # part-way, a key limit from a position (the live prefix) that ends inside a chunk, splits past it
        # (which neither write nor merge).
        OpCase("sdpa_decode_1031_keys_additive_mask", lambda q, k, v, m: sdpa(q, k, v, attn_mask=m),
               [(1, 3, 1, 40), (1, 3, 1031, 40), (1, 3, 1031, 24), (1, 1, 1, 1031)], marks=g),
        OpCase("sdpa_decode_live_prefix_67_of_97_keys", sdpa_live, [(1, 4, 1, 64), (1, 4, 97, 64), (1, 4, 97, 64),
                                                                    position(66)], marks=g),
        OpCase("sdpa_decode_live_prefix_21_of_211_keys", sdpa_live, [(1, 4, 1, 64), (1, 4, 211, 64),
                                                                     (1, 4, 211, 64), position(20)], marks=g),
        OpCase("eager_decode_live_prefix_bart_mask", eager_live, [(1, 4, 1, 64), (1, 4, 37, 64), (1, 4, 37, 64),
                                                                  position(0)], marks=g),
        OpCase("sdpa_decode_gqa_repeat_kv_live_prefix", gqa_live, [(1, 4, 1, 16), (1, 2, 53, 16), (1, 2, 53, 16),
                                                                   position(28)], marks=g),
        OpCase("sdpa_prefill_live_prefix_11_rows_from_29", sdpa_live, [(1, 2, 11, 32), (1, 2, 41, 32),
                                                                       (1, 2, 41, 32), position(29)], marks=g),
        OpCase("sdpa_3d_head_dim_200", lambda q, k, v: sdpa(q, k, v), [(3, 9, 200), (3, 21, 200), (3, 21, 200)],
               marks=g),
        OpCase("eager_hf_attention_with_mask", lambda q, k, v, m: hf_eager(q, k, v, m),
               [(2, 4, 41, 64), (2, 4, 41, 64), (2, 4, 41, 64), padding_mask], marks=g),
        OpCase("eager_davit_window_49_tokens", window, [(4, 3, 49, 32), (4, 3, 49, 32), (4, 3, 49, 32)], marks=g),
        OpCase("eager_davit_channel_sq_eq_head_dim", channel, [(2, 3, 49, 16), (2, 3, 49, 16), (2, 3, 49, 16)],
               marks=g),
        # Head dims beyond the fused kernel (DaViT channel attention as sdpa sees it): the unfused path.
        OpCase("sdpa_unfused_head_dim_577_bool_mask", lambda q, k, v, m: sdpa(q, k, v, attn_mask=m),
               [(1, 3, 17, 577), (1, 3, 17, 577), (1, 3, 17, 577), bool_mask((17, 17), masked_row=2)], marks=g),
        OpCase("sdpa_unfused_head_dim_1031_additive", lambda q, k, v, m: sdpa(q, k, v, attn_mask=m),
               [(2, 2, 13, 1031), (2, 2, 11, 1031), (2, 2, 11, 300), (2, 1, 13, 11)], marks=g),
    ]
