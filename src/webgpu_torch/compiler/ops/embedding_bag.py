"""embedding_bag: each bag's gathered rows reduced (sum, mean or max) in one dispatch, without materialising
the gathered rows; per_sample_weights scale them (sum mode, as torch allows).

Export gives `_embedding_bag_forward_only` (or `_embedding_bag`) over 1-d indices and offsets: a 2-d input
of fixed-length bags arrives with the offsets torch made for it, a folded constant. Only the bags (output 0)
are computed; the other outputs (offset2bag, bag sizes, max indices) serve the backward pass.
"""

from __future__ import annotations

from ...format import dtypes
from ...format.program import Tensor
from ..builder import Builder, KernelSpec
from .registry import NodeView, OpCase, register

FILE = "embedding_bag.wgsl"
MODES = ("sum", "mean", "max")  # torch's mode numbers


def _check(node: NodeView) -> str | None:
    a = node.args
    if node.outputs_read - {0}:
        return "only the bags (output 0) of embedding_bag are supported, not offset2bag, bag sizes or max indices"
    if not dtypes.is_float(a["weight"].dtype) or a["weight"].ndim != 2:
        return f"embedding_bag needs a 2-d floating-point weight, got {a['weight'].dtype}{list(a['weight'].shape)}"
    if a["indices"].ndim != 1 or a["offsets"].ndim != 1:
        return "embedding_bag needs 1-d indices and offsets"
    if a["mode"] not in range(len(MODES)):
        return f"embedding_bag mode {a['mode']} is not one of {MODES}"
    return None


@register("aten._embedding_bag.default", "aten._embedding_bag_forward_only.default", check=_check)
def embedding_bag(ctx: Builder, node: NodeView) -> list[Tensor | None]:
    a = node.args
    weight, indices, offsets, psw = a["weight"], a["indices"], a["offsets"], a["per_sample_weights"]
    out = ctx.new(node.outputs[0].shape)
    indices = ctx.walkable(indices, indices.shape[0])  # the kernel bounds a bag by their length (bounded.wgsl)
    params = {"numel": out.numel, "dim": weight.shape[1], "rows": weight.shape[0], "count": indices.shape[0],
              "n_offsets": offsets.shape[0], "padding_idx": a["padding_idx"], "weight_offset": weight.offset,
              "index_offset": indices.offset, "offsets_offset": offsets.offset,
              "psw_offset": 0 if psw is None else psw.offset, "weight_strides": weight.strides,
              "index_stride": indices.strides[0], "offsets_stride": offsets.strides[0],
              "psw_stride": 0 if psw is None else psw.strides[0]}
    mode = MODES[a["mode"]]
    spec = KernelSpec.of(FILE, f"embedding_bag[{mode}{',weighted' * (psw is not None)}]",
                         overrides={"MODE": a["mode"], "HAS_WEIGHTS": psw is not None})
    ctx.dispatch(spec, [weight, indices, offsets, psw or weight, out], params, elements=out.numel)
    return [out, None, None, None]


def cases() -> list[OpCase]:
    import torch

    F = torch.nn.functional

    def ints(shape, hi, seed=0):
        return lambda: torch.randint(0, hi, shape, generator=torch.Generator().manual_seed(seed))

    def offsets():  # 13 bags over 89 positions, some empty
        return torch.tensor([0, 0, 3, 11, 11, 12, 30, 41, 41, 60, 61, 79, 88])

    return [
        OpCase("embedding_bag_modes_with_offsets", lambda w, i, o: tuple(
            F.embedding_bag(i, w, o, mode=m) for m in ("sum", "mean", "max")),
            [(1031, 37), ints((89,), 1031), offsets]),
        OpCase("embedding_bag_2d_input_and_transposed_weight", lambda w, i: (
            F.embedding_bag(i, w.t(), mode="mean"), F.embedding_bag(i, w.t(), mode="max")),
            [(37, 257), ints((7, 13), 257)]),
        OpCase("embedding_bag_per_sample_weights_last_offset_padding", lambda w, i, o, s: (
            F.embedding_bag(i, w, torch.cat([o, torch.tensor([89])]), mode="sum", per_sample_weights=s,
                            include_last_offset=True),
            F.embedding_bag(i, w, o, mode="mean", padding_idx=5), F.embedding_bag(i, w, o, mode="max",
                                                                                   padding_idx=5)),
            [(41, 37), lambda: torch.randint(0, 41, (89,), generator=torch.Generator().manual_seed(3)) % 7 + 2,
             offsets, (89,)]),
        # A trainable table (export's graph then keeps the bags' bookkeeping outputs: _embedding_bag).
        OpCase("embedding_bag_training_overload", lambda w, i, o: torch.ops.aten._embedding_bag.default(w, i, o)[0],
               [(1031, 37), ints((89,), 1031), offsets]),
        OpCase("embedding_bag_module", torch.nn.EmbeddingBag.from_pretrained(
            torch.randn(1031, 37, generator=torch.Generator().manual_seed(5)), mode="max"),
            [ints((5, 11), 1031, seed=4)]),
    ]
