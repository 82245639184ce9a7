"""Convolutional networks: what the conv family folds and routes, and whole CNNs against eager PyTorch."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from transformers import (
    MobileNetV2Config,
    MobileNetV2ForImageClassification,
    ResNetConfig,
    ResNetForImageClassification,
)

import webgpu_torch
from webgpu_torch.format.errors import UnsupportedError

from . import corpus, mobilenet_v2
from .helpers import assert_close, reference, seeded

F = nn.functional


def kernels(session) -> list[str]:
    return [session.program.kernels[d.kernel].name for d in session.program.dispatches]


def randomize_batch_norms(model: nn.Module, name: str) -> nn.Module:
    """Seeded, non-trivial BN statistics and affine parameters, so folding them is actually exercised."""
    gen = seeded(name)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(n, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(n, generator=gen) * 0.1)
    return model.eval()


class ConvBNReLU(nn.Module):
    def __init__(self, transposed: bool = False, groups: int = 1):
        super().__init__()
        conv = nn.ConvTranspose2d if transposed else nn.Conv2d
        self.conv = conv(6, 9, 3, stride=2, padding=1, groups=groups)
        self.bn = nn.BatchNorm2d(9)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


@pytest.mark.e2e  # also covers, on the second engine, the direct kernel's grouped and transposed forms
@pytest.mark.parametrize("transposed, groups", [(False, 1), (False, 3), (True, 3)])
def test_batch_norm_folds_into_the_conv_and_the_activation_fuses(transposed, groups, poisoned):
    model = randomize_batch_norms(ConvBNReLU(transposed, groups), f"bn{transposed}{groups}")
    x = torch.randn(3, 6, 13, 11, generator=seeded("bn-x"))
    session = webgpu_torch.compile_module(model, (x,))
    assert len(kernels(session)) == 1 and kernels(session)[0].endswith("+relu"), kernels(session)
    assert_close(poisoned(session, x), reference(model.double(), [x]))


def test_batch_norm_of_a_shared_conv_result_runs_as_a_kernel(poisoned):
    class Shared(ConvBNReLU):
        def forward(self, x):
            y = self.conv(x)
            return self.bn(y) + y

    model = randomize_batch_norms(Shared(), "shared")
    x = torch.randn(1, 6, 13, 11, generator=seeded("shared-x"))
    session = webgpu_torch.compile_module(model, (x,))
    assert "batch_norm" in kernels(session)
    assert_close(poisoned(session, x), reference(model.double(), [x]))


def test_zero_padding_folds_into_the_conv_and_other_padding_does_not():
    conv = nn.Conv2d(5, 7, 3, stride=2)
    x = torch.randn(1, 5, 12, 10)
    zero = webgpu_torch.compile_module(nn.Sequential(nn.ZeroPad2d((0, 1, 0, 1)), conv), (x,))
    ones = webgpu_torch.compile_module(nn.Sequential(nn.ConstantPad2d((0, 1, 0, 1), 1.0), conv), (x,))
    assert kernels(zero) == ["conv[direct]"]
    assert kernels(ones) == ["remap[constant]", "conv[direct]"]


def test_the_conv_option_routes_groups_1_convs_and_is_validated():
    x = torch.randn(1, 8, 9, 9)
    ep = torch.export.export(nn.Sequential(nn.Conv2d(8, 8, 3), nn.Conv2d(8, 8, 1), nn.Conv2d(8, 8, 3, groups=8)),
                             (x,))
    # auto: 4k channels go channels-last (ops/conv.py: _channels_last): one copy of the input, then the vec4
    # im2col GEMM, the 1x1 GEMM and the depthwise kernel, each output channels-last for the next
    assert kernels(webgpu_torch.compile(ep)) == ["elementwise[copy]", "conv[im2col_nhwc,vec4_32x64]",
                                                 "gemm[vec4_32x64]", "conv[depthwise_nhwc]"]
    assert kernels(webgpu_torch.compile(ep, conv="im2col")) == ["conv[im2col,pr]"] * 2 + ["conv[direct]"]
    assert kernels(webgpu_torch.compile(ep, conv="direct")) == ["conv[direct,vec4]"] * 2 + ["conv[direct]"]
    with pytest.raises(ValueError, match="conv='fast': choose one of 'auto', 'im2col', 'direct'"):
        webgpu_torch.compile(ep, conv="fast")


def test_unsupported_forms_are_refused_with_the_reason():
    with pytest.raises(UnsupportedError, match="3-d convolution is not supported"):
        webgpu_torch.compile_module(nn.Conv3d(2, 3, 3), (torch.randn(1, 2, 5, 5, 5),))


class EfficientBlock(nn.Module):
    """The activations MobileNetV3 and EfficientNet add, through their decompositions: hardswish, SiLU, and a
    squeeze-excite gate with hardsigmoid."""

    def __init__(self):
        super().__init__()
        self.expand, self.bn = nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.depthwise = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.squeeze, self.excite = nn.Conv2d(16, 4, 1), nn.Conv2d(4, 16, 1)

    def forward(self, x):
        x = F.silu(self.depthwise(F.hardswish(self.bn(self.expand(x)))))
        return x * F.hardsigmoid(self.excite(F.relu(self.squeeze(F.adaptive_avg_pool2d(x, 1)))))


@pytest.mark.e2e
def test_hardswish_silu_hardsigmoid_block_matches_eager(poisoned):
    torch.manual_seed(0)
    model = randomize_batch_norms(EfficientBlock(), "efficient")
    x = torch.randn(3, 8, 13, 11, generator=seeded("efficient-x"))
    assert_close(poisoned(webgpu_torch.compile_module(model, (x,)), x), reference(model.double(), [x]))


def check_classifier(model: nn.Module, x: torch.Tensor, poisoned, corpus_name: str = "") -> None:
    """Logits within the float32 tolerance of a float64 run and of eager float32, and the same top-1; with a
    `corpus_name`, the program and its call are written to the model corpus (tests/corpus.py)."""
    session = webgpu_torch.compile_module(model, (x,))
    assert not {"batch_norm", "constant_pad"} & set(kernels(session)), "BN and padding fold into the convs"
    got = poisoned(session, x)
    got = got.logits if hasattr(got, "logits") else got
    with torch.no_grad():
        eager = model(x)
    eager = eager.logits if hasattr(eager, "logits") else eager
    want = reference(model.double(), [x])
    want = want.logits if hasattr(want, "logits") else want
    assert_close(got, want, what="logits vs float64")
    assert_close(got, eager, what="logits vs eager float32")
    assert torch.equal(got.argmax(-1), eager.argmax(-1))
    if corpus_name:
        corpus.write(corpus_name, session, [((x,), {}, got)])


@pytest.mark.e2e
def test_resnet_from_config_matches_eager(poisoned):
    torch.manual_seed(0)
    config = ResNetConfig(num_labels=37, depths=[1, 2, 1, 1], hidden_sizes=[24, 40, 56, 72], embedding_size=16)
    model = randomize_batch_norms(ResNetForImageClassification(config), "resnet")
    check_classifier(model, torch.randn(3, 3, 61, 67, generator=seeded("resnet-x")), poisoned)


@pytest.mark.e2e
def test_mobilenet_v2_from_config_matches_eager(poisoned):
    torch.manual_seed(0)
    model = randomize_batch_norms(MobileNetV2ForImageClassification(MobileNetV2Config(num_labels=37,
                                                                                      depth_multiplier=0.35)),
                                  "mobilenet")
    check_classifier(model, torch.randn(3, 3, 64, 71, generator=seeded("mobilenet-x")), poisoned)


@pytest.mark.e2e
def test_pretrained_mobilenet_v2_matches_eager(poisoned):
    """torchvision's ImageNet checkpoint at 224²: 52 convs with folded BN stay within 1e-5 of the logit scale
    (float32 rounding only: measured ~1e-6, the same as eager float32's own distance from float64)."""
    x = torch.randn(1, 3, 224, 224, generator=seeded("imagenet-x"))
    check_classifier(mobilenet_v2.pretrained(), x, poisoned, corpus_name="mobilenet_v2")
