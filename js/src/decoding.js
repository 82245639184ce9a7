// What generation decides on the host, as pure functions (decoding.py in Python: the same rules, replayed by
// both runtimes from tests/conformance/generation.json). No device.
//
// - `generationOptions`: a generation's settings, transformers' names (camelCase) and defaults, checked once.
// - `uniforms(seed)`: the draws a sampled generation feeds its sampler program, one per token (SplitMix64).
// - `BeamSearch`: transformers' beam search bookkeeping for one prompt, in float32 as its tensors hold it.
// - `completesStop`, `printable`: stop strings, and how much of a growing decoded text a stream may show.

const MASK = (1n << 64n) - 1n;
const DEAD = -1.0e9; // transformers' score for a beam that must not be chosen (added, in float32)

/**
 * transformers' generate settings (GenerationConfig's names in camelCase, and its defaults; minP 0 is its None).
 * @typedef {object} GenerationOptions
 * @property {number} [maxNewTokens] 20
 * @property {boolean} [doSample] false: greedy (or beam search); true: sample with the settings below
 * @property {number} [temperature] 1
 * @property {number} [topK] 50 (0: off)
 * @property {number} [topP] 1
 * @property {number} [minP] 0
 * @property {number} [repetitionPenalty] 1
 * @property {number | bigint} [seed] 0: the draws' seed (SplitMix64)
 * @property {number} [numBeams] 1
 * @property {number} [lengthPenalty] 1
 * @property {boolean | 'never'} [earlyStopping] false
 * @property {number} [numReturnSequences] 1
 * @property {number | number[] | null} [eosTokenId] stop after any of these (default: the model's own)
 * @property {string[]} [stopStrings] stop once the generated text completes one (needs a tokenizer)
 */
/**
 * @typedef {{maxNewTokens: number, doSample: boolean, temperature: number, topK: number, topP: number, minP: number,
 *   repetitionPenalty: number, seed: bigint, numBeams: number, lengthPenalty: number, earlyStopping: boolean | 'never',
 *   numReturnSequences: number, eosTokenId: number[], stopStrings: string[]}} Settings
 */

/** @type {Omit<Settings, 'seed' | 'eosTokenId' | 'stopStrings'>} */
const DEFAULTS = {
  maxNewTokens: 20, doSample: false, temperature: 1, topK: 50, topP: 1, minP: 0, repetitionPenalty: 1, numBeams: 1,
  lengthPenalty: 1, earlyStopping: false, numReturnSequences: 1,
};
const KNOWN = new Set([...Object.keys(DEFAULTS), 'seed', 'eosTokenId', 'stopStrings']);

/**
 * Settings from `options` (the generation keys of a generate call's options), checked: RangeError naming the first
 * that is wrong.
 * @param {GenerationOptions & Record<string, unknown>} options
 * @param {Set<string>} [others] keys of the same options object that are not generation settings
 * @returns {Settings}
 */
export function generationOptions(options, others = new Set()) {
  const unknown = Object.keys(options).filter((k) => !KNOWN.has(k) && !others.has(k)).sort();
  if (unknown.length) throw new RangeError(`unknown generation setting '${unknown[0]}'`);
  const pick = /** @param {keyof typeof DEFAULTS} k */ (k) => options[k] ?? DEFAULTS[k];
  const eos = options.eosTokenId ?? [];
  const seed = options.seed ?? 0;
  const settings = /** @type {Settings} */ ({
    ...Object.fromEntries(Object.keys(DEFAULTS).map((k) => [k, pick(/** @type {keyof typeof DEFAULTS} */ (k))])),
    seed: Number.isSafeInteger(seed) || typeof seed === 'bigint' ? BigInt(seed) : seed,
    eosTokenId: Array.isArray(eos) ? eos : [eos],
    stopStrings: options.stopStrings ?? [],
  });
  const why = problem(settings);
  if (why) throw new RangeError(why);
  return settings;
}

/**
 * Why `o` cannot run (transformers refuses the same), or null.
 * @param {Settings} o
 * @returns {string | null}
 */
