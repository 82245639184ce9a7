// Generation with compiled decoder programs whose KV caches are the programs' state (generation.py in Python:
// the same loops and rules).
//
// A decoder's programs (`Decoder`; docs/artifact.md, "Decoding programs") share one KV cache (the option `share`):
// `step` (tokens [B, 1], position [1], ...context → logits [B, 1, V], the greedy next token [B, 1]), `prefill`
// (tokens [B, T] from position on → the same for the last of T, T dynamic), `sampler`, `beams` and `reorder`
// (sampling, beam search, the cache reorder). B is 1, or the beams of a beam search. A generation runs the prompt
// through `prefill` (or token by token through `step` where there is none), then steps: greedy, sampled through
// `sampler` given a uniform the host draws (decoding.js `uniforms`), or a beam search (decoding.js `BeamSearch`).
// Greedy and sampled steps are pipelined: step n + 1 is submitted before step n's token is read back (the token
// passed on the GPU); a stop is seen one step late and that step's work is discarded.
//
// A CausalLM folder (or URL) holds causal_lm.json (max_length: the cache's rows, vocab_size, eos_token_id,
// programs) and step.wgpt, a decoder-only LM's step (models/llama.py), with its decoding programs. A Seq2Seq
// folder holds seq2seq.json (layers, heads, head_dim, max_length, decoder_start_token_id, eos_token_id,
// forced_bos/eos_token_id, programs), vision.wgpt (pixels → image features), encoder.wgpt (image features,
// prompt ids → every decoder layer's cross-attention K and V) and decoder.wgpt (the step, with the cross K/V as
// its context), with the decoder's decoding programs.

import { BeamSearch, completesStop, generationOptions, printable, samplerParams, uniforms } from './decoding.js';
import { DeviceTensor } from './device_tensor.js';
import { load } from './session.js';
import { readSource, within } from './source.js';
import { ArtifactError } from './errors.js';

/** @typedef {import('./session.js').Program} Program */
/** @typedef {import('./session.js').Pending} Pending */
/** @typedef {import('./session.js').LoadOptions} LoadOptions */
/** @typedef {import('./decoding.js').GenerationOptions} GenerationOptions */
/** @typedef {import('./decoding.js').Settings} Settings */
/**
 * @typedef {{layers: number, heads: number, head_dim: number, max_length?: number | null,
 *   decoder_start_token_id: number, eos_token_id?: number | number[] | null, forced_bos_token_id?: number | null,
 *   forced_eos_token_id?: number | null, programs?: ProgramName[]}} Seq2SeqInfo
 * (a null or absent eos_token_id: generation runs to maxNewTokens)
 */
/** @typedef {{max_length: number, vocab_size: number, eos_token_id?: number | number[] | null, programs?: ProgramName[]}} CausalLMInfo */
/** @typedef {'prefill' | 'sampler' | 'beams' | 'reorder'} ProgramName */
/** @typedef {{decode: (ids: number[]) => string}} Decodes anything with `decode(ids)`: the model's Tokenizer */
/**
 * What a generation gave: `ids` the generated tokens (stopping after EOS; a beam search's best sequence),
 * `sequences` a beam search's numReturnSequences best (else [ids]), `scores` theirs (transformers'
 * sequences_scores), `logits` with a teacher each step's, `steps` wall seconds from one token's arrival to the
 * next (the first from the start: `firstToken`), `host` host seconds per step of encode, submit, map, copy.
 * @typedef {{ids: number[], sequences: number[][], scores: number[], logits: Float32Array[], steps: number[],
 *   host: Record<string, number[]>, firstToken: number}} Generation
 */
/**
 * A generate call's options: transformers' settings (decoding.js GenerationOptions) and
 * @typedef {GenerationOptions & {teacher?: number[], onToken?: (id: number, seconds: number) => void,
 *   tokenizer?: Decodes, signal?: AbortSignal}} GenerateOptions
 * `teacher`: ids fed instead of the model's choices, each step's logits recorded (a parity check); `onToken`:
 * each token as it arrives (not a beam search's), with its step's seconds; `tokenizer`: what stopStrings decode
 * with; `signal`: an AbortSignal that ends the generation after the step in progress (its tokens so far kept).
 */

