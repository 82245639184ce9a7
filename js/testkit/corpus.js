// The corpora's files, read the same in Node and in a browser (tests/golden/README.md): tensors as
// {"dtype", "shape", "data"} with base64 little-endian bytes, calls as {"args", "kwargs", "outputs"}, and the
// comparison both runtimes' tests make: floats within 1e-5 of the output's largest magnitude (float16 and
// bfloat16, whose values are stored as their bits: within 2^-10 and 2^-7), integers and bools exactly.

import { halfValues } from '../src/dtypes.js';
import { loadCausalLM, loadSeq2Seq, Seq2Seq } from '../src/index.js';

export const TOLERANCE = 1e-5;
/**
 * Generated logits on an adapter other than the one Python recorded on (SwiftShader in Chromium): WGSL lets exp
 * and inverseSqrt differ by a few ULP between implementations, and a causal LM's SiLU and RMSNorm in every layer
 * carry that to about 2e-5 of the logit scale.
 */
export const ACROSS_ADAPTERS = 1e-4;

/** @type {Record<string, number>} */
const TOLERANCES = { float32: TOLERANCE, float16: 2 ** -10, bfloat16: 2 ** -7 };

/** @typedef {{data: ArrayBufferView & ArrayLike<number | bigint>, shape: number[], dtype: string}} Tensor */
/**
 * @typedef {{args: unknown[], kwargs: Record<string, unknown>, outputs: Tensor[], error?: string, reset: boolean,
 *   states: Record<string, Tensor>, tolerance?: number}} Call
 */

