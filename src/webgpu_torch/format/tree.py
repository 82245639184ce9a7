"""Nested input/output structures as plain JSON, so a saved program rebuilds them without torch.

A spec is one of (docs/artifact.md, Trees)
  {"type": "leaf"}                                  a tensor, taken from / put into the flat list
  {"type": "const", "value": v}                     a non-tensor value fixed at export (None, bool, int, float,
                                                    str): a call must pass that value (or, as a keyword
                                                    argument, nothing)
  {"type": "list", "items": [spec...]}
  {"type": "tuple", "items": [spec...], "class": name, "fields": [field...]}   class and fields optional
  {"type": "dict", "keys": [k...], "items": [spec...], "class": name}         class optional
A container of another class keeps its module-qualified name, from an allowlist (docs/artifact.md, Trees;
limits.json's `tree_classes`): an OrderedDict or a transformers ModelOutput on a dict, a torch.return_types
class or a namedtuple, which declares its `fields`, on a tuple. A file naming anything else is refused
(`class_problem`), and a class comes back only where it is already loaded in this process and is what its
name claims (the caller imported transformers, as anyone holding such a model has): an OrderedDict, a
ModelOutput built from its fields by name, a torch.return_types structseq, or a namedtuple made without
calling any of its code. A file's class name never causes an import, and nothing else is ever called: in its
place comes a `Record` (a named dict that also indexes by position) or a plain tuple. So a program compiled
in this process returns exactly what the eager model returned, and a torch-free load returns look-alikes
that index the same way.
"""

from __future__ import annotations

import collections
import dataclasses
import inspect
import re
import sys
from typing import Any

from .errors import InputError, InputTypeError
from .limits import LIMITS

LEAF = {"type": "leaf"}
CLASSES = LIMITS["tree_classes"]  # node type -> {"names": classes by name, "modules": modules of classes}
_DOTTED = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+")  # "module.Name": remote code's modules have `-`
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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
        return _tuple(cls, spec.get("fields"), items)
    fields = dict(zip(spec["keys"], items, strict=True))
    if cls is collections.OrderedDict:
        return collections.OrderedDict(fields)
    if _is_model_output(cls) and set(fields) <= {f.name for f in dataclasses.fields(cls)}:
        try:  # its fields by name, as transformers' pytree rebuilds it
            return cls(**fields)
        except (TypeError, ValueError):  # __post_init__ refuses some classes (a later field defaulting to non-None)
            pass
    return Record(fields) if "class" in spec else fields


def _tuple(cls: type | None, fields: list | None, items: list) -> tuple:
    try:
        if fields is not None and _is_namedtuple(cls) and cls._fields == tuple(fields):
            return tuple.__new__(cls, items)  # as namedtuple's _make: none of the class's own code runs
        if cls is not None and cls.__module__ == "torch.return_types" and issubclass(cls, tuple):
            return cls(items)  # a structseq (C): from a sequence
    except TypeError:  # a tuple type of its own length (a structseq) or allocation (a C type)
        pass
    return tuple(items)


def class_problem(node: dict) -> str | None:
    """Why a tree node's `class` (and a tuple's `fields`) is not one a compiled program records, or None: an
    OrderedDict or a transformers ModelOutput on a dict, a torch.return_types class or a namedtuple that
    declares its fields (distinct names, one per item) on a tuple."""
    fields = node.get("fields")
    if "fields" in node and not (node["type"] == "tuple" and "class" in node and isinstance(fields, list)
                                 and len(fields) == len(node["items"]) == len(set(map(str, fields)))
                                 and all(isinstance(f, str) and _FIELD.fullmatch(f) for f in fields)):
        return "a tuple node's fields are not distinct names, one per item, of a classed tuple"
    if "class" not in node:
        return None
    name = node["class"]
    if not isinstance(name, str):
        return f"a tree node's class is {type(name).__name__}, not a string"
    allowed = CLASSES.get(node["type"], {"names": [], "modules": []})
    module = name.rpartition(".")[0]
    if (_DOTTED.fullmatch(name) and (name in allowed["names"] or fields is not None or any(
            module == m or module.startswith(f"{m}.") for m in allowed["modules"]))):
        return None
    return (f"a {node['type']} node's class {name[:80]!r} is not one a compiled program records (on a dict: "
            "an OrderedDict or a transformers ModelOutput; on a tuple: torch.return_types or a namedtuple "
            "with its fields)")


def class_name(cls: type) -> str:
    """What a tree records for a container class: "module.QualifiedName"."""
    return f"{cls.__module__}.{cls.__qualname__}"


def loaded_class(name: str | None) -> type | None:
    """The class `name` (from class_name) names, if its module is loaded in this process; else None. Looks
    names up in the module's and classes' own namespaces: never imports, never runs a lazy module's
    `__getattr__`."""
    if not name:
        return None
    module, _, path = name.rpartition(".")
    while module and module not in sys.modules:  # a nested class: "mod.Outer.Inner"
        module, _, outer = module.rpartition(".")
        path = f"{outer}.{path}"
    obj: Any = sys.modules.get(module)
    for part in path.split("."):
        obj = vars(obj).get(part) if hasattr(obj, "__dict__") else None
    return obj if isinstance(obj, type) else None


def _is_model_output(cls: type | None) -> bool:
    """Whether `cls` is a transformers ModelOutput (a dataclass dict), transformers being loaded."""
    generic = sys.modules.get("transformers.utils.generic")
    base = vars(generic).get("ModelOutput") if generic else None
    return cls is not None and isinstance(base, type) and issubclass(cls, base) and dataclasses.is_dataclass(cls)


def _is_namedtuple(cls: type | None) -> bool:
    return cls is not None and issubclass(cls, tuple) and isinstance(inspect.getattr_static(cls, "_fields", None),
                                                                      tuple)


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