export const STAGES = /** @type {const} */ (['vision', 'encoder', 'decoder']);
export const PROGRAMS = /** @type {const} */ (['prefill', 'sampler', 'beams', 'reorder']);
const SHARING = new Set(['prefill', 'reorder']); // programs that use the step's buffers: its cache, the weights a prefill holds too
const CALL_OPTIONS = new Set(['teacher', 'onToken', 'tokenizer', 'signal']);
export const IN_FLIGHT = 2; // decoder steps submitted and not yet read back

/** A decoder's programs (null where a folder lacks one); prefill and reorder share the step's states. */
export class Decoder {
  /**
   * @param {Program} step
   * @param {Partial<Record<ProgramName, Program>>} [programs]
   */
  constructor(step, programs = {}) {
    this.step = step;
    this.prefill = programs.prefill ?? null;
    this.sampler = programs.sampler ?? null;
    this.beams = programs.beams ?? null;
    this.reorder = programs.reorder ?? null;
  }

  /** The batch rows the step was compiled for: 1, or a beam search's beams. */
  get batch() {
    return Number(this.step.inputs[0].shape[0]);
  }

  /**
   * Bytes of the device buffers the programs hold, by role, each buffer once (the KV cache, and the weights
   * a prefill takes from the step, count once): `weights` (constants), `cache` (states), `scratch` (the rest).
   * @returns {{weights: number, cache: number, scratch: number}}
   */
  deviceBytes() {
    const held = { weights: 0, cache: 0, scratch: 0 };
    const seen = new Set();
    for (const program of [this.step, this.prefill, this.sampler, this.beams, this.reorder]) {
      if (!program) continue;
      const { buffers, spec } = program.executor;
      buffers.forEach((buffer, i) => {
        if (seen.has(buffer)) return;
        seen.add(buffer);
        const role = spec.buffers[i].role;
        held[role === 'constant' ? 'weights' : role === 'state' ? 'cache' : 'scratch'] += buffer.size;
      });
    }
    return held;
  }

  /**
   * Submit the prompt (in every batch row) at positions `from` .. T - 1, its first `from` tokens' rows being in
   * the cache already (from < T): one prefill call where there is a prefill and two tokens or more remain, else
   * one step per token; the call whose outputs are the last token's.
   * @param {number[]} prompt
   * @param {unknown[]} context
   * @param {number[]} keep
   * @param {number[]} read
   * @param {number} [from]
   * @returns {Promise<Pending>}
   */
  async startPrompt(prompt, context, keep, read, from = 0) {
    const rows = (/** @type {number[]} */ ids) => ({ data: Int32Array.from({ length: this.batch * ids.length }, (_, i) => ids[i % ids.length]), shape: [this.batch, ids.length] });
    if (this.prefill && prompt.length - from >= 2) return this.prefill.start([rows(prompt.slice(from)), position(from), ...context], { keep, read });
    for (let p = from; p < prompt.length - 1; p++) await this.step.start([rows([prompt[p]]), position(p), ...context], { read: [] });
    return this.step.start([rows([prompt[prompt.length - 1]]), position(prompt.length - 1), ...context], { keep, read });
  }

  /**
   * RangeError naming the program these settings need that this decoder lacks.
   * @param {Settings} o
   */
  require(o) {
    /** @type {[ProgramName, boolean][]} */
    const needs = [['sampler', o.doSample], ['beams', o.numBeams > 1], ['reorder', o.numBeams > 1]];
    for (const [name, needed] of needs) {
      if (needed && !this[name]) {
        throw new RangeError(`${name === 'sampler' ? 'sampling' : 'beam search'} needs a ${name} program; compile the model with it (its folder's 'programs')`);
      }
    }
    if (this.batch !== o.numBeams) {
      throw new RangeError(`num_beams=${o.numBeams}: this decoder's step was compiled for ${this.batch} ${this.batch > 1 ? 'beams' : 'beam'}`);
    }
  }

  destroy() {
    for (const p of [this.step, this.prefill, this.sampler, this.beams, this.reorder]) p?.destroy();
  }
}

