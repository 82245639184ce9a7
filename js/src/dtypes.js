// Tensor dtypes and how each is carried on the device (docs/artifact.md, Dtypes).
//
// WGSL has no 64-bit integers and no storable bools: int64 travels as i32 (a call refuses values outside
// int32) and bool as u32 (0 or 1); float16 and bfloat16 travel as the f32 of their values (widened exactly on
// the way in, rounded to nearest even on the way out). Host forms: float32 → Float32Array, float16 →
// Float16Array where the runtime has one, else a Uint16Array of its bits, bfloat16 → a Uint16Array of its
// bits, int32 → Int32Array, int64 → BigInt64Array, bool → Uint8Array (0 or 1).

import { InputError } from './errors.js';

/** @typedef {'float32' | 'float16' | 'bfloat16' | 'int32' | 'int64' | 'bool'} ModelDtype */
/** @typedef {'f32' | 'f16' | 'bf16' | 'i32' | 'u32'} DeviceDtype */
/**
 * @typedef {{float32: Float32Array, float16: Uint16Array, bfloat16: Uint16Array, int32: Int32Array,
 *   int64: BigInt64Array, bool: Uint8Array}} HostArrays the host form of each dtype (16-bit floats: their bits)
 */
/** @typedef {HostArrays[ModelDtype]} HostArray */

/** @type {Record<ModelDtype, DeviceDtype>} */
export const DEVICE_FORM = { float32: 'f32', float16: 'f32', bfloat16: 'f32', int32: 'i32', int64: 'i32', bool: 'u32' };

/** Bytes per element of each device dtype (of a constant's: f16 and bf16 are 16 bits, docs/artifact.md). */
export const DEVICE_SIZE = /** @type {Record<DeviceDtype, number>} */ ({ f32: 4, f16: 2, bf16: 2, i32: 4, u32: 4 });

/**
 * The runtime's Float16Array (ES2025: recent browsers, Node 24), or undefined: float16 host arrays are then
 * Uint16Arrays of their bits.
 * @type {(new (buffer: ArrayBufferLike, byteOffset?: number, length?: number) => ArrayBufferView & ArrayLike<number>) | undefined}
 */
export const Float16 = /** @type {any} */ (globalThis).Float16Array;

/**
 * Whether `dtype` is a 16-bit float dtype, whose host form is 16 bits an element.
 * @param {string} dtype
 * @returns {dtype is 'float16' | 'bfloat16'}
 */
export const isHalf = (dtype) => dtype === 'float16' || dtype === 'bfloat16';

/**
 * Packed integer weights (docs/artifact.md, "Packed weights"): each packed dtype's bits per code.
 * @type {Record<string, number>}
 */
export const PACKED_BITS = { q4: 4, q8: 8 };

/**
 * Why a packed matrix of `rows` × `cols` codes of `bits` in groups of `group` is no valid layout, or null.
 * @param {number} bits
 * @param {number} rows
 * @param {number} cols
 * @param {number} group
 * @returns {string | null}
 */
export function packedProblem(bits, rows, cols, group) {
  const perWord = 32 / bits;
  if (Math.min(rows, cols, group) < 1) return `a packed matrix of ${rows} x ${cols} in groups of ${group}`;
  if (group < cols && group % perWord) {
    return `a group of ${group} codes straddles u32 words of ${perWord} codes: groups are multiples of ${perWord}, or whole rows`;
  }
  return null;
}

/**
 * The bytes of a valid packed matrix: rows of codes padded to 16 bytes, then each group's scale (and zero point).
 * @param {number} bits
 * @param {number} rows
 * @param {number} cols
 * @param {number} group
 * @param {boolean} zeroPoints
 * @returns {number}
 */
export function packedBytes(bits, rows, cols, group, zeroPoints) {
  const rowWords = 4 * Math.ceil(cols * bits / 128);
  return 4 * (rows * rowWords + rows * Math.ceil(cols / group) * (zeroPoints ? 2 : 1));
}

/** Bytes per element of every model dtype's device form (all four bytes). */
export const ITEMSIZE = 4;

/**
 * @param {unknown} name
 * @returns {name is ModelDtype}
 */
export function isModelDtype(name) {
  return typeof name === 'string' && Object.hasOwn(DEVICE_FORM, name);
}

/**
 * A new host array of `n` elements of `dtype`.
 * @param {ModelDtype} dtype
 * @param {number} n
 * @returns {HostArray}
 */
