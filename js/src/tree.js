// The nested structure of a call's arguments and results (docs/artifact.md, Trees), as plain JSON.
//   {"type": "leaf"}                              a tensor, taken from / put into the flat list in order
//   {"type": "const", "value": v}                 a value fixed at export: checked, never passed on
//   {"type": "tuple" | "list", "items": [...]}    a JavaScript array
//   {"type": "dict", "keys": [...], "items": [...], "class"?: name}   a plain object
// A dict entry whose tree is a const may be left out of a call (an omitted keyword argument).

import { InputTypeError } from './errors.js';

/** @typedef {{type: 'leaf'} | {type: 'const', value: Const} | {type: 'tuple' | 'list', items: TreeSpec[]}
 *   | {type: 'dict', keys: string[], items: TreeSpec[], class?: string}} TreeSpec */
/** @typedef {null | boolean | number | string} Const */

/**
 * Why `spec` is not a tree, or null when it is.
 * @param {any} spec
 * @returns {string | null}
 */
export function problem(spec) {
  if (spec === null || typeof spec !== 'object') return `not a tree node: ${JSON.stringify(spec)}`;
  const kind = spec.type;
  if (kind === 'leaf') return null;
  if (kind === 'const') {
    const v = spec.value;
    const ok = v === null || ['boolean', 'number', 'string'].includes(typeof v);
    return ok ? null : `a const node of value ${JSON.stringify(v)}`;
  }
  if (kind !== 'tuple' && kind !== 'list' && kind !== 'dict') return `unknown tree node type ${JSON.stringify(kind)}`;
  if (!Array.isArray(spec.items)) return `a ${kind} node without items`;
  if (kind === 'dict') {
    const keys = spec.keys;
    if (!Array.isArray(keys) || keys.length !== spec.items.length || !keys.every((k) => typeof k === 'string')) {
      return 'a dict node whose keys are not as many strings as its items';
    }
    if (new Set(keys).size !== keys.length) return 'a dict node with a repeated key';
  }
  for (const item of spec.items) {
    const p = problem(item);
    if (p) return p;
  }
  return null;
}

/**
 * @param {TreeSpec} spec
 * @returns {number}
 */
export function countLeaves(spec) {
  if (spec.type === 'leaf') return 1;
  if (spec.type === 'const') return 0;
  return spec.items.reduce((n, s) => n + countLeaves(s), 0);
}

/**
 * The leaves of `value`, which must have the structure `spec` describes; `path` names it in messages.
 * @param {TreeSpec} spec
 * @param {unknown} value
 * @param {string} path
 * @param {unknown[]} out
 * @returns {unknown[]}
 */
export function flatten(spec, value, path = 'input', out = []) {
  if (spec.type === 'leaf') {
    out.push(value);
  } else if (spec.type === 'const') {
    if (value !== spec.value && !(spec.value === null && value === undefined)) {
      throw new InputTypeError(`${path}: the program was exported with the constant ${JSON.stringify(spec.value)}, ` +
        `got ${describe(value)}`);
    }
  } else if (spec.type === 'tuple' || spec.type === 'list') {
    if (!Array.isArray(value) || value.length !== spec.items.length) {
      throw new InputTypeError(`${path}: expected a ${spec.type} of ${spec.items.length} items, got ${describe(value)}`);
    }
    spec.items.forEach((s, i) => flatten(s, value[i], `${path}[${i}]`, out));
  } else if (spec.type === 'dict') {
    if (!isPlainObject(value)) {
      throw new InputTypeError(`${path}: expected an object with keys ${JSON.stringify(spec.keys)}, got ${describe(value)}`);
    }
    const obj = /** @type {Record<string, unknown>} */ (value);
    const unknown = Object.keys(obj).filter((k) => !spec.keys.includes(k));
    const missing = spec.keys.filter((k, i) => !Object.hasOwn(obj, k) && spec.items[i].type !== 'const');
    if (unknown.length || missing.length) {
      const what = [unknown.length ? `unexpected ${JSON.stringify(unknown)}` : '',
        missing.length ? `missing ${JSON.stringify(missing)}` : ''].filter(Boolean).join(', ');
      throw new InputTypeError(`${path}: expected an object with keys ${JSON.stringify(spec.keys)}: ${what}`);
    }
    spec.keys.forEach((k, i) => {
      const item = spec.items[i];
      if (Object.hasOwn(obj, k) || item.type !== 'const') flatten(item, obj[k], `${path}[${JSON.stringify(k)}]`, out);
    });
  }
  return out;
}

/**
 * `leaves` put into the structure `spec` describes: tuples and lists as arrays, dicts as objects.
 * @param {TreeSpec} spec
 * @param {unknown[]} leaves
 * @returns {unknown}
 */
export function unflatten(spec, leaves) {
  let next = 0;
  /** @param {TreeSpec} s @returns {unknown} */
  const build = (s) => {
    if (s.type === 'leaf') return leaves[next++];
    if (s.type === 'const') return s.value;
    if (s.type === 'dict') return Object.fromEntries(s.keys.map((k, i) => [k, build(s.items[i])]));
    return s.items.map(build);
  };
  return build(spec);
}

/** @param {unknown} v */
function isPlainObject(v) {
  if (v === null || typeof v !== 'object') return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * @param {unknown} v
 * @returns {string}
 */
export function describe(v) {
  if (Array.isArray(v)) return `an array of ${v.length} items`;
  if (v === null || v === undefined) return String(v);
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
  if (typeof v === 'object') return `a ${v.constructor?.name ?? 'object'}`;
  return JSON.stringify(v);
}
