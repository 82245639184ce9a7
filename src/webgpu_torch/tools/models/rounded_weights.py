"""The float model that a program compiled with weights="float16" | "int8" | "int4" computes: a reference that
compares like with like, its weights rounded as the compiler stores them."""

from __future__ import annotations

import torch

from ...format import packing


def round_weights(model: torch.nn.Module, weights: str, group_size: int = 32) -> None:
    """In place, every float32 Linear weight and embedding table of `model` replaced by the values a program
    compiled with `weights` ("float16" | "int8" | "int4") and `group_size` reads from it: rounded to float16;
    or packing.quantize's round to nearest, int8 one group per row, int4 groups of `group_size` along each row,
    then packing.dequantize. Those are the weights the compiler stores so in the model recipes (their rows are
    multiples of 4 long, so the kernels decode them packed); other weights are left as they are, as the compiler
    leaves them."""
    bits = {"float16": 16, "int8": 8, "int4": 4}[weights]
    for module in model.modules():
        if isinstance(module, torch.nn.Linear | torch.nn.Embedding) and type(module.weight.data) is torch.Tensor \
                and module.weight.dtype == torch.float32:
            w = module.weight.detach()
            if bits == 16:
                module.weight.data = w.half().float()
                continue
            w = w.numpy()
            rounded = packing.dequantize(*packing.quantize(w, bits, w.shape[1] if bits == 8 else group_size))
            module.weight.data = torch.from_numpy(rounded)