/** @param {number} id @param {number} [rows] */
const ids = (id, rows = 1) => ({ data: new Int32Array(rows).fill(id), shape: [rows, 1] });
/** @param {number} p */
const position = (p) => ({ data: new Int32Array([p]), shape: [1] });
/** @param {unknown} t */
const release = (t) => { if (t instanceof DeviceTensor) t.release(); };

/** @returns {Generation} */
const emptyGeneration = () => ({ ids: [], sequences: [], scores: [], logits: [], steps: [], host: { encode: [], submit: [], map: [], copy: [] }, firstToken: NaN });

/**
 * The greedy or sampled tokens after `prompt` (at least one token), each as soon as it is read back, stopping
 * after any of `o.eosTokenId` or `o.maxNewTokens` tokens (or once `signal` aborts). `forced(step)` replaces the
 * choice where it returns an id (transformers' forced BOS/EOS); with `teacher` its ids are fed instead and each
 * step's logits recorded. `out` records arrivals, host times and logits. `cached`: how many of the prompt's
 * first tokens hold their rows in the cache already, at their positions (an earlier generation wrote them:
 * a chat's turns), so that the prompt runs from there.
 *
 * Once the generator is done, returned or thrown out of after yielding n >= 1 ids, the cache holds the rows of
 * the prompt and of the first n - 1 of them (a token's row is written by the step it is fed to); steps past a
 * stop may have written rows after those.
 * @param {Decoder} decoder
 * @param {number[]} prompt
 * @param {Settings} o
 * @param {unknown[]} [context] the step's inputs after the tokens and the position
 * @param {{forced?: (step: number) => number | null, teacher?: number[], out?: Generation, signal?: AbortSignal,
 *   cached?: number}} [options]
 * @returns {AsyncGenerator<number, void>}
 */
export async function* tokens(decoder, prompt, o, context = [], options = {}) {
  const { forced = () => null, teacher, out = emptyGeneration(), signal, cached = 0 } = options;
  if (!prompt.length) throw new RangeError('generation needs at least one prompt token (a start token)');
  if (!(Number.isSafeInteger(cached) && cached >= 0 && cached < prompt.length)) {
    throw new RangeError(`cached: ${cached} of ${prompt.length} prompt tokens; the last one always runs`);
  }
  const sampling = o.doSample && !teacher;
  const draws = uniforms(o.seed);
  const params = samplerParams(o);
  if (sampling) await /** @type {Program} */ (decoder.sampler).resetState();
  const keep = teacher ? [] : sampling ? [0] : [1];
  const read = teacher ? [0, 1] : sampling ? [] : [1];
  /** @type {{call: Pending | null, index: number, host: number | null}[]} each step in flight */
  const inFlight = [];
  let last = performance.now();
  /** Wait for the oldest step; record its arrival (and logits); its id. */
  const arrive = async () => {
    const { call, index, host } = /** @type {(typeof inFlight)[number]} */ (inFlight.shift());
    let result;
    if (call) {
      result = await call.result();
      if (teacher) out.logits.push(/** @type {Float32Array} */ (result[0].data));
      for (const [phase, seconds] of Object.entries(call.host)) out.host[phase]?.push(seconds);
    }
    const now = performance.now();
    out.steps.push((now - last) * 1e-3);
    last = now;
    return host ?? Number((Array.isArray(result) ? result[index] : result).data[0]);
  };
  /** @type {unknown} */
  let token = null;
  let seen = prompt; // ids the sampler marks
  try {
    for (let step = 0; step < o.maxNewTokens && !signal?.aborted; step++) {
      const call = step === 0 ? await decoder.startPrompt(prompt, context, keep, read, cached)
        : await decoder.step.start([token, position(prompt.length + step - 1), ...context], { keep, read });
      release(token); // its copy into the input is submitted
      const host = teacher ? teacher[step] : forced(step);
      if (host !== null && host !== undefined) {
        call.kept.forEach(release);
        token = ids(host);
        seen = [host];
        inFlight.push({ call: read.length ? call : null, index: 0, host });
      } else if (sampling) {
        const logits = call.kept[0];
        const uniform = Float32Array.of(/** @type {number} */ (draws.next().value));
        const pick = await /** @type {Program} */ (decoder.sampler).start([logits, { data: Int32Array.from(seen), shape: [1, seen.length] }, params, uniform], { keep: [0], read: [0] });
        release(logits);
        token = pick.kept[0];
        seen = seen.slice(-1);
        inFlight.push({ call: pick, index: 0, host: null });
      } else {
        token = call.kept[1];
        inFlight.push({ call, index: 1, host: null });
      }
      if (inFlight.length === IN_FLIGHT) {
        const id = await arrive();
        yield id;
        if (!teacher && o.eosTokenId.includes(id)) return;
      }
    }
    while (inFlight.length) {
      const id = await arrive();
      yield id;
      if (!teacher && o.eosTokenId.includes(id)) return;
    }
  } finally {
    for (const { call } of inFlight) call?.discard(); // steps past a stop: their work runs, their outputs are never read
    release(token);
  }
}

