"""Nested input/output structures as plain JSON, so a saved program rebuilds them without torch.

A spec is one of (docs/artifact.md, Trees)
  {"type": "leaf"}                                  a tensor, taken from / put into the flat list
  {"type": "const", "value": v}                     a non-tensor value fixed at export (None, bool, int, float,
                                                    str): a call must pass that value (or, as a keyword
                                                    argument, nothing)
  {"type": "tuple" | "list", "items": [spec...], "class": name}
  {"type": "dict", "keys": [k...], "items": [spec...], "class": name}
A container of another class — a transformers ModelOutput, an OrderedDict, a namedtuple, torch's
`torch.return_types.max` — keeps its class's
module-qualified name ("transformers.modeling_outputs.BaseModelOutput"), and comes back as that class where
the class is already loaded in this process (the caller imported transformers, as anyone holding a model
has). A file's class name never causes an import: a name that resolves to nothing loaded, or to anything
but a dict or tuple subclass or a dataclass, gives a `Record` (a named dict that also indexes by position)
or a plain tuple. So a program compiled in this process returns exactly what the eager model
returned, and a torch-free load returns look-alikes that index the same way.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from .errors import InputError, InputTypeError

LEAF = {"type": "leaf"}


def count_leaves(spec: dict) -> int:
    if spec["type"] == "leaf":
        return 1
    return sum(count_leaves(s) for s in spec.get("items", ()))


def flatten(spec: dict, value: Any, path: str = "input") -> list[Any]:
    """The leaves of `value`, which must have the structure `spec` describes."""
    kind = spec["type"]
    if kind == "leaf":
        return [value]
    if kind == "const":
        if not _same(value, spec["value"]):
            raise InputError(f"{path}: the program was exported with {spec['value']!r} here (a constant baked "
                             f"into it), got {_shown(value)}; compile another program for another value")
        return []
    if kind in ("tuple", "list"):
        if not isinstance(value, (tuple, list)) or len(value) != len(spec["items"]):
            raise InputTypeError(f"{path}: expected a {kind} of {len(spec['items'])} items, got {_describe(value)}")
        return [x for i, (s, v) in enumerate(zip(spec["items"], value, strict=True))
                for x in flatten(s, v, f"{path}[{i}]")]
    if kind == "dict":
        optional = {k for k, s in zip(spec["keys"], spec["items"], strict=True) if s["type"] == "const"}
        if not isinstance(value, dict) or not set(spec["keys"]) - optional <= set(value) <= set(spec["keys"]):
            got = sorted(value) if isinstance(value, dict) else _describe(value)
            raise InputTypeError(f"{path}: expected a dict with keys {spec['keys']}, got {got}")
        return [x for k, s in zip(spec["keys"], spec["items"], strict=True)
                for x in flatten(s, value.get(k, s.get("value")), f"{path}[{k!r}]")]
    raise ValueError(f"unknown tree node type {kind!r}")


def unflatten(spec: dict, leaves: list[Any]) -> Any:
    it = iter(leaves)
    out = _build(spec, it)
    if next(it, _END) is not _END:
        raise ValueError("more leaves than the tree spec holds")
    return out


_END = object()


def _build(spec: dict, it) -> Any:
    kind = spec["type"]
    if kind == "leaf":
        return next(it)
    if kind == "const":
        return spec["value"]
    items = [_build(s, it) for s in spec["items"]]
    if kind == "list":
        return items
    cls = loaded_class(spec.get("class"))
    if kind == "tuple":
        if cls is None or not issubclass(cls, tuple):
            return tuple(items)
        return cls(*items) if _is_namedtuple(cls) else cls(items)  # a structseq, a torch.Size: from a sequence
    fields = dict(zip(spec["keys"], items, strict=True))
    if cls is None or issubclass(cls, tuple):
        return Record(fields) if "class" in spec else fields
    if dataclasses.is_dataclass(cls):  # a ModelOutput: its fields by name, as transformers' pytree rebuilds it
        return cls(**fields)
    out = cls()  # a dict subclass; filled after construction, since a defaultdict's first argument is a factory
    out.update(fields)
    return out


def class_name(cls: type) -> str:
    """What a tree records for a container class: "module.QualifiedName"."""
    return f"{cls.__module__}.{cls.__qualname__}"


def loaded_class(name: str | None) -> type | None:
    """The container class `name` (from class_name) names, if its module is loaded in this process and it is
    a dict or tuple subclass or a dataclass; else None. Never imports."""
    if not name:
        return None
    module, _, path = name.rpartition(".")
    while module and module not in sys.modules:  # a nested class: "mod.Outer.Inner"
        module, _, outer = module.rpartition(".")
        path = f"{outer}.{path}"
    obj: Any = sys.modules.get(module)
    for part in path.split("."):
        obj = getattr(obj, part, None)
    ok = isinstance(obj, type) and (issubclass(obj, (dict, tuple)) or dataclasses.is_dataclass(obj))
    return obj if ok else None


def _is_namedtuple(cls: type) -> bool:
    return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


class Record(dict):
    """A model's named outputs where their own class is not loaded: `out["logits"]`, `out.logits` and, as
    on a ModelOutput or a namedtuple, `out[0]` (fields in order), `out[:2]` and `out.to_tuple()`."""

    def __getitem__(self, key):
        if isinstance(key, (int, slice)):
            return self.to_tuple()[key]
        return super().__getitem__(key)

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def to_tuple(self) -> tuple:
        return tuple(self.values())


def _shown(v: Any) -> str:
    return repr(v) if v is None or isinstance(v, (bool, int, float, str)) else _describe(v)


def _same(value: Any, const: Any) -> bool:
    """Whether a call's `value` is the constant the program was exported with (2 for 2.0 is, True for 1 is not)."""
    if isinstance(const, (bool, type(None))) or isinstance(value, (bool, type(None))):
        return value is const
    if isinstance(const, str) or isinstance(value, str):
        return value == const
    return isinstance(value, (int, float)) and value == const


def _describe(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return type(value).__name__
