"""A compiled model returns what the eager model returns: its own output classes where they are loaded (a
ModelOutput, an OrderedDict, a namedtuple, torch.return_types), which torch's pytree flattens as it flattens
eager outputs; where they are not (a torch-free load), Records that index by name, attribute and position."""

from __future__ import annotations

import collections
import sys
from typing import NamedTuple

import numpy as np
import pytest
import torch

import webgpu_torch
from webgpu_torch.format import tree

from .helpers import Fn, assert_close, reference, seeded


class Pair(NamedTuple):
    low: torch.Tensor
    high: torch.Tensor


class Segmenter(torch.nn.Module):
    """Returns an OrderedDict, as torchvision's segmentation models do, and a namedtuple inside it."""

    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(13, 7)

    def forward(self, x):
        y = self.head(x)
        return collections.OrderedDict(out=y, aux=Pair(y.amin(-1), y.amax(-1)))


def test_an_ordered_dict_and_a_namedtuple_come_back_as_themselves(poisoned):
    model = Segmenter().eval()
    x = torch.randn(5, 13, generator=seeded("outputs"))
    session = webgpu_torch.compile_module(model, (x,))
    got, want = poisoned(session, x), reference(model.double(), [x])
    assert type(got) is collections.OrderedDict and list(got) == ["out", "aux"]
    assert type(got["aux"]) is Pair
    assert_close(got["aux"].high, want["aux"].high)
    leaves, spec = torch.utils._pytree.tree_flatten(got)
    assert spec == torch.utils._pytree.tree_flatten(want)[1] and len(leaves) == 3


def test_torch_return_types_come_back_as_themselves(poisoned):
    x = torch.randn(5, 7, 3, generator=seeded("return types"))
    session = webgpu_torch.compile_module(Fn(lambda x: torch.max(x, 1)), (x,))
    got, want = poisoned(session, x), torch.max(x, 1)
    assert type(got) is torch.return_types.max
    assert_close(got.values, want.values)
    assert torch.equal(got.indices, want.indices)


def test_a_program_without_inputs_returns_torch_tensors_where_torch_is_loaded():
    session = webgpu_torch.compile_module(Fn(lambda: torch.linspace(-2.0, 3.0, 7)), ())
    got = session()
    assert isinstance(got, torch.Tensor)
    assert_close(got, torch.linspace(-2.0, 3.0, 7, dtype=torch.float64))


def _spec(cls: str, kind: str = "dict") -> dict:
    items = [tree.LEAF, tree.LEAF]
    return {"type": kind, "keys": ["logits", "hidden"], "items": items, "class": cls} if kind == "dict" else \
        {"type": kind, "items": items, "class": cls}


@pytest.mark.host
def test_a_class_that_is_not_loaded_gives_a_record_that_indexes_like_a_model_output():
    out = tree.unflatten(_spec("a_package_never_imported.outputs.Output"), [1, 2])
    assert type(out) is tree.Record
    assert (out["logits"], out.hidden, out[0], out[-1], out[:1], out.to_tuple()) == (1, 2, 1, 2, (1,), (1, 2))
    assert list(out) == ["logits", "hidden"]  # iterates its keys, as a dict and a ModelOutput do
    with pytest.raises(AttributeError):
        _ = out.loss
    assert tree.unflatten(_spec("a_package_never_imported.Pair", "tuple"), [1, 2]) == (1, 2)


@pytest.mark.parametrize("name", ["os.system", "builtins.eval", "collections.abc.Mapping", "antigravity.geohash",
                                  "tests.test_outputs.Pair.low"])
@pytest.mark.host
def test_a_class_name_from_a_file_never_imports_or_calls_anything_but_a_container(name):
    loaded = set(sys.modules)
    assert type(tree.unflatten(_spec(name), [1, 2])) is tree.Record
    assert set(sys.modules) == loaded


@pytest.mark.host
def test_class_names_are_module_qualified_and_resolve_to_the_class():
    for cls in (collections.OrderedDict, collections.defaultdict, Pair, torch.return_types.max, torch.Size):
        assert tree.loaded_class(tree.class_name(cls)) is cls
    out = tree.unflatten(_spec(tree.class_name(collections.defaultdict)), [np.zeros(1), 2])
    assert type(out) is collections.defaultdict and out.default_factory is None and out["hidden"] == 2