/**
 * transformers' beam search after `prompt` over `decoder`'s batch of beams: each step's best continuations from
 * the beams program (log_softmax, forced tokens, running scores, top K on the GPU), the host's choice
 * (BeamSearch), the reorder program gathering the caches by beam on the GPU, the chosen tokens' step.
 * @param {Decoder} decoder
 * @param {number[]} prompt
 * @param {Settings} o
 * @param {unknown[]} [context]
 * @param {{forced?: (step: number) => number | null, out?: Generation, signal?: AbortSignal}} [options]
 * @returns {Promise<BeamSearch>}
 */
export async function beamSearch(decoder, prompt, o, context = [], options = {}) {
  const { forced = () => null, out = emptyGeneration(), signal } = options;
  const [beams, reorder] = [/** @type {Program} */ (decoder.beams), /** @type {Program} */ (decoder.reorder)];
  const search = new BeamSearch({
    numBeams: o.numBeams, vocabSize: Number(decoder.step.outputs[0].shape.at(-1)), maxNewTokens: o.maxNewTokens,
    eos: o.eosTokenId, lengthPenalty: o.lengthPenalty, earlyStopping: o.earlyStopping,
  });
  const keep = Number(beams.outputs[0].shape.at(-1));
  if (search.keep > keep) throw new RangeError(`${o.eosTokenId.length} EOS ids need the ${search.keep} best continuations a step; this beams program gives ${keep}`);
  let last = performance.now();
  let call = await decoder.startPrompt(prompt, context, [0], []);
  for (let step = 0; step < o.maxNewTokens; step++) {
    const logits = call.kept[0];
    const top = await beams.start([logits, Float32Array.from(search.scores()), position(forced(step) ?? -1)], { read: [0, 1] });
    release(logits);
    const [values, indices] = await top.result();
    for (const [phase, seconds] of Object.entries(top.host)) out.host[phase]?.push(seconds); // the read of each step's candidates
    const chosen = search.step(Array.from(values.data, Number).slice(0, search.keep), Array.from(indices.data, Number).slice(0, search.keep));
    const now = performance.now();
    out.steps.push((now - last) * 1e-3);
    last = now;
    if (search.done || signal?.aborted) break;
    if (chosen.beams.some((b, i) => b !== i)) await reorder.start([{ data: Int32Array.from(chosen.beams), shape: [o.numBeams] }], { read: [] });
    const next = { data: Int32Array.from(chosen.tokens), shape: [o.numBeams, 1] };
    call = await decoder.step.start([next, position(prompt.length + step), ...context], { keep: [0], read: [] });
  }
  return search;
}

/**
 * Run one generation with settings `o` (greedy, sampled or beam search).
 * @param {Decoder} decoder
 * @param {number[]} prompt
 * @param {Settings} o
 * @param {unknown[]} [context]
 * @param {{forced?: (step: number) => number | null, teacher?: number[], onToken?: (id: number, seconds: number) => void,
 *   tokenizer?: Decodes, signal?: AbortSignal}} [options]
 * @returns {Promise<Generation>}
 */
