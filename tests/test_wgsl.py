"""Kernel-source introspection: uniform layouts, bindings, const specialisation; every shipped kernel parses."""

from __future__ import annotations

import re
import struct

import pytest

from webgpu_torch.compiler import wgsl
from webgpu_torch.compiler.builder import KernelSpec
from webgpu_torch.compiler.ops import gemm
from webgpu_torch.format.program import SUBGROUP_MATRIX
from webgpu_torch.runtime.engine import get_engine

SOURCE = """
struct Params {
  n: u32,
  scale: f32,
  pair: vec2<u32>,
  shape: array<vec4<u32>, 2>,   // a comment, with a comma
  last: i32,
}
const TILE: u32 = 8u;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
"""


@pytest.mark.host
def test_uniform_layout_follows_wgsl_alignment():
    layout = wgsl.uniform_layout(SOURCE)
    assert [(f.name, f.offset) for f in layout.fields] == [("n", 0), ("scale", 4), ("pair", 8), ("shape", 16),
                                                           ("last", 48)]
    assert layout.size == 64
    data, patches = wgsl.pack(layout, {"n": 3, "scale": 0.5, "pair": (1, 2), "shape": [7, 8, 9], "last": -1})
    assert patches == ()
    assert struct.unpack_from("<If2I", data, 0) == (3, 0.5, 1, 2)
    assert struct.unpack_from("<8I", data, 16) == (7, 8, 9, 0, 0, 0, 0, 0)
    assert struct.unpack_from("<i", data, 48) == (-1,)


@pytest.mark.host
def test_pack_names_missing_and_unknown_fields():
    layout = wgsl.uniform_layout(SOURCE)
    with pytest.raises(KeyError, match=r"missing \['last'\].*unknown \['oops'\]"):
        wgsl.pack(layout, {"n": 1, "scale": 1.0, "pair": (0, 0), "shape": [], "oops": 1})


@pytest.mark.host
def test_bindings_and_specialisation():
    assert [(b.index, b.kind) for b in wgsl.bindings(SOURCE)] == [(0, "read"), (1, "read_write"), (2, "uniform")]
    assert "const TILE: u32 = 16u;" in wgsl.specialize(SOURCE, {"TILE": 16})
    with pytest.raises(KeyError, match="NOPE"):
        wgsl.specialize(SOURCE, {"NOPE": 1})


SHIPPED = sorted(wgsl.kernel_files())


@pytest.mark.host
@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_file_declares_a_parsable_interface(name):
    source = wgsl.kernel_source(name)
    text = wgsl.kernel_files()[name].read_text()
    assert text.startswith(f"// {name}"), f"{name} must open with what it computes"
    binds = wgsl.bindings(source)
    if "@compute" not in source:  # an included helper, checked through the kernels that include it
        return
    assert binds, f"{name} declares no bindings"
    if any(b.kind == "uniform" for b in binds):
        assert wgsl.uniform_layout(source).size % 16 == 0


NEEDS = {gemm.MatrixConfig.file: gemm.MatrixConfig.requires}  # the files whose kernels need optional features


@pytest.mark.host
@pytest.mark.parametrize("name", SHIPPED)
def test_kernel_files_enable_nothing_themselves(name):
    """A kernel declares the features it needs (KernelSpec.requires); the builder writes their directives."""
    assert not re.search(r"^enable ", wgsl.kernel_files()[name].read_text(), re.MULTILINE)


@pytest.mark.parametrize("name", [n for n in SHIPPED if "@compute" in wgsl.kernel_source(n)])
def test_every_kernel_compiles_on_the_engine(name):
    device = get_engine().device
    needs = NEEDS.get(name, ())  # what its KernelSpecs declare
    source = wgsl.enables(needs) + wgsl.kernel_source(name)
    if SUBGROUP_MATRIX in needs and SUBGROUP_MATRIX not in device.features:
        with pytest.raises(Exception, match="chromium_experimental_subgroup_matrix"):  # refused, by name
            device.create_shader_module(code=source).get_compilation_info()
        return
    assert _diagnostics(device, source) == []
    if wgsl.SUBGROUPS in device.features:  # Dawn on lavapipe has them: the subgroup twins compile too
        assert _diagnostics(device, wgsl.enables((wgsl.SUBGROUPS,)) + wgsl.kernel_source(name, subgroups=True)) == []


def _diagnostics(device, source: str) -> list[str]:
    """The compiler's errors and warnings on `source`, as "line N: message" (an engine raises on most errors
    when the module is made; what it only reports comes back here)."""
    info = device.create_shader_module(code=source).get_compilation_info()
    return [f"line {m.line_num}: {m.type}: {m.message}" for m in info.messages if m.type in ("error", "warning")]


