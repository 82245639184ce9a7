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
from webgpu_torch.compiler import frontend
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
                                  "tests.test_outputs.Pair.low", "webgpu_torch.packing.Packing",
                                  "webgpu_torch.runtime.engine.Engine", "collections.defaultdict"])
@pytest.mark.host
def test_a_class_name_from_a_file_never_imports_or_calls_anything_but_a_container(name):
    """A reader refuses such a file (tree.class_problem); built anyway, the tree calls none of these."""
    loaded = set(sys.modules)
    assert tree.class_problem(_spec(name)) and tree.class_problem(_spec(name, "tuple"))
    assert type(tree.unflatten(_spec(name), [1, 2])) is tree.Record
    assert set(sys.modules) == loaded


class Checked(Pair):
    def __new__(cls, *args):
        raise AssertionError("a namedtuple's own code ran")


@pytest.mark.host
def test_recorded_classes_are_the_allowlist_and_come_back_without_running_their_code():
    flat = torch.utils._pytree.tree_flatten
    named = frontend.treespec_to_json(flat(Pair(1, 2))[1])
    assert named == {"type": "tuple", "items": [tree.LEAF] * 2, "class": "tests.test_outputs.Pair",
                     "fields": ["low", "high"]}
    assert tree.unflatten({**named, "class": tree.class_name(Checked)}, [1, 2]) == Checked._make([1, 2])
    assert type(tree.unflatten(named, [1, 2])) is Pair
    ordered = frontend.treespec_to_json(flat(collections.OrderedDict(a=1))[1])
    assert type(tree.unflatten(ordered, [1])) is collections.OrderedDict
    for plain in (collections.defaultdict(None, a=1), torch.Size([1])):  # recorded as their plain containers
        assert "class" not in frontend.treespec_to_json(flat(plain)[1])
    assert type(tree.unflatten(_spec("torch.return_types.max", "tuple"), [1, 2])) is torch.return_types.max
    assert tree.unflatten(_spec("torch.return_types.max", "tuple") | {"items": [tree.LEAF] * 3}, [1, 2, 3]) == (1, 2, 3)


@pytest.mark.host
def test_a_model_output_is_built_from_its_own_fields_only(monkeypatch):
    import dataclasses
    import types

    from transformers.modeling_outputs import BaseModelOutput, ModelOutput

    @dataclasses.dataclass
    class Strict(ModelOutput):  # ModelOutput.__post_init__ refuses a later field whose default is not None
        first: object = None
        second: int = 3

    module = types.ModuleType("strict_outputs")
    module.Strict, Strict.__module__, Strict.__qualname__ = Strict, module.__name__, "Strict"
    monkeypatch.setitem(sys.modules, module.__name__, module)

    def spec(cls, *keys):
        return {"type": "dict", "keys": list(keys), "items": [tree.LEAF] * len(keys), "class": tree.class_name(cls)}

    assert type(tree.unflatten(spec(BaseModelOutput, "last_hidden_state"), [np.zeros(1)])) is BaseModelOutput
    assert type(tree.unflatten(spec(BaseModelOutput, "bogus"), [np.zeros(1)])) is tree.Record
    assert type(tree.unflatten(spec(Strict, "first"), [np.zeros(1)])) is tree.Record
