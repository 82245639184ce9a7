// Greedy generation with an encoder-decoder's three compiled stages, the caches kept on the GPU.
//
// A Seq2Seq folder (or URL) holds seq2seq.json (layers, heads, head_dim, decoder_start_token_id,
// eos_token_id, forced_bos/eos_token_id) and three programs: vision.wgpt (pixels → image features),
// encoder.wgpt (image features, prompt ids → every decoder layer's cross-attention K and V) and
// decoder.wgpt (one token, the self-attention cache, the cross K/V → logits, the greedy next token, the
// grown cache). Between steps the cache and the cross K/V stay DeviceTensors: a step uploads one token id
// and reads back one (or, for a parity check, the logits).

import { DeviceTensor } from './device_tensor.js';
import { load } from './program.js';
import { readSource, within } from './source.js';
import { ArtifactError } from './errors.js';

/** @typedef {import('./program.js').Program} Program */
/** @typedef {import('./program.js').LoadOptions} LoadOptions */
/** @typedef {import('./source.js').Source} Source */
/**
 * @typedef {{layers: number, heads: number, head_dim: number, decoder_start_token_id: number,
 *   eos_token_id?: number | null, forced_bos_token_id?: number | null, forced_eos_token_id?: number | null}} Seq2SeqInfo
 * (a null or absent eos_token_id: generation runs to maxNewTokens)
 */

export const STAGES = /** @type {const} */ (['vision', 'encoder', 'decoder']);
const REQUIRED = ['layers', 'heads', 'head_dim', 'decoder_start_token_id']; // integers
const OPTIONAL = ['eos_token_id', 'forced_bos_token_id', 'forced_eos_token_id']; // integers, null or absent

/**
 * Check seq2seq.json's value (docs/artifact.md, "Seq2Seq folders"); ArtifactError naming what is wrong.
 * @param {unknown} info
 * @param {string} where
 * @returns {asserts info is Seq2SeqInfo}
 */
export function checkInfo(info, where) {
  if (info === null || typeof info !== 'object' || Array.isArray(info)) throw new ArtifactError(`${where}: not a JSON object`);
  const o = /** @type {Record<string, unknown>} */ (info);
  for (const key of REQUIRED) {
    if (!Number.isSafeInteger(o[key])) throw new ArtifactError(`${where}: no integer '${key}'`);
  }
  for (const key of OPTIONAL) {
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
  const { bytes, where } = await readSource(await within(base, 'seq2seq.json'));
  let info;
  try {
    info = JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    throw new ArtifactError(`${where}: not JSON: ${/** @type {Error} */ (e).message}`);
  }
  checkInfo(info, where);
  const [vision, encoder, decoder] = await Promise.all(STAGES.map(async (name) => load(await within(base, `${name}.wgpt`), options)));
  return new Seq2Seq(vision, encoder, decoder, info);
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
    /** @type {{decoderSteps?: number[]}} wall seconds per decoder step of the last generate */
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
    const features = await this.vision.runOnDevice([pixelValues]); // queued: the first step's read waits for both
    const cross = /** @type {DeviceTensor[]} */ (await this.encoder.runOnDevice([features, promptIds]));
    features.release();
    const empty = { data: new Float32Array(0), shape: [1, info.heads, 0, info.head_dim] };
    /** @type {unknown[]} */
    let past = Array(2 * info.layers).fill(empty);
    let token = info.decoder_start_token_id;
    const ids = [];
    const logits = [];
    const steps = [];
    const tokenIds = new Int32Array(1);
    try {
      for (let step = 0; step < maxNewTokens; step++) {
        const start = performance.now();
        tokenIds[0] = token;
        const [out, chosen, grown] = await this.decoder.runOnDevice([{ data: tokenIds, shape: [1, 1] }, past, cross],
          { read: [teacher ? 0 : 1] });
        release(past);
        past = grown;
        if (teacher) {
          logits.push(out.data);
          chosen.release();
          token = teacher[step];
        } else {
          out.release();
          token = this.forced(step, maxNewTokens, Number(chosen.data[0]));
        }
        steps.push((performance.now() - start) * 1e-3);
        ids.push(token);
        onToken?.(token, steps[step]);
        if (!teacher && token === (info.eos_token_id ?? null)) break;
      }
    } finally {
      release(past);
      release(cross);
    }
    this.timings.decoderSteps = steps; // the first step also waits for vision and encoder
    return { ids, logits };
  }

  /**
   * transformers' forced-BOS/EOS logits processors: the first token, and the last before the limit.
   * @param {number} step
   * @param {number} maxNewTokens
   * @param {number} token
   */
  forced(step, maxNewTokens, token) {
    const { forced_bos_token_id: bos, forced_eos_token_id: eos } = this.info;
    if (step === 0 && bos !== undefined && bos !== null) return bos;
    if (step === maxNewTokens - 1 && eos !== undefined && eos !== null) return eos;
    return token;
  }

  destroy() {
    for (const p of [this.vision, this.encoder, this.decoder]) p.destroy();
  }
}

/** @param {unknown[]} tensors */
function release(tensors) {
  for (const t of tensors) if (t instanceof DeviceTensor) t.release();
}
