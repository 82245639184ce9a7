// The chat (src/chat.js) in Node, over the model corpus's folders (tests/test_llama.py writes them): a tiny
// Llama with a chat tokenizer (llama_tiny_chat/chat.json: each turn of a conversation with the prompt ids
// and the reply the Python runtime gave), and one without a tokenizer (llama_tiny: a chat in token ids).

import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { IN_FLIGHT } from '../src/generation.js';
import { createChat, loadCausalLM, loadTokenizer } from '../src/index.js';
import { CORPUS } from '../testkit/io.js';

const FOLDER = join(CORPUS, 'llama_tiny_chat');
const HOW = `${FOLDER} is missing: write it with \`.venv/bin/python -m pytest tests/test_llama.py\``;
const skip = !existsSync(join(FOLDER, 'chat.json')) && HOW;
/**
 * @type {{request: {messages: {role: string, content: string}[], max_tokens: number, temperature: number},
 *   prompt_ids: number[], ids: number[], content: string, finish_reason: string}[]}
 */
const TURNS = skip ? [] : JSON.parse(readFileSync(join(FOLDER, 'chat.json'), 'utf8')).turns;
const OPTIONS = { tune: false };

/**
 * Run `check` with a chat over `folder`, destroyed after (Node 20 has no `using`).
 * @param {string} folder
 * @param {(chat: import('../src/chat.js').Chat) => Promise<void>} check
 */
async function withChat(folder, check) {
  const chat = await createChat(folder, OPTIONS);
  try {
    await check(chat);
  } finally {
    chat.destroy();
  }
}

test('the corpus has a chat', () => {
  assert.ok(!skip, HOW);
});

test('a conversation gets the replies Python generated, streamed or not, the cache reused from turn to turn', { skip }, async () => {
  await withChat(FOLDER, async (chat) => {
    assert.equal(chat.mode, 'text');
    const [first, second, sampled] = TURNS;
    for (const turn of TURNS) assert.deepEqual(chat.promptIds(turn.request.messages), turn.prompt_ids, 'the template, as transformers renders it');

    const completion = await chat.completions(first.request);
    assert.equal(completion.object, 'chat.completion');
    assert.match(completion.id, /^chatcmpl-/);
    assert.deepEqual(completion.choices, [{ index: 0, message: { role: 'assistant', content: first.content }, finish_reason: first.finish_reason }]);
    assert.deepEqual(completion.usage, {
      prompt_tokens: first.prompt_ids.length, completion_tokens: first.ids.length,
      total_tokens: first.prompt_ids.length + first.ids.length, prompt_tokens_details: { cached_tokens: 0 },
    });

    const chunks = /** @type {import('../src/chat.js').ChatCompletionChunk[]} */ ([]);
    for await (const chunk of await chat.completions({ ...second.request, stream: true, stream_options: { include_usage: true } })) chunks.push(chunk);
    const usage = /** @type {import('../src/chat.js').Usage} */ (chunks.at(-1)?.usage);
    const [head, ...rest] = chunks.slice(0, -1).map((c) => c.choices[0]);
    assert.deepEqual(head, { index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null });
    assert.deepEqual(rest.at(-1), { index: 0, delta: {}, finish_reason: second.finish_reason });
    const pieces = rest.slice(0, -1).map((c) => c.delta.content);
    assert.ok(pieces.length > 1 && pieces.every((p) => p), 'the reply comes in pieces');
    assert.equal(pieces.join(''), second.content);
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0].id));
    // The second prompt starts with the first one (its reply's text encodes to other ids: the cache keeps those).
    assert.ok(usage.prompt_tokens_details.cached_tokens >= first.prompt_ids.length, `${usage.prompt_tokens_details.cached_tokens} cached`);

    const again = await chat.completions(sampled.request);
    assert.equal(again.choices[0].message.content, sampled.content, 'sampled with the seed, as Python');
    assert.equal(again.usage.prompt_tokens_details.cached_tokens, sampled.prompt_ids.length - 1, 'the same prompt: all but its last token');

    chat.reset();
    const fresh = await chat.completions(second.request);
    assert.equal(fresh.choices[0].message.content, second.content);
    assert.equal(fresh.usage.prompt_tokens_details.cached_tokens, 0);
  });
});

test('loading reports each program of the folder as it is ready', { skip }, async () => {
  /** @type {[number, number, string][]} */
  const seen = [];
  const chat = await createChat(FOLDER, { ...OPTIONS, onLoaded: (loaded, total, file) => seen.push([loaded, total, file]) });
  chat.destroy();
  const files = ['step', ...JSON.parse(readFileSync(join(FOLDER, 'causal_lm.json'), 'utf8')).programs].map((p) => `${p}.wgpt`);
  assert.deepEqual(seen.map(([loaded, total]) => [loaded, total]), files.map((_, i) => [i + 1, files.length]));
  assert.deepEqual(seen.map(([, , file]) => file).sort(), [...files].sort());
  assert.equal(seen[0][2], 'step.wgpt', 'the step first: the others share its cache');
});