export function hostArray(dtype, n) {
  if (dtype === 'float32') return new Float32Array(n);
  if (isHalf(dtype)) return new Uint16Array(n);
  if (dtype === 'int32') return new Int32Array(n);
  if (dtype === 'int64') return new BigInt64Array(n);
  return new Uint8Array(n);
}

/**
 * Gather a strided view of device words into a new contiguous host array: element (i0, i1, …) is word
 * `offset + Σ ik·strides[k]` of `words` (a Uint32Array over the device bytes).
 * @param {Uint32Array} words
 * @param {ModelDtype} dtype
 * @param {number[]} shape
 * @param {number[]} strides
 * @param {number} offset
 * @returns {HostArray}
 */
export function gather(words, dtype, shape, strides, offset) {
  const n = shape.reduce((a, b) => a * b, 1);
  const out = hostArray(dtype, n);
  if (n === 0) return out;
  const sameBits = dtype === 'float32' || dtype === 'int32'; // the host form is the device form
  const dst = sameBits ? new Uint32Array(out.buffer) : new Uint32Array(n);
  if (isContiguous(shape, strides)) {
    dst.set(words.subarray(offset, offset + n));
  } else {
    const nd = shape.length;
    const index = new Array(nd).fill(0);
    let src = offset;
    for (let i = 0; i < n; i++) {
      dst[i] = words[src];
      for (let k = nd - 1; k >= 0; k--) { // odometer: bump the last axis, carry into earlier ones
        src += strides[k];
        if (++index[k] < shape[k]) break;
        src -= strides[k] * shape[k];
        index[k] = 0;
      }
    }
  }
  if (dtype === 'int64') {
    const o = /** @type {BigInt64Array} */ (out);
    for (let i = 0; i < n; i++) o[i] = BigInt(dst[i] | 0); // sign-extended from i32
  } else if (dtype === 'bool') {
    for (let i = 0; i < n; i++) out[i] = dst[i] === 0 ? 0 : 1;
  } else if (isHalf(dtype)) {
    const round = dtype === 'float16' ? halfBits : bfloat16Bits;
    for (let i = 0; i < n; i++) out[i] = round(dst[i]);
    return dtype === 'float16' && Float16 ? /** @type {any} */ (new Float16(out.buffer)) : out;
  }
  return out;
}

/**
 * Whether `strides` are the contiguous row-major strides of `shape` (sizes-1 axes excepted).
 * @param {number[]} shape
 * @param {number[]} strides
 */
export function isContiguous(shape, strides) {
  if (shape.includes(0)) return true; // a view without elements is contiguous
  let expected = 1;
  for (let k = shape.length - 1; k >= 0; k--) {
    if (shape[k] !== 1 && strides[k] !== expected) return false;
    expected *= shape[k];
  }
  return true;
}

/**
 * Host values of `dtype` (already checked to be of its kind) in device form: `data` itself when it is
 * already (Float32Array for float32, Int32Array for integers), else converted into `scratch` (at least
 * data.length words). int64 values outside int32 are refused, naming `what`.
 * @param {ArrayLike<number | bigint> & ArrayBufferView} data
 * @param {ModelDtype} dtype
 * @param {Uint32Array} scratch
 * @param {string} what
 * @returns {ArrayBufferView}
 */
