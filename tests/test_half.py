"""float16 and bfloat16 models: inputs and outputs in the model's dtype, activations computed in float32 on the
device, 16-bit weights kept in 16 bits in the artifact (float16 through shader-f16 with a float32 fallback,
bfloat16 widened in the kernels), casts that round as torch rounds. Compared with float64 runs of the same
16-bit weights and inputs (tests/helpers.py's half tolerances), and with eager PyTorch in the model's dtype."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.utils._pytree as pytree

import webgpu_torch
from webgpu_torch.compiler.ops import all_cases, gemm
from webgpu_torch.compiler.wgsl import SUBGROUPS
from webgpu_torch.format import dtypes, tree
from webgpu_torch.format.errors import DeviceError, InputTypeError
from webgpu_torch.runtime import fit, tuning
from webgpu_torch.runtime.engine import get_engine
from webgpu_torch.runtime.session import Session

from . import corpus
from .helpers import TOLERANCE, Fn, assert_close, reference, seeded

HALF = [torch.float16, torch.bfloat16]
F = torch.nn.functional


def name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def kernels(session) -> list[str]:
    return [session.program.kernels[d.kernel].name for d in session.program.dispatches]


def check_model(model: torch.nn.Module, args: tuple, dtype: torch.dtype, poisoned, kwargs=None, **options):
    """Compile `model` (already in `dtype`), run it, and compare every output with the float64 run of the
    same weights (half tolerance) and with eager in `dtype` (which rounds after every op: within its own
    error, measured here, plus ours). Returns the session and its outputs."""
    kwargs = kwargs or {}
    session = webgpu_torch.compile_module(model, args, kwargs, **options)
    out = poisoned(session, *args, **kwargs)
    got = tree.flatten(session.program.output_tree, out, "output")
    with torch.no_grad():
        eager = pytree.tree_leaves(model(*args, **kwargs))
        want = pytree.tree_leaves(reference(lambda *a: model.double()(*a[:len(args)], **kwargs), list(args)))
    model.to(dtype)
    for i, (g, e, w) in enumerate(zip(got, eager, want, strict=True)):
        assert g.dtype == e.dtype, f"output {i}: {g.dtype}, eager gives {e.dtype}"
        if not g.is_floating_point():
            assert torch.equal(g, e), f"output {i}"
            continue
        tol = TOLERANCE[name(g.dtype)]
        assert_close(g.float(), w, tol, what=f"output {i} vs float64")
        eager_error = assert_close(e.float(), w, 1.0, what=f"eager output {i} vs float64")
        assert_close(g.float(), e.float().double(), eager_error + tol, what=f"output {i} vs eager")
    return session, out


# -- casts -----------------------------------------------------------------------------------------------------

def _casts(x, i):
    return (x.half(), x.bfloat16(), x.half().float(), x.bfloat16().half(), x.half().bfloat16(), i.half(),
            i.bfloat16(), (x > 0).half())


def test_casts_round_to_nearest_even_as_torch_does(poisoned):
    """Every float32 binade f16 and bf16 meet (subnormals, ties, overflow to inf), NaN and inf, and integers
    beyond 2048 (which float16 rounds): bit for bit."""
    gen = seeded("casts")
    x = torch.randn(4099, generator=gen) * torch.logspace(-10, 6, 4099)
    ties = torch.tensor([2049.0, 2051.0, 65519.0, 65520.0, 65504.0, 2.0**-25, 3 * 2.0**-26, 2.0**-24 * 1.5,
                         1 + 2.0**-8, 1 + 3 * 2.0**-8, 3.4e38, -3.4e38, float("nan"), float("inf"), -0.0, 0.0])
    x[:len(ties)] = ties
    i = torch.randint(-70000, 70000, (257,), generator=gen)
    session = webgpu_torch.compile_module(Fn(_casts), (x, i))
    for k, (got, want) in enumerate(zip(poisoned(session, x, i), _casts(x, i), strict=True)):
        assert got.dtype == want.dtype
        bits = torch.int16 if want.dtype != torch.float32 else torch.int32
        nan = want.isnan()  # NaN's bits (sign, payload) are torch's own: only NaN-ness is compared
        assert torch.equal(got.isnan(), nan) and torch.equal(got[~nan].view(bits), want[~nan].view(bits)), f"cast {k}"


# -- models ----------------------------------------------------------------------------------------------------

class TinyTransformer(torch.nn.Module):
    """Embedding, a pre-norm attention block (sdpa) and a GELU MLP, then a softmax over a tied vocabulary."""

    def __init__(self, vocab=97, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.emb = torch.nn.Embedding(vocab, dim)
        self.norm1, self.norm2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.fc1, self.fc2 = torch.nn.Linear(dim, 4 * dim), torch.nn.Linear(4 * dim, dim)

    def forward(self, ids):
        x = self.emb(ids)
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(a)
        x = x + self.fc2(F.gelu(self.fc1(self.norm2(x))))
        return torch.softmax(x @ self.emb.weight.t(), -1), x[:, -1]


@pytest.mark.e2e
@pytest.mark.parametrize("dtype", HALF, ids=name)
def test_small_transformer(dtype, poisoned):
    torch.manual_seed(0)
    model = TinyTransformer().eval().to(dtype)
    ids = torch.randint(0, 97, (2, 23), generator=seeded("tiny-ids"))
    session, _ = check_model(model, (ids,), dtype, poisoned)
    storage = {"float16": "f16", "bfloat16": "bf16"}[name(dtype)]
    assert any(f"gather[table,{storage}]" in k for k in kernels(session))
    assert any(f",{storage}]" in k and k.startswith("gemm") for k in kernels(session))


class SmallCNN(torch.nn.Module):
    """A stem on 3 channels (the element kernels), channels-last convs (the vec4 GEMM with its 16-bit
    weights), batch norm folded in, a depthwise conv, pooling and a linear head."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.BatchNorm2d(8),
                                        torch.nn.ReLU())
        self.block = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.BatchNorm2d(16),
                                         torch.nn.ReLU6(), torch.nn.Conv2d(16, 16, 3, padding=1, groups=16),
                                         torch.nn.Conv2d(16, 12, 1))
        self.head = torch.nn.Linear(12, 10)

    def forward(self, x):
        y = self.block(torch.nn.functional.max_pool2d(self.stem(x), 2))
        return self.head(torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1))