function problem(o) {
  for (const name of /** @type {const} */ (['maxNewTokens', 'numBeams', 'numReturnSequences'])) {
    if (!Number.isSafeInteger(o[name]) || o[name] < 1) return `${snake(name)} must be a positive integer, got ${show(o[name])}`;
  }
  if (!Number.isSafeInteger(o.topK) || o.topK < 0) return `top_k must be an integer >= 0 (0: off), got ${show(o.topK)}`;
  if (typeof o.seed !== 'bigint' || o.seed < 0n || o.seed > MASK) return `seed must be an integer in [0, 2^64), got ${show(o.seed)}`;
  /** @type {[keyof Settings, number, number, boolean][]} */
  const ranges = [['temperature', 0, Infinity, false], ['topP', 0, 1, true], ['minP', 0, 1, true], ['repetitionPenalty', 0, Infinity, false]];
  for (const [name, lo, hi, closed] of ranges) {
    const v = o[name];
    if (typeof v !== 'number' || Number.isNaN(v) || !(closed ? lo <= v && v <= hi : lo < v && v <= hi)) {
      return `${snake(name)} must be in ${closed ? '[' : '('}${lo}, ${hi === Infinity ? 'inf' : hi}], got ${show(v)}`;
    }
  }
  if (typeof o.lengthPenalty !== 'number') return `length_penalty must be a number, got ${show(o.lengthPenalty)}`;
  if (![true, false, 'never'].includes(o.earlyStopping)) return `early_stopping must be true, false or 'never', got ${show(o.earlyStopping)}`;
  if (!o.eosTokenId.every((t) => Number.isSafeInteger(t) && t >= 0)) return `eos_token_id must be token ids, got ${show(o.eosTokenId)}`;
  if (!o.stopStrings.every((s) => typeof s === 'string' && s.length)) return 'stop_strings must be non-empty strings';
  if (o.numReturnSequences > o.numBeams) return `num_return_sequences (${o.numReturnSequences}) must be at most num_beams (${o.numBeams})`;
  if (o.numBeams > 1 && (o.doSample || o.stopStrings.length)) return 'beam search runs without do_sample and stop_strings';
  return null;
}

/** @param {string} name camelCase */
const snake = (name) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
/** @param {unknown} v */
const show = (v) => (typeof v === 'bigint' ? String(v) : JSON.stringify(v) ?? String(v));

/**
 * The sampler program's `params` input: temperature, top_k (0: off), top_p, min_p, repetition_penalty.
 * @param {Settings} o
 */
export const samplerParams = (o) => Float32Array.of(o.temperature, o.topK, o.topP, o.minP, o.repetitionPenalty);

/**
 * Endless draws in [0, 1 - 2^-24], 24 bits each, from SplitMix64 seeded with `seed`: the top 24 bits of each
 * output over 2^24. Below 1, so the sampler's inverse CDF never passes the last token it keeps.
 * @param {bigint} seed
 * @returns {Generator<number, never>}
 */
export function* uniforms(seed) {
  let state = BigInt(seed);
  for (;;) {
    state = (state + 0x9E3779B97F4A7C15n) & MASK;
    let z = state;
    z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & MASK;
    z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & MASK;
    z ^= z >> 31n;
    yield Number(z >> 40n) / 2 ** 24;
  }
}

// ---- beam search -------------------------------------------------------------------------------------------

const f32 = Math.fround;

/**
 * Indices of the k largest scores, largest first; ties by index.
 * @param {number[]} scores
 * @param {number} k
 */
const top = (scores, k) => scores.map((_, i) => i).sort((a, b) => scores[b] - scores[a] || a - b).slice(0, k);

/** @typedef {{tokens: number[], score: number}} Hypothesis `score`: running, the sum of log-probabilities; finished, that over length ** lengthPenalty */

/** One prompt's beam search (transformers 5's vectorized form, batch 1: decoding.py's BeamSearch). */
export class BeamSearch {
  /**
   * @param {{numBeams: number, vocabSize: number, maxNewTokens: number, eos?: number[], lengthPenalty?: number,
   *   earlyStopping?: boolean | 'never'}} o
   */
  constructor(o) {
    this.numBeams = o.numBeams;
    this.vocabSize = o.vocabSize;
    this.maxNewTokens = o.maxNewTokens;
    this.eos = o.eos ?? [];
    this.lengthPenalty = o.lengthPenalty ?? 1;
    this.earlyStopping = o.earlyStopping ?? false;
    // Only the first beam is live at first: the others start DEAD, so the first step's continuations all come
    // from one beam (they hold the same prompt).
    /** @type {Hypothesis[]} */
    this.running = Array.from({ length: this.numBeams }, (_, b) => ({ tokens: [], score: b === 0 ? 0 : DEAD }));
    /** @type {Hypothesis[]} */
    this.finished = Array.from({ length: this.numBeams }, () => ({ tokens: [], score: DEAD }));
    /** per finished slot: whether it holds a real hypothesis */
    this.isFinished = this.finished.map(() => false);
    this.improvable = true; // transformers' is_early_stop_heuristic_unsatisfied
    this.done = false;
  }

