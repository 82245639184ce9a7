// Reading the golden and model corpora (tests/golden/README.md): tensors as {"dtype", "shape", "data"} with
// base64 little-endian bytes, calls as {"args", "kwargs", "outputs"}, and the comparison both runtimes'
// tests make (floats within 1e-5 of the output's largest magnitude, integers and bools exactly).

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const GOLDEN = join(REPO, 'tests', 'golden');
export const TOLERANCE = 1e-5;

/** @typedef {{data: ArrayBufferView & ArrayLike<number | bigint>, shape: number[], dtype: string}} Tensor */
/** @typedef {{args: unknown[], kwargs: Record<string, unknown>, outputs: Tensor[]}} Call */

const ARRAYS = /** @type {Record<string, any>} */ ({
  float32: Float32Array, float64: Float64Array, int32: Int32Array, int64: BigInt64Array, bool: Uint8Array, uint8: Uint8Array,
});

/**
 * @param {unknown} v
 * @returns {v is {dtype: string, shape: number[], data: string}}
 */
function isTensorJson(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).sort().join() === 'data,dtype,shape';
}

/**
 * A tensor of the corpus as {data, shape, dtype} with a typed array of its dtype.
 * @param {{dtype: string, shape: number[], data: string}} j
 * @returns {Tensor}
 */
export function tensor(j) {
  const Array_ = ARRAYS[j.dtype];
  if (!Array_) throw new Error(`corpus tensor of unknown dtype ${j.dtype}`);
  const binary = atob(j.data);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return { data: new Array_(bytes.buffer), shape: j.shape, dtype: j.dtype };
}

/**
 * A call's argument: tensors decoded, containers walked, anything else a constant as the model took it.
 * @param {unknown} v
 * @returns {unknown}
 */
export function value(v) {
  if (isTensorJson(v)) return tensor(v);
  if (Array.isArray(v)) return v.map(value);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, value(x)]));
  return v;
}

/**
 * The calls recorded in NAME.json.
 * @param {string} path
 * @returns {Call[]}
 */
export function calls(path) {
  return JSON.parse(readFileSync(path, 'utf8')).calls.map((/** @type {any} */ c) => ({
    args: value(c.args), kwargs: value(c.kwargs), outputs: c.outputs.map(tensor),
  }));
}

/**
 * The tensor leaves of an output structure, in order (constants skipped), as the program's tree lists them.
 * @param {import('../src/tree.js').TreeSpec} spec
 * @param {any} out
 * @returns {any[]}
 */
export function leaves(spec, out) {
  if (spec.type === 'leaf') return [out];
  if (spec.type === 'const') return [];
  if (spec.type === 'dict') return spec.keys.flatMap((k, i) => leaves(spec.items[i], out[k]));
  return spec.items.flatMap((s, i) => leaves(s, out[i]));
}

/**
 * Assert `got` matches `want`: same shape and dtype; floats within TOLERANCE of want's largest magnitude.
 * @param {{data: ArrayLike<number | bigint>, shape: number[], dtype: string}} got
 * @param {Tensor} want
 * @param {string} what
 * @returns {number} the scale-relative error
 */
export function assertClose(got, want, what) {
  assert.deepEqual(got.shape, want.shape, `${what}: shape [${got.shape}] != [${want.shape}]`);
  assert.equal(got.dtype, want.dtype, `${what}: dtype`);
  assert.equal(got.data.length, want.data.length, `${what}: element count`);
  if (want.dtype !== 'float32') {
    let differ = 0;
    for (let i = 0; i < want.data.length; i++) if (got.data[i] !== want.data[i]) differ++;
    assert.equal(differ, 0, `${what}: ${differ} of ${want.data.length} elements differ`);
    return 0;
  }
  let scale = 0;
  let err = 0;
  for (let i = 0; i < want.data.length; i++) {
    const w = Number(want.data[i]);
    const g = Number(got.data[i]);
    if (Number.isNaN(w)) continue;
    assert.ok(!Number.isNaN(g), `${what}: NaN at ${i} where the reference has ${w}`);
    scale = Math.max(scale, Math.abs(w));
    err = Math.max(err, Math.abs(g - w));
  }
  const rel = scale ? err / scale : err;
  assert.ok(rel <= TOLERANCE, `${what}: max error ${err.toPrecision(3)} is ${rel.toPrecision(3)} of the scale ${scale.toPrecision(3)} (tolerance ${TOLERANCE})`);
  return rel;
}

/**
 * The names of NAME.wgpt files in `folder` that have a NAME.json beside them.
 * @param {string} folder
 */
export function artifacts(folder) {
  if (!existsSync(folder)) return [];
  return readdirSync(folder).filter((f) => f.endsWith('.wgpt') && existsSync(join(folder, f.replace(/\.wgpt$/, '.json'))))
    .map((f) => f.replace(/\.wgpt$/, '')).sort();
}
