"""The matrix-unit GEMM kernels (gemm_subgroup_matrix.wgsl): offered as tuning options under
precision="float16", marked with the features they need, refused by name where the device lacks them, and
never a default unless forced."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

import webgpu_torch
from webgpu_torch.compiler import wgsl
from webgpu_torch.compiler.builder import KernelSpec
from webgpu_torch.compiler.ops import gemm
from webgpu_torch.format.errors import DeviceError
from webgpu_torch.format.program import F16, SUBGROUP_MATRIX
from webgpu_torch.runtime import engine, fit, tuning
from webgpu_torch.runtime.engine import get_engine
from webgpu_torch.runtime.session import Session

from .helpers import Fn, assert_close, seeded

pytestmark = pytest.mark.gemm


def _linear(**options):
    g = seeded("matrix")
    x, w = torch.randn(37, 132, generator=g), torch.randn(76, 132, generator=g)
    return webgpu_torch.compile_module(Fn(lambda x, w: torch.nn.functional.linear(x, w)), (x, w), **options), (x, w)


def _option_names(program) -> list[str]:
    return [program.kernels[o.kernel].name for d in program.dispatches for o in d.options]


@pytest.mark.host
@pytest.mark.parametrize(("precision", "offered"), [("float32", ()), ("float16", gemm.MATRIX_F16)])
def test_precision_picks_the_matrix_options(precision, offered):
    session, _ = _linear(precision=precision)
    program = session.program
    matrix = [n for n in _option_names(program) if n.startswith("gemm[sm_")]
    assert sorted(matrix) == sorted(f"gemm[{c}]" for c in offered)
    for d in program.dispatches:
        assert SUBGROUP_MATRIX not in program.kernels[d.kernel].requires, "a matrix kernel is never the default"
        for o in d.options:
            kernel = program.kernels[o.kernel]
            if kernel.name.startswith("gemm[sm_"):
                assert set(kernel.requires) == {F16, wgsl.SUBGROUPS, SUBGROUP_MATRIX} and kernel.fallback is None


@pytest.mark.host
def test_unaligned_operands_offer_no_matrix_kernel():
    g = seeded("unaligned")
    a, b = torch.randn(37, 41, generator=g), torch.randn(41, 43, generator=g)
    session = webgpu_torch.compile_module(Fn(lambda a, b: a @ b), (a, b), precision="float16")
    assert not any(n.startswith("gemm[sm_") for n in _option_names(session.program))


@pytest.mark.host
def test_precision_option_is_validated():
    with pytest.raises(ValueError, match="precision='bfloat16'"):
        _linear(precision="bfloat16")


def test_forced_matrix_kernel_runs_or_is_refused_by_name():
    session, (x, w) = _linear(gemm="sm_f16_64x128")
    (d,) = session.program.dispatches
    assert session.program.kernels[d.kernel].name == "gemm[sm_f16_64x128]"
    if SUBGROUP_MATRIX not in get_engine().device.features:
        # every lacking feature is named: subgroups too where the engine has none (wgpu-native)
        with pytest.raises(DeviceError, match=f"{SUBGROUP_MATRIX}(, {wgsl.SUBGROUPS})? features?, which this"):
            session(x, w)
        return
    # float16 operands: against the float64 product of the operands rounded to float16.
    assert_close(session(x, w), torch.nn.functional.linear(x.half().double(), w.half().double()))


def test_tuning_passes_over_matrix_options_the_device_cannot_run():
    session, _ = _linear(precision="float16", weights="float16")
    program = session.program
    (members,) = tuning.groups(program)
    usable = tuning.usable(program, members, get_engine().device.features, get_engine().limits)
    names = [program.kernels[tuning.candidates(program.dispatches[members[0]])[c].kernel].name for c in usable]
    has_matrix = SUBGROUP_MATRIX in get_engine().device.features
    assert any(n.startswith("gemm[sm_") for n in names) == has_matrix
    # Without shader-f16 the f16 weights widen; the matrix options stay, unchanged and unrunnable there.
    widened = fit.without_f16(program)
    assert _option_names(widened) == [n.replace(",f16", ",f16 widened") if not n.startswith("gemm[sm_") else n
                                      for n in _option_names(program)]
    Session(widened).program.check()


@pytest.mark.host
def test_matrix_config_rejects_tiles_beyond_its_workgroup_memory():
    with pytest.raises(ValueError, match="workgroup memory"):
        gemm.MatrixConfig(2, 4, 32, 2, 1)
    for name, c in gemm.CONFIGS.items():
        if isinstance(c, gemm.MatrixConfig):  # the kernel declares what the config counts
            source = KernelSpec.of(c.file, name, consts=c.consts, requires=c.requires).source()
            assert wgsl.entry_point(source, "main", {}).workgroup_bytes == c.workgroup_bytes
            assert c.workgroup_bytes <= gemm.MATRIX_WORKGROUP_BYTES


@pytest.mark.parametrize(("config", "usable"), [
    ({"component_type": "f16", "result_component_type": "f32", "m": 16, "n": 16, "k": 16, "max_subgroup_size": 32},
     True),
    ({"component_type": "f16", "result_component_type": "f32", "m": 16, "n": 16, "k": 16, "max_subgroup_size": 64},
     False),
    ({"component_type": "f16", "result_component_type": "f16", "m": 16, "n": 16, "k": 16, "max_subgroup_size": 32},
     False),
    ({"component_type": "f32", "result_component_type": "f32", "m": 8, "n": 8, "k": 8, "max_subgroup_size": 32},
     False),
])
@pytest.mark.host
def test_engine_takes_subgroup_matrices_only_in_the_kernels_shape(monkeypatch, config, usable):
    from wgpudawn.backends.dawn import extras

    adapter = SimpleNamespace(limits={"max-compute-workgroup-storage-size": 32768})
    monkeypatch.setattr(extras, "get_adapter_properties", lambda adapter: {"subgroup_matrix_configs": [config]})
    assert engine._matrix_units(adapter) == usable


MATRIX_CONFIGS = sorted(n for n, c in gemm.CONFIGS.items() if isinstance(c, gemm.MatrixConfig))


@pytest.mark.parametrize("name", MATRIX_CONFIGS)
def test_every_matrix_variant_parses(name):
    """Where the device lacks subgroup matrices (lavapipe), Dawn's compiler parses a matrix kernel and stops at
    its `enable` (a syntax error would be its first message): what can be checked short of an H200, where
    benchmarks/matrix_units.py checks each variant against float64."""
    cfg = gemm.CONFIGS[name]
    device = engine.get_engine("dawn").device
    if SUBGROUP_MATRIX in device.features:
        pytest.fail("a device with subgroup matrices: run benchmarks/matrix_units.py, which checks them fully")
    source = wgsl.enables(cfg.requires) + wgsl.specialize(wgsl.kernel_source(cfg.file), {**cfg.consts, "B_T": "f16"})
    with pytest.raises(Exception, match="extension 'chromium_experimental_subgroup_matrix' is not allowed"):
        device.create_shader_module(code=source).get_compilation_info_sync()
    broken = source.replace("fn main(", "fn main(oops: , ")  # the check itself: a syntax error shows first
    with pytest.raises(Exception, match="invalid type for parameter"):
        device.create_shader_module(code=broken).get_compilation_info_sync()
