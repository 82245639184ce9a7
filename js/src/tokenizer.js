// Text to the ids a model takes, the model's own way: its tokenizer.json (and tokenizer_config.json) read by
// @huggingface/tokenizers — pure JavaScript, the tokenizer families transformers' fast tokenizers have
// (WordPiece, BPE, Unigram; their normalizers, pre-tokenizers and special-token templates), the files
// transformers.js reads — and a chat model's conversations rendered by its chat template (tokenizer_config.json's
// `chat_template`, or chat_template.jinja) with @huggingface/jinja, as transformers' apply_chat_template does.
// The libraries are imported on first use (libraries.js): in Node from node_modules (they are dependencies of
// this package), in a browser through the page's import map (`"@huggingface/tokenizers"` → its
// `dist/tokenizers.min.mjs`, `"@huggingface/jinja"` → its `dist/index.js`; `webgpu-torch serve` serves them),
// so the runtime itself loads without them.

import { ArtifactError } from './errors.js';
import { jinja, tokenizers } from './libraries.js';
import { readIfThere, within } from './source.js';

/** @typedef {import('./device_tensor.js').HostTensor<'int64'>} Int64Tensor */
/**
 * A batch of texts as a text model's inputs, by the names transformers gives them (pass it to `run` as is).
 * @typedef {{input_ids: Int64Tensor, attention_mask: Int64Tensor}} TextBatch
 */

/**
 * A message of a conversation as chat templates take it: a role ("system", "user", "assistant", …) and its
 * content; other keys reach the template as they are.
 * @typedef {{role: string, content: string, [key: string]: unknown}} Message
 */

// The special tokens transformers gives a chat template by name (its special_tokens_map).
const SPECIAL_TOKENS = ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token'];

/**
 * The tokenizer in `base`: a folder (Node) or URL holding tokenizer.json and, optionally,
 * tokenizer_config.json (special tokens, `model_max_length`, `chat_template`) and chat_template.jinja (where
 * transformers saves a chat template by itself).
 * @param {URL | string} base
 * @returns {Promise<Tokenizer>}
 */
export async function loadTokenizer(base) {
  const tokenizer = await findTokenizer(base);
  if (!tokenizer) throw new ArtifactError(`${await within(base, 'tokenizer.json')}: no such file`);
  return tokenizer;
}

/**
 * The tokenizer in `base` as loadTokenizer loads it, or null where `base` has no tokenizer.json.
 * @param {URL | string} base
 * @returns {Promise<Tokenizer | null>}
 */
export async function findTokenizer(base) {
  const json = await readJson(await within(base, 'tokenizer.json'));
  if (json === null) return null;
  const [config, jinjaFile, library] = await Promise.all([
    readJson(await within(base, 'tokenizer_config.json')),
    readIfThere(await within(base, 'chat_template.jinja')),
    tokenizers(),
  ]);
  const source = chatTemplate(config?.chat_template) ?? (jinjaFile && new TextDecoder().decode(jinjaFile.bytes));
  const template = source === null ? null : new (await jinja()).Template(source);
  return Tokenizer.create(new library.Tokenizer(json, config ?? {}), json, config ?? {}, template);
}

/**
 * tokenizer_config.json's chat template: a string, or the one named "default" of a list of named ones.
 * @param {unknown} value
 * @returns {string | null}
 */
function chatTemplate(value) {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.find((t) => t?.name === 'default')?.template ?? null;
  return null;
}

export class Tokenizer {
  /** @internal @type {import('@huggingface/tokenizers').Tokenizer} */
  library;
  /** the id rows are padded with */
  padId;
  /** the longest row `batch` makes unless told otherwise (transformers' `model_max_length`) */
  maxLength;
  /** @internal the special tokens around a single text: `prefix` before it, the rest after */
  specials;
  /** @internal whether decode() tidies the spaces around punctuation (transformers' default: no) */
  cleanUp;
  /**
   * @internal whether the normalizer lowercases: JavaScript's toLowerCase applies Unicode's Final_Sigma
   * rule (a word-final Σ → ς), which the Rust tokenizers' character-by-character lowercasing does not, so
   * such a tokenizer's input gets every Σ lowercased to σ first (Final_Sigma is the one context-dependent
   * lowercase mapping).
   */
  lowercases;

  /** @internal the chat template, compiled (null: the tokenizer has none) */
  template;
  /** @internal the special tokens a chat template is given by name: bos_token, eos_token, … */
  specialTokens;

  /**
   * @internal
   * @param {import('@huggingface/tokenizers').Tokenizer} library
   * @param {any} json tokenizer.json
   * @param {any} config tokenizer_config.json
   * @param {import('@huggingface/jinja').Template | null} template
   */
  static create(library, json, config, template) {
    return new Tokenizer(library, json, config, template);
  }

  /**
   * Tokenizers come from `loadTokenizer`.
   * @private
   * @param {import('@huggingface/tokenizers').Tokenizer} library
   * @param {any} json
   * @param {any} config
   * @param {import('@huggingface/jinja').Template | null} template
   */
  constructor(library, json, config, template) {
    this.library = library;
    this.template = template;
    this.specialTokens = Object.fromEntries(SPECIAL_TOKENS.flatMap((key) => {
      const token = typeof config[key] === 'string' ? config[key] : config[key]?.content;
      return typeof token === 'string' ? [[key, token]] : [];
    }));
    const pad = typeof config.pad_token === 'string' ? config.pad_token : config.pad_token?.content;
    this.padId = json.padding?.pad_id ?? (pad === undefined ? undefined : library.token_to_id(pad)) ?? 0;
    this.maxLength = Number.isSafeInteger(config.model_max_length) ? config.model_max_length : Infinity;
    this.cleanUp = config.clean_up_tokenization_spaces === true;
    this.lowercases = lowercases(json.normalizer);
    const specials = library.encode('', { add_special_tokens: true }).ids;
    const around = library.encode('a', { add_special_tokens: true }).ids;
    let prefix = 0;
    while (prefix < specials.length && around[prefix] === specials[prefix]) prefix++;
    this.specials = { count: specials.length, prefix };
  }

