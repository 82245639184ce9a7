"""A transformers `StaticCache` over a module's own buffers, for exporting a decoder step whose KV cache is the
program's state (docs/artifact.md, State).

`CacheBuffers` registers each layer's keys and values as zero buffers of the cache's full length; `cache()`
builds, inside the forward being exported, a StaticCache whose layers are those buffers (so torch.export sees
transformers' own `index_copy_` into them as buffer mutations) with the step's position as the count of tokens
already cached. transformers' `TorchExportableModuleWithStaticCache` registers the cache's tensors too, but
builds its StaticCache at construction: non-strict export swaps the module's buffers for its own and the
cache goes on writing the originals (torch 2.13 with transformers 5.17: no mutation is exported), so the cache
is built per forward here instead.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import StaticCache


class CacheBuffers(torch.nn.Module):
    """Keys and values of `layers` layers, each [batch, heads, length, head_dim] of the model's `dtype` (what
    its attention reads), zero (a program's state starts so); batch: 1, or the beams of a beam search."""

    def __init__(self, config, layers: int, heads: int, head_dim: int, length: int, batch: int = 1,
                 dtype: torch.dtype = torch.float32):
        super().__init__()
        self.config, self.layers, self.length = config, layers, length
        shape = (batch, heads, length, head_dim)
        for i in range(layers):
            self.register_buffer(f"key_cache_{i}", torch.zeros(shape, dtype=dtype), persistent=False)
            self.register_buffer(f"value_cache_{i}", torch.zeros(shape, dtype=dtype), persistent=False)

    def cache(self, position: torch.Tensor) -> StaticCache:
        """A StaticCache over these buffers holding `position` tokens (a 1-element int64 tensor): the call's
        keys and values go to rows position, position + 1, …, and its token i sees rows 0 ..= position + i."""
        cache = StaticCache(config=self.config, max_cache_len=self.length)
        for i, layer in enumerate(cache.layers[:self.layers]):
            keys, values = getattr(self, f"key_cache_{i}"), getattr(self, f"value_cache_{i}")
            layer.keys, layer.values = keys, values
            layer.dtype, layer.device = keys.dtype, keys.device
            layer.max_batch_size, layer.num_heads = keys.shape[0], keys.shape[1]
            layer.k_head_dim, layer.v_head_dim = keys.shape[-1], values.shape[-1]
            layer.cumulative_length = position.reshape(()).clone()
            layer.is_initialized = True
        return cache
