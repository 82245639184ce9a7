"""Convolution routing (ops/conv.py `plan`): a pure function of the geometry and the options, tested without
a GPU. Each route's kernels are tested by the op cases and test_cnn.py."""

from __future__ import annotations

import pytest

from webgpu_torch.compiler.ops.conv import IM2COL_MIN_OUTPUTS, Geometry, plan

pytestmark = pytest.mark.host


def geometry(ic=8, oc=16, k=3, stride=1, padding=1, groups=1, transposed=False, size=14, batch=1) -> Geometry:
    return Geometry(batch, ic, size, size, oc, size, size, k, k, (stride, stride), (padding, padding), (1, 1), groups,
                    transposed)


BIG = int(IM2COL_MIN_OUTPUTS**0.5) + 1  # a side whose outputs reach the im2col threshold with oc = 1

CASES = [
    ("a 3×3 conv of 4k channels: channels-last im2col", geometry(), "auto", True,
     (("im2col_nhwc", True), ("direct", False))),
    ("1×1 at stride 1: the channels-last GEMM, then the NCHW GEMM", geometry(k=1, padding=0), "auto", True,
     (("pointwise_nhwc", True), ("pointwise", False), ("im2col_nhwc", False), ("im2col", False))),
    ("depthwise", geometry(ic=16, groups=16), "auto", True,
     (("depthwise_nhwc", True), ("depthwise_nhwc", False), ("direct", False))),
    ("3 input channels: NCHW, direct when small", geometry(ic=3), "auto", True, (("direct", False),)),
    ("3 input channels, large: the element im2col", geometry(ic=3, oc=1, size=BIG), "auto", True,
     (("im2col_nhwc", False), ("im2col", False))),
    ("dynamic sizes stay NCHW", geometry(), "auto", False, (("direct", False),)),
    ("transposed: direct", geometry(transposed=True), "auto", True, (("depthwise_nhwc", False), ("direct", False))),
    ("grouped", geometry(ic=8, oc=8, groups=2), "auto", True, (("depthwise_nhwc", False), ("direct", False))),
    ("conv=im2col forces the element kernel", geometry(), "im2col", True, (("im2col", False),)),
    ("conv=direct forces the direct kernel", geometry(k=1, padding=0), "direct", True, (("direct", False),)),
]


@pytest.mark.parametrize(("what", "g", "conv", "static", "routes"), CASES, ids=[c[0] for c in CASES])
def test_plan(what, g, conv, static, routes):
    assert plan(g, conv, static) == routes


def test_the_last_route_takes_every_conv():
    for _, g, conv, static, _ in CASES:
        assert plan(g, conv, static)[-1][0] in ("direct", "im2col")
