// The nested structure of a call's arguments and results (docs/artifact.md, Trees), as plain JSON.
//   {"type": "leaf"}                              a tensor, taken from / put into the flat list in order
//   {"type": "const", "value": v}                 a value fixed at export: checked, never passed on
//   {"type": "tuple" | "list", "items": [...]}    a JavaScript array
//   {"type": "dict", "keys": [...], "items": [...]}   a plain object
// A dict entry whose tree is a const may be left out of a call (an omitted keyword argument). A tuple or dict
// may name the class the model returned, from an allowlist (`classProblem`); this runtime returns arrays and
// objects whatever the class.

import { InputError, InputTypeError } from './errors.js';
import { LIMITS } from './limits.js';

/** @typedef {{type: 'leaf'} | {type: 'const', value: Const} | {type: 'list', items: TreeSpec[]}
 *   | {type: 'tuple', items: TreeSpec[], class?: string, fields?: string[]}
 *   | {type: 'dict', keys: string[], items: TreeSpec[], class?: string}} TreeSpec */
/** @typedef {null | boolean | number | string} Const */

const CLASSES = /** @type {Record<string, {names: string[], modules: string[]}>} */ (LIMITS.tree_classes);
const DOTTED = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$/; // "module.Name": remote code's modules have `-`
const FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Why a tree node's `class` (and a tuple's `fields`) is not one a compiled program records, or null: an
 * OrderedDict or a transformers ModelOutput on a dict, a torch.return_types class or a namedtuple that declares
 * its fields (distinct names, one per item) on a tuple (src/webgpu_torch/format/tree.py decides alike).
 * @param {Record<string, any>} node a node whose type and items (and a dict's keys) are checked
 * @returns {string | null}
 */
export function classProblem(node) {
  const fields = node.fields;
  if (Object.hasOwn(node, 'fields') && !(node.type === 'tuple' && Object.hasOwn(node, 'class') && Array.isArray(fields) &&
    fields.length === node.items.length && new Set(fields.map(String)).size === fields.length &&
    fields.every((f) => typeof f === 'string' && FIELD.test(f)))) {
    return 'a tuple node\'s fields are not distinct names, one per item, of a classed tuple';
  }
  if (!Object.hasOwn(node, 'class')) return null;
  const name = node.class;
  if (typeof name !== 'string') return `a tree node's class is ${name === null ? 'null' : typeof name}, not a string`;
  const allowed = Object.hasOwn(CLASSES, node.type) ? CLASSES[node.type] : { names: [], modules: [] };
  const module = name.slice(0, Math.max(0, name.lastIndexOf('.')));
  if (DOTTED.test(name) && (allowed.names.includes(name) || Object.hasOwn(node, 'fields') ||
    allowed.modules.some((m) => module === m || module.startsWith(`${m}.`)))) return null;
  return `a ${node.type} node's class ${JSON.stringify(name.slice(0, 80))} is not one a compiled program records (on a dict: ` +
    'an OrderedDict or a transformers ModelOutput; on a tuple: torch.return_types or a namedtuple with its fields)';
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
    if (!same(value, spec.value)) {
      throw new InputError(`${path}: the program was exported with ${shown(spec.value)} here (a constant baked into it), ` +
        `got ${shown(value)}; compile another program for another value`);
    }
  } else if (spec.type === 'tuple' || spec.type === 'list') {
    if (!Array.isArray(value) || value.length !== spec.items.length) {
      throw new InputTypeError(`${path}: expected a ${spec.type} of ${spec.items.length} items, got ${describe(value)}`);
    }
    spec.items.forEach((s, i) => flatten(s, value[i], `${path}[${i}]`, out));
  } else if (spec.type === 'dict') {
    const obj = /** @type {Record<string, unknown>} */ (value);
    const fits = isPlainObject(value) && Object.keys(obj).every((k) => spec.keys.includes(k)) &&
      spec.keys.every((k, i) => Object.hasOwn(obj, k) || spec.items[i].type === 'const');
    if (!fits) {
      const got = isPlainObject(value) ? JSON.stringify(Object.keys(obj).sort()) : describe(value);
      throw new InputTypeError(`${path}: expected an object with keys ${JSON.stringify(spec.keys)}, got ${got}`);
    }
    spec.keys.forEach((k, i) => {
      const item = spec.items[i];
      const v = Object.hasOwn(obj, k) ? obj[k] : item.type === 'const' ? item.value : undefined; // an omitted keyword
      flatten(item, v, `${path}['${k}']`, out);
    });
  }
  return out;
}

/**
 * Whether a call's `value` is the constant the program was exported with (2 for 2.0 is; true for 1 is not).
 * @param {unknown} value
 * @param {Const} constant
 */
function same(value, constant) {
  return value === constant;
}

/** @param {unknown} v */
function shown(v) {
  return v === null || ['boolean', 'number', 'string'].includes(typeof v) ? JSON.stringify(v) : describe(v);
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