  /** How many continuations a step needs: enough that numBeams stay running if all the best end. */
  get keep() {
    return Math.max(2, 1 + this.eos.length) * this.numBeams;
  }

  /** The running beams' accumulated log-probabilities: the beam program's `scores` input. */
  scores() {
    return this.running.map((h) => h.score);
  }

  /**
   * Advance by one token given the `keep` best (accumulated log-prob, beam · V + token) over all beams, best
   * first: each running beam's next token and the beam it continues (the cache reorder); sets `done`.
   * @param {ArrayLike<number>} values
   * @param {ArrayLike<number>} indices
   * @returns {{tokens: number[], beams: number[]}}
   */
  step(values, indices) {
    const n = this.numBeams;
    const generated = this.running[0].tokens.length;
    const V = this.vocabSize;
    const origins = Array.from(indices, (i) => Math.floor(i / V));
    const candidates = Array.from(indices, (i, k) => ({ tokens: [...this.running[origins[k]].tokens, i % V], score: f32(values[k]) }));
    const ends = candidates.map((c) => this.eos.includes(/** @type {number} */ (c.tokens.at(-1))) || generated + 1 >= this.maxNewTokens);
    const alive = candidates.map((c, k) => f32(c.score + (ends[k] ? DEAD : 0)));
    const chosen = top(alive, n);
    this.finish(candidates, ends, generated + 1);
    this.running = chosen.map((k) => ({ tokens: candidates[k].tokens, score: alive[k] }));
    this.checkDone(generated + 1, ends.every(Boolean));
    return { tokens: this.running.map((h) => /** @type {number} */ (h.tokens.at(-1))), beams: chosen.map((k) => origins[k]) };
  }

  /**
   * Merge the top numBeams candidates that just ended into the finished hypotheses, scored by length.
   * @private
   * @param {Hypothesis[]} candidates
   * @param {boolean[]} ends
   * @param {number} length
   */
  finish(candidates, ends, length) {
    const full = this.isFinished.every(Boolean) && this.earlyStopping === true;
    const divisor = f32(length ** this.lengthPenalty);
    const ended = ends.map((e, k) => e && k < this.numBeams);
    const scored = candidates.map((c, k) => {
      let s = f32(c.score / divisor);
      for (const dead of [full, !this.improvable, !ended[k]]) s = f32(s + (dead ? DEAD : 0));
      return { tokens: c.tokens, score: s };
    });
    const merged = [...this.finished, ...scored];
    const flags = [...this.isFinished, ...ended];
    const best = top(merged.map((h) => h.score), this.numBeams);
    this.finished = best.map((k) => merged[k]);
    this.isFinished = best.map((k) => flags[k]);
  }

  /**
   * @private
   * @param {number} length
   * @param {boolean} allEnd
   */
  checkDone(length, allEnd) {
    const never = this.earlyStopping === 'never' && this.lengthPenalty > 0;
    const bestPossible = f32(this.running[0].score / f32((never ? this.maxNewTokens : length) ** this.lengthPenalty));
    const worst = Math.min(...this.finished.map((h) => h.score));
    this.improvable &&= this.isFinished.some((f) => bestPossible > (f ? worst : DEAD));
    const allFull = this.isFinished.every(Boolean) && this.earlyStopping === true;
    this.done = !this.improvable || allFull || allEnd;
  }

  /**
   * The best `count` finished hypotheses, best first (numReturnSequences).
   * @param {number} count
   */
  results(count) {
    return this.finished.slice(0, count);
  }
}

// ---- stopping and streaming --------------------------------------------------------------------------------

/**
 * Whether the generated text `text`, of which the last token added everything after `before` characters
 * (UTF-16 code units), completes a stop string: one ends past `before` (transformers' StopStringCriteria).
 * @param {string} text
 * @param {number} before
 * @param {string[]} stopStrings
 */
export const completesStop = (text, before, stopStrings) => stopStrings.some((s) => text.slice(Math.max(0, before - s.length + 1)).includes(s));

/**
 * How much of a growing decoded `text` a stream may show, `shown` having been: all of it but a trailing run of
 * U+FFFD (a multi-byte character whose bytes have not all come); at the end of a generation the stream shows
 * the rest.
 * @param {string} text
 * @param {number} shown
 */
export function printable(text, shown) {
  let end = text.length;
  while (end > 0 && text[end - 1] === '\ufffd') end--;
  return Math.max(shown, end);
}
