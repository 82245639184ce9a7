"""torch.compile(model, backend="webgpu"): the graphs Dynamo captures run on WebGPU and match eager; a graph
that cannot run warns once and runs in eager PyTorch, with eager's numbers."""

from __future__ import annotations

import warnings

import pytest
import torch
import transformers
from torch import nn

from .helpers import assert_close, reference, seeded
from .test_corpus import ConvForms

pytestmark = pytest.mark.e2e


def _compiled(model: nn.Module):
    torch._dynamo.reset()
    return torch.compile(model, backend="webgpu")


def test_a_transformers_model_compiles_and_matches_eager():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=211, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=97, max_position_embeddings=64)
    model = transformers.BertModel(cfg).eval()
    ids = torch.randint(0, 211, (2, 19), generator=seeded("dynamo-bert"))
    mask = torch.ones_like(ids)
    mask[1, 11:] = 0
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no graph may fall back to eager
        got = _compiled(model)(ids, attention_mask=mask)
    want = reference(model.double(), [ids, mask])
    assert type(got) is type(want)
    assert_close(got[0], want.last_hidden_state)
    assert_close(got.pooler_output, want.pooler_output)


def test_a_cnn_compiles_and_matches_eager():
    torch.manual_seed(0)
    model = ConvForms().eval()
    x = torch.randn(2, 3, 47, 53, generator=seeded("dynamo-cnn"))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        got = _compiled(model)(x)
    assert_close(got, reference(model.double(), [x]))


class _Breaks(nn.Module):
    """Two graphs around a graph break; the second uses an op with no WebGPU kernel."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        y = torch.relu(self.lin(x))
        torch._dynamo.graph_break()
        return torch.linalg.inv(y @ y.T + torch.eye(6)) @ x


def test_a_graph_that_cannot_run_falls_back_to_eager_with_one_warning():
    torch.manual_seed(0)
    model = _Breaks().eval()
    x = torch.randn(6, 6, generator=seeded("dynamo-breaks"))
    with torch.no_grad(), pytest.warns(UserWarning, match=r"(?s)runs in eager PyTorch.*linalg") as caught:
        got = _compiled(model)(x)
    assert len([w for w in caught if "webgpu backend" in str(w.message)]) == 1
    with torch.no_grad():
        assert_close(got, model(x))


@pytest.mark.host
def test_recording_autograd_runs_eagerly():
    model = nn.Linear(5, 3)
    x = torch.randn(2, 5)
    with pytest.warns(UserWarning, match="autograd is recording"):
        y = _compiled(model)(x)
    y.sum().backward()  # eager's graph: gradients flow
    assert model.weight.grad is not None
