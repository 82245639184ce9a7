// The module Worker createChatWorker (chat.js) starts: one chat, which the page calls through comlink. Import
// maps do not reach workers, so the page's first message holds the URLs its own map gives the libraries
// (libraries.js); the worker answers it once comlink listens.

import { createChat } from './chat.js';
import { comlink, useLibraries } from './libraries.js';

/** @typedef {import('./chat.js').Chat} Chat */
/** @typedef {import('./chat.js').ChatRequest} ChatRequest */
/** @typedef {import('./chat.js').ChatCompletionChunk} ChatCompletionChunk */

/** What the page calls. */
export class ChatHost {
  /** @type {Chat | null} */
  chat = null;
  /** @type {Map<number, AbortController>} the requests in progress, by the page's ids for them */
  requests = new Map();

  /**
   * Load the chat.
   * @param {string} folder a URL
   * @param {import('./session.js').LoadOptions} options
   * @param {import('./generation.js').FolderOptions['onLoaded']} onLoaded the page's
   * @param {import('./session.js').LoadOptions['onProgress']} onProgress the page's
   * @returns {Promise<import('./chat.js').ChatInfo>}
   */
  async open(folder, options, onLoaded, onProgress) {
    const chat = await createChat(folder, { ...options, onLoaded, onProgress });
    this.chat = chat;
    return { model: chat.model, mode: chat.mode, maxLength: chat.maxLength, memory: chat.memory };
  }

  /**
   * The chat's completion of `request`; a stream's chunks passed to `onChunk` one at a time, each once the
   * page has it (so that the page has them all, in order, when this settles).
   * @param {number} id
   * @param {ChatRequest} request
   * @param {((chunk: ChatCompletionChunk) => unknown) | null} onChunk the page's, which comlink makes async
   */
  async completions(id, request, onChunk) {
    const chat = /** @type {Chat} */ (this.chat);
    const controller = new AbortController();
    this.requests.set(id, controller);
    try {
      const result = await chat.completions({ ...request, signal: controller.signal });
      if (!(Symbol.asyncIterator in result)) return result;
      for await (const chunk of result) await /** @type {NonNullable<typeof onChunk>} */ (onChunk)(chunk);
      return null;
    } finally {
      this.requests.delete(id);
    }
  }

  /** @param {number} id */
  abort(id) {
    this.requests.get(id)?.abort();
  }
}

addEventListener('message', async (event) => {
  useLibraries(/** @type {MessageEvent} */ (event).data.libraries);
  (await comlink()).expose(new ChatHost());
  postMessage('ready');
}, { once: true });
