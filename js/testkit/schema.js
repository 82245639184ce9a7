// A JSON Schema validator for the keywords docs/artifact.schema.json uses (type, const, enum, minimum,
// maximum, minItems, maxItems, required, properties, additionalProperties, items, prefixItems, anyOf, $ref to
// #/$defs): the problems it finds, as "path: what" lines. tests/schema.py is its twin; the conformance
// corpus records what both say of every golden header (tests/conformance/schema.json).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { REPO } from './io.js';

export const SCHEMA = JSON.parse(readFileSync(join(REPO, 'docs', 'artifact.schema.json'), 'utf8'));
const KEYWORDS = new Set(['$schema', '$id', 'title', 'description', '$defs', 'type', 'const', 'enum', 'minimum', 'maximum',
  'minItems', 'maxItems', 'required', 'properties', 'additionalProperties', 'items', 'prefixItems', 'anyOf', '$ref']);

/**
 * @param {unknown} value
 * @param {string} kind
 */
function is(value, kind) {
  switch (kind) {
    case 'null': return value === null;
    case 'boolean': return typeof value === 'boolean';
    case 'number': return typeof value === 'number';
    case 'integer': return Number.isInteger(value);
    case 'string': return typeof value === 'string';
    case 'array': return Array.isArray(value);
    case 'object': return value !== null && typeof value === 'object' && !Array.isArray(value);
    default: throw new Error(`unknown type ${kind}`);
  }
}

/**
 * @param {any} value
 * @param {any} [schema]
 * @param {string} [path]
 * @returns {string[]}
 */
export function problems(value, schema = SCHEMA, path = '$') {
  if (schema.$ref) return problems(value, SCHEMA.$defs[schema.$ref.replace('#/$defs/', '')], path);
  const unknown = Object.keys(schema).filter((k) => !KEYWORDS.has(k));
  if (unknown.length) throw new Error(`the schema uses keywords this validator does not know: ${unknown}`);
  if (schema.anyOf && schema.anyOf.every((/** @type {any} */ s) => problems(value, s, path).length)) return [`${path}: matches none of its alternatives`];
  if (schema.type !== undefined && ![schema.type].flat().some((k) => is(value, k))) return [`${path}: not of type ${schema.type}`];
  if ('const' in schema && value !== schema.const) return [`${path}: not ${JSON.stringify(schema.const)}`];
  if (schema.enum && !schema.enum.includes(value)) return [`${path}: not one of ${JSON.stringify(schema.enum)}`];
  /** @type {string[]} */
  const out = [];
  if (typeof value === 'number' && (value < (schema.minimum ?? value) || value > (schema.maximum ?? value))) out.push(`${path}: ${value} out of range`);
  if (Array.isArray(value)) {
    if (value.length < (schema.minItems ?? 0) || value.length > (schema.maxItems ?? value.length)) out.push(`${path}: ${value.length} items`);
    const prefix = schema.prefixItems ?? [];
    value.forEach((item, i) => {
      const sub = i < prefix.length ? prefix[i] : schema.items;
      if (sub !== undefined) out.push(...problems(item, sub, `${path}[${i}]`));
    });
  }
  if (is(value, 'object')) {
    for (const key of schema.required ?? []) if (!Object.hasOwn(value, key)) out.push(`${path}: missing ${key}`);
    for (const [key, item] of Object.entries(value)) {
      const sub = schema.properties?.[key] ?? schema.additionalProperties;
      if (sub !== undefined) out.push(...problems(item, sub, `${path}.${key}`));
    }
  }
  return out;
}

/**
 * Every object of `value` the schema declares fields of, as [kind, object, its schema]: kind is its $defs name
 * ("kernel"), or the path from the nearest one ("kernel.uniform"); the header itself is "header"; the
 * alternative of an anyOf it matches is numbered ("tensor/1"). Objects held as maps (symbols, overrides, meta)
 * are not records. tests/schema.py's twin.
 * @param {any} value
 * @param {any} [schema]
 * @param {string} [kind]
 * @returns {[string, any, any][]}
 */
export function records(value, schema = SCHEMA, kind = 'header') {
  if (schema.$ref) {
    const name = schema.$ref.replace('#/$defs/', '');
    return records(value, SCHEMA.$defs[name], name);
  }
  if (schema.anyOf) {
    const fit = schema.anyOf.findIndex((/** @type {any} */ s) => problems(value, s).length === 0);
    return fit < 0 ? [] : records(value, schema.anyOf[fit], `${kind}/${fit}`);
  }
  /** @type {[string, any, any][]} */
  const out = [];
  if (Array.isArray(value)) {
    const prefix = schema.prefixItems ?? [];
    value.forEach((item, i) => {
      const sub = i < prefix.length ? prefix[i] : schema.items;
      if (sub !== undefined) out.push(...records(item, sub, kind));
    });
  }
  if (is(value, 'object')) {
    const declared = schema.properties ?? {};
    if (Object.keys(declared).length) out.push([kind, value, schema]);
    for (const [key, item] of Object.entries(value)) {
      const sub = declared[key] ?? schema.additionalProperties;
      if (sub !== null && typeof sub === 'object') out.push(...records(item, sub, key in declared ? `${kind}.${key}` : kind));
    }
  }
  return out;
}
