// Writing artifacts in JavaScript (docs/artifact.md), for tests of the reader and the runtime
// that need a program of a precise shape: `artifact(header, constants)` lays out the data, fills in
// `tensors` and both checksums.

import { crc32 } from '../src/crc32.js';
import { LIMITS } from '../src/limits.js';

/** @typedef {{buffer: number, dtype: 'f32' | 'f16' | 'i32' | 'u32', shape: number[], bytes: Uint8Array}} ConstantData */

/** @param {number} n */
const pad64 = (n) => Math.ceil(n / 64) * 64;

/**
 * @param {Record<string, any>} header every key but `tensors` and `data_crc32`
 * @param {ConstantData[]} constants
 * @returns {Uint8Array}
 */
export function artifact(header, constants = []) {
  let offset = 0;
  const tensors = constants.map((c) => {
    const t = { buffer: c.buffer, dtype: c.dtype, shape: c.shape, offset, nbytes: c.bytes.length };
    offset += pad64(c.bytes.length);
    return t;
  });
  const data = new Uint8Array(offset);
  constants.forEach((c, i) => data.set(c.bytes, tensors[i].offset));
  const full = { ...header, tensors: header.tensors ?? tensors, data_crc32: header.data_crc32 ?? crc32(data) };
  return container(new TextEncoder().encode(JSON.stringify(full)), data);
}

/**
 * The container around header text and data: preamble, space padding, header CRC.
 * @param {Uint8Array} text
 * @param {Uint8Array} data
 * @param {{version?: number}} [options]
 */
export function container(text, data, options = {}) {
  const h = pad64(text.length);
  const out = new Uint8Array(32 + h + data.length);
  out.set(new TextEncoder().encode('WGPUTRCH'));
  out.fill(0x20, 32, 32 + h);
  out.set(text, 32);
  out.set(data, 32 + h);
  const view = new DataView(out.buffer);
  view.setUint32(8, options.version ?? LIMITS.container_version, true);
  view.setUint32(12, crc32(out.subarray(32, 32 + h)), true);
  view.setBigUint64(16, BigInt(h), true);
  view.setBigUint64(24, BigInt(data.length), true);
  return out;
}

/**
 * The header of an artifact (for tests that edit one and rebuild it with `container`).
 * @param {Uint8Array} raw
 */
export function splitArtifact(raw) {
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const h = Number(view.getBigUint64(16, true));
  return { header: JSON.parse(new TextDecoder().decode(raw.subarray(32, 32 + h))), data: raw.slice(32 + h) };
}

/**
 * Bytes of a typed array.
 * @param {ArrayBufferView} a
 */
export const bytesOf = (a) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/**
 * float32 values rounded to float16 bit patterns (round to nearest even; test data stays in normal range).
 * @param {number[]} values
 */
export function toHalf(values) {
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  return Uint16Array.from(values, (v) => {
    f[0] = v;
    const x = u[0];
    const sign = (x >>> 16) & 0x8000;
    const exp = ((x >>> 23) & 0xff) - 127 + 15;
    if (v === 0) return sign;
    if (exp <= 0 || exp >= 31) throw new Error(`${v} is outside float16's normal range`);
    let mant = (x >>> 13) & 0x3ff;
    const rest = x & 0x1fff;
    let e = exp;
    if (rest > 0x1000 || (rest === 0x1000 && mant & 1)) {
      mant += 1;
      if (mant === 0x400) { mant = 0; e += 1; }
    }
    return sign | (e << 10) | mant;
  });
}
