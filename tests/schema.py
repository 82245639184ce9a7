"""A JSON Schema validator for the keywords docs/artifact.schema.json uses (type, const, enum, minimum,
maximum, minItems, maxItems, required, properties, additionalProperties, items, prefixItems, anyOf, $ref to
#/$defs): the problems it finds, as "path: what" lines. js/testkit/schema.js is its twin; the conformance
corpus records what both say of every golden header (tests/conformance/schema.json)."""

from __future__ import annotations

import json
from pathlib import Path

SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "docs" / "artifact.schema.json").read_text())
KEYWORDS = {"$schema", "$id", "title", "description", "$defs", "type", "const", "enum", "minimum", "maximum",
            "minItems", "maxItems", "required", "properties", "additionalProperties", "items", "prefixItems",
            "anyOf", "$ref"}


def _is(value, kind: str) -> bool:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return {"null": value is None, "boolean": isinstance(value, bool), "number": number,
            "integer": number and float(value).is_integer(), "string": isinstance(value, str),
            "array": isinstance(value, list), "object": isinstance(value, dict)}[kind]


def problems(value, schema: dict = SCHEMA, path: str = "$") -> list[str]:
    if "$ref" in schema:
        return problems(value, SCHEMA["$defs"][schema["$ref"].removeprefix("#/$defs/")], path)
    unknown = set(schema) - KEYWORDS
    if unknown:
        raise ValueError(f"the schema uses keywords this validator does not know: {sorted(unknown)}")
    if "anyOf" in schema and all(problems(value, s, path) for s in schema["anyOf"]):
        return [f"{path}: matches none of its alternatives"]
    kinds = schema.get("type")
    if kinds is not None and not any(_is(value, k) for k in ([kinds] if isinstance(kinds, str) else kinds)):
        return [f"{path}: not of type {kinds}"]
    if "const" in schema and not _equal(value, schema["const"]):
        return [f"{path}: not {json.dumps(schema['const'])}"]
    if "enum" in schema and not any(_equal(value, e) for e in schema["enum"]):
        return [f"{path}: not one of {json.dumps(schema['enum'])}"]
    out = []
    if _is(value, "number") and not schema.get("minimum", value) <= value <= schema.get("maximum", value):
        out.append(f"{path}: {value} out of range")
    if isinstance(value, list):
        if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
            out.append(f"{path}: {len(value)} items")
        prefix = schema.get("prefixItems", [])
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else schema.get("items")
            if sub is not None:
                out += problems(item, sub, f"{path}[{i}]")
    if isinstance(value, dict):
        out += [f"{path}: missing {key}" for key in schema.get("required", []) if key not in value]
        for key, item in value.items():
            sub = schema.get("properties", {}).get(key, schema.get("additionalProperties"))
            if sub is not None:
                out += problems(item, sub, f"{path}.{key}")
    return out


def _equal(a, b) -> bool:
    return (type(a) in (int, float) and type(b) in (int, float) and a == b) or (type(a) is type(b) and a == b)


def records(value, schema: dict = SCHEMA, kind: str = "header") -> list[tuple[str, dict, dict]]:
    """Every object of `value` the schema declares fields of, as (kind, object, its schema): kind is its
    $defs name ("kernel"), or the path from the nearest one ("kernel.uniform"); the header itself is
    "header"; the alternative of an anyOf it matches is numbered ("tensor/1"). Objects held as maps (symbols,
    overrides, meta) are not records. js/testkit/schema.js's twin."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        return records(value, SCHEMA["$defs"][name], name)
    if "anyOf" in schema:  # the alternative that fits, numbered: "tensor/1" (packed weights)
        fits = [i for i, s in enumerate(schema["anyOf"]) if not problems(value, s)]
        return records(value, schema["anyOf"][fits[0]], f"{kind}/{fits[0]}") if fits else []
    out = []
    if isinstance(value, list):
        prefix = schema.get("prefixItems", [])
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else schema.get("items")
            if sub is not None:
                out += records(item, sub, kind)
    if isinstance(value, dict):
        declared = schema.get("properties", {})
        if declared:
            out.append((kind, value, schema))
        for key, item in value.items():
            sub = declared.get(key, schema.get("additionalProperties"))
            if isinstance(sub, dict):
                out += records(item, sub, f"{kind}.{key}" if key in declared else kind)
    return out