TWINS = [n for n in SHIPPED if wgsl.subgroup_twin(n) in SHIPPED]


@pytest.mark.host
@pytest.mark.parametrize("name", TWINS)
def test_a_subgroup_twin_defines_the_same_functions(name):
    def functions(filename):
        text = wgsl.kernel_files()[filename].read_text()
        return set(re.findall(r"^fn (\w+)\(([^)]*)\) -> (\w+)", text, re.MULTILINE))

    assert functions(name) <= functions(wgsl.subgroup_twin(name)), f"{wgsl.subgroup_twin(name)} lacks some of {name}'s"


@pytest.mark.host
def test_a_kernel_that_includes_a_twinned_helper_gets_a_subgroup_source():
    plain, twin = wgsl.kernel_source("softmax.wgsl"), wgsl.kernel_source("softmax.wgsl", subgroups=True)
    assert "subgroupShuffleXor" not in plain and "subgroupShuffleXor" in twin
    spec = KernelSpec.of("softmax.wgsl", "softmax", requires=())
    assert spec.source(subgroups=True) == "enable subgroups;\n" + wgsl.without_comments(twin)
    assert spec.source() == wgsl.without_comments(plain)
    half = KernelSpec.of("gemv.wgsl", "gemv", entry="dot_k", consts={"ROWS": 1, "B_T": "f16"}, requires=("shader-f16",))
    assert half.source().startswith("enable f16;\n") and "enable" not in half.widened().source()
    with pytest.raises(ValueError, match="an f16 substitution needs requires"):
        KernelSpec.of("gemv.wgsl", "gemv", consts={"B_T": "f16"})
    assert wgsl.kernel_source("gemm.wgsl", subgroups=True) == wgsl.kernel_source("gemm.wgsl")  # no twin inside


@pytest.mark.host
def test_entry_points_declare_workgroup_size_and_the_workgroup_memory_they_reach():
    src = """
const W: u32 = 64u;
override H: u32 = 4u;
override WIDE: bool = false;
alias AccT = f32;
const ROWS: u32 = max(H, 2u) * select(1u, 2u, WIDE);
var<workgroup> tile: array<vec4<f32>, W>;       // 1024 bytes
var<workgroup> sums: array<AccT, ROWS + 1u>;    // 4 * (ROWS + 1), rounded up to 16
var<workgroup> halves: array<f16, 3>;           // 6, rounded up to 16: never reached from a or b
alias Frag = array<f16, 3>;
var<workgroup> frags: array<Frag, W / 16u>;      // elements 6 bytes apart (f16 alignment): 24
var<workgroup> rows: array<array<vec3<f32>, 2>, 3>;  // vec3s 16 bytes apart: 96
fn helper() -> f32 { return tile[0].x; }
@compute @workgroup_size(W, H) fn a() { let x = helper(); sums[0] = x; }
@compute @workgroup_size(8, 2u, 3) fn b() {}
@compute @workgroup_size(H * 2) fn c() { halves[0] = 1.0h; }
@compute @workgroup_size(UNKNOWN) fn d() {}
@compute @workgroup_size(1) fn e() { frags[0][0] = 1.0h; rows[0][0].x = 1.0; }
"""
    assert wgsl.entry_point(src, "a", {}) == wgsl.EntryPoint((64, 4, 1), 1024 + 32)
    assert wgsl.entry_point(src, "a", {"H": 8.0, "WIDE": 1.0}) == wgsl.EntryPoint((64, 8, 1), 1024 + 80)
    assert wgsl.entry_point(src, "b", {}) == wgsl.EntryPoint((8, 2, 3), 0)
    assert wgsl.entry_point(src, "c", {}) == wgsl.EntryPoint((8, 1, 1), 16)
    assert wgsl.entry_point(src, "e", {}) == wgsl.EntryPoint((1, 1, 1), 32 + 96)
    with pytest.raises(ValueError, match="UNKNOWN is not a const or override declaration"):
        wgsl.entry_point(src, "d", {})
    with pytest.raises(ValueError, match="no @workgroup_size on entry point f"):
        wgsl.entry_point(src, "f", {})


@pytest.mark.host
def test_a_program_carries_its_kernels_without_comments():
    text = "// a kernel\n\nconst N: u32 = 4u;  // its width\n  // an aside\nfn f() -> u32 {\n  return N;\n}\n"
    assert wgsl.without_comments(text) == "const N: u32 = 4u;\nfn f() -> u32 {\n  return N;\n}\n"
    source = KernelSpec.of("gemv.wgsl", "gemv", entry="dot_k", consts={"ROWS": 1}).source()
    assert "//" not in source and "fn dot_k(" in source
    assert len(source) < len(wgsl.kernel_source("gemv.wgsl")) / 1.5  # what the comments weighed in the artifact
