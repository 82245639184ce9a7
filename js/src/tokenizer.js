// Text to the ids a model takes, the model's own way: its tokenizer.json (and tokenizer_config.json) read by
// @huggingface/tokenizers — pure JavaScript, the tokenizer families transformers' fast tokenizers have
// (WordPiece, BPE, Unigram; their normalizers, pre-tokenizers and special-token templates), the files
// transformers.js reads. The library is imported on first use: in Node from node_modules (it is a dependency
// of this package), in a browser through the page's import map (`"@huggingface/tokenizers"` → its
// `dist/tokenizers.min.mjs`; `webgpu-torch serve` serves one), so the runtime itself loads without it.

import { ArtifactError } from './errors.js';
import { readSource, within } from './source.js';

/** @typedef {import('./device_tensor.js').HostTensor<'int64'>} Int64Tensor */
/**
 * A batch of texts as a text model's inputs, by the names transformers gives them (pass it to `run` as is).
 * @typedef {{input_ids: Int64Tensor, attention_mask: Int64Tensor}} TextBatch
 */

/**
 * The tokenizer in `base`: a folder (Node) or URL holding tokenizer.json and, optionally,
 * tokenizer_config.json (special tokens, `model_max_length`).
 * @param {URL | string} base
 * @returns {Promise<Tokenizer>}
 */
export async function loadTokenizer(base) {
  const [json, config, library] = await Promise.all([
    readJson(await within(base, 'tokenizer.json')),
    readJson(await within(base, 'tokenizer_config.json')).catch(() => ({})),
    import('@huggingface/tokenizers'),
  ]);
  return Tokenizer.create(new library.Tokenizer(json, config), json, config);
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

  /**
   * @internal
   * @param {import('@huggingface/tokenizers').Tokenizer} library
   * @param {any} json tokenizer.json
   * @param {any} config tokenizer_config.json
   */
  static create(library, json, config) {
    return new Tokenizer(library, json, config);
  }

  /**
   * Tokenizers come from `loadTokenizer`.
   * @private
   * @param {import('@huggingface/tokenizers').Tokenizer} library
   * @param {any} json
   * @param {any} config
   */
  constructor(library, json, config) {
    this.library = library;
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
 * @param {URL | string} source
 * @returns {Promise<any>}
 */
async function readJson(source) {
  const { bytes, where } = await readSource(source);
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    throw new ArtifactError(`${where}: not JSON: ${/** @type {Error} */ (e).message}`);
  }
}
