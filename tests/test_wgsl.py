"""Kernel-source introspection: uniform layouts, bindings, const specialisation; every shipped kernel parses."""

from __future__ import annotations

import re
import struct
from importlib import resources

import pytest

from webgpu_torch import wgsl
from webgpu_torch.program import SUBGROUP_MATRIX
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


def test_pack_names_missing_and_unknown_fields():
    layout = wgsl.uniform_layout(SOURCE)
    with pytest.raises(KeyError, match=r"missing \['last'\].*unknown \['oops'\]"):
        wgsl.pack(layout, {"n": 1, "scale": 1.0, "pair": (0, 0), "shape": [], "oops": 1})


def test_bindings_and_specialisation():
    assert [(b.index, b.kind) for b in wgsl.bindings(SOURCE)] == [(0, "read"), (1, "read_write"), (2, "uniform")]
    assert "const TILE: u32 = 16u;" in wgsl.specialize(SOURCE, {"TILE": 16})
    with pytest.raises(KeyError, match="NOPE"):
        wgsl.specialize(SOURCE, {"NOPE": 1})


SHIPPED = sorted(p.name for p in resources.files("webgpu_torch.ops").iterdir() if p.name.endswith(".wgsl"))


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_file_declares_a_parsable_interface(name):
    source = wgsl.kernel_source(name)
    text = resources.files("webgpu_torch.ops").joinpath(name).read_text()
    assert text.startswith(f"// {name}"), f"{name} must open with what it computes"
    binds = wgsl.bindings(source)
    if "@compute" not in source:  # an included helper, checked through the kernels that include it
        return
    assert binds, f"{name} declares no bindings"
    if any(b.kind == "uniform" for b in binds):
        assert wgsl.uniform_layout(source).size % 16 == 0


@pytest.mark.parametrize("name", [n for n in SHIPPED if "@compute" in wgsl.kernel_source(n)])
def test_every_kernel_compiles_on_the_engine(name):
    device = get_engine().device
    source = wgsl.kernel_source(name)
    if wgsl.uses_subgroup_matrix(source) and SUBGROUP_MATRIX not in device.features:
        with pytest.raises(Exception, match="chromium_experimental_subgroup_matrix"):  # refused, by name
            device.create_shader_module(code=source).get_compilation_info()
        return
    device.create_shader_module(code=source).get_compilation_info()
    if wgsl.SUBGROUPS in device.features:  # Dawn on lavapipe has them: the subgroup twins compile too
        device.create_shader_module(code=wgsl.kernel_source(name, subgroups=True)).get_compilation_info()


TWINS = [n for n in SHIPPED if wgsl.subgroup_twin(n) in SHIPPED]


@pytest.mark.parametrize("name", TWINS)
def test_a_subgroup_twin_defines_the_same_functions(name):
    def functions(filename):
        return set(re.findall(r"^fn (\w+)\(([^)]*)\) -> (\w+)", resources.files("webgpu_torch.ops").joinpath(
            filename).read_text(), re.MULTILINE))

    assert functions(name) <= functions(wgsl.subgroup_twin(name)), f"{wgsl.subgroup_twin(name)} lacks some of {name}'s"


def test_a_kernel_that_includes_a_twinned_helper_gets_a_subgroup_source():
    plain, twin = wgsl.kernel_source("softmax.wgsl"), wgsl.kernel_source("softmax.wgsl", subgroups=True)
    assert "subgroupShuffleXor" not in plain and "enable" not in plain
    assert twin.startswith("enable subgroups;\n") and "subgroupShuffleXor" in twin
    assert wgsl.kernel_source("gemm.wgsl", subgroups=True) == wgsl.kernel_source("gemm.wgsl")  # no twin inside


def test_workgroup_invocations_resolve_literals_consts_and_overrides():
    src = """
const W: u32 = 64u;
override H: u32 = 4u;
@compute @workgroup_size(W, H) fn a() {}
@compute @workgroup_size(8, 2u, 3) fn b() {}
@compute @workgroup_size(H * 2) fn c() {}
"""
    assert wgsl.workgroup_invocations(src, "a", {}) == 256
    assert wgsl.workgroup_invocations(src, "a", {"H": 2.0}) == 128
    assert wgsl.workgroup_invocations(src, "b", {}) == 48
    with pytest.raises(ValueError, match="H \\* 2 is not an integer declaration"):
        wgsl.workgroup_invocations(src, "c", {})
    with pytest.raises(ValueError, match="no @workgroup_size on entry point d"):
        wgsl.workgroup_invocations(src, "d", {})
