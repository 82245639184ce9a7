// A call's inputs: each leaf checked against the program's input spec (dtype, rank, static sizes), the
// dynamic dimensions bound from the shapes (docs/artifact.md, Expressions), and host data put in device
// form. The messages are the Python runtime's.

import { DeviceTensor } from './device_tensor.js';
import { Float16, isHalf, toDevice } from './dtypes.js';
import { InputError, InputTypeError } from './errors.js';
import * as expr from './symbolic.js';
import { describe } from './tree.js';

/** @typedef {import('./artifact.js').InputSpec} InputSpec */
/** @typedef {import('./artifact.js').ProgramSpec} ProgramSpec */
/** @typedef {import('./dtypes.js').ModelDtype} ModelDtype */
/**
 * A leaf as given: a typed array (shape from the program when static), {data, shape, dtype}, or a
 * DeviceTensor.
 * @typedef {ArrayBufferView | {data: ArrayBufferView, shape?: number[], dtype?: string} | DeviceTensor} InputValue
 */
/** @typedef {{shape: number[], data: TypedArray | null, tensor: DeviceTensor | null}} Checked */
/** @typedef {Float32Array | Float64Array | Int8Array | Int16Array | Int32Array | Uint8Array | Uint8ClampedArray | Uint16Array | Uint32Array | BigInt64Array | BigUint64Array} TypedArray */

/** The dtype name of each typed array class, as numpy would name it. */
const ARRAY_DTYPE = new Map(/** @type {[Function, string][]} */ ([
  [Float32Array, 'float32'], [Float64Array, 'float64'], [Int8Array, 'int8'], [Int16Array, 'int16'],
  [Int32Array, 'int32'], [Uint8Array, 'uint8'], [Uint8ClampedArray, 'uint8'], [Uint16Array, 'uint16'],
  [Uint32Array, 'uint32'], [BigInt64Array, 'int64'], [BigUint64Array, 'uint64'],
  ...(Float16 ? [[Float16, 'float16']] : []),
]));

/** @param {string} d */
const isInteger = (d) => /^u?int/.test(d);

/**
 * @param {Array<import('./symbolic.js').Expr>} shape
 */
export function showShape(shape) {
  return `[${shape.map(expr.show).join(', ')}]`;
}

/**
 * Dtype and rank (and sizes, when static) of one leaf.
 * @param {InputSpec} spec
 * @param {unknown} value
 * @returns {Checked}
 */
export function checkInput(spec, value) {
  const name = `input '${spec.name}'`;
  const isStatic = spec.shape.every((s) => typeof s === 'number');
  if (value instanceof DeviceTensor) {
    if (value.shape.length !== spec.shape.length || value.dtype !== spec.dtype) {
      throw new InputError(`${name}: expected ${spec.dtype}${showShape(spec.shape)}, got ${value}`);
    }
    if (value.released) throw new InputError(`${name}: ${value} was released`);
    if (!value.isContiguous()) throw new InputError(`${name}: ${value} is a strided view; pass a contiguous tensor (or its .read())`);
    return { shape: value.shape, data: null, tensor: value };
  }
  const given = ArrayBuffer.isView(value) ? { data: value } : /** @type {any} */ (value);
  const data = given?.data;
  if (!ArrayBuffer.isView(data) || !ARRAY_DTYPE.has(data.constructor)) {
    throw new InputTypeError(`${name}: expected a typed array, {data, shape, dtype} or a DeviceTensor, got ${describe(value)}`);
  }
  const array = /** @type {TypedArray} */ (data);
  const dtype = dtypeOf(array, given.dtype, spec.dtype, name);
  const same = dtype === spec.dtype || (isInteger(dtype) && isInteger(spec.dtype));
  if (!same) throw new InputTypeError(`${name}: expected dtype ${spec.dtype}, got ${dtype}`);
  /** @type {number[]} */
  let shape = given.shape;
  if (shape === undefined) {
    if (!isStatic) throw new InputError(`${name} has the dynamic shape ${showShape(spec.shape)}: pass {data, shape}`);
    shape = /** @type {number[]} */ (spec.shape);
  } else if (!Array.isArray(shape) || !shape.every((n) => Number.isSafeInteger(n) && n >= 0)) {
    throw new InputError(`${name}: bad shape ${JSON.stringify(shape)}`);
  }
  const numel = shape.reduce((a, b) => a * b, 1);
  if (shape.length !== spec.shape.length || (isStatic && shape.some((n, k) => n !== spec.shape[k]))) {
    throw new InputError(`${name}: expected shape ${showShape(spec.shape)}, got [${shape.join(', ')}]`);
  }
  if (array.length !== numel) throw new InputError(`${name}: ${array.length} values for shape [${shape.join(', ')}]`);
  return { shape, data: array, tensor: null };
}

