"""The artifact's fields, each written once by hand: docs/artifact.schema.json declares every field of every
record of the header and docs/artifact.md names each; the writer (artifact.to_json) writes no other, and both
readers (artifact.from_json; js/src/artifact.js in js/test/fields.test.js) read every declared field and no
other — checked field by field over the golden headers, whose reads are recorded as the reader runs."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest

from webgpu_torch.format import artifact

from .schema import SCHEMA, records

pytestmark = pytest.mark.host

GOLDEN = Path(__file__).parent / "golden"
FILES = sorted(GOLDEN.glob("*.wgpt"))


class Recording(dict):
    """A header object that records the keys a reader asks for."""

    def __init__(self, value: dict):
        super().__init__({k: recording(v) for k, v in value.items()})
        self.asked: set[str] = set()

    def __getitem__(self, key):
        self.asked.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.asked.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.asked.add(key)
        return super().__contains__(key)


def recording(value):
    if isinstance(value, dict):
        return Recording(value)
    return [recording(v) for v in value] if isinstance(value, list) else value


def headers(monkeypatch) -> list[Recording]:
    """Every golden header, each read by artifact.from_bytes, recording what it asks for."""
    read = []

    def loads(*args, **kwargs):
        read.append(recording(json.loads(*args, **kwargs)))
        return read[-1]

    monkeypatch.setattr(artifact, "json", SimpleNamespace(**{**vars(json), "loads": loads}))
    for path in FILES:
        artifact.from_bytes(path.read_bytes(), path.name)
    return read


def fields(monkeypatch) -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, set[str]]]:
    """kind -> the fields the schema declares; kind -> those some golden header holds (the writer wrote);
    kind -> those the reader asked some golden header for. A reader asks a record for the fields of every
    alternative of its kind ("tensor/0", "tensor/1"), so its asks count by kind ("tensor")."""
    declared, written, asked = defaultdict(set), defaultdict(set), defaultdict(set)
    for header in headers(monkeypatch):
        for kind, obj, schema in records(header):
            declared[kind] |= set(schema["properties"])
            declared[kind.partition("/")[0]] |= set(schema["properties"])
            written[kind] |= set(obj)
            asked[kind.partition("/")[0]] |= obj.asked
    return declared, written, asked


def test_the_writer_writes_declared_fields_only(monkeypatch):
    declared, written, _ = fields(monkeypatch)
    assert {k: sorted(written[k] - declared[k]) for k in written if written[k] - declared[k]} == {}


def test_the_reader_reads_every_declared_field_and_no_other(monkeypatch):
    declared, _, asked = fields(monkeypatch)
    assert {k: sorted(asked[k] - declared[k]) for k in asked if asked[k] - declared[k]} == {}
    assert {k: sorted(declared[k] - asked[k]) for k in asked if declared[k] - asked[k]} == {}


def test_the_contract_names_every_declared_field():
    doc = (Path(__file__).parent.parent / "docs" / "artifact.md").read_text()
    names = set()

    def walk(schema):
        if isinstance(schema, dict):
            names.update(schema.get("properties", {}))
            for sub in schema.values():
                walk(sub)
        elif isinstance(schema, list):
            for sub in schema:
                walk(sub)

    walk(SCHEMA)
    assert sorted(n for n in names if f"`{n}`" not in doc and f'"{n}"' not in doc) == []