export function toDevice(data, dtype, scratch, what) {
  const n = data.length;
  if (data instanceof Float32Array || (data instanceof Int32Array && dtype !== 'bool')) return data;
  const out = scratch.subarray(0, n);
  if (isHalf(dtype)) { // 16-bit bit patterns (a Uint16Array, or a Float16Array's bytes)
    const bits = new Uint16Array(data.buffer, data.byteOffset, n);
    if (dtype === 'bfloat16') for (let i = 0; i < n; i++) out[i] = bits[i] << 16;
    else out.set(widenHalf(bits));
    return out;
  }
  if (dtype === 'bool') {
    for (let i = 0; i < n; i++) out[i] = data[i] ? 1 : 0;
    return out;
  }
  const signed = new Int32Array(out.buffer, out.byteOffset, n);
  let lo = Infinity;
  let hi = -Infinity;
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) {
    for (let i = 0; i < n; i++) {
      const v = Number(data[i]); // exactness past 2^53 does not matter: such a value is refused
      signed[i] = v;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  } else {
    for (let i = 0; i < n; i++) {
      const v = /** @type {number} */ (data[i]);
      signed[i] = v;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  if (dtype === 'int64' && (lo < -(2 ** 31) || hi >= 2 ** 31)) {
    const range = data instanceof BigInt64Array || data instanceof BigUint64Array ? bigRange(data) : [lo, hi];
    throw new InputError(`${what}: int64 values must fit in int32 on WebGPU (which has no 64-bit integers); ` +
      `range is [${range[0]}, ${range[1]}]`);
  }
  return out;
}

/**
 * The exact smallest and largest of 64-bit values.
 * @param {BigInt64Array | BigUint64Array} data
 */
function bigRange(data) {
  let min = data[0];
  let max = data[0];
  for (const v of data) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return [min, max];
}

/** @type {Uint32Array | null} */
let halfTable = null;

/** The float32 bit pattern of every float16 bit pattern (each float16 value is exact in float32). */
function makeHalfTable() {
  const t = new Uint32Array(65536);
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  for (let h = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16;
    const exp = (h >> 10) & 0x1f;
    const mant = h & 0x3ff;
    if (exp === 0) { // zero or subnormal: mant · 2^-24
      f[0] = mant * 2 ** -24;
      t[h] = (sign | u[0]) >>> 0;
    } else if (exp === 31) { // infinity or NaN (payload kept)
      t[h] = (sign | 0x7f800000 | (mant << 13)) >>> 0;
    } else { // rebias the exponent from 15 to 127
      t[h] = (sign | ((exp + 112) << 23) | (mant << 13)) >>> 0;
    }
  }
  return t;
}

/**
 * float16 values (little-endian bit patterns) widened to float32 bit patterns.
 * @param {Uint16Array} half
 * @returns {Uint32Array}
 */
export function widenHalf(half) {
  const t = (halfTable ??= makeHalfTable());
  const out = new Uint32Array(half.length);
  for (let i = 0; i < half.length; i++) out[i] = t[half[i]];
  return out;
}

/**
 * The float16 bit pattern nearest a float32 bit pattern (ties to even; beyond float16's range ±infinity, NaN
 * a quiet NaN).
 * @param {number} f float32 bits
 * @returns {number}
 */
export function halfBits(f) {
  const sign = (f >>> 16) & 0x8000;
  const e = (f >>> 23) & 0xff;
  if (e === 0xff) return sign | 0x7c00 | ((f & 0x7fffff) ? 0x200 : 0);
  if (e < 102) return sign; // below 2^-25: ±0 (2^-25 itself ties to the even 0)
  const m = (f & 0x7fffff) | 0x800000;
  const drop = e < 113 ? 126 - e : 13; // fraction bits float16 cannot hold: 13, more for its subnormals
  const half = 1 << (drop - 1);
  const rest = m & ((half << 1) - 1);
  let q = m >>> drop;
  if (rest > half || (rest === half && (q & 1))) q++;
  // q in units of float16's last place at exponent max(e, 113): subnormals are q itself, normals rebias the
  // exponent (a q that carried into 2^11 moves it up one, and 31 is infinity).
  const bits = e < 113 ? q : ((e - 112) << 10) + q - 0x400;
  return sign | Math.min(bits, 0x7c00);
}

/**
 * The bfloat16 bit pattern nearest a float32 bit pattern (ties to even; NaN a quiet NaN).
 * @param {number} f float32 bits
 * @returns {number}
 */
export function bfloat16Bits(f) {
  if ((f & 0x7fffffff) > 0x7f800000) return ((f >>> 16) | 0x40) & 0xffff;
  return ((f + 0x7fff + ((f >>> 16) & 1)) >>> 16) & 0xffff;
}

/**
 * A float16 or bfloat16 host array (its bits, or a Float16Array) as float32 values (exact).
 * @param {ArrayBufferView & ArrayLike<number | bigint>} data
 * @param {'float16' | 'bfloat16'} dtype
 * @returns {Float32Array}
 */
export function halfValues(data, dtype) {
  const bits = new Uint16Array(data.buffer, data.byteOffset, data.length);
  const words = dtype === 'float16' ? widenHalf(bits) : Uint32Array.from(bits, (b) => b << 16);
  return new Float32Array(words.buffer);
}

/**
 * Numbers in the host form of float16 or bfloat16 (rounded to nearest even through float32).
 * @param {ArrayLike<number>} values
 * @param {'float16' | 'bfloat16'} dtype
 * @returns {HostArray}
 */
export function halfArray(values, dtype) {
  const words = new Uint32Array(Float32Array.from(values).buffer);
  const round = dtype === 'float16' ? halfBits : bfloat16Bits;
  const bits = Uint16Array.from(words, round);
  return dtype === 'float16' && Float16 ? /** @type {any} */ (new Float16(bits.buffer)) : bits;
}
