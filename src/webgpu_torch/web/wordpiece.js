// BERT's WordPiece tokenizer for an uncased vocabulary (all-MiniLM-L6-v2's vocab.txt), as transformers' fast
// BertTokenizer does it: normalise (drop control characters, space out CJK ideographs, strip accents,
// lower-case), split on whitespace and isolate punctuation, then split each word greedily into the longest
// pieces the vocabulary has ("##" marks a piece inside a word); a word with a piece missing, or longer than
// 100 characters, is [UNK]. A sentence becomes [CLS] pieces [SEP]; a batch is padded with [PAD] (id 0) to its
// longest sentence, with an attention mask of 1s over the real tokens. No DOM: Node's tests import it too.

const MAX_WORD = 100;

/** Unicode general category C (control, format, unassigned, private use, surrogate), except tab, LF, CR. */
const CONTROL = /[^\P{C}\t\n\r]|\uFFFD/u;
const SPACE = /\s/u;
/** Unicode punctuation (P*) and ASCII's symbols, which BERT also treats as punctuation. */
const PUNCTUATION = /[\p{P}!-/:-@[-`{-~]/u;
const NONSPACING_MARK = /\p{Mn}/gu;

/** The CJK Unified Ideographs blocks (not Hangul or kana): each is a word of its own. */
const CJK = [[0x4e00, 0x9fff], [0x3400, 0x4dbf], [0x20000, 0x2a6df], [0x2a700, 0x2b73f], [0x2b740, 0x2b81f],
  [0x2b820, 0x2ceaf], [0xf900, 0xfaff], [0x2f800, 0x2fa1f]];

/** @param {number} cp */
const isCjk = (cp) => CJK.some(([lo, hi]) => cp >= lo && cp <= hi);

/**
 * The text as BertNormalizer leaves it.
 * @param {string} text
 */
export function normalize(text) {
  let out = '';
  for (const ch of text) {
    if (ch === '\0' || CONTROL.test(ch)) continue;
    const cp = /** @type {number} */ (ch.codePointAt(0));
    if (SPACE.test(ch)) out += ' ';
    else if (isCjk(cp)) out += ` ${ch} `;
    else out += ch;
  }
  // Lower-cased a character at a time, as the Rust tokenizer does: no final-sigma rule (Σ at a word's end → σ).
  return [...out.normalize('NFD').replace(NONSPACING_MARK, '')].map((ch) => ch.toLowerCase()).join('');
}

/**
 * Words: runs of non-space characters, with every punctuation character a word of its own.
 * @param {string} text normalised
 */
export function words(text) {
  /** @type {string[]} */
  const out = [];
  let word = '';
  for (const ch of text) {
    if (SPACE.test(ch) || PUNCTUATION.test(ch)) {
      if (word) out.push(word);
      word = '';
      if (!SPACE.test(ch)) out.push(ch);
    } else {
      word += ch;
    }
  }
  if (word) out.push(word);
  return out;
}

export class WordPiece {
  /** @param {string} vocabText vocab.txt: one piece a line, its id the line's index */
  constructor(vocabText) {
    /** @type {Map<string, number>} */
    this.vocab = new Map();
    vocabText.split('\n').forEach((line, id) => {
      const piece = line.replace(/\r$/, '');
      if (piece && !this.vocab.has(piece)) this.vocab.set(piece, id);
    });
    /** @param {string} name */
    const special = (name) => {
      const id = this.vocab.get(name);
      if (id === undefined) throw new Error(`the vocabulary has no ${name}`);
      return id;
    };
    this.unk = special('[UNK]');
    this.cls = special('[CLS]');
    this.sep = special('[SEP]');
    this.pad = special('[PAD]');
  }

  /**
   * The pieces of one word: the longest prefix in the vocabulary first, then "##"-pieces; [UNK] if stuck.
   * @param {string} word
   * @returns {number[]}
   */
  pieces(word) {
    const chars = [...word];
    if (chars.length > MAX_WORD) return [this.unk];
    const ids = [];
    for (let start = 0; start < chars.length;) {
      let end = chars.length;
      let id;
      for (; end > start; end--) {
        id = this.vocab.get((start ? '##' : '') + chars.slice(start, end).join(''));
        if (id !== undefined) break;
      }
      if (id === undefined) return [this.unk];
      ids.push(id);
      start = end;
    }
    return ids;
  }

  /**
   * One sentence's ids: [CLS] pieces [SEP], at most `maxLength` in all (the pieces cut to fit).
   * @param {string} text
   * @param {number} [maxLength]
   */
  encode(text, maxLength = 512) {
    const ids = words(normalize(text)).flatMap((w) => this.pieces(w));
    return [this.cls, ...ids.slice(0, Math.max(0, maxLength - 2)), this.sep];
  }

  /**
   * A batch padded to its longest sentence (at least `minLength`): ids and attention mask, row-major
   * [sentences, length], as the int64 the model takes.
   * @param {string[]} texts
   * @param {{maxLength?: number, minLength?: number}} [options]
   */
  batch(texts, { maxLength = 512, minLength = 0 } = {}) {
    const rows = texts.map((t) => this.encode(t, maxLength));
    const length = Math.max(minLength, ...rows.map((r) => r.length));
    const ids = new BigInt64Array(rows.length * length).fill(BigInt(this.pad));
    const mask = new BigInt64Array(rows.length * length);
    rows.forEach((row, i) => row.forEach((id, j) => {
      ids[i * length + j] = BigInt(id);
      mask[i * length + j] = 1n;
    }));
    return { ids, mask, shape: [rows.length, length], lengths: rows.map((r) => r.length) };
  }
}
