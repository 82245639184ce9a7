"""Every kernel choice computes the same numbers: each option tuning may pick, on every storage the compiler emits.

The cross product: small programs that exercise every op family that offers options — the GEMM tile
configurations (element, vec4, CPU-adapter and matrix-unit kernels; a split K and its reduction; the GEMV's
teams) in each operand layout (linear's Wᵀ read along K, a row-major B read along N, a transposed A, batched
activations, a convolution's implicit im2col A) with each epilogue (bias, a fused residual, an activation),
the attention layouts, the subgroup twins of the row kernels, a reduction's rows split or whole — compiled
over every storage (float32; float16 and bfloat16 models; float16 weights; float16 activations, alone and
over int4 weights; int8 per row and int4 in groups of 16 (two a 16-byte chunk of codes), 32, 64 and 128,
round to nearest or torchao's, with and without zero points).

Host tier: every program compiles, and each GEMM configuration either is a candidate of each of its GEMMs
(its kernel built) or is refused there at compile time with a reason (`gemm.refusals`). GPU tier: every
candidate the device can run computes what its group's default computes on the tuner's own check (seeded
non-zero inputs, the program's real weights: runtime/tuning.py's `Candidate`), so the tuner's safety net is
never what catches a wrong kernel; the second engine runs a sample (`SAMPLE`), and so does Node
(js/test/options.test.js, over the programs this test saves). The counts are printed at the end of the run
(conftest.py).
"""

from __future__ import annotations

from functools import cache

import pytest
import torch

import webgpu_torch
from webgpu_torch.compiler.ops import gemm
from webgpu_torch.format import artifact
from webgpu_torch.format import program as program_
from webgpu_torch.runtime import tuning
from webgpu_torch.runtime.engine import get_engine
from webgpu_torch.runtime.fit import for_device, runs_on

from . import corpus
from .helpers import seeded

pytestmark = [pytest.mark.gemm, pytest.mark.cross]
COUNTS: dict[str, int] = {}  # what the run checked, printed by conftest.py's pytest_terminal_summary


class Linear(torch.nn.Module):
    """fc2(relu(fc1(x) + r)): B = Wᵀ read along K, a bias, a fused residual and an activation, and a second
    product whose A is the first's result (an activation: float16 under precision="float16"); with `norm`, x
    RMS-normalized first (a decoder's norm before its projections: the GEMV's prologue, norm_prologues.py)."""

    def __init__(self, k: int, hidden: int, n: int, norm: bool = False):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(k, hidden), torch.nn.Linear(hidden, n)
        self.norm = torch.nn.RMSNorm(k, eps=1e-5) if norm else torch.nn.Identity()
        if norm:
            torch.nn.init.uniform_(self.norm.weight, 0.5, 1.5)

    def forward(self, x, r):
        return self.fc2(torch.relu(self.fc1(self.norm(x)) + r))


class Gated(torch.nn.Module):
    """A gated MLP, x RMS-normalized first: its gate and up projections one linear that stores silu(gate) * up
    (gated_linears.py: the GEMV's epilogue, pairs of columns across a team's lanes or its neighbour's), then
    a product that reads it (an activation: float16 under precision="float16"), by a weight kept as [inner, K]
    (no linear: torchao leaves it, whose groups would not divide the prime inner width)."""

    def __init__(self, k: int, inner: int):
        super().__init__()
        self.norm = torch.nn.RMSNorm(k, eps=1e-5)
        self.gate, self.up = torch.nn.Linear(k, inner, bias=False), torch.nn.Linear(k, inner, bias=False)
        self.down = torch.nn.Parameter(torch.randn(inner, k, generator=seeded("gated-down")) / inner**0.5)

    def forward(self, x):
        h = self.norm(x)
        return (torch.nn.functional.silu(self.gate(h)) * self.up(h)) @ self.down


class RowMajor(torch.nn.Module):
    """x @ W for a weight kept as [K, N]: B read along N (its epilogue as the batched product's: one pipeline per
    configuration serves both where B is stored as float32)."""

    def __init__(self, k: int, n: int):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(k, n, generator=seeded("row-major")) / k**0.5)

    def forward(self, x):
        return x @ self.w


class Activations(torch.nn.Module):
    """Products of two activations: a batched GEMM, one whose A is transposed (read along M), and one of odd
    sizes (the element kernel: no operand can be read in 16-byte vectors)."""

    def forward(self, a, b, c, d):
        return torch.bmm(a, b), a[0].t() @ a[1], c @ d