export async function generate(decoder, prompt, o, context = [], options = {}) {
  const { onToken, tokenizer, ...rest } = options;
  decoder.require(o);
  const out = emptyGeneration();
  if (o.numBeams > 1) {
    const best = (await beamSearch(decoder, prompt, o, context, { ...rest, out })).results(o.numReturnSequences);
    return finished(out, best.map((h) => h.tokens), best.map((h) => h.score));
  }
  if (o.stopStrings.length && !tokenizer) throw new RangeError('stop_strings need a tokenizer to decode the generated text');
  let text = '';
  for await (const id of tokens(decoder, prompt, o, context, { ...rest, out })) {
    out.ids.push(id);
    onToken?.(id, /** @type {number} */ (out.steps.at(-1)));
    if (o.stopStrings.length) {
      const before = text.length;
      text = /** @type {Decodes} */ (tokenizer).decode(out.ids);
      if (completesStop(text, before, o.stopStrings)) break;
    }
  }
  return finished(out, [out.ids], []);
}

/**
 * @param {Generation} out
 * @param {number[][]} sequences
 * @param {number[]} scores
 */
function finished(out, sequences, scores) {
  return { ...out, ids: sequences[0], sequences, scores, firstToken: out.steps[0] ?? NaN };
}

/**
 * Decodes a stream of token ids into text as it grows, in pieces that never split a character (a multi-byte one
 * whose bytes came in separate tokens waits for its last byte): transformers' TextStreamer without its word
 * buffering. `push(id)` returns the text it makes showable ('' while a character is incomplete), `end()` the rest.
 */
export class TextStream {
  /** @param {Decodes} tokenizer */
  constructor(tokenizer) {
    this.tokenizer = tokenizer;
    /** @type {number[]} */
    this.ids = [];
    this.text = '';
    this.shown = 0;
  }

  /** @param {number} id */
  push(id) {
    this.ids.push(id);
    this.text = this.tokenizer.decode(this.ids);
    const end = printable(this.text, this.shown);
    const piece = this.text.slice(this.shown, end);
    this.shown = end;
    return piece;
  }

  end() {
    const piece = this.text.slice(this.shown);
    this.shown = this.text.length;
    return piece;
  }
}

/**
 * The text of an (async) iterable of token ids, piece by piece as TextStream shows it.
 * @param {AsyncIterable<number> | Iterable<number>} ids
 * @param {Decodes} tokenizer
 * @returns {AsyncGenerator<string, void>}
 */
export async function* textStream(ids, tokenizer) {
  const stream = new TextStream(tokenizer);
  for await (const id of ids) {
    const piece = stream.push(id);
    if (piece) yield piece;
  }
  const rest = stream.end();
  if (rest) yield rest;
}

/**
 * A generate call's settings: its options but the call's own, the model's EOS ids where none are given.
 * @param {GenerateOptions} options
 * @param {{eos_token_id?: number | number[] | null}} info
 * @returns {Settings}
 */
function settingsOf(options, info) {
  const settings = Object.fromEntries(Object.entries(options).filter(([k]) => !CALL_OPTIONS.has(k)));
  return generationOptions({ ...settings, eosTokenId: options.eosTokenId ?? info.eos_token_id ?? null });
}

/**
 * Load options, for each program of the folder (`onProgress` reports each one's bytes as they are read, its
 * `source` naming the file), and `onLoaded`: called as each program is ready (read, validated, its pipelines
 * built), with how many are and of how many, and its file.
 * @typedef {LoadOptions & {onLoaded?: (loaded: number, total: number, file: string) => void}} FolderOptions
 */

/**
 * Load a CausalLM folder (Node) or URL: causal_lm.json, step.wgpt and the decoding programs it lists.
 * @param {URL | string} base
 * @param {FolderOptions} [options]
 * @returns {Promise<CausalLM>}
 */
