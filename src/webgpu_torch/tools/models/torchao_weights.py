"""torchao's weight-only integer quantization of chosen modules, as the model recipes' `--quantize` applies it
(the compiled programs keep such weights packed: docs/design.md, "Quantized weights")."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch


def quantize_weights(parts: list[tuple[torch.nn.Module, Callable | None]], bits: int, group_size: int) -> None:
    """IntxWeightOnlyConfig (symmetric, `bits`, groups of `group_size` along each row), in place, over each
    (module, filter_fn) of `parts` in order: a filter of None takes the module's Linears, as torchao does."""
    try:
        from torchao.quantization import IntxWeightOnlyConfig, quantize_
        from torchao.quantization.granularity import PerGroup
    except ImportError as e:
        raise ImportError(f"quantizing with torchao needs torchao ({e}): pip install torchao==0.18.0, or compile "
                          "the float model with weights='int4' (round to nearest, no torchao)") from None

    config = IntxWeightOnlyConfig(weight_dtype=getattr(torch, f"int{bits}"), granularity=PerGroup(group_size))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchao's deprecation notices, once per call
        for module, keep in parts:
            quantize_(module, config, filter_fn=keep)
