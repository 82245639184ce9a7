// Greedy generation with compiled decoder steps whose KV caches are the program's state (generation.py in
// Python: the same loop).
//
// A decoder step program takes (token [1, 1], position [1], ...context) and returns (logits [1, 1, V], the
// greedy next token [1, 1]); it writes the token's keys and values into its cache state at `position` and
// attends to rows 0 ..= position. `greedy` drives one: each step uploads a position and, where the host has not
// chosen the token (a prompt token, a forced one, a teacher's), takes the token the previous step left on the
// GPU. Steps are pipelined: step n + 1 is submitted before step n's token is read back, so the GPU never waits
// for the host's round trip; a stop at EOS is seen one step late and that step's work is discarded.
//
// A CausalLM folder (or URL) holds causal_lm.json (max_length: the cache's rows, vocab_size, eos_token_id) and
// step.wgpt, a decoder-only LM's step (models/llama.py). A Seq2Seq folder (or URL) holds seq2seq.json (layers, heads, head_dim, max_length, decoder_start_token_id,
// eos_token_id, forced_bos/eos_token_id) and three programs: vision.wgpt (pixels → image features),
// encoder.wgpt (image features, prompt ids → every decoder layer's cross-attention K and V) and decoder.wgpt
// (the step above, with the cross K/V as its context).

import { DeviceTensor } from './device_tensor.js';
import { load } from './session.js';
import { readSource, within } from './source.js';
import { ArtifactError } from './errors.js';

/** @typedef {import('./session.js').Program} Program */
/** @typedef {import('./session.js').Pending} Pending */
/** @typedef {import('./session.js').LoadOptions} LoadOptions */
/**
 * @typedef {{layers: number, heads: number, head_dim: number, max_length?: number | null,
 *   decoder_start_token_id: number, eos_token_id?: number | null, forced_bos_token_id?: number | null,
 *   forced_eos_token_id?: number | null}} Seq2SeqInfo
 * (a null or absent eos_token_id: generation runs to maxNewTokens)
 */
/**
 * @typedef {{ids: number[], logits: Float32Array[], steps: number[], host: Record<string, number[]>}} Decoded
 * `steps`: wall seconds from one token's arrival to the next (the first: from the start); `host`: host seconds
 * per generated step of encode, submit, map (waiting for the GPU) and copy.
 */
/**
 * @typedef {object} GreedyOptions
 * @property {number | null} [eos] stop after this token
 * @property {(step: number) => number | null} [forced] an id replacing the choice at `step` (forced BOS/EOS)
 * @property {number[]} [teacher] ids fed instead of the choices, each step's logits read (a parity check)
 * @property {(id: number, seconds: number) => void} [onToken] each token as it arrives, and its step's seconds
 */

export const STAGES = /** @type {const} */ (['vision', 'encoder', 'decoder']);
export const IN_FLIGHT = 2; // decoder steps submitted and not yet read back

/**
 * Feed `prompt` (at least one token) at positions 0, 1, …, then up to `maxNewTokens` tokens chosen greedily.
 * @param {Program} decoder
 * @param {number[]} prompt
 * @param {number} maxNewTokens
 * @param {unknown[]} context the step's inputs after the token and the position
 * @param {GreedyOptions} [options]
 * @returns {Promise<Decoded>}
 */
export async function greedy(decoder, prompt, maxNewTokens, context = [], options = {}) {
  const { eos = null, forced = () => null, teacher, onToken } = options;
  if (!prompt.length) throw new RangeError('greedy decoding needs at least one prompt token (a start token)');
  for (let p = 0; p < prompt.length - 1; p++) { // nothing read: these only fill the cache
    await decoder.start([ids(prompt[p]), position(p), ...context], { read: [] });
  }
  const first = prompt.length - 1;
  const read = teacher ? [0, 1] : [1];
  /** @type {Decoded} */
  const out = { ids: [], logits: [], steps: [], host: { encode: [], submit: [], map: [], copy: [] } };
  /** @type {Pending[]} */
  const inFlight = [];
  /** @type {unknown} */
  let token = ids(prompt[prompt.length - 1]);
  const start = performance.now();
  let last = start;
  /** Read the oldest step in flight: whether it chose EOS. */
  const stops = async () => {
    const call = /** @type {Pending} */ (inFlight.shift());
    const [logits, chosen] = await call.result();
    const step = out.ids.length;
    const id = forced(step) ?? Number(chosen.data[0]);
    if (teacher) out.logits.push(logits.data);
    const now = performance.now();
    out.steps.push((now - last) * 1e-3);
    last = now;
    for (const [phase, seconds] of Object.entries(call.host)) out.host[phase]?.push(seconds);
    out.ids.push(id);
    onToken?.(id, out.steps[step]);
    return !teacher && eos !== null && id === eos;
  };
  try {
    for (let step = 0; step < maxNewTokens; step++) {
      const call = await decoder.start([token, position(first + step), ...context], { keep: [1], read });
      if (token instanceof DeviceTensor) token.release(); // its copy into the input is submitted
      inFlight.push(call);
      const host = teacher ? teacher[step] : forced(step);
      const chosen = /** @type {DeviceTensor} */ (call.kept[1]);
      if (host === null || host === undefined) {
        token = chosen;
      } else {
        token = ids(host);
        chosen.release();
      }
      if (inFlight.length === IN_FLIGHT && await stops()) return out;
    }
    while (inFlight.length) if (await stops()) return out;
  } finally {
    for (const call of inFlight) call.discard(); // steps past EOS: their work runs, their outputs are never read
    if (token instanceof DeviceTensor) token.release();
  }
  return out;
}

