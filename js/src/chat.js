// A chat over a causal LM folder, shaped as OpenAI's chat completions: `createChat(folder)` loads the model
// (generation.js) and, where the folder has one, its tokenizer with its chat template (tokenizer.js);
// `chat.completions({messages, stream, temperature, max_tokens, …})` answers as chat.completions.create does — a
// `chat.completion`, or with `stream: true` an async iterable of `chat.completion.chunk`s whose text never
// splits a character nor shows a stop string.
//
// The KV cache is the step's state and outlives a completion: the next prompt of a conversation (its messages,
// the reply, a new message) starts with tokens the cache holds the rows of, and only the rest runs
// (`usage.prompt_tokens_details.cached_tokens`); a prompt that shares less with it reuses what it shares.
//
// A folder without a tokenizer (random weights) chats in token ids: each message's content is a list of ids,
// the prompt is the messages' ids in order (there is no template), and a reply's content is its ids.
//
// createChatWorker runs a chat in a module Worker (chat_worker.js) through comlink, so that a page never waits
// on it: the same completions(), its AbortSignal forwarded, a stream's chunks posted as they come.

import { generationOptions, printable } from './decoding.js';
import { loadCausalLM, tokens } from './generation.js';
import { comlink, libraryUrls } from './libraries.js';
import { findTokenizer } from './tokenizer.js';

/** @typedef {import('./generation.js').CausalLM} CausalLM */
/** @typedef {import('./tokenizer.js').Tokenizer} Tokenizer */
/** @typedef {import('./session.js').LoadOptions} LoadOptions */
/** @typedef {import('./generation.js').FolderOptions} FolderOptions */
/** @typedef {import('./decoding.js').Settings} Settings */
/**
 * A message: a role ("system", "user", "assistant", …) and its content, text (a list of ids where the chat has
 * no tokenizer); other keys reach the chat template as they are.
 * @typedef {{role: string, content: string | number[], [key: string]: unknown}} ChatMessage
 */
/**
 * OpenAI's chat.completions.create parameters that a local model has, and the sampling settings it adds (as
 * vLLM's); anything else is refused by name.
 * @typedef {object} ChatRequest
 * @property {ChatMessage[]} messages the conversation so far
 * @property {boolean} [stream] false: one `chat.completion`; true: `chat.completion.chunk`s as the reply grows
 * @property {{include_usage?: boolean}} [stream_options] include_usage: a last chunk with `usage` and no choices
 * @property {number} [temperature] 1; 0: greedy (the other sampling settings unused)
 * @property {number} [top_p] 1
 * @property {number} [top_k] 0: off
 * @property {number} [min_p] 0
 * @property {number} [repetition_penalty] 1 (sampling only)
 * @property {number | null} [max_tokens] the most tokens the reply may have; at most, and by default, the rows
 *   the cache has left after the prompt
 * @property {number | null} [max_completion_tokens] the same (OpenAI's newer name)
 * @property {string | string[] | null} [stop] text that ends the reply, left out of it (text chats only)
 * @property {number | null} [seed] the seed of the sampler's draws (default: a random one)
 * @property {number} [n] 1: one reply
 * @property {string} [model] unused: the chat's model answers
 * @property {string} [user] unused
 * @property {AbortSignal} [signal] ends the reply after the step in flight, keeping it: finish_reason "abort"
 */
/** @typedef {'stop' | 'length' | 'abort'} FinishReason "abort": the request's signal ended the reply */
/**
 * @typedef {{prompt_tokens: number, completion_tokens: number, total_tokens: number,
 *   prompt_tokens_details: {cached_tokens: number}}} Usage
 * `cached_tokens`: the prompt's first tokens whose rows the cache held already
 */
/**
 * @typedef {{id: string, object: 'chat.completion', created: number, model: string,
 *   choices: {index: number, message: {role: 'assistant', content: string | number[]}, finish_reason: FinishReason}[],
 *   usage: Usage}} ChatCompletion
 */
/**
 * @typedef {{id: string, object: 'chat.completion.chunk', created: number, model: string,
 *   choices: {index: number, delta: {role?: 'assistant', content?: string | number[]}, finish_reason: FinishReason | null}[],
 *   usage?: Usage}} ChatCompletionChunk
 */
/**
 * What both chats have: the model's name, `mode` ("text"; "ids" without a tokenizer), `maxLength` (the
 * cache's rows: the most tokens a prompt may have, its reply's but the last included) and `memory`, the bytes
 * of device buffers the model holds (Decoder.deviceBytes: weights, cache, scratch).
 * @typedef {{model: string, mode: 'text' | 'ids', maxLength: number,
 *   memory: {weights: number, cache: number, scratch: number}}} ChatInfo
 */

