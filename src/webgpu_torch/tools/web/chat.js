// The chat page (`webgpu-torch serve` of a CausalLM folder, `--model llama`): the model runs in a Web Worker
// (the runtime's createChatWorker), so the page stays live while it loads and generates. Each reply streams in
// as chat completion chunks — text, or token ids where the folder has no tokenizer (the random-weights Llama)
// — with its time to first token (from the send to its first piece) and tokens/s (those after the first, over
// their time); Stop aborts it through the request's AbortSignal.
//
// For a test: body[data-state] is 'ready' while the composer waits, 'running' during a reply and 'done' after
// one (or 'error'); window.result.replies holds each reply's content, finish_reason, usage, chunks and times.

import { createChatWorker } from './runtime/index.js';

/** @typedef {import('./runtime/chat.js').ChatMessage} ChatMessage */
/**
 * What the page gives: its status line, its timings table, a section's showing, its load options.
 * @typedef {{status: (state: 'loading' | 'ready' | 'running' | 'done' | 'error', text: string) => void,
 *   timing: (label: string, value: string) => void, show: (id: string) => void,
 *   options: import('./runtime/index.js').LoadOptions}} Page
 */
/**
 * @typedef {{content: string | number[], finishReason: string | null, usage: import('./runtime/chat.js').Usage | null,
 *   chunks: number, firstTokenMs: number, tokensPerSecond: number}} Reply
 */

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const ms = (/** @type {number} */ t) => `${t < 10 ? t.toFixed(2) : t.toFixed(0)} ms`;

/**
 * @param {{folder: string, name: string, prompt: number[], maxNewTokens: number}} config
 * @param {Page} page
 */
