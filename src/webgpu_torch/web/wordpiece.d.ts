/**
 * The text as BertNormalizer leaves it.
 * @param {string} text
 */
export declare function normalize(text: string): string;
/**
 * Words: runs of non-space characters, with every punctuation character a word of its own.
 * @param {string} text normalised
 */
export declare function words(text: string): string[];
export declare class WordPiece {
    /** @type {Map<string, number>} */
    vocab: Map<string, number>;
    unk: number;
    cls: number;
    sep: number;
    pad: number;
    /** @param {string} vocabText vocab.txt: one piece a line, its id the line's index */
    constructor(vocabText: string);
    /**
     * The pieces of one word: the longest prefix in the vocabulary first, then "##"-pieces; [UNK] if stuck.
     * @param {string} word
     * @returns {number[]}
     */
    pieces(word: string): number[];
    /**
     * One sentence's ids: [CLS] pieces [SEP], at most `maxLength` in all (the pieces cut to fit).
     * @param {string} text
     * @param {number} [maxLength]
     */
    encode(text: string, maxLength?: number): number[];
    /**
     * A batch padded to its longest sentence (at least `minLength`): ids and attention mask, row-major
     * [sentences, length], as the int64 the model takes.
     * @param {string[]} texts
     * @param {{maxLength?: number, minLength?: number}} [options]
     */
    batch(texts: string[], { maxLength, minLength }?: {
        maxLength?: number;
        minLength?: number;
    }): {
        ids: BigInt64Array<ArrayBuffer>;
        mask: BigInt64Array<ArrayBuffer>;
        shape: number[];
        lengths: number[];
    };
}