const REQUEST = new Set(['messages', 'stream', 'stream_options', 'temperature', 'top_p', 'top_k', 'min_p', 'repetition_penalty',
  'max_tokens', 'max_completion_tokens', 'stop', 'seed', 'n', 'model', 'user', 'signal']);

/**
 * A chat over the causal LM folder `folder` (Node) or URL (causal_lm.json, step.wgpt, its decoding programs;
 * tokenizer.json and a chat template for text). `options`: loadCausalLM's (`onLoaded` as each program is ready).
 * @param {URL | string} folder
 * @param {FolderOptions} [options]
 * @returns {Promise<Chat>}
 */
export async function createChat(folder, options = {}) {
  const tokenizer = await findTokenizer(folder); // first: it is refused before the model takes GPU memory
  if (tokenizer && !tokenizer.hasChatTemplate) {
    throw new RangeError(`${folder}: the tokenizer has no chat template (tokenizer_config.json chat_template, or chat_template.jinja)`);
  }
  const model = String(folder).replace(/[\\/]+$/, '').split(/[\\/]/).pop() ?? '';
  return new Chat(await loadCausalLM(folder, options), tokenizer, model);
}

export class Chat {
  /** The model, whose cache is this chat's alone. */
  #lm;
  /** The ids the cache holds the rows of, at their positions. */
  #cached = /** @type {number[]} */ ([]);
  /** Settles once the completions before the latest have ended: they run one at a time over the one cache. */
  #queue = Promise.resolve();

  /**
   * Chats come from `createChat`.
   * @param {CausalLM} lm
   * @param {Tokenizer | null} tokenizer
   * @param {string} model
   */
  constructor(lm, tokenizer, model) {
    this.#lm = lm;
    this.tokenizer = tokenizer;
    this.model = model;
    /** @type {ChatInfo['mode']} */
    this.mode = tokenizer ? 'text' : 'ids';
    this.maxLength = lm.info.max_length;
    /** @type {ChatInfo['memory']} */
    this.memory = lm.decoder.deviceBytes();
    const end = tokenizer?.specialTokens.eos_token;
    const endId = end === undefined ? undefined : tokenizer?.tokenId(end);
    /** the ids that end a reply: the model's EOS ids and the tokenizer's EOS token's */
    this.eos = [...new Set([lm.info.eos_token_id ?? [], endId ?? []].flat())];
  }

