"""Nested input/output structures as plain JSON, so a saved program rebuilds them without torch.

A spec is one of
  {"type": "leaf"}                                  a tensor, taken from / put into the flat list
  {"type": "const", "value": v}                     a non-tensor value fixed at export (None, int, float, str)
  {"type": "tuple" | "list", "items": [spec...]}
  {"type": "dict", "keys": [k...], "items": [spec...]}
Other containers (e.g. a transformers ModelOutput) are stored as "dict" with their field names; in a process
that compiled the program from torch, the original container type is restored by the frontend instead.
"""

from __future__ import annotations

from typing import Any

from .errors import InputTypeError

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
        return []
    if kind in ("tuple", "list"):
        if not isinstance(value, (tuple, list)) or len(value) != len(spec["items"]):
            raise InputTypeError(f"{path}: expected a {kind} of {len(spec['items'])} items, got {_describe(value)}")
        return [x for i, (s, v) in enumerate(zip(spec["items"], value, strict=True))
                for x in flatten(s, v, f"{path}[{i}]")]
    if kind == "dict":
        if not isinstance(value, dict) or set(value) != set(spec["keys"]):
            got = sorted(value) if isinstance(value, dict) else _describe(value)
            raise InputTypeError(f"{path}: expected a dict with keys {spec['keys']}, got {got}")
        return [x for k, s in zip(spec["keys"], spec["items"], strict=True)
                for x in flatten(s, value[k], f"{path}[{k!r}]")]
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
    return dict(zip(spec["keys"], items, strict=True))


def _describe(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return type(value).__name__
