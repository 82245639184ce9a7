// A large artifact for the loaders' memory tests (test/memory.test.js, tests/test_artifact.py's), written in
// pieces so that its writer never holds it whole either: `count` float32 constants of `bytes` bytes each
// between two small ones, and a program of no dispatches whose outputs view each big constant's first, middle
// and last elements and the small constants whole (an output may view a constant: docs/artifact.md, Running
// it), so that a call shows every constant arrived where it belongs. Element i of big constant k is
// i·(k + 1) mod 16,777,213 (a prime below 2^24: every value exact in float32); the small ones hold -1, -2, …
// and 1, 2, ….
//
//   node testkit/large.js PATH COUNT MIB    writes PATH, prints what writeLarge returns as JSON

import { open } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

import { crc32 } from '../src/crc32.js';
import { LIMITS } from '../src/limits.js';
import { CHUNK } from '../src/source.js';

export const VIEW = 16; // elements in each output's view
const SMALL = 64; // elements in each small constant
const PRIME = 16777213;
const pad64 = (/** @type {number} */ n) => Math.ceil(n / 64) * 64;


/**
 * The piece of the data from byte `at`, `n` bytes long (n and at multiples of 4), into `out`.
 * @param {{offset: number, values: (i: number) => number, count: number}[]} layout
 * @param {number} at
 * @param {Float32Array} out
 */
function fill(layout, at, out) {
  out.fill(0);
  for (const t of layout) {
    const first = Math.max(at / 4, t.offset / 4);
    const last = Math.min(at / 4 + out.length, t.offset / 4 + t.count);
    for (let e = first; e < last; e++) out[e - at / 4] = t.values(e - t.offset / 4);
  }
}

/**
 * Write the artifact to `path`: `count` big constants of `bytes` bytes each (a multiple of 64). Returns the
 * largest constant's and the header's bytes, the file's, its program's buffers' (as a runtime allocates them:
 * multiples of 16) and each output's expected values.
 * @param {string} path
 * @param {number} count
 * @param {number} bytes
 * @returns {Promise<{largest: number, header: number, size: number, buffers: number, views: number[][]}>}
 */
export async function writeLarge(path, count, bytes) {
  const big = Array.from({ length: count }, (_, k) => ({
    offset: pad64(SMALL * 4) + k * bytes, count: bytes / 4, values: (/** @type {number} */ i) => (i * (k + 1)) % PRIME,
  }));
  const layout = [
    { offset: 0, count: SMALL, values: (/** @type {number} */ i) => -1 - i },
    ...big,
    { offset: pad64(SMALL * 4) + count * bytes, count: SMALL, values: (/** @type {number} */ i) => 1 + i },
  ];
  const dataLength = layout[layout.length - 1].offset + pad64(SMALL * 4);
  const chunk = new Float32Array(CHUNK / 4);
  const piece = new Uint8Array(chunk.buffer);
  const pieces = async (/** @type {(p: Uint8Array) => Promise<void> | void} */ use) => {
    for (let at = 0; at < dataLength; at += CHUNK) {
      const n = Math.min(CHUNK, dataLength - at);
      fill(layout, at, chunk.subarray(0, n / 4));
      await use(piece.subarray(0, n));
    }
  };
  let crc = 0;
  await pieces((p) => { crc = crc32(p, crc); });
  const starts = [0, Math.floor(bytes / 8), bytes / 4 - VIEW];
  /** @type {{buffer: number, start: number, n: number}[]} */
  const views = [...big.flatMap((_, k) => starts.map((start) => ({ buffer: 1 + k, start, n: VIEW }))),
    { buffer: 0, start: 0, n: SMALL }, { buffer: count + 1, start: 0, n: SMALL }];
  const header = {
    format: LIMITS.format, meta: { model: 'large' }, requires: [], symbols: {}, sources: [], kernels: [],
    buffers: layout.map((t, i) => ({ size: t.count * 4, role: 'constant', name: `w${i}` })),
    tensors: layout.map((t, i) => ({ buffer: i, dtype: 'f32', shape: [t.count], offset: t.offset, nbytes: t.count * 4 })),
    data_crc32: crc,
    inputs: [],
    outputs: views.map((v) => ({ buffer: v.buffer, shape: [v.n], strides: [1], offset: v.start, dtype: 'float32' })),
    input_tree: { type: 'tuple', items: [{ type: 'tuple', items: [] }, { type: 'dict', keys: [], items: [] }] },
    output_tree: { type: 'tuple', items: views.map(() => ({ type: 'leaf' })) },
    dispatches: [], checks: [], states: [],
  };
  const json = new TextEncoder().encode(JSON.stringify(header));
  const text = new Uint8Array(pad64(json.length)).fill(0x20);
  text.set(json);
  const preamble = new Uint8Array(32);
  preamble.set(new TextEncoder().encode(LIMITS.magic));
  const fields = new DataView(preamble.buffer);
  fields.setUint32(8, LIMITS.container_version, true);
  fields.setUint32(12, crc32(text), true);
  fields.setBigUint64(16, BigInt(text.length), true);
  fields.setBigUint64(24, BigInt(dataLength), true);
  const file = await open(path, 'w');
  try {
    await file.write(preamble);
    await file.write(text);
    await pieces(async (p) => { await file.write(p); });
  } finally {
    await file.close();
  }
  return {
    largest: bytes, header: 32 + text.length, size: 32 + text.length + dataLength,
    buffers: layout.reduce((a, t) => a + Math.ceil(t.count / 4) * 16, 0),
    views: views.map((v) => Array.from({ length: v.n }, (_, e) => layout[v.buffer].values(v.start + e))),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [path, count, mib] = process.argv.slice(2);
  console.log(JSON.stringify(await writeLarge(path, Number(count), Number(mib) * 2 ** 20)));
}