/**
 * The model dtype a host array holds: the declared one when consistent with the array, else the array's. A
 * Uint8Array may hold bools, and a Uint16Array the bits of float16 or bfloat16 values (their host form).
 * @param {TypedArray} array
 * @param {unknown} declared
 * @param {ModelDtype} wanted
 * @param {string} name
 * @returns {string}
 */
function dtypeOf(array, declared, wanted, name) {
  const natural = /** @type {string} */ (ARRAY_DTYPE.get(array.constructor));
  if (declared === undefined) {
    if (natural === 'uint8' && wanted === 'bool') return 'bool';
    return natural === 'uint16' && isHalf(wanted) ? wanted : natural;
  }
  const fits = declared === natural || (declared === 'bool' && array instanceof Uint8Array) ||
    (typeof declared === 'string' && isHalf(declared) && array instanceof Uint16Array) ||
    (typeof declared === 'string' && isInteger(declared) && isInteger(natural));
  if (!fits) throw new InputTypeError(`${name}: dtype ${JSON.stringify(declared)} does not match its data, a ${array.constructor.name}`);
  return /** @type {string} */ (declared);
}

/**
 * The dynamic dimensions' values for these inputs, checked against every input's shape and each range.
 * @param {ProgramSpec} spec
 * @param {Checked[]} values
 * @returns {import('./symbolic.js').Env}
 */
export function bind(spec, values) {
  /** @type {import('./symbolic.js').Env} */
  const env = Object.create(null); // keyed by the file's symbol names: `__proto__` is one like any other
  const symbols = Object.entries(spec.symbols);
  if (!symbols.length) return env;
  spec.inputs.forEach((x, i) => x.shape.forEach((s, k) => {
    if (typeof s === 'string' && !Object.hasOwn(env, s)) env[s] = values[i].shape[k];
  }));
  for (const [name, s] of symbols) {
    if (!(env[name] >= s.lo && env[name] <= s.hi)) {
      throw new InputError(`${s.about} (dynamic dimension ${name}) must be in [${s.lo}, ${s.hi}], got ${env[name]}`);
    }
  }
  spec.inputs.forEach((x, i) => {
    const want = x.shape.map((e) => expr.evaluate(e, env));
    const got = values[i].shape;
    if (want.some((n, k) => n !== got[k])) {
      throw new InputError(`input '${x.name}': expected shape ${showShape(x.shape)} = [${want.join(', ')}], got [${got.join(', ')}]`);
    }
  });
  return env;
}

/**
 * Device forms of checked inputs: typed arrays of device words (converted into per-input scratch when the
 * host form differs) or DeviceTensors.
 * @param {ProgramSpec} spec
 * @param {Checked[]} values
 * @param {(Uint32Array | null)[]} scratch per input, grown on demand and kept between calls
 * @returns {(ArrayBufferView | DeviceTensor)[]}
 */
export function deviceForms(spec, values, scratch) {
  return values.map((v, i) => {
    if (v.tensor) return v.tensor;
    const data = /** @type {TypedArray} */ (v.data);
    const x = spec.inputs[i];
    if (data instanceof Float32Array || (data instanceof Int32Array && x.dtype !== 'bool')) return data;
    let words = scratch[i];
    if (!words || words.length < data.length) {
      const largest = x.shape.reduce((/** @type {number} */ a, s) => a * expr.bound(s, spec.symbols), 1);
      words = new Uint32Array(Math.max(largest, data.length));
      scratch[i] = words;
    }
    return toDevice(/** @type {any} */ (data), x.dtype, words, `input '${x.name}'`);
  });
}
