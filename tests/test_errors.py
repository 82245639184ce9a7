"""What users see when something is wrong: unsupported nodes, bad inputs, no such engine."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import webgpu_torch
from webgpu_torch.compiler.ops import register
from webgpu_torch.format import dtypes
from webgpu_torch.format.errors import DeviceError, UnsupportedError

pytestmark = pytest.mark.host


class Unsupported(torch.nn.Module):
    def forward(self, x):
        y = torch.histc(x, bins=7)
        return torch.relu(y).sum() + torch.igamma(x.abs(), x.abs() + 1.0)


def test_unsupported_nodes_are_all_named_with_op_shapes_and_reason():
    with pytest.raises(UnsupportedError) as info:
        webgpu_torch.compile_module(Unsupported(), (torch.randn(5, 37),))
    msg = str(info.value)
    assert "2 unsupported nodes" in msg
    assert "node 'histc' (aten.histc.default)" in msg
    assert "float32[5, 37]" in msg and "bins=7" in msg
    assert "reason: no WebGPU kernel for aten.histc.default" in msg
    assert "aten.igamma.default" in msg
    assert "test_errors.py" in msg  # the user's source line


def test_unsupported_dtype_names_the_dtype():
    with pytest.raises(UnsupportedError, match="float64"):
        webgpu_torch.compile_module(torch.nn.Linear(3, 4).double(), (torch.randn(2, 3, dtype=torch.float64),))


def test_dynamic_sizes_reaching_an_op_without_support_are_refused_at_compile_time():
    dim = torch.export.Dim("batch", min=2, max=64)
    with pytest.raises(UnsupportedError, match=r"convolution.*\n.*\n.*does not take dynamic sizes yet \(s\d+\)"):
        webgpu_torch.compile_module(torch.nn.Conv2d(3, 4, 3), (torch.randn(5, 3, 9, 9),), dynamic_shapes=({0: dim},))


def test_bad_inputs_at_call_time():
    session = webgpu_torch.compile_module(torch.nn.Linear(3, 4), (torch.randn(5, 3),))
    with pytest.raises(ValueError, match=r"expected shape \[5, 3\], got \[5, 4\]"):
        session(torch.randn(5, 4))
    with pytest.raises(TypeError, match="expected dtype float32, got float64"):
        session(np.zeros((5, 3)))
    with pytest.raises(TypeError, match="expected a tuple of 1 items"):
        session(torch.randn(5, 3), torch.randn(5, 3))


def test_int64_that_does_not_fit_in_int32_is_refused():
    with pytest.raises(ValueError, match=r"must fit in int32.*range is \[0, 4294967296\]"):
        dtypes.to_device(np.array([0, 2**32]), "int64", "input 'ids'")


def test_unknown_engine_and_unsupported_gemm_variant():
    with pytest.raises(DeviceError, match="unknown WebGPU engine 'metal'"):
        webgpu_torch.device_info("metal")
    ep = torch.export.export(torch.nn.Linear(3, 4), (torch.randn(5, 3),))
    with pytest.raises(ValueError, match="gemm='huge'"):
        webgpu_torch.compile(ep, gemm="huge")


def test_unknown_compile_options_are_refused():
    ep = torch.export.export(torch.nn.Linear(3, 4), (torch.randn(5, 3),))
    with pytest.raises(TypeError, match="unknown option 'conv_kernel'; options: attention, contiguous_outputs, "
                                        "conv, gemm, group_size, max_binding_size, norm_chunks, precision, "
                                        "scatter, weights"):
        webgpu_torch.compile(ep, conv_kernel="direct")


def test_registering_an_overload_twice_is_an_error():
    with pytest.raises(RuntimeError, match="registered twice"):
        register("aten.mm.default")(lambda ctx, node: None)


@pytest.mark.parametrize(("fn", "inputs", "reason"), [
    (lambda x: torch.histc(x, 5), [torch.randn(5, 7)], "no WebGPU kernel for aten.histc.default"),
    (lambda x, i, j: x[i, :, j], [torch.randn(5, 6, 7), torch.tensor([1, 2]), torch.tensor([0, 3])],
     "index tensors separated by full slices"),
    (lambda q: torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.5),
     [torch.randn(1, 2, 5, 8)], "dropout_p=0.5 is not supported"),
    (lambda q: torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True), [torch.randn(1, 1, 5, 300)],
     "causal attention with head dims over 256"),
    (lambda x: torch.cdist(x, x, p=1.0), [torch.randn(*[1] * 9, 3, 4)], "cdist with 9 batch dims"),
])
def test_unsupported_forms_are_refused_with_their_reason(fn, inputs, reason):
    from .helpers import Fn

    ep = torch.export.export(Fn(fn), tuple(inputs))
    with pytest.raises(UnsupportedError, match=reason):
        webgpu_torch.compile(ep)


def test_a_tensor_over_the_binding_limit_that_cannot_be_split_is_refused():
    class Big(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) * 2.0

    with pytest.raises(UnsupportedError, match=r"binds .* of 400,000 bytes; the binding limit is 65,536"):
        webgpu_torch.compile_module(Big(), (torch.randn(100, 1000),), max_binding_size=65536)


def test_token_inputs_do_not_hide_the_unsupported_nodes():
    """linalg.inv checks its result with an effectful op, so the decomposed graph threads a token through it."""
    ep = torch.export.export(Unsupported2(), (torch.randn(4, 4),))
    assert any(s.kind.name == "TOKEN" for s in ep.run_decompositions().graph_signature.input_specs)
    with pytest.raises(UnsupportedError) as info:
        webgpu_torch.compile(ep)
    msg = str(info.value)
    assert "3 unsupported nodes" in msg and "(aten.linalg_inv_ex.default)" in msg and "(aten.rand_like.default)" in msg
    assert "(aten._linalg_check_errors.default)" in msg and "raises, prints or mutates state" in msg


class Unsupported2(torch.nn.Module):
    def forward(self, x):
        return torch.linalg.inv(x) + torch.rand_like(x)


def test_a_float64_model_is_refused_in_one_line():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).double()
    with pytest.raises(UnsupportedError) as info:
        webgpu_torch.compile_module(model, (torch.randn(2, 3, dtype=torch.float64),))
    assert info.value.problems == [info.value.problems[0]]
    assert "float64" in str(info.value) and "model.float()" in str(info.value)


def test_a_sparse_input_is_refused_in_one_line():
    from .helpers import Fn

    ep = torch.export.export(Fn(lambda x: x + x), (torch.randn(3, 3).to_sparse(),))
    with pytest.raises(UnsupportedError, match="1 problem\n  input 'args_0' is a sparse tensor"):
        webgpu_torch.compile(ep)


def test_weights_without_values_are_refused_in_one_line():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 5)).to("meta")
    ep = torch.export.export(model, (torch.randn(2, 3, device="meta"),))
    with pytest.raises(UnsupportedError, match=r"1 problem\n  constants .* and 1 more are on the meta device"):
        webgpu_torch.compile(ep)


def test_batch_norm_in_training_mode_says_to_call_eval():
    with pytest.raises(UnsupportedError, match=r"running_mean.* in place.*call model.eval\(\)"):
        webgpu_torch.compile_module(torch.nn.BatchNorm1d(3).train(), (torch.randn(4, 3),))


def test_a_lowering_that_fails_is_refused_naming_its_node(monkeypatch):
    from dataclasses import replace

    from webgpu_torch.compiler.ops import OPS

    def broken(ctx, node):
        raise IndexError("tuple index out of range")

    monkeypatch.setitem(OPS, "aten.exp.default", replace(OPS["aten.exp.default"], lower=broken))
    with pytest.raises(UnsupportedError, match=r"node 'exp' \(aten.exp.default\)(.|\n)*internal error in the lowering "
                                               r"of aten.exp.default \(IndexError: tuple index out of range\)"):
        webgpu_torch.compile_module(Exp(), (torch.randn(3),))


class Exp(torch.nn.Module):
    def forward(self, x):
        return torch.exp(x)


@pytest.mark.parametrize("make, message", [
    (lambda: torch.randn(5, 3, device="meta"), "meta device"),
    (lambda: torch.randn(5, 3).to_sparse(), "sparse_coo tensor"),
    (lambda: torch.randn(5, 3).bfloat16(), "expected dtype float32, got bfloat16"),
])
def test_inputs_without_dense_values_are_refused_at_call_time(make, message):
    session = webgpu_torch.compile_module(torch.nn.Linear(3, 4), (torch.randn(5, 3),))
    with pytest.raises(webgpu_torch.WebGPUTorchError, match=message):
        session(make())