export async function loadCausalLM(base, options = {}) {
  const { onLoaded, ...rest } = options;
  const { info, where } = await readInfo(base, 'causal_lm.json');
  checkFields(info, where, ['max_length', 'vocab_size'], []);
  const programs = /** @type {CausalLMInfo} */ (info).programs ?? [];
  let loaded = 0;
  const done = (/** @type {string} */ file) => onLoaded?.(++loaded, 1 + programs.length, file);
  const step = await load(await within(base, 'step.wgpt'), rest);
  done('step.wgpt');
  return new CausalLM(step, /** @type {CausalLMInfo} */ (info), await loadPrograms(base, programs, step, rest, done));
}

/**
 * The decoding programs a folder lists, those that write the step's cache sharing its states; `done(file)`
 * once each is loaded.
 * @param {URL | string} base
 * @param {ProgramName[] | undefined} names
 * @param {Program} step
 * @param {LoadOptions} options
 * @param {(file: string) => void} [done]
 * @returns {Promise<Partial<Record<ProgramName, Program>>>}
 */
async function loadPrograms(base, names = [], step, options, done = () => {}) {
  const loaded = await Promise.all(names.map(async (name) => {
    const program = await load(await within(base, `${name}.wgpt`), SHARING.has(name) ? { ...options, share: step } : options);
    done(`${name}.wgpt`);
    return program;
  }));
  return Object.fromEntries(names.map((name, i) => [name, loaded[i]]));
}

export class CausalLM {
  /**
   * @param {Program} step
   * @param {CausalLMInfo} info
   * @param {Partial<Record<ProgramName, Program>>} [programs]
   */
  constructor(step, info, programs = {}) {
    this.step = step;
    this.info = info;
    this.decoder = new Decoder(step, programs);
    /** @type {{steps?: number[], host?: Record<string, number[]>}} the last generate's steps */
    this.timings = {};
  }

  /**
   * Generate after `prompt` with transformers' settings (greedy by default; doSample, numBeams …), stopping
   * after EOS.
   * @param {number[]} prompt
   * @param {GenerateOptions} [options]
   * @returns {Promise<Generation>}
   */
  async generate(prompt, options = {}) {
    const o = this.settings(prompt, options);
    const out = await generate(this.decoder, prompt, o, [], options);
    this.timings = { steps: out.steps, host: out.host };
    return out;
  }

  /**
   * The greedy or sampled ids after `prompt`, each as soon as the GPU has it (`textStream` for text);
   * `for await (const id of lm.stream(prompt, {doSample: true}))`.
   * @param {number[]} prompt
   * @param {GenerateOptions} [options]
   * @returns {AsyncGenerator<number, void>}
   */
  stream(prompt, options = {}) {
    const o = this.settings(prompt, options);
    if (o.numBeams > 1 || o.stopStrings.length) throw new RangeError('stream() yields ids as they come: use generate() for beam search and stopStrings');
    this.decoder.require(o);
    return tokens(this.decoder, prompt, o, [], { signal: options.signal });
  }

  /**
   * @private
   * @param {number[]} prompt
   * @param {GenerateOptions} options
   */
  settings(prompt, options) {
    const o = settingsOf(options, this.info);
    const rows = prompt.length + o.maxNewTokens - 1;
    if (rows > this.info.max_length) {
      throw new RangeError(`${prompt.length} prompt tokens and ${o.maxNewTokens} new ones need ${rows} cache rows; ` +
        `this step's cache holds ${this.info.max_length}`);
    }
    return o;
  }

  destroy() {
    this.decoder.destroy();
  }

  [Symbol.dispose]() {
    this.destroy();
  }
}

const REQUIRED = ['layers', 'heads', 'head_dim', 'decoder_start_token_id']; // integers
// Integers, null or absent; max_length: the decoder's cache rows (a longer generation is refused by name).
const OPTIONAL = ['forced_bos_token_id', 'forced_eos_token_id', 'max_length'];

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
 * A folder's JSON object with integer `required` keys and `optional` ones integer, null or absent; eos_token_id
 * an id, a list of ids or null; programs some of PROGRAMS.
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
  const eos = o.eos_token_id;
  if (eos !== undefined && eos !== null && !Number.isSafeInteger(eos) && !(Array.isArray(eos) && eos.every(Number.isSafeInteger))) {
    throw new ArtifactError(`${where}: 'eos_token_id' is neither an integer, a list of integers nor null`);
  }
  const programs = o.programs ?? [];
  if (!Array.isArray(programs) || programs.some((p) => !PROGRAMS.includes(p))) {
    throw new ArtifactError(`${where}: 'programs' must list some of ${PROGRAMS.join(', ')}`);
  }
}

