"""Test helpers: the float64 oracle and the per-dtype tolerances every comparison uses."""

from __future__ import annotations

import zlib

import numpy as np
import torch

# Largest |out - ref| allowed, relative to max |ref| (the output's scale), per result dtype.
# float32: a few ulps of the scale after accumulation over K <= a few thousand terms.
# float16 and bfloat16: the device computes in float32, so against float64 what remains is the result's own
# rounding to its 16 bits (half a unit in the last place: 2^-11 and 2^-8 of the value), twice where a graph
# rounds on the way (a cast inside it), plus float32's.
TOLERANCE = {"float32": 1e-5, "float16": 2**-10, "bfloat16": 2**-7, "int32": 0, "int64": 0, "bool": 0}


def seeded(name: str) -> torch.Generator:
    return torch.Generator().manual_seed(zlib.crc32(name.encode()))


def assert_close(out, ref, tol: float | None = None, what: str = "output") -> float:
    """Compare a WebGPU result with a float64 reference; returns the scale-relative error."""
    out, ref = (_numpy(x) for x in (out, ref))
    assert out.shape == ref.shape, f"{what}: shape {out.shape} != reference {ref.shape}"
    if ref.dtype == np.bool_ or np.issubdtype(ref.dtype, np.integer):
        mismatch = int((out != ref).sum())
        assert mismatch == 0, f"{what}: {mismatch} of {ref.size} elements differ"
        return 0.0
    tol = TOLERANCE["float32"] if tol is None else tol
    # NaN and ±inf exactly where the reference has them (torch's semantics, not the GPU's), the rest within tol.
    nan = np.isnan(ref)
    assert not np.isnan(out[~nan]).any(), f"{what}: NaN where the reference has none"
    assert np.isnan(out[nan]).all(), f"{what}: {int((~np.isnan(out[nan])).sum())} numbers where the reference is NaN"
    inf = np.isinf(ref)
    assert np.array_equal(out[inf], ref[inf]), f"{what}: {out[inf]} where the reference is {ref[inf]}"
    ok = np.isfinite(ref)
    scale = float(np.abs(ref[ok]).max()) if ok.any() else 0.0
    err = float(np.abs(out[ok].astype(np.float64) - ref[ok]).max()) if ok.any() else 0.0
    rel = err / scale if scale else err
    assert rel <= tol, f"{what}: max error {err:.3g} is {rel:.3g} of the scale {scale:.3g} (tolerance {tol:g})"
    return rel


def _numpy(x) -> np.ndarray:
    """A tensor's values in numpy (bfloat16, which numpy lacks, widened exactly to float32)."""
    if not isinstance(x, torch.Tensor):
        return np.asarray(x)
    return (x.float() if x.dtype == torch.bfloat16 else x).detach().numpy()


class Fn(torch.nn.Module):
    """Wraps a function so torch.export can trace it."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def reference(fn, inputs):
    """fn evaluated in float64 (tensors made inside fn default to float64 too)."""
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            return fn(*[x.double() if x.is_floating_point() else x for x in inputs])
    finally:
        torch.set_default_dtype(prev)