class Conv(torch.nn.Module):
    """A strided, padded 3 x 3 convolution with a bias and an activation: the implicit im2col GEMM."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 12, 3, stride=(2, 1), padding=1)

    def forward(self, x):
        return torch.nn.functional.silu(self.conv(x))


class Attention(torch.nn.Module):
    """Causal attention over heads of 16 and of 20 (a layout's keys per tile depend on the head size)."""

    def forward(self, q, k, v, q2, k2, v2):
        causal = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return causal, torch.nn.functional.scaled_dot_product_attention(q2, k2, v2)


class Rows(torch.nn.Module):
    """Row kernels with subgroup twins: a layer norm, a softmax and a sum along rows."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(89)

    def forward(self, x):
        y = self.norm(x)
        return torch.softmax(y, -1), y.sum(-1)


class Reductions(torch.nn.Module):
    """Few long rows, split across workgroups: an LM head's greedy argmax, a sum over everything, max.dim's
    values and indices (after a linear, so that each storage reaches them)."""

    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(64, 4099)

    def forward(self, x):
        logits = self.head(x)
        return logits.argmax(-1), logits.sum(), *torch.max(logits, -1)


# name -> (module, input shapes). A linear's K is a multiple of 32 (torchao's groups divide it; a group of 128
# leaves a ragged last one), M and N prime.
PROGRAMS = {
    "linear": (lambda: Linear(160, 96, 89), [(67, 160), (67, 96)]),
    "linear_rows": (lambda: Linear(160, 96, 89, norm=True), [(5, 160), (5, 96)]),  # the GEMV
    "gated_rows": (lambda: Gated(160, 89), [(5, 160)]),  # the gated GEMV
    "linear_split_k": (lambda: Linear(1568, 32, 37), [(19, 1568), (19, 32)]),  # a small output over a long K
    "row_major": (lambda: RowMajor(132, 92), [(67, 132)]),
    "activations": (Activations, [(3, 37, 44), (3, 44, 52), (37, 43), (43, 53)]),
    "conv": (Conv, [(2, 8, 13, 11)]),
    "attention": (Attention, [(1, 4, 37, 16)] * 3 + [(2, 3, 29, 20)] * 3),
    "rows": (Rows, [(37, 89)]),
    "reductions": (Reductions, [(3, 64)]),
}


def _torchao(weight_dtype, granularity, zero_points: bool):
    def quantize(module):
        from torchao.quantization import IntxWeightOnlyConfig, quantize_
        from torchao.quantization.granularity import PerAxis, PerGroup
        from torchao.quantization.quant_primitives import MappingType

        dtype = getattr(torch, weight_dtype)
        kind = PerAxis(0) if granularity == "row" else PerGroup(granularity)
        mapping = MappingType.ASYMMETRIC if zero_points else MappingType.SYMMETRIC
        quantize_(module, IntxWeightOnlyConfig(weight_dtype=dtype, granularity=kind, mapping_type=mapping))
        return module

    return quantize


def _same(module):
    return module


# name -> (what it does to the model, compile options)
STORAGES = {
    "float32": (_same, {}),
    "float16_model": (lambda m: m.half(), {}),
    "bfloat16_model": (lambda m: m.bfloat16(), {}),
    "float16_weights": (_same, {"weights": "float16"}),
    "float16_activations": (_same, {"precision": "float16"}),
    "float16_activations_int4": (_same, {"precision": "float16", "weights": "int4"}),
    "int8_per_row": (_same, {"weights": "int8"}),
    "int4_group16": (_same, {"weights": "int4", "group_size": 16}),  # two groups a GEMV chunk (gemv.wgsl)
    "int4_group32": (_same, {"weights": "int4", "group_size": 32}),
    "int4_group64": (_same, {"weights": "int4", "group_size": 64}),
    "int4_group128": (_same, {"weights": "int4", "group_size": 128}),
    "torchao_int4_group32_zero_points": (_torchao("int4", 32, True), {}),
    "torchao_int8_per_row": (_torchao("int8", "row", False), {}),
}
CASES = [(s, p) for s in STORAGES for p in PROGRAMS]
# The second engine (wgpu-native) runs the GPU checks over these storages only (scripts/run test: its own kernel
# sources beside Dawn's, over float32, float16 activations and packed int4 with zero points, every program).
SAMPLE = ("float32", "float16_activations", "torchao_int4_group32_zero_points")
GPU_CASES = [pytest.param(s, p, id=f"{s}-{p}", marks=[pytest.mark.cross_sample] * (s in SAMPLE)) for s, p in CASES]


@cache
def compiled(storage: str, name: str) -> program_.Program:
    make, shapes = PROGRAMS[name]
    change, options = STORAGES[storage]
    torch.manual_seed(0)
    module = change(make().eval())
    dtype = next((p.dtype for p in module.parameters()), torch.float32)
    g = seeded(storage + name)
    inputs = tuple(torch.randn(s, generator=g).to(dtype) for s in shapes)
    with torch.no_grad():
        return webgpu_torch.compile(torch.export.export(module, inputs), **options).program


def _config(kernel: program_.Kernel) -> str | None:
    """The GEMM configuration a kernel runs ("gemm[vec4_64x64,q4]+relu", "conv[im2col_nhwc,cpu_4x8]"), if any."""
    family, _, inner = kernel.name.partition("[")
    parts = inner.split("]")[0].split(",")
    config = parts[1] if family == "conv" and parts[0] in ("im2col", "im2col_nhwc") else parts[0]
    return config if family in ("gemm", "conv") and config in gemm.CONFIGS else None


def _gemm_groups(p: program_.Program) -> list[tuple[list[int], bool]]:
    """Each GEMM group (its members) and whether its operands are vec4-readable (its default's kernel)."""
    out = []
    for members in tuning.groups(p):
        config = _config(p.kernels[p.dispatches[members[0]].kernel])
        if config is not None:
            out.append((members, gemm.CONFIGS[config].vec4))
    return out


@pytest.mark.host
@pytest.mark.slow
@pytest.mark.parametrize(("storage", "name"), CASES, ids=[f"{s}-{p}" for s, p in CASES])
def test_every_configuration_is_built_or_refused_with_a_reason(storage, name):
    p = compiled(storage, name)
    precision = STORAGES[storage][1].get("precision", "float32")
    for members, vec4 in _gemm_groups(p):
        built = {_config(p.kernels[o.kernel]) for o in tuning.candidates(p.dispatches[members[0]])}
        for config, why in gemm.refusals(vec4, precision).items():
            assert (config in built) == (why is None), (config, why, sorted(built))
            key = "GEMM configurations built" if why is None else "GEMM configurations refused with a reason"
            COUNTS[key] = COUNTS.get(key, 0) + 1
    for members in tuning.groups(p):
        leader = p.dispatches[members[0]]
        assert leader.result and 0 < leader.tolerance <= 0.01, p.kernels[leader.kernel].name  # each is checked
        COUNTS["candidates built"] = COUNTS.get("candidates built", 0) + len(leader.options) + 1


@pytest.mark.host
@pytest.mark.slow
def test_every_family_and_storage_is_in_the_cross_product():
    """The programs reach every family that offers options, on each storage that should hold them: a change
    that stops a storage reaching a kernel (a weight no longer packed, say) fails here, not silently."""
    kinds = {storage: {p.kernels[o.kernel].name for name in PROGRAMS for p in [compiled(storage, name)]
                       for d in p.dispatches for o in tuning.candidates(d)} for storage in STORAGES}
    everything = set().union(*kinds.values())
    for family in ("gemm[vec4", "gemm[cpu_", "gemm[128x128", "gemv[", "gemm_split_sum", "conv[im2col_nhwc",
                   "attention[", "+subgroups", "slices]"):
        assert any(family in k for k in everything), family
    for storage, tag in (("int8_per_row", ",q8"), ("int4_group32", ",q4"), ("torchao_int4_group32_zero_points", ",q4"),
                         ("bfloat16_model", ",bf16"), ("float16_weights", ",f16"), ("float16_activations", ",f16"),
                         ("float16_activations", "sm_f16")):
        names = kinds[storage]
        assert any(tag in k and k.startswith(("gemm[cpu_", "gemm[sm_" if tag == "sm_f16" else "gemm[vec4")) for k in
                   names), (storage, tag)


@pytest.mark.parametrize(("storage", "name"), GPU_CASES)
def test_every_candidate_computes_what_the_default_computes(storage, name):
    engine = get_engine()
    p = for_device(compiled(storage, name), engine.device.features)
    folder = corpus.folder() / "options"  # for js/test/options.test.js: Node checks a sample the same way
    folder.mkdir(exist_ok=True)
    artifact.save(compiled(storage, name), folder / f"{storage}-{name}.wgpt")
    for members in tuning.groups(p):
        reference = tuning.Candidate(p, members, 0, engine)
        assert any(r.size and abs(r.astype(float)).max() > 0 for r in reference.result), "a check of nothing"
        for c in range(1, len(p.dispatches[members[0]].options) + 1):
            kernels = [p.kernels[tuning.candidates(p.dispatches[i])[c].kernel] for i in members]
            if not all(runs_on(k, engine.device.features, engine.limits) for k in kernels):
                COUNTS["candidates this device cannot run"] = COUNTS.get("candidates this device cannot run", 0) + 1
                continue
            why = tuning.Candidate(p, members, c, engine, reference=reference).differs_from(reference)  # as tuning
            assert why is None, f"{kernels[0].name} ({storage}, {name}): {why}"
            COUNTS["candidates run against their default"] = COUNTS.get("candidates run against their default",
                                                                        0) + 1