/**
 * Load the three stages, seq2seq.json and the decoder's decoding programs from a folder (Node) or a URL.
 * @param {URL | string} base
 * @param {LoadOptions} [options]
 * @returns {Promise<Seq2Seq>}
 */
export async function loadSeq2Seq(base, options = {}) {
  const { info, where } = await readInfo(base, 'seq2seq.json');
  checkInfo(info, where);
  const [vision, encoder, decoder] = await Promise.all(STAGES.map(async (name) => load(await within(base, `${name}.wgpt`), options)));
  return new Seq2Seq(vision, encoder, decoder, info, await loadPrograms(base, info.programs, decoder, options));
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
   * @param {Partial<Record<ProgramName, Program>>} [programs] the decoder's decoding programs
   */
  constructor(vision, encoder, decoder, info, programs = {}) {
    this.vision = vision;
    this.encoder = encoder;
    this.decoder = decoder;
    this.info = info;
    this.decoding = new Decoder(decoder, programs);
    /** @type {{decoderSteps?: number[], decoderHost?: Record<string, number[]>}} the last generate's steps */
    this.timings = {};
  }

  /**
   * Generate after the decoder prompt (the decoder start token unless `decoderPrompt` gives one) with
   * transformers' settings, stopping after EOS, with transformers' forced BOS/EOS tokens.
   * @param {import('./inputs.js').InputValue} pixelValues [1, 3, H, W] float32
   * @param {import('./inputs.js').InputValue} promptIds [1, T] integers
   * @param {GenerateOptions & {decoderPrompt?: number[]}} [options]
   * @returns {Promise<Generation>}
   */
  async generate(pixelValues, promptIds, options = {}) {
    const { decoderPrompt, ...rest } = options;
    const info = this.info;
    const o = settingsOf(rest, info);
    const start = decoderPrompt ?? [info.decoder_start_token_id];
    if (info.max_length !== undefined && info.max_length !== null && start.length + o.maxNewTokens - 1 > info.max_length) {
      throw new RangeError(`maxNewTokens ${o.maxNewTokens}: the decoder's cache holds ${info.max_length} tokens`);
    }
    this.decoding.require(o);
    const features = /** @type {DeviceTensor} */ (await this.vision.runOnDevice([pixelValues])); // queued: the first step's read waits for both
    const cross = /** @type {DeviceTensor[]} */ (await this.encoder.runOnDevice([features, promptIds]));
    features.release();
    try {
      const forced = (/** @type {number} */ step) => this.forced(start.length + step, start.length + o.maxNewTokens);
      const out = await generate(this.decoding, start, o, [cross], { ...rest, forced });
      this.timings.decoderSteps = out.steps; // the first step also waits for vision and encoder
      this.timings.decoderHost = out.host;
      return out;
    } finally {
      releaseAll(cross);
    }
  }

  /**
   * transformers' forced-BOS/EOS logits processors: the id forced after the first token of the decoder's
   * sequence and before `maxLength`, given the sequence's `length` so far, or null.
   * @param {number} length
   * @param {number} maxLength
   * @returns {number | null}
   */
  forced(length, maxLength) {
    const { forced_bos_token_id: bos, forced_eos_token_id: eos } = this.info;
    if (length === 1 && bos !== undefined && bos !== null) return bos;
    if (length === maxLength - 1 && eos !== undefined && eos !== null) return eos;
    return null;
  }

  /** Free the programs' GPU buffers now. */
  destroy() {
    for (const p of [this.vision, this.encoder]) p.destroy();
    this.decoding.destroy();
  }

  /** `using model = await loadSeq2Seq(…)` destroys it at the end of the scope. */
  [Symbol.dispose]() {
    this.destroy();
  }
}

/** @param {unknown[]} tensors */
function releaseAll(tensors) {
  for (const t of tensors) release(t);
}
