"""Not a family: the core ATen overloads refused by a policy of the compiler as a whole, each with the reason the
compile-time error gives. A refusal that concerns one family's kernels is declared in that family's module
instead (batch norm in training mode, in batch_norm.py). The frontend keeps refused overloads out of
decomposition, so a node of one is named with its reason rather than compiled piecemeal.
"""

from __future__ import annotations

from .registry import refuse

refuse("aten.convolution_backward.default", "aten.avg_pool2d_backward.default",
       "aten._adaptive_avg_pool2d_backward.default", "aten.max_pool2d_with_indices_backward.default",
       "aten.embedding_dense_backward.default", "aten.native_layer_norm_backward.default",
       "aten.native_group_norm_backward.default", inference=False,
       reason="a gradient op, for training only: webgpu_torch compiles inference graphs (export the model's "
              "forward in eval mode)")

refuse("aten.rand.default", "aten.randn.default", "aten.randperm.default", "aten.rand_like.default",
       "aten.randn_like.default", "aten.randint.default", "aten.randint.low", "aten.randint_like.default",
       "aten.bernoulli.default", "aten.bernoulli.p", "aten.normal.Tensor_Tensor", "aten.normal.Tensor_float",
       "aten.normal.float_Tensor", "aten.normal.float_float", "aten.multinomial.default",
       reason="random number generation: a compiled program has no random state to match torch's generator; make "
              "the random tensor outside and pass it in as an input")

refuse("aten._fft_r2c.default", "aten._fft_c2r.default",
       reason="an FFT has a complex input or output, and WebGPU has no complex dtype")

# At compile time a nonzero node meets lowering's rule for every op of data-dependent size first, which says
# the same and names the size (u0).
refuse("aten.nonzero.default",
       reason="output size depends on the data (the count of nonzero elements), and WebGPU programs size every "
              "tensor at compile time: use a mask instead (torch.where)")

refuse("aten._local_scalar_dense.default",
       reason="reads a tensor's value on the host (.item(), int(t), Python control flow on a tensor), which a "
              "compiled program cannot: keep the value a tensor (torch.where for a branch)")

refuse("aten.atan2.out", inference=False,
       reason="an out= form: exported graphs are functional and hold aten.atan2.default instead")

refuse("aten.resize_.default", inference=False,
       reason="resizes a tensor in place: exported graphs are functional, and WebGPU programs size every tensor "
              "at compile time")