@pytest.mark.e2e
@pytest.mark.parametrize("dtype", HALF, ids=name)
def test_cnn(dtype, poisoned):
    from .test_cnn import randomize_batch_norms

    torch.manual_seed(1)
    model = randomize_batch_norms(SmallCNN(), "half-cnn").to(dtype)
    x = torch.randn(2, 3, 29, 31, generator=seeded("half-cnn-x")).to(dtype)
    session, _ = check_model(model, (x,), dtype, poisoned)
    assert any(k.startswith("conv[im2col_nhwc") for k in kernels(session)), kernels(session)


@pytest.mark.e2e
@pytest.mark.parametrize(("dtype", "attn"), [(torch.float16, "eager"), (torch.bfloat16, "sdpa")],
                         ids=["float16-eager", "bfloat16-sdpa"])
def test_bert(dtype, attn, poisoned):
    from .test_transformers import bert

    model = bert(attn).to(dtype)
    ids = torch.randint(0, 211, (2, 19), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(2, 19, dtype=torch.int64)
    mask[1, 13:] = 0
    session, out = check_model(model, (ids,), dtype, poisoned, {"attention_mask": mask})
    assert any(k.startswith("attention") for k in kernels(session))
    corpus.write(f"bert_{name(dtype)}", session, [((ids,), {"attention_mask": mask}, out)])  # for js/


# -- storage and host forms ------------------------------------------------------------------------------------

@pytest.mark.host
@pytest.mark.parametrize("dtype", HALF, ids=name)
def test_weights_stay_16_bit_in_the_artifact(dtype):
    model = TinyTransformer().eval()
    ids = torch.randint(0, 97, (2, 23))
    full = webgpu_torch.compile_module(model, (ids,)).program
    half = webgpu_torch.compile_module(model.to(dtype), (ids,)).program

    def weight_bytes(p):
        return sum(a.nbytes for a in p.constants.values())

    assert weight_bytes(half) <= 0.55 * weight_bytes(full), (weight_bytes(half), weight_bytes(full))


def test_float16_weights_run_without_shader_f16():
    """The float32 fallback of every f16 kernel over widened constants gives the same numbers."""
    torch.manual_seed(2)
    model = TinyTransformer().eval().half()
    ids = torch.randint(0, 97, (2, 23))
    session = webgpu_torch.compile_module(model, (ids,))
    assert fit.uses_f16(session.program)
    widened = Session(fit.without_f16(session.program))
    for got, want in zip(widened(ids), session(ids), strict=True):
        assert torch.equal(got, want)


GEMM_SHAPES = {"vec4": ((3, 89, 132), 132, 76), "gemv": ((3, 772), 772, 1036), "element": ((37, 89), 89, 41),
               "split_k": ((19, 1536), 1536, 44)}


class TwoLayouts(torch.nn.Module):
    """A weight read as linear's Wᵀ (contiguous along K) and one read row-major (contiguous along N)."""

    def __init__(self, w: torch.Tensor):
        super().__init__()
        self.w = torch.nn.Parameter(w)
        self.wt = torch.nn.Parameter(w.t().contiguous())

    def forward(self, x):
        return F.linear(x, self.w), x @ self.wt


@pytest.mark.gemm
@pytest.mark.parametrize("route", sorted(GEMM_SHAPES))
def test_bfloat16_weights_on_every_gemm_route(route, poisoned):
    """Each kernel's B loader widens bfloat16 words (both halves, both B layouts)."""
    x_shape, k, n = GEMM_SHAPES[route]
    gen = seeded(route)
    model = TwoLayouts(torch.randn(n, k, generator=gen).bfloat16()).eval()
    x = torch.randn(x_shape, generator=gen).bfloat16()
    session = webgpu_torch.compile_module(model, (x,))
    names = [k for k in kernels(session) if k.startswith(("gemm[", "gemv["))]
    assert names and all(",bf16" in k for k in names), names
    for got, want in zip(poisoned(session, x), reference(model.double(), [x]), strict=True):
        assert_close(got.float(), want, TOLERANCE["bfloat16"])


def test_numpy_host_forms():
    """float16 is numpy's float16; bfloat16 (which numpy lacks) is its bits as uint16; torch callers get torch
    tensors of the model's dtype."""
    lin = torch.nn.Linear(5, 3)
    x = torch.randn(4, 5)
    for dtype, host in ((torch.float16, np.float16), (torch.bfloat16, np.uint16)):
        session = webgpu_torch.compile_module(lin.to(dtype), (x.to(dtype),))
        tensor_out = session(x.to(dtype))
        assert tensor_out.dtype == dtype
        bits = x.to(dtype).view(torch.int16).numpy().view(np.uint16) if host == np.uint16 else x.half().numpy()
        numpy_out = session(bits)
        assert isinstance(numpy_out, np.ndarray) and numpy_out.dtype == host
        assert np.array_equal(numpy_out.view(np.int16), tensor_out.view(torch.int16).numpy())
        with pytest.raises(InputTypeError, match=f"expected dtype {name(dtype)}, got float32"):
            session(x.numpy())


@pytest.mark.host
@pytest.mark.parametrize("a, b", [("float16", "float32"), ("bfloat16", "float16"), ("float16", "int64"),
                                  ("bfloat16", 2.5), ("float16", "float16"), ("bool", "bfloat16"), ("int32", 1.5)])
def test_promotion_is_torchs(a, b):
    def example(x):
        return torch.zeros(1, dtype=getattr(torch, x)) if isinstance(x, str) else x

    want = str(torch.result_type(example(a), example(b))).removeprefix("torch.")
    assert dtypes.promote(a, b) == want


@pytest.mark.host
def test_host_conversions_round_to_nearest_even():
    values = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, 3.4e38, -1.5, np.nan, np.inf], np.float32)
    bits = dtypes.round_bfloat16(values)
    want = torch.from_numpy(values).bfloat16().view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(bits[:-2], want[:-2]) and np.isnan(dtypes.widen_bfloat16(bits)[-2])
    assert np.array_equal(dtypes.widen_bfloat16(bits[-1:]), [np.inf])