const ARRAYS = /** @type {Record<string, any>} */ ({
  float32: Float32Array, float64: Float64Array, int32: Int32Array, int64: BigInt64Array, bool: Uint8Array, uint8: Uint8Array,
  float16: Uint16Array, bfloat16: Uint16Array, // their bits
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
 * The calls of a NAME.json file's text.
 * @param {string} text
 * @returns {Call[]}
 */
export function parseCalls(text) {
  const file = JSON.parse(text);
  return file.calls.map((/** @type {any} */ c) => ({
    args: value(c.args), kwargs: value(c.kwargs), outputs: (c.outputs ?? []).map(tensor), error: c.error,
    reset: c.reset_state === true,
    states: Object.fromEntries(Object.entries(c.states ?? {}).map(([k, v]) => [k, tensor(/** @type {any} */ (v))])),
    tolerance: file.tolerance, // a program whose float outputs depend on the device's features records its own
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
 * Why `got` does not match `want` (shape, dtype, values), or null when it does; `looser` replaces a float
 * tolerance that is smaller.
 * @param {{data: ArrayLike<number | bigint>, shape: number[], dtype: string}} got
 * @param {Tensor} want
 * @param {string} what
 * @param {number} [looser]
 * @returns {string | null}
 */
export function mismatch(got, want, what, looser = 0) {
  if (got.shape.join() !== want.shape.join()) return `${what}: shape [${got.shape}] != [${want.shape}]`;
  if (got.dtype !== want.dtype) return `${what}: dtype ${got.dtype} != ${want.dtype}`;
  if (got.data.length !== want.data.length) return `${what}: ${got.data.length} elements != ${want.data.length}`;
  if (!Object.hasOwn(TOLERANCES, want.dtype)) { // integers and bools
    let differ = 0;
    for (let i = 0; i < want.data.length; i++) if (got.data[i] !== want.data[i]) differ++;
    return differ ? `${what}: ${differ} of ${want.data.length} elements differ` : null;
  }
  const tolerance = Math.max(TOLERANCES[want.dtype], looser);
  if (want.dtype === 'float32') return mismatchFloat(got, want, what, tolerance);
  const values = (/** @type {any} */ t) => ({ ...t, data: halfValues(t.data, t.dtype), dtype: 'float32' });
  return mismatchFloat(values(got), values(want), what, tolerance);
}

/**
 * Why float values `got` are not within `tolerance` of `want`'s largest magnitude (NaN where it has NaN).
 * @param {{data: ArrayLike<number | bigint>}} got
 * @param {{data: ArrayLike<number | bigint>}} want
 * @param {string} what
 * @param {number} tolerance
 * @returns {string | null}
 */
function mismatchFloat(got, want, what, tolerance) {
  let scale = 0;
  let err = 0;
  for (let i = 0; i < want.data.length; i++) {
    const w = Number(want.data[i]);
    const g = Number(got.data[i]);
    if (Number.isNaN(w)) continue;
    if (Number.isNaN(g)) return `${what}: NaN at ${i} where the reference has ${w}`;
    scale = Math.max(scale, Math.abs(w));
    err = Math.max(err, Math.abs(g - w));
  }
  const rel = scale ? err / scale : err;
  return rel <= tolerance ? null
    : `${what}: max error ${err.toPrecision(3)} is ${rel.toPrecision(3)} of the scale ${scale.toPrecision(3)} (tolerance ${tolerance})`;
}

/**
 * Run a program's recorded calls; the mismatches found.
 * @param {import('../src/session.js').Program} program
 * @param {Call[]} calls
 * @param {string} name
 * @returns {Promise<string[]>}
 */
export async function replay(program, calls, name) {
  const problems = [];
  for (const [n, call] of calls.entries()) {
    if (call.reset) {
      await program.resetState();
    } else if (call.error !== undefined) {  // the call must raise an index error saying `error`
      const why = await program.run({ args: call.args, kwargs: call.kwargs }).then(
        () => 'ran', (/** @type {Error} */ e) => (e.name === 'DeviceIndexError' && e.message.includes(/** @type {string} */ (call.error)) ? null : `${e.name}: ${e.message}`));
      if (why) problems.push(`${name} call ${n}: expected an index error saying "${call.error}", got: ${why}`);
    } else {
      const got = leaves(program.spec.outputTree, await program.run({ args: call.args, kwargs: call.kwargs }));
      if (got.length !== call.outputs.length) problems.push(`${name} call ${n}: ${got.length} outputs for ${call.outputs.length}`);
      got.forEach((g, k) => {
        const m = mismatch(g, call.outputs[k], `${name} call ${n} output ${k}`, call.tolerance);
        if (m) problems.push(m);
      });
    }
    if (Object.keys(call.states).sort().join() !== [...program.states].sort().join()) {
      problems.push(`${name} call ${n}: states [${Object.keys(call.states)}] recorded, the program has [${program.states}]`);
    }
    for (const [state, want] of Object.entries(call.states)) {
      const m = mismatch(await program.readState(state), want, `${name} call ${n} state ${state}`, call.tolerance);
      if (m) problems.push(m);
    }
  }
  return problems;
}

/**
 * The generator a corpus folder holds: a Seq2Seq (its generate.json has pixel_values) or a CausalLM.
 * @param {URL | string} base
 * @param {any} record the folder's generate.json
 * @param {import('../src/session.js').LoadOptions} options
 * @returns {Promise<import('../src/generation.js').Seq2Seq | import('../src/generation.js').CausalLM>}
 */
export async function loadGenerator(base, record, options) {
  return record.pixel_values ? loadSeq2Seq(base, options) : loadCausalLM(base, options);
}

/** @param {Record<string, unknown>} settings snake_case, as Python's generate takes them */
const camel = (settings) => Object.fromEntries(Object.entries(settings).map(([k, v]) => [k.replace(/_([a-z])/g, (_, c) => c.toUpperCase()), v]));

/**
 * Generate as a corpus generate.json recorded it (tests/corpus.py): the same greedy ids, and with those ids as
 * the teacher each step's logits within `tolerance` of Python's (of the step's largest magnitude); each
 * strategy's sequences, and its scores within `tolerance` of their magnitude; the mismatches found.
 * @param {import('../src/generation.js').Seq2Seq | import('../src/generation.js').CausalLM} model
 * @param {any} record {pixel_values?, prompt_ids, max_new_tokens, ids?, logits?, strategies}
 * @param {number} [tolerance]
 * @returns {Promise<string[]>}
 */
export async function regenerate(model, record, tolerance = TOLERANCE) {
  const n = record.max_new_tokens;
  /** @param {import('../src/generation.js').GenerateOptions} options */
  const generate = (options) => (model instanceof Seq2Seq
    ? model.generate(tensor(record.pixel_values), tensor(record.prompt_ids), { maxNewTokens: n, ...options })
    : model.generate(record.prompt_ids, { maxNewTokens: n, ...options }));
  const problems = [];
  for (const { settings, sequences, scores } of record.strategies ?? []) {
    const got = await generate(camel(settings));
    const what = JSON.stringify(settings);
    if (JSON.stringify(got.sequences) !== JSON.stringify(sequences)) problems.push(`${what}: generated ${JSON.stringify(got.sequences)}, Python ${JSON.stringify(sequences)}`);
    else if (got.scores.some((s, i) => !(Math.abs(s - scores[i]) <= tolerance * Math.max(1, Math.abs(scores[i]))))) problems.push(`${what}: scores ${got.scores}, Python ${scores}`);
  }
  if (!record.ids) return problems;
  const { ids } = await generate({});
  if (ids.join() !== record.ids.join()) return [...problems, `generated [${ids}], Python generated [${record.ids}]`];
  const { logits } = await generate({ teacher: record.ids });
  const want = tensor(record.logits);
  const vocab = want.shape[1];
  if (logits.length !== want.shape[0]) problems.push(`${logits.length} steps of logits for ${want.shape[0]}`);
  logits.forEach((got, step) => {
    const row = /** @type {Float32Array} */ (want.data).subarray(step * vocab, (step + 1) * vocab);
    let scale = 0, error = 0;
    for (let i = 0; i < vocab; i++) {
      scale = Math.max(scale, Math.abs(row[i]));
      error = Math.max(error, Math.abs(got[i] - row[i]));
    }
    if (!(error <= tolerance * scale)) problems.push(`step ${step}: logits off by ${error} of a scale of ${scale}`);
  });
  return problems;
}
