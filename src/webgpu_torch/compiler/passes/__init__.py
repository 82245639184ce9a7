"""The passes between the frontend and lowering, in the order they run (`PIPELINE`). Each takes the plain graph
(graph.py) and the compile options and returns the graph; a rewrite declines, leaving the ops as they are,
wherever a match is not exact.
"""

from __future__ import annotations

from collections.abc import Callable

from ..graph import Graph
from ..options import Options
from . import (
    attention_fusion,
    cache_attention,
    common_nodes,
    conv_folding,
    fusion,
    gated_linears,
    gated_products,
    half_storage,
    linear_merging,
    norm_fusion,
    norm_prologues,
    quantized_weights,
    rope_fusion,
    rope_pairs,
)

Pass = Callable[[Graph, Options], Graph]

PIPELINE: tuple[Pass, ...] = (
    # First: the dequantizations of integer weights become one node over packed codes before any rewrite that
    # matches float constants (a conv's weight, a linear's) meets their cast chains.
    quantized_weights.rewrite,
    # Batch norms and zero pads into their convs, before fusion.py: a norm or pad between a conv and its
    # activation or residual add would keep those out of the conv's kernel.
    conv_folding.fold,
    # The eager bmm-softmax-bmm chains into one node, while their views and clones are as export wrote them.
    attention_fusion.fuse_attention,
    # After attention_fusion: it reads the mask and the key/value operands of every attention node, fused or sdpa.
    cache_attention.rewrite,
    # The pattern matchers run before fusion.py, which would fold the adds and activations they match into
    # the nodes producing their inputs.
    norm_fusion.fuse_rms_norms,
    rope_fusion.fuse_rotary,
    # Before linear_merging.py, which leaves out a gate projection while an activation reads it, and before
    # fusion.py, which would fold that activation into the gate's GEMM.
    gated_products.fuse_gates,
    # Before fusion.py: it leaves out the linears whose add or activation fusion.py then folds in.
    linear_merging.merge_linears,
    # After linear_merging.py, which makes the queries and keys heads of one tensor.
    rope_pairs.pair_ropes,
    # After linear_merging.py, so that a norm read by q, k and v (or gate and up) has one linear to fold into.
    norm_prologues.fuse_norms,
    # Epilogues fold into the producers every rewrite before has settled.
    fusion.fuse_epilogues,
    # After fusion.py, which then has left the gated products with no epilogue (what the GEMV can take) and
    # their linears with none (read by slices alone).
    gated_linears.fold_gates,
    # Over the final nodes (merging earlier could give a value the second reader a pattern match refuses).
    common_nodes.merge_common,
    # After every rewrite: the f16 storage of each output is chosen over the final nodes and all their readers.
    half_storage.plan,
)


def run(graph: Graph, options: Options) -> Graph:
    for rewrite in PIPELINE:
        graph = rewrite(graph, options)
    return graph