# -- float16 activations (precision="float16") -------------------------------------------------------------------

# Activations stored as f16 between kernels: each stored value rounded by up to 2^-11, a few in a row.
ACTIVATIONS_F16 = 4e-3


@pytest.mark.e2e
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=name)
def test_transformer_with_float16_activations(dtype, poisoned):
    """Norms, GEMMs, attention and softmax pass f16 activations; the program's outputs keep the model's dtype;
    without shader-f16 the fallback kernels run the same file in float32."""
    torch.manual_seed(0)
    model = TinyTransformer().eval().to(dtype)
    ids = torch.randint(0, 97, (2, 23), generator=seeded("f16-activations"))
    session = webgpu_torch.compile_module(model, (ids,), precision="float16")
    half = {k.split("[")[0].split(",")[0] for k in kernels(session) if ",f16" in k}
    assert {"layer_norm", "gemm", "attention", "softmax"} <= half, kernels(session)
    want = reference(model.double(), [ids])
    model.to(dtype)
    for got, w in zip(poisoned(session, ids), want, strict=True):
        assert got.dtype == dtype
        assert_close(got.float(), w, max(ACTIVATIONS_F16, TOLERANCE[name(dtype)]))
    fallback = Session(fit.without_f16(session.program))
    assert not any("shader-f16" in fallback.program.kernels[d.kernel].requires for d in fallback.program.dispatches)
    for got, w in zip(poisoned(fallback, ids), want, strict=True):  # float32 activations again
        assert_close(got.float(), w, TOLERANCE[name(dtype)])
    twins = Session(tuning.force(session.program, lambda k: "+subgroups" in k.name))  # the rows' f16 twins
    assert any("+subgroups" in k and ",f16" in k for k in kernels(twins))
    if SUBGROUPS not in get_engine().device.features:  # wgpu-native: refused by name, never run
        with pytest.raises(DeviceError, match=f"needs the {SUBGROUPS} feature"):
            poisoned(twins, ids)
        return
    for got, w in zip(poisoned(twins, ids), want, strict=True):
        assert_close(got.float(), w, max(ACTIVATIONS_F16, TOLERANCE[name(dtype)]))