export async function chatPage(config, page) {
  page.show('chat');
  const loading = performance.now();
  const progress = /** @type {HTMLProgressElement} */ ($('chat-load'));
  let stage = 'loading the model in a Web Worker';
  const say = () => page.status('loading', `${stage}… ${((performance.now() - loading) / 1e3).toFixed(0)} s`);
  const ticking = setInterval(say, 1000); // the page is live while the worker loads
  const onLoaded = (/** @type {number} */ loaded, /** @type {number} */ total, /** @type {string} */ file) => {
    [progress.value, progress.max] = [loaded, total];
    stage = `loaded ${file} (${loaded} of ${total} programs: read, validated, pipelines built)`;
    say();
  };
  let chat;
  try {
    chat = await createChatWorker(config.folder, { ...page.options, onLoaded });
  } finally {
    clearInterval(ticking);
    $('chat-load').hidden = true;
  }
  page.timing('load (in a Web Worker)', ms(performance.now() - loading));
  page.timing('context (the cache\'s rows)', `${chat.maxLength} tokens`);
  const mib = (/** @type {number} */ n) => `${(n / 2 ** 20).toFixed(n < 10 * 2 ** 20 ? 1 : 0)} MiB`;
  const { weights, cache, scratch } = chat.memory;
  page.timing('device memory', `${mib(weights + cache + scratch)}: weights ${mib(weights)}, KV cache ${mib(cache)}, scratch ${mib(scratch)}`);
  const ids = chat.mode === 'ids';
  document.body.dataset.mode = chat.mode;
  $('chat-note').textContent = ids ? 'in token ids: this model has no tokenizer' : 'through its tokenizer\'s chat template';
  const box = /** @type {HTMLTextAreaElement} */ ($('message'));
  box.placeholder = ids ? 'token ids, separated by spaces' : 'Say something…';
  if (ids) box.value = config.prompt.join(' ');
  /** @type {HTMLInputElement} */ ($('max-tokens')).value = String(config.maxNewTokens);
  const [send, stop] = [/** @type {HTMLButtonElement} */ ($('send')), /** @type {HTMLButtonElement} */ ($('stop'))];

  /** @type {ChatMessage[]} */
  const messages = [];
  /** @type {Reply[]} */
  const replies = [];
  /** @type {any} */ (window).result = { mode: chat.mode, memory: chat.memory, replies };
  /** @type {AbortController | null} */
  let running = null;
  const shown = (/** @type {string | number[]} */ content) => (Array.isArray(content) ? content.join(' ') : content);

  const reply = async () => {
    const text = box.value.trim();
    if (!text || running) return;
    const content = ids ? text.split(/\s+/).map(Number) : text;
    messages.push({ role: 'user', content });
    bubble('user', shown(content));
    box.value = '';
    const answer = bubble('assistant', '');
    const meta = answer.appendChild(document.createElement('small'));
    running = new AbortController();
    [send.disabled, stop.disabled] = [true, false];
    page.status('running', 'generating…');
    const start = performance.now();
    /** @type {Reply} */
    const r = { content: ids ? [] : '', finishReason: null, usage: null, chunks: 0, firstTokenMs: NaN, tokensPerSecond: NaN };
    try {
      const request = {
        messages, stream: /** @type {const} */ (true), stream_options: { include_usage: true }, signal: running.signal,
        temperature: Number(/** @type {HTMLInputElement} */ ($('temperature')).value),
        max_tokens: Number(/** @type {HTMLInputElement} */ ($('max-tokens')).value),
      };
      let first = NaN;
      for await (const chunk of await chat.completions(request)) {
        if (chunk.usage) r.usage = chunk.usage;
        const choice = chunk.choices[0];
        if (!choice) continue;
        r.finishReason = choice.finish_reason ?? r.finishReason;
        if (!choice.delta.content?.length) continue; // the first chunk's role, the last's finish_reason
        if (Number.isNaN(first)) first = performance.now();
        r.content = Array.isArray(r.content) ? [...r.content, .../** @type {number[]} */ (choice.delta.content)] : r.content + choice.delta.content;
        r.chunks++;
        /** @type {HTMLElement} */ (answer.firstChild).textContent = shown(r.content);
      }
      const after = (r.usage?.completion_tokens ?? 0) - 1; // the tokens after the first, over their time
      r.firstTokenMs = first - start;
      r.tokensPerSecond = after > 0 ? after / ((performance.now() - first) / 1e3) : NaN;
      messages.push({ role: 'assistant', content: r.content });
      replies.push(r);
      const rate = Number.isNaN(r.tokensPerSecond) ? '' : ` · ${r.tokensPerSecond.toFixed(1)} tokens/s`;
      meta.textContent = `first token ${ms(r.firstTokenMs)}${rate} · ${r.usage?.completion_tokens} tokens · ${r.finishReason}`;
      page.timing('first token (last reply)', ms(r.firstTokenMs));
      page.timing('tokens/s (last reply)', rate ? r.tokensPerSecond.toFixed(1) : '—');
      page.status('done', `${r.usage?.completion_tokens} tokens (${r.usage?.prompt_tokens_details.cached_tokens} prompt tokens from the cache)`);
    } catch (e) {
      messages.pop(); // the message that failed: the user may edit it and send it again
      meta.textContent = String(/** @type {Error} */ (e)?.message ?? e);
      answer.classList.add('failed');
      page.status('error', meta.textContent);
    } finally {
      running = null;
      [send.disabled, stop.disabled] = [false, true];
    }
  };
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    void reply();
  });
  box.addEventListener('keydown', (e) => { // Enter sends; Shift+Enter is a new line
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      void reply();
    }
  });
  stop.addEventListener('click', () => running?.abort());
  page.status('ready', `${config.name}: ready`);
}

/**
 * A message on the page: its text in a <p>, then what the page adds.
 * @param {'user' | 'assistant'} role
 * @param {string} text
 */
function bubble(role, text) {
  const li = $('messages').appendChild(document.createElement('li'));
  li.className = role;
  li.appendChild(document.createElement('p')).textContent = text;
  li.scrollIntoView({ block: 'end' });
  return li;
}