test('a stop string ends the reply before it, and no piece shows any of it', { skip }, async () => {
  await withChat(FOLDER, async (chat) => {
    const [first] = TURNS;
    const stop = first.content.slice(8, 12);
    const at = first.content.indexOf(stop);
    const pieces = [];
    let finish;
    for await (const chunk of await chat.completions({ ...first.request, stream: true, stop: [stop, 'never there'] })) {
      pieces.push(chunk.choices[0].delta.content ?? '');
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    assert.equal(pieces.join(''), first.content.slice(0, at));
    assert.equal(finish, 'stop');
  });
});

test('an AbortSignal ends a reply, which keeps what came; a consumer that leaves ends it too', { skip }, async () => {
  await withChat(FOLDER, async (chat) => {
    const [first] = TURNS;
    const stop = new AbortController();
    const ids = [];
    let finish;
    for await (const chunk of await chat.completions({ ...first.request, stream: true, signal: stop.signal })) {
      const { delta, finish_reason: reason } = chunk.choices[0];
      if (delta.content) {
        ids.push(delta.content);
        stop.abort();
      }
      finish = reason ?? finish;
    }
    assert.equal(finish, 'abort');
    assert.ok(first.content.startsWith(ids.join('')) && ids.length <= 1 + IN_FLIGHT, `${ids.length} pieces after the abort`);
    for await (const chunk of await chat.completions({ ...first.request, stream: true })) if (chunk.choices[0].delta.content) break;
    const after = await chat.completions(first.request); // the chat is free again, its cache sound
    assert.equal(after.choices[0].message.content, first.content);
  });
});

test("a chat template in tokenizer_config.json renders as chat_template.jinja's", { skip }, async () => {
  const folder = mkdtempSync(join(tmpdir(), 'webgpu-torch-chat-'));
  try {
    copyFileSync(join(FOLDER, 'tokenizer.json'), join(folder, 'tokenizer.json'));
    const config = JSON.parse(readFileSync(join(FOLDER, 'tokenizer_config.json'), 'utf8'));
    config.chat_template = [{ name: 'default', template: readFileSync(join(FOLDER, 'chat_template.jinja'), 'utf8') }];
    writeFileSync(join(folder, 'tokenizer_config.json'), JSON.stringify(config));
    const tokenizer = await loadTokenizer(folder);
    for (const turn of TURNS) assert.deepEqual(tokenizer.applyChatTemplate(turn.request.messages), turn.prompt_ids);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});

test('without a tokenizer a chat is in token ids, and continues from its cache', { skip: !existsSync(join(CORPUS, 'llama_tiny', 'generate.json')) && HOW }, async () => {
  const folder = join(CORPUS, 'llama_tiny');
  const record = JSON.parse(readFileSync(join(folder, 'generate.json'), 'utf8'));
  await withChat(folder, async (chat) => {
    assert.equal(chat.mode, 'ids');
    const messages = [{ role: 'user', content: record.prompt_ids }];
    const request = { messages, temperature: 0, max_tokens: record.max_new_tokens };
    const first = await chat.completions(request);
    assert.deepEqual(first.choices[0].message.content, record.ids);
    messages.push({ role: 'assistant', content: record.ids }, { role: 'user', content: [5, 6, 7] });
    const chunks = [];
    let usage;
    for await (const chunk of await chat.completions({ ...request, stream: true, stream_options: { include_usage: true } })) {
      if (chunk.usage) usage = chunk.usage;
      else chunks.push(chunk.choices[0].delta.content ?? []);
    }
    const prompt = [...record.prompt_ids, ...record.ids, 5, 6, 7];
    assert.equal(usage?.prompt_tokens_details.cached_tokens, record.prompt_ids.length + record.ids.length - 1, 'all but the reply\'s last id');
    const lm = await loadCausalLM(folder, OPTIONS); // generates the whole prompt anew, for comparison
    try {
      assert.deepEqual(chunks.flat(), (await lm.generate(prompt, { maxNewTokens: record.max_new_tokens })).ids);
    } finally {
      lm.destroy();
    }
    assert.ok(chunks.length > record.max_new_tokens, 'a chunk per id');
  });
});

test('a request the chat cannot answer is refused by name', { skip }, async () => {
  await withChat(FOLDER, async (chat) => {
    const messages = [{ role: 'user', content: 'Hello!' }];
    const refusals = /** @type {[Record<string, unknown>, RegExp][]} */ ([
      [{ messages, frequency_penalty: 1 }, /unsupported chat completion parameter 'frequency_penalty'/],
      [{ messages, n: 2 }, /n: one reply a request/],
      [{ messages: [] }, /messages: a list of one message or more/],
      [{ messages: [{ role: 'user', content: [1, 2] }] }, /messages\[0\]: a role and, its content as text/],
      [{ messages, max_tokens: 0 }, /max_tokens must be a positive integer/],
      [{ messages, temperature: 0, repetition_penalty: 1.2 }, /repetition_penalty needs sampling/],
      [{ messages, top_p: 2 }, /top_p must be in \[0, 1\]/],
      [{ messages, stop: [''] }, /stop: a non-empty string/],
      [{ messages: [{ role: 'user', content: 'word '.repeat(200) }] }, /the conversation is \d+ tokens; this model's cache holds 128/],
    ]);
    for (const [request, message] of refusals) {
      await assert.rejects(chat.completions(/** @type {any} */ (request)), message);
      await assert.rejects(chat.completions(/** @type {any} */ ({ ...request, stream: true })), message);
    }
  });
});