class HalfChain(torch.nn.Module):
    """x · 1.5 (elementwise, stored f16) → linear (reads f16, stores f16) → softmax (reads f16)."""

    def __init__(self, w: torch.Tensor):
        super().__init__()
        self.w = torch.nn.Parameter(w)

    def forward(self, x):
        return torch.softmax(F.linear(x * 1.5, self.w) * 0.25, -1)


@pytest.mark.gemm
@pytest.mark.parametrize("route", sorted(GEMM_SHAPES))
def test_float16_activations_through_every_gemm_route(route, poisoned):
    x_shape, k, n = GEMM_SHAPES[route]
    gen = seeded(f"f16-{route}")
    model = HalfChain(torch.randn(n, k, generator=gen) / k**0.5).eval()
    x = torch.randn(x_shape, generator=gen)
    session = webgpu_torch.compile_module(model, (x,), precision="float16")
    names = [k for k in kernels(session) if k.startswith(("gemm[", "gemv["))]
    assert names and all(",f16" in k for k in names), names
    want = reference(model.double(), [x])
    assert_close(poisoned(session, x), want, ACTIVATIONS_F16)
    assert_close(Session(fit.without_f16(session.program))(x), want)


@pytest.mark.gemm
@pytest.mark.parametrize("config", gemm.CPU_OPTIONS)
def test_float16_activations_on_the_cpu_adapters_gemm(config, poisoned):
    """Issue 29's report: an MLP under precision="float16" failed to load on lavapipe, its CPU-adapter GEMM's
    f16 twin not compiling (a matrix of f32 built from f16 rows). Forced, each CPU configuration loads and
    matches on float16 activations."""
    gen = seeded(f"cpu-f16-{config}")
    model = torch.nn.Sequential(torch.nn.Linear(132, 92), torch.nn.GELU(), torch.nn.Linear(92, 44)).eval()
    x = torch.randn(67, 132, generator=gen)
    session = webgpu_torch.compile_module(model, (x,), precision="float16", gemm=config)
    names = [k for k in kernels(session) if k.startswith("gemm[")]
    assert any(f"{config},f16" in k for k in names), names
    assert_close(poisoned(session, x), reference(model.double(), [x]), ACTIVATIONS_F16)