  /**
   * The ids of `text`, with the model's special tokens around it (`[CLS] … [SEP]`, `<s> … </s>`) unless
   * `addSpecialTokens` is false, cut to `maxLength` ids as transformers' `truncation=True` cuts: the text's
   * last tokens go, the special tokens stay.
   * @param {string} text
   * @param {{addSpecialTokens?: boolean, maxLength?: number}} [options]
   * @returns {number[]}
   */
  encode(text, { addSpecialTokens = true, maxLength = Infinity } = {}) {
    const ids = this.library.encode(this.input(text), { add_special_tokens: addSpecialTokens }).ids;
    if (ids.length <= maxLength) return ids;
    const { count, prefix } = addSpecialTokens ? this.specials : { count: 0, prefix: 0 };
    const kept = Math.max(0, maxLength - count);
    return [...ids.slice(0, prefix + kept), ...ids.slice(ids.length - (count - prefix))];
  }

  /**
   * The token strings of `text` (no special tokens).
   * @param {string} text
   * @returns {string[]}
   */
  tokenize(text) {
    return this.library.tokenize(this.input(text));
  }

  /**
   * @internal
   * @param {string} text
   */
  input(text) {
    return this.lowercases ? text.replaceAll('Σ', 'σ') : text;
  }

  /**
   * The text of `ids`, as transformers' `decode` gives it.
   * @param {ArrayLike<number | bigint>} ids
   * @param {{skipSpecialTokens?: boolean}} [options]
   * @returns {string}
   */
  decode(ids, { skipSpecialTokens = false } = {}) {
    return this.library.decode(Array.from(ids, Number),
      { skip_special_tokens: skipSpecialTokens, clean_up_tokenization_spaces: this.cleanUp });
  }

  /** Whether the tokenizer has a chat template (applyChatTemplate needs one). */
  get hasChatTemplate() {
    return this.template !== null;
  }

  /**
   * The id of a token of the vocabulary (a special token's: "<|im_end|>"), or undefined.
   * @param {string} token
   * @returns {number | undefined}
   */
  tokenId(token) {
    return this.library.token_to_id(token);
  }

  /**
   * A conversation as the model's prompt ids, as transformers' `apply_chat_template(messages,
   * add_generation_prompt=…)` gives them: the chat template rendered with the messages, the special tokens by
   * name and `add_generation_prompt` (what starts the assistant's reply), then encoded without adding special
   * tokens (the template writes its own).
   * @param {Message[]} messages
   * @param {{addGenerationPrompt?: boolean}} [options]
   * @returns {number[]}
   */
  applyChatTemplate(messages, { addGenerationPrompt = true } = {}) {
    if (!this.template) throw new RangeError('this tokenizer has no chat template (tokenizer_config.json chat_template, or chat_template.jinja)');
    const text = this.template.render({ ...this.specialTokens, messages, add_generation_prompt: addGenerationPrompt });
    return this.encode(text, { addSpecialTokens: false });
  }

  /**
   * `texts` as a model's inputs, as transformers' `tokenizer(texts, padding=True, truncation=True)` makes
   * them: each encoded (cut to `maxLength`, default the tokenizer's), padded on the right with `padId` to
   * the longest (at least `minLength`), with a mask of 1 over its tokens; int64, [texts, length].
   * @param {string[]} texts
   * @param {{maxLength?: number, minLength?: number}} [options]
   * @returns {TextBatch}
   */
  batch(texts, { maxLength = this.maxLength, minLength = 0 } = {}) {
    const rows = texts.map((t) => this.encode(t, { maxLength }));
    const length = Math.max(minLength, ...rows.map((r) => r.length));
    const ids = new BigInt64Array(rows.length * length).fill(BigInt(this.padId));
    const mask = new BigInt64Array(rows.length * length);
    rows.forEach((row, i) => row.forEach((id, j) => {
      ids[i * length + j] = BigInt(id);
      mask[i * length + j] = 1n;
    }));
    const shape = [rows.length, length];
    return { input_ids: { data: ids, shape, dtype: 'int64' }, attention_mask: { data: mask, shape: [...shape], dtype: 'int64' } };
  }
}

/**
 * Whether a tokenizer.json normalizer lowercases its text.
 * @param {any} normalizer
 * @returns {boolean}
 */
function lowercases(normalizer) {
  if (!normalizer) return false;
  if (normalizer.type === 'Sequence') return (normalizer.normalizers ?? []).some(lowercases);
  return normalizer.type === 'Lowercase' || (normalizer.type === 'BertNormalizer' && normalizer.lowercase === true);
}

/**
 * A JSON file's value, or null where there is no such file.
 * @param {URL | string} source
 * @returns {Promise<any>}
 */
async function readJson(source) {
  const read = await readIfThere(source);
  if (!read) return null;
  const { bytes, where } = read;
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    throw new ArtifactError(`${where}: not JSON: ${/** @type {Error} */ (e).message}`);
  }
}
