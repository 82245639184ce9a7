// The artifact's fields, each written once by hand: docs/artifact.schema.json declares every field of every
// record of the header, and this reader (js/src/artifact.js) reads every declared field and none other —
// checked field by field over the golden headers, whose reads are recorded as the reader runs (the Python
// reader's twin test: tests/test_artifact_fields.py).

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { parse } from '../src/artifact.js';
import { REPO } from '../testkit/io.js';
import { records } from '../testkit/schema.js';

const GOLDEN = join(REPO, 'tests', 'golden');
const NOT_FIELDS = new Set(['toJSON', 'constructor', 'then']);

/** @type {WeakMap<object, Set<string>>} the keys the reader asked each header object for */
const asked = new WeakMap();
/** @type {WeakMap<object, object>} proxy -> the object it records */
const target = new WeakMap();

/**
 * `value` with every object in it a proxy that records the keys it is asked for.
 * @param {any} value
 * @returns {any}
 */
function recording(value) {
  if (Array.isArray(value)) return value.map(recording);
  if (value === null || typeof value !== 'object') return value;
  const inner = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, recording(v)]));
  const keys = new Set();
  /** @param {string | symbol} key */
  const note = (key) => { if (typeof key === 'string' && !NOT_FIELDS.has(key)) keys.add(key); };
  const proxy = new Proxy(inner, {
    get(o, key, receiver) { note(key); return Reflect.get(o, key, receiver); },
    has(o, key) { note(key); return Reflect.has(o, key); },
    getOwnPropertyDescriptor(o, key) { note(key); return Reflect.getOwnPropertyDescriptor(o, key); },
  });
  asked.set(proxy, keys);
  target.set(proxy, inner);
  return proxy;
}

test('the reader reads every field the schema declares and no other', () => {
  /** @type {Map<string, Set<string>>} */
  const declared = new Map();
  /** @type {Map<string, Set<string>>} */
  const read = new Map();
  const plain = JSON.parse;
  for (const file of readdirSync(GOLDEN).filter((f) => f.endsWith('.wgpt')).sort()) {
    /** @type {any} */
    let header = null;
    JSON.parse = (text, reviver) => (header = recording(plain(text, reviver)));
    try {
      parse(new Uint8Array(readFileSync(join(GOLDEN, file))), file);
    } finally {
      JSON.parse = plain;
    }
    for (const [kind, obj, schema] of records(header)) {
      const base = kind.split('/')[0];
      if (!declared.has(base)) declared.set(base, new Set());
      if (!read.has(base)) read.set(base, new Set());
      for (const k of Object.keys(schema.properties)) /** @type {Set<string>} */ (declared.get(base)).add(k);
      for (const k of /** @type {Set<string>} */ (asked.get(obj))) /** @type {Set<string>} */ (read.get(base)).add(k);
    }
  }
  /** @type {Record<string, string[]>} */
  const extra = {};
  /** @type {Record<string, string[]>} */
  const missed = {};
  for (const [kind, fields] of declared) {
    const got = /** @type {Set<string>} */ (read.get(kind));
    const more = [...got].filter((k) => !fields.has(k)).sort();
    const less = [...fields].filter((k) => !got.has(k)).sort();
    if (more.length) extra[kind] = more;
    if (less.length) missed[kind] = less;
  }
  assert.deepEqual(extra, {}, 'fields the reader asks for that the schema does not declare');
  assert.deepEqual(missed, {}, 'fields the schema declares that the reader never asks for');
});