@pytest.mark.host
def test_float16_activations_only_where_every_reader_takes_them():
    """A value read by a kernel without f16 inputs (a reduction here), or returned, stays float32."""
    x = torch.randn(7, 41)
    session = webgpu_torch.compile_module(Fn(lambda x: ((x * 2).sum(-1), (x + 1).exp() * 3, x - 1)), (x,),
                                          precision="float16")
    by_node = {d.node: session.program.kernels[d.kernel].name for d in session.program.dispatches}
    assert ",f16" not in by_node["mul"] and ",f16" in by_node["add"] and ",f16" in by_node["exp"]
    assert ",f16" not in by_node["sub"]
    assert all(t.dtype == "float32" for t in session.program.outputs)


# -- op cases in half dtypes -----------------------------------------------------------------------------------

# Cases other than a family's first two. sort: 16-bit keys tie often, and only a stable sort defines their order.
# special: bfloat16's grid puts polygamma's first case on its poles (negative integers), where torch's reflection
# gives π²/sin²(πx) of a rounded sine, finite; ours ∞.
HALF_CASES = {"sort": ("sort_long_rows_merged", "sort_stable_ties_both_ways"),
              "special": ("zeta_and_polygamma", "modified_bessel_functions")}


def _half_cases():
    """The first cases of each op family (HALF_CASES where named), float inputs in float16 and bfloat16."""
    for family, cases in all_cases().items():
        chosen = [c for c in cases if c.name in HALF_CASES[family]] if family in HALF_CASES else cases[:2]
        for case in chosen:
            for dtype in HALF:
                yield pytest.param(case, dtype, id=f"{family}-{case.name}-{name(dtype)}",
                                   marks=[getattr(pytest.mark, m) for m in case.marks])


@pytest.mark.parametrize(("case", "dtype"), list(_half_cases()))
def test_op_in_half_precision(case, dtype, poisoned):
    """Against float64 at the half tolerance, each output in the dtype torch.export says it has (eager lacks
    some ops in half on the CPU: cdist); a reference value past the dtype's range is the infinity it rounds to."""
    inputs = [x.to(dtype) if x.is_floating_point() else x for x in case.example_inputs()]
    dynamic = None if case.dynamic_shapes is None else (case.dynamic_shapes,)
    ep = torch.export.export(Fn(case.fn), tuple(inputs), dynamic_shapes=dynamic)
    session = webgpu_torch.compile(ep, **case.kwargs)
    output = next(n for n in ep.graph.nodes if n.op == "output")
    exported = [v.meta["val"].dtype for v in output.args[0]]
    got = pytree.tree_leaves(poisoned(session, *inputs))
    want = pytree.tree_leaves(reference(case.fn, inputs))
    for i, (g, d, w) in enumerate(zip(got, exported, want, strict=True)):
        assert g.dtype == d, f"output {i}: {g.dtype}, the exported program gives {d}"
        tol = max(case.tol or 0.0, TOLERANCE.get(name(g.dtype), 0.0))
        if g.is_floating_point():
            w = torch.where(w.abs() > torch.finfo(g.dtype).max, w.to(g.dtype).double(), w)
        assert_close(g.float() if g.is_floating_point() else g, w, tol, what=f"{case.name} output {i}")