  /**
   * The prompt ids of a conversation: its messages through the chat template, with the assistant's turn
   * opened (transformers' apply_chat_template, add_generation_prompt); without a tokenizer, their ids in order.
   * @param {ChatMessage[]} messages
   * @returns {number[]}
   */
  promptIds(messages) {
    if (!Array.isArray(messages) || !messages.length) throw new RangeError('messages: a list of one message or more');
    for (const [i, m] of messages.entries()) {
      const ok = this.tokenizer ? typeof m?.content === 'string' : isIds(m?.content, this.#lm.info.vocab_size);
      if (typeof m?.role !== 'string' || !ok) {
        throw new RangeError(`messages[${i}]: a role and, ${this.tokenizer ? 'its content as text' : `no tokenizer here, its content as token ids in [0, ${this.#lm.info.vocab_size})`}`);
      }
    }
    if (!this.tokenizer) return messages.flatMap((m) => /** @type {number[]} */ (m.content));
    return this.tokenizer.applyChatTemplate(/** @type {import('./tokenizer.js').Message[]} */ (messages));
  }

  /**
   * The assistant's reply to `request.messages`: a `chat.completion`, or, with `stream: true`, an async iterable
   * of `chat.completion.chunk`s (a first with the role, one per piece of the reply as it comes, a last with the
   * finish_reason). The request is checked before either: a RangeError names what is wrong.
   * @overload
   * @param {ChatRequest & {stream: true}} request
   * @returns {Promise<AsyncIterable<ChatCompletionChunk>>}
   */
  /**
   * @overload
   * @param {ChatRequest & {stream?: false | undefined}} request
   * @returns {Promise<ChatCompletion>}
   */
  /**
   * @overload
   * @param {ChatRequest} request
   * @returns {Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>>}
   */
  /**
   * @param {ChatRequest} request
   * @returns {Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>>}
   */
  async completions(request) {
    const unknown = Object.keys(request).filter((k) => !REQUEST.has(k)).sort();
    if (unknown.length) throw new RangeError(`unsupported chat completion parameter '${unknown[0]}'`);
    if ((request.n ?? 1) !== 1) throw new RangeError(`n: one reply a request, got ${request.n}`);
    const prompt = this.promptIds(request.messages);
    const stops = request.stop === undefined || request.stop === null ? [] : [request.stop].flat();
    if (stops.length && !this.tokenizer) throw new RangeError('stop: text, which a chat in token ids has not');
    if (!stops.every((s) => typeof s === 'string' && s.length)) throw new RangeError('stop: a non-empty string or a list of them');
    const o = this.settings(request, prompt.length);
    const head = { id: `chatcmpl-${crypto.randomUUID()}`, created: Math.floor(Date.now() / 1e3), model: this.model };
    const reply = this.reply(prompt, o, stops, request.signal);
    if (request.stream) return chunks(reply, head, this.mode, request.stream_options?.include_usage === true);
    const pieces = [];
    let next;
    while (!(next = await reply.next()).done) pieces.push(next.value);
    const { finish, usage } = next.value;
    return {
      ...head, object: 'chat.completion', usage,
      choices: [{ index: 0, message: { role: 'assistant', content: join(pieces, this.mode) }, finish_reason: finish }],
    };
  }

  /**
   * Forget what the cache holds: the next completion runs its whole prompt.
   */
  reset() {
    this.#cached = [];
  }

  /**
   * A request's generation settings (OpenAI's names to transformers'); RangeError naming one that is wrong.
   * @private
   * @param {ChatRequest} request
   * @param {number} length the prompt's
   * @returns {Settings}
   */
  settings(request, length) {
    const rows = this.#lm.info.max_length;
    if (length > rows) throw new RangeError(`the conversation is ${length} tokens; this model's cache holds ${rows}`);
    const max = request.max_tokens ?? request.max_completion_tokens ?? Infinity;
    if (max !== Infinity && !(Number.isSafeInteger(max) && max >= 1)) throw new RangeError(`max_tokens must be a positive integer, got ${max}`);
    const temperature = request.temperature ?? 1;
    const greedy = temperature === 0;
    if (greedy && (request.repetition_penalty ?? 1) !== 1) throw new RangeError('repetition_penalty needs sampling (a temperature above 0)');
    return generationOptions({
      maxNewTokens: Math.min(max, rows - length + 1), // the last token is never fed back: it needs no row
      doSample: !greedy, temperature: greedy ? 1 : temperature, topP: request.top_p ?? 1, topK: request.top_k ?? 0,
      minP: request.min_p ?? 0, repetitionPenalty: request.repetition_penalty ?? 1,
      seed: request.seed ?? Math.floor(Math.random() * 2 ** 32), eosTokenId: this.eos,
    });
  }

  /**
   * The reply's pieces (text, or ids) as they come, once the completions before it have ended; its finish
   * reason and usage. The cache's rows the prompt shares with what it holds are reused.
   * @private
   * @param {number[]} prompt
   * @param {Settings} o
   * @param {string[]} stops
   * @param {AbortSignal | undefined} signal
   * @returns {AsyncGenerator<string | number[], {finish: FinishReason, usage: Usage}>}
   */
  async* reply(prompt, o, stops, signal) {
    const previous = this.#queue;
    /** @type {() => void} */
    let release = () => {};
    this.#queue = new Promise((resolve) => { release = resolve; });
    await previous;
    const cached = Math.min(sharedPrefix(this.#cached, prompt), prompt.length - 1);
    this.#cached = this.#cached.slice(0, cached); // rows past these are rewritten from here on
    const ids = /** @type {number[]} */ ([]);
    const text = this.tokenizer ? new ReplyText(this.tokenizer, stops) : null;
    /** @type {FinishReason} */
    let finish = 'length';
    let failed = false;
    try {
      for await (const id of tokens(this.#lm.decoder, prompt, o, [], { signal, cached })) {
        ids.push(id);
        if (o.eosTokenId.includes(id)) {
          finish = 'stop';
          break;
        }
        const piece = text ? text.push(id) : [id];
        if (piece.length) yield piece;
        if (text?.stopped) {
          finish = 'stop';
          break;
        }
      }
      if (finish === 'length' && signal?.aborted && ids.length < o.maxNewTokens) finish = 'abort';
      const rest = text?.end() ?? '';
      if (rest) yield rest;
    } catch (e) {
      failed = true; // the cache's rows past `cached` are unknown
      throw e;
    } finally {
      if (!failed && ids.length) this.#cached = [...prompt, ...ids.slice(0, -1)]; // tokens()'s promise
      release();
    }
    const usage = {
      prompt_tokens: prompt.length, completion_tokens: ids.length, total_tokens: prompt.length + ids.length,
      prompt_tokens_details: { cached_tokens: cached },
    };
    return { finish, usage };
  }

  /** Free the model's GPU buffers now. */
  destroy() {
    this.#lm.destroy();
  }

  [Symbol.dispose]() {
    this.destroy();
  }
}

/**
 * @param {unknown} content
 * @param {number} vocabSize
 */
const isIds = (content, vocabSize) => Array.isArray(content) && content.every((id) => Number.isSafeInteger(id) && id >= 0 && id < vocabSize);

/**
 * How many leading ids `a` and `b` share.
 * @param {number[]} a
 * @param {number[]} b
 */
function sharedPrefix(a, b) {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

/**
 * A reply's pieces joined: text, or ids.
 * @param {(string | number[])[]} pieces
 * @param {ChatInfo['mode']} mode
 */
const join = (pieces, mode) => (mode === 'text' ? pieces.join('') : /** @type {number[][]} */ (pieces).flat());

/**
 * A reply as `chat.completion.chunk`s; returning early (a consumer's break) ends the reply.
 * @param {AsyncGenerator<string | number[], {finish: FinishReason, usage: Usage}>} reply
 * @param {{id: string, created: number, model: string}} head
 * @param {ChatInfo['mode']} mode
 * @param {boolean} includeUsage
 * @returns {AsyncGenerator<ChatCompletionChunk, void>}
 */
async function* chunks(reply, head, mode, includeUsage) {
  /** @type {(delta: ChatCompletionChunk['choices'][0]['delta'], finish?: FinishReason) => ChatCompletionChunk} */
  const chunk = (delta, finish) => ({ ...head, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish ?? null }] });
  try {
    yield chunk({ role: 'assistant', content: mode === 'text' ? '' : [] });
    let next;
    while (!(next = await reply.next()).done) yield chunk({ content: next.value });
    yield chunk({}, next.value.finish);
    if (includeUsage) yield { ...head, object: 'chat.completion.chunk', choices: [], usage: next.value.usage };
  } finally {
    await reply.return(/** @type {any} */ (undefined)); // the steps in flight are discarded, the cache kept
  }
}

/**
 * A reply's text as its ids arrive, in pieces that never split a character (decoding.js `printable`: a
 * multi-byte one waits for its last byte) nor show a stop string or the start of one that may be completing;
 * the text ends before the first stop string (OpenAI's `stop`). Special tokens are left out.
 */
class ReplyText {
  /**
   * @param {Tokenizer} tokenizer
   * @param {string[]} stops
   */
  constructor(tokenizer, stops) {
    this.tokenizer = tokenizer;
    this.stops = stops;
    /** @type {number[]} */
    this.ids = [];
    this.text = '';
    this.shown = 0;
    this.stopped = false;
  }

  /**
   * The text `id` makes showable ('' while it may be part of a character or a stop string); `stopped` once the
   * text holds a stop string.
   * @param {number} id
   */
  push(id) {
    this.ids.push(id);
    this.text = this.tokenizer.decode(this.ids, { skipSpecialTokens: true });
    const at = Math.min(...this.stops.map((s) => this.text.indexOf(s)).filter((i) => i >= 0));
    if (at !== Infinity) {
      this.stopped = true;
      this.text = this.text.slice(0, at);
      return this.show(this.text.length);
    }
    return this.show(printable(this.text, this.shown) - this.held());
  }

  /** The rest of the text, at the reply's end. */
  end() {
    return this.show(this.text.length);
  }

  /**
   * How many of the text's last characters may begin a stop string: held back until they do not.
   * @private
   */
  held() {
    for (let k = Math.min(this.text.length, Math.max(0, ...this.stops.map((s) => s.length - 1))); k > 0; k--) {
      const tail = this.text.slice(-k);
      if (this.stops.some((s) => s.startsWith(tail))) return k;
    }
    return 0;
  }

  /**
   * The text from what was shown up to `end` (never less than shown).
   * @private
   * @param {number} end
   */
  show(end) {
    const piece = this.text.slice(this.shown, Math.max(this.shown, end));
    this.shown += piece.length;
    return piece;
  }
}

// ---- in a Worker ------------------------------------------------------------------------------------------

/**
 * A chat in a module Worker (chat_worker.js, beside this module), for a page: `completions` as Chat's — the
 * request's signal aborts the reply in the worker, a stream's chunks arrive as the worker makes them.
 * `options` as createChat's, cloneable but for `onLoaded` and `onProgress` (no `device`: the worker opens its own).
 * @param {URL | string} folder a URL, or one relative to the page
 * @param {Omit<FolderOptions, 'device'>} [options]
 * @returns {Promise<WorkerChat>}
 */
export async function createChatWorker(folder, options = {}) {
  const { onLoaded, onProgress, ...rest } = options;
  const Comlink = await comlink();
  const worker = new Worker(new URL('./chat_worker.js', import.meta.url), { type: 'module' });
  try {
    await new Promise((resolve, reject) => {
      worker.addEventListener('message', resolve, { once: true });
      worker.addEventListener('error', (e) => reject(new Error(`the chat worker did not start: ${e.message}`)), { once: true });
      worker.postMessage({ libraries: libraryUrls() }); // import maps do not reach workers
    });
    /** @type {import('comlink').Remote<import('./chat_worker.js').ChatHost>} */
    const remote = Comlink.wrap(worker);
    const info = await remote.open(new URL(folder, location.href).href, rest, onLoaded && Comlink.proxy(onLoaded),
      onProgress && Comlink.proxy(onProgress));
    return new WorkerChat(worker, remote, info);
  } catch (e) {
    worker.terminate();
    throw e;
  }
}

export class WorkerChat {
  #requests = 0;

  /**
   * WorkerChats come from `createChatWorker`.
   * @param {Worker} worker
   * @param {import('comlink').Remote<import('./chat_worker.js').ChatHost>} remote
   * @param {ChatInfo} info
   */
  constructor(worker, remote, info) {
    this.worker = worker;
    this.remote = remote;
    this.model = info.model;
    this.mode = info.mode;
    this.maxLength = info.maxLength;
    this.memory = info.memory;
  }

  /**
   * Chat's completions, run in the worker.
   * @overload
   * @param {ChatRequest & {stream: true}} request
   * @returns {Promise<AsyncIterable<ChatCompletionChunk>>}
   */
  /**
   * @overload
   * @param {ChatRequest & {stream?: false | undefined}} request
   * @returns {Promise<ChatCompletion>}
   */
  /**
   * @overload
   * @param {ChatRequest} request
   * @returns {Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>>}
   */
  /**
   * @param {ChatRequest} request
   * @returns {Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>>}
   */
  async completions(request) {
    const { signal, ...rest } = request;
    const id = ++this.#requests;
    const abort = () => void this.remote.abort(id);
    signal?.addEventListener('abort', abort);
    if (signal?.aborted) abort();
    const forget = () => signal?.removeEventListener('abort', abort);
    if (!rest.stream) return /** @type {Promise<ChatCompletion>} */ (this.remote.completions(id, rest, null)).finally(forget);
    const queue = new ChunkQueue();
    const { proxy } = await comlink();
    const done = this.remote.completions(id, rest, proxy((/** @type {ChatCompletionChunk} */ chunk) => queue.push(chunk)));
    done.then(() => queue.close(), (e) => queue.close(e)).finally(forget);
    await Promise.race([queue.first, done]); // the request's errors reject here, as Chat's do
    return queue.drain(abort);
  }

  /** End the worker: the model's GPU buffers go with it. */
  destroy() {
    this.worker.terminate();
  }

  [Symbol.dispose]() {
    this.destroy();
  }
}

/** The chunks a worker posts, read by one consumer as they come. */
class ChunkQueue {
  /** @type {ChatCompletionChunk[]} */
  items = [];
  /** @type {{error?: unknown} | null} how the worker's stream ended, once it has */
  ended = null;
  wake = () => {};
  /** @type {Promise<void>} settles at the first chunk */
  first;
  #arrived = () => {};

  constructor() {
    this.first = new Promise((resolve) => { this.#arrived = resolve; });
  }

  /** @param {ChatCompletionChunk} chunk */
  push(chunk) {
    this.items.push(chunk);
    this.#arrived();
    this.wake();
  }

  /** @param {unknown} [error] */
  close(error) {
    this.ended = { error };
    this.wake();
  }

  /**
   * The chunks in order until the stream ends (its error thrown); `stop()` where the consumer leaves first.
   * @param {() => void} stop
   * @returns {AsyncGenerator<ChatCompletionChunk, void>}
   */
  async* drain(stop) {
    try {
      for (;;) {
        const chunk = this.items.shift();
        if (chunk) yield chunk;
        else if (this.ended?.error) throw this.ended.error;
        else if (this.ended) return;
        else await new Promise((resolve) => { this.wake = () => resolve(undefined); });
      }
    } finally {
      if (!this.ended) stop();
    }
  }
}