/** @param {number} id */
const ids = (id) => ({ data: new Int32Array([id]), shape: [1, 1] });
/** @param {number} p */
const position = (p) => ({ data: new Int32Array([p]), shape: [1] });

/**
 * Load a CausalLM folder (Node) or URL: causal_lm.json and step.wgpt.
 * @param {URL | string} base
 * @param {LoadOptions} [options]
 * @returns {Promise<CausalLM>}
 */
export async function loadCausalLM(base, options = {}) {
  const { info, where } = await readInfo(base, 'causal_lm.json');
  checkFields(info, where, ['max_length', 'vocab_size'], ['eos_token_id']);
  return new CausalLM(await load(await within(base, 'step.wgpt'), options), /** @type {CausalLMInfo} */ (info));
}

/** @typedef {{max_length: number, vocab_size: number, eos_token_id?: number | null}} CausalLMInfo */

export class CausalLM {
  /**
   * @param {Program} step
   * @param {CausalLMInfo} info
   */
  constructor(step, info) {
    this.step = step;
    this.info = info;
    /** @type {{steps?: number[], host?: Record<string, number[]>}} the last generate's steps */
    this.timings = {};
  }

  /**
   * Greedy ids after `prompt` (stopping after EOS), and with `teacher` (ids fed instead of the model's own
   * choices, for a parity check) the logits of every step. The prompt fills the cache one token a step.
   * @param {number[]} prompt
   * @param {{maxNewTokens?: number, teacher?: number[], onToken?: (id: number, seconds: number) => void}} [options]
   * @returns {Promise<{ids: number[], logits: Float32Array[]}>}
   */
  async generate(prompt, options = {}) {
    const { maxNewTokens = 20, teacher, onToken } = options;
    const rows = prompt.length + maxNewTokens - 1;
    if (rows > this.info.max_length) {
      throw new RangeError(`${prompt.length} prompt tokens and ${maxNewTokens} new ones need ${rows} cache rows; ` +
        `this step's cache holds ${this.info.max_length}`);
    }
    const decoded = await greedy(this.step, prompt, maxNewTokens, [], { eos: this.info.eos_token_id ?? null, teacher, onToken });
    this.timings = { steps: decoded.steps, host: decoded.host };
    return { ids: decoded.ids, logits: decoded.logits };
  }

  destroy() {
    this.step.destroy();
  }
}

const REQUIRED = ['layers', 'heads', 'head_dim', 'decoder_start_token_id']; // integers
// Integers, null or absent; max_length: the decoder's cache rows (a longer generation is refused by name).
const OPTIONAL = ['eos_token_id', 'forced_bos_token_id', 'forced_eos_token_id', 'max_length'];

/**
 * Check seq2seq.json's value (docs/artifact.md, "Seq2Seq folders"); ArtifactError naming what is wrong.
 * @param {unknown} info
 * @param {string} where
 * @returns {asserts info is Seq2SeqInfo}
 */
export function checkInfo(info, where) {
  checkFields(info, where, REQUIRED, OPTIONAL);
}

/**
 * A folder's JSON object with integer `required` keys and `optional` ones integer, null or absent.
 * @param {unknown} info
 * @param {string} where
 * @param {string[]} required
 * @param {string[]} optional
 */
function checkFields(info, where, required, optional) {
  if (info === null || typeof info !== 'object' || Array.isArray(info)) throw new ArtifactError(`${where}: not a JSON object`);
  const o = /** @type {Record<string, unknown>} */ (info);
  for (const key of required) {
    if (!Number.isSafeInteger(o[key])) throw new ArtifactError(`${where}: no integer '${key}'`);
  }
  for (const key of optional) {
    if (o[key] !== undefined && o[key] !== null && !Number.isSafeInteger(o[key])) {
      throw new ArtifactError(`${where}: '${key}' is neither an integer nor null`);
    }
  }
}

