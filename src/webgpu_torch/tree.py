"""Nested input/output structures as plain JSON, so a saved program rebuilds them without torch.

A spec is one of (docs/artifact.md, Trees)
  {"type": "leaf"}                                  a tensor, taken from / put into the flat list
  {"type": "const", "value": v}                     a non-tensor value fixed at export (None, bool, int, float,
                                                    str): a call must pass that value (or, as a keyword
                                                    argument, nothing)
  {"type": "tuple" | "list", "items": [spec...]}
  {"type": "dict", "keys": [k...], "items": [spec...], "class": name}
Other containers with named fields (a transformers ModelOutput) are stored as "dict" with their class name,
and come back as a `Record`: a dict whose fields read as attributes too, the same whether the program was
just compiled or loaded from a file.
"""

from __future__ import annotations

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
    if kind == "tuple":
        return tuple(items)
    if kind == "list":
        return items
    fields = dict(zip(spec["keys"], items, strict=True))
    return Record(fields) if "class" in spec else fields


class Record(dict):
    """A model's named outputs (a transformers ModelOutput): `out["logits"]` and `out.logits` alike."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


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
