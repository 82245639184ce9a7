// The npm libraries the runtime imports on first use, by package name: Node and bundlers resolve the names, a
// page its import map (`webgpu-torch serve`'s page maps them to web/vendor). Import maps do not reach workers:
// a module Worker cannot resolve a bare name, so the page tells a worker the URLs its own import map gives
// (`libraryUrls()` there, `useLibraries(urls)` in the worker: createChatWorker does both).

/** The libraries, by package name. */
export const LIBRARIES = /** @type {const} */ (['@huggingface/tokenizers', '@huggingface/jinja', 'comlink']);

/** @type {Partial<Record<(typeof LIBRARIES)[number], string>>} URLs given for them (useLibraries) */
const urls = {};

/**
 * Import the libraries from these URLs instead of by name (a worker: its page's `libraryUrls()`).
 * @param {Partial<Record<(typeof LIBRARIES)[number], string>>} given
 */
export function useLibraries(given) {
  Object.assign(urls, given);
}

/**
 * The URLs this context resolves the libraries' names to (a page: through its import map), those it resolves.
 * @returns {Partial<Record<(typeof LIBRARIES)[number], string>>}
 */
export function libraryUrls() {
  return Object.fromEntries(LIBRARIES.flatMap((name) => {
    try {
      return [[name, import.meta.resolve(name)]];
    } catch {
      return []; // not mapped here: a worker would not find it either, and says so when it imports it
    }
  }));
}

/** @returns {Promise<typeof import('@huggingface/tokenizers')>} */
export const tokenizers = () => (urls['@huggingface/tokenizers'] ? import(urls['@huggingface/tokenizers']) : import('@huggingface/tokenizers'));
/** @returns {Promise<typeof import('@huggingface/jinja')>} */
export const jinja = () => (urls['@huggingface/jinja'] ? import(urls['@huggingface/jinja']) : import('@huggingface/jinja'));
/** @returns {Promise<typeof import('comlink')>} */
export const comlink = () => (urls.comlink ? import(urls.comlink) : import('comlink'));