/**
 * Load the three stages and seq2seq.json from a folder (Node) or a URL.
 * @param {URL | string} base
 * @param {LoadOptions} [options]
 * @returns {Promise<Seq2Seq>}
 */
export async function loadSeq2Seq(base, options = {}) {
  const { info, where } = await readInfo(base, 'seq2seq.json');
  checkInfo(info, where);
  const [vision, encoder, decoder] = await Promise.all(STAGES.map(async (name) => load(await within(base, `${name}.wgpt`), options)));
  return new Seq2Seq(vision, encoder, decoder, info);
}

/**
 * A JSON file of a model folder, and where it was read from.
 * @param {URL | string} base
 * @param {string} file
 * @returns {Promise<{info: unknown, where: string}>}
 */
async function readInfo(base, file) {
  const { bytes, where } = await readSource(await within(base, file));
  try {
    return { info: JSON.parse(new TextDecoder().decode(bytes)), where };
  } catch (e) {
    throw new ArtifactError(`${where}: not JSON: ${/** @type {Error} */ (e).message}`);
  }
}

export class Seq2Seq {
  /**
   * @param {Program} vision
   * @param {Program} encoder
   * @param {Program} decoder
   * @param {Seq2SeqInfo} info
   */
  constructor(vision, encoder, decoder, info) {
    this.vision = vision;
    this.encoder = encoder;
    this.decoder = decoder;
    this.info = info;
    /** @type {{decoderSteps?: number[], decoderHost?: Record<string, number[]>}} the last generate's steps */
    this.timings = {};
  }

  /**
   * Greedy ids after the decoder start token (stopping after EOS), and with `teacher` (ids fed instead of
   * the model's own choices, for a parity check) the logits of every step.
   * @param {import('./inputs.js').InputValue} pixelValues [1, 3, H, W] float32
   * @param {import('./inputs.js').InputValue} promptIds [1, T] integers
   * @param {{maxNewTokens?: number, teacher?: number[], onToken?: (id: number, seconds: number) => void}} [options]
   *   `onToken`: called with each token as it comes, and the step's wall seconds
   * @returns {Promise<{ids: number[], logits: Float32Array[]}>}
   */
  async generate(pixelValues, promptIds, options = {}) {
    const { maxNewTokens = 20, teacher, onToken } = options;
    const info = this.info;
    if (info.max_length !== undefined && info.max_length !== null && maxNewTokens > info.max_length) {
      throw new RangeError(`maxNewTokens ${maxNewTokens}: the decoder's cache holds ${info.max_length} tokens`);
    }
    const features = /** @type {DeviceTensor} */ (await this.vision.runOnDevice([pixelValues])); // queued: the first step's read waits for both
    const cross = /** @type {DeviceTensor[]} */ (await this.encoder.runOnDevice([features, promptIds]));
    features.release();
    try {
      const decoded = await greedy(this.decoder, [info.decoder_start_token_id], maxNewTokens, [cross], {
        eos: info.eos_token_id ?? null, forced: (step) => this.forced(step, maxNewTokens), teacher, onToken,
      });
      this.timings.decoderSteps = decoded.steps; // the first step also waits for vision and encoder
      this.timings.decoderHost = decoded.host;
      return { ids: decoded.ids, logits: decoded.logits };
    } finally {
      release(cross);
    }
  }

  /**
   * transformers' forced-BOS/EOS logits processors: the id forced at `step` (the first token, and the last
   * before the limit), or null.
   * @param {number} step
   * @param {number} maxNewTokens
   * @returns {number | null}
   */
  forced(step, maxNewTokens) {
    const { forced_bos_token_id: bos, forced_eos_token_id: eos } = this.info;
    if (step === 0 && bos !== undefined && bos !== null) return bos;
    if (step === maxNewTokens - 1 && eos !== undefined && eos !== null) return eos;
    return null;
  }

  /** Free the three programs' GPU buffers now. */
  destroy() {
    for (const p of [this.vision, this.encoder, this.decoder]) p.destroy();
  }

  /** `using model = await loadSeq2Seq(…)` destroys it at the end of the scope. */
  [Symbol.dispose]() {
    this.destroy();
  }
}

/** @param {unknown[]} tensors */
export function release(tensors) {
  for (const t of tensors) if (t instanceof DeviceTensor) t.release();
}
