"""Models of the corpus the JavaScript runtime runs (tests/corpus.py) that no other test compiles: a BERT with
a dynamic sequence length called at two lengths, and a CNN with every conv form. Each is checked against eager
PyTorch here, then written with its calls. (MiniLM, MobileNetV2 and Florence-2 are written by the tests that
check them: test_transformers.py, test_cnn.py, test_florence2.py.)"""

from __future__ import annotations

import pytest
import torch
import transformers
from torch import nn
from torch.export import Dim

import webgpu_torch

from . import corpus
from .helpers import assert_close, reference, seeded

pytestmark = pytest.mark.e2e


def test_bert_with_a_dynamic_sequence_length():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=211, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=97, max_position_embeddings=64)
    model = transformers.BertModel(cfg).eval()
    gen = seeded("bert-dynamic")
    seq = Dim("seq", min=2, max=48)
    ids = torch.randint(0, 211, (2, 19), generator=gen)
    session = webgpu_torch.compile_module(model, (ids,), {"attention_mask": torch.ones_like(ids)},
                                          dynamic_shapes={"input_ids": {1: seq}, "attention_mask": {1: seq}})
    calls = []
    for length in (7, 31):
        ids = torch.randint(0, 211, (2, length), generator=gen)
        mask = torch.ones_like(ids)
        mask[1, length - 3:] = 0
        out = session(ids, attention_mask=mask)
        want = reference(model.double(), [ids, mask])
        assert_close(out.last_hidden_state, want.last_hidden_state, what=f"hidden states at {length}")
        calls.append(((ids,), {"attention_mask": mask}, out))
    corpus.write("bert_dynamic", session, calls)


class ConvForms(nn.Module):
    """Every conv route (ops/conv.py): channels-last 1×1, im2col and depthwise; NCHW grouped, dilated,
    strided; transposed; a 1-d conv; with batch norm, pooling and activations between."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.pointwise = nn.Conv2d(8, 16, 1)
        self.depthwise = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.grouped = nn.Conv2d(16, 12, 3, padding=2, dilation=2, groups=2)
        self.odd = nn.Conv2d(12, 5, 5, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(5, 7, 3, stride=2, padding=1, output_padding=1)
        self.line = nn.Conv1d(7, 9, 3, padding=1)

    def forward(self, x):
        x = self.stem(x)
        x = nn.functional.silu(self.depthwise(self.pointwise(x)) + torch.cat([x, x], 1))
        x = nn.functional.max_pool2d(self.odd(self.grouped(x)), 2, ceil_mode=True)
        x = torch.relu(self.up(x))
        return self.line(x.flatten(2)).mean(-1)


def test_a_cnn_with_every_conv_form():
    torch.manual_seed(0)
    model = ConvForms().eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 3, 47, 53, generator=seeded("conv-forms"))
    session = webgpu_torch.compile_module(model, (x,))
    out = session(x)
    assert_close(out, reference(model.double(), [x]))
    corpus.write("cnn_forms", session, [((x,), {}, out)])
