// The model corpus the Python suite writes (tests/corpus.py): real models' artifacts with their calls and
// Python's outputs, and Seq2Seq and CausalLM folders with the tokens Python generated. Node must match the outputs
// within 1e-5 of their scale and generate the same tokens. Its folder: WEBGPU_TORCH_CORPUS, default
// build/corpus at the repository root. A missing corpus fails, saying how to write it.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { IN_FLIGHT } from '../src/generation.js';
import { ArtifactError, load, loadCausalLM, textStream } from '../src/index.js';
import { loadGenerator, regenerate } from '../testkit/corpus.js';
import { CORPUS, artifacts, assertReplays, generations } from '../testkit/io.js';

const HOW = `the model corpus is missing from ${CORPUS}: write it with ` +
  '`.venv/bin/python -m pytest tests/test_corpus.py tests/test_transformers.py tests/test_cnn.py tests/test_florence2.py tests/test_llama.py tests/test_half.py tests/test_quantized.py` ' +
  'from the repository root (or point WEBGPU_TORCH_CORPUS at one)';
const MODELS = artifacts(CORPUS);
const GENERATIONS = generations(CORPUS);

test('the model corpus is there', () => {
  assert.ok(MODELS.length && GENERATIONS.length, HOW);
});

for (const name of MODELS) {
  test(`corpus ${name}: Python's outputs`, async () => {
    const path = join(CORPUS, `${name}.wgpt`);
    const program = await load(path, { tune: false });
    try {
      await assertReplays(program, path, name);
    } finally {
      program.destroy();
    }
  });
}

for (const name of GENERATIONS) {
  test(`corpus ${name}: the tokens Python generated`, async () => {
    const record = JSON.parse(readFileSync(join(CORPUS, name, 'generate.json'), 'utf8'));
    const model = await loadGenerator(join(CORPUS, name), record, { tune: false });
    try {
      assert.deepEqual(await regenerate(model, record), []);
    } finally {
      model.destroy();
    }
  });
}

test('a CausalLM streams its ids, as text too, and stops on an AbortSignal', { skip: !GENERATIONS.includes('llama_tiny') && HOW }, async () => {
  const record = JSON.parse(readFileSync(join(CORPUS, 'llama_tiny', 'generate.json'), 'utf8'));
  const lm = await loadCausalLM(join(CORPUS, 'llama_tiny'), { tune: false });
  try {
    const options = { maxNewTokens: record.max_new_tokens };
    const streamed = [];
    for await (const id of lm.stream(record.prompt_ids, options)) streamed.push(id);
    assert.deepEqual(streamed, record.ids);
    const letters = { decode: (/** @type {number[]} */ ids) => ids.map((i) => String.fromCharCode(97 + (i % 26))).join('') };
    let text = '';
    for await (const piece of textStream(lm.stream(record.prompt_ids, options), letters)) text += piece;
    assert.equal(text, letters.decode(record.ids));
    const stop = new AbortController();
    const { ids } = await lm.generate(record.prompt_ids, { ...options, signal: stop.signal, onToken: (_, seconds) => {
      assert.ok(seconds >= 0);
      if (!stop.signal.aborted) stop.abort();
    } });
    assert.ok(ids.length <= 1 + IN_FLIGHT && ids.length >= 1, `${ids.length} tokens after the abort`);
    assert.deepEqual(ids, record.ids.slice(0, ids.length));
  } finally {
    lm.destroy();
  }
});

test('a prefill saved beside its step uses the step\'s weights, and is refused without them', { skip: !GENERATIONS.includes('llama_tiny') && HOW }, async () => {
  const folder = join(CORPUS, 'llama_tiny');
  const lm = await loadCausalLM(folder, { tune: false });
  const other = await load(join(CORPUS, 'cnn_forms.wgpt'), { tune: false }); // not the step's file
  try {
    const { step, prefill } = lm.decoder;
    assert.ok(prefill, 'the folder has a prefill');
    const external = [...prefill.spec.constants].filter(([, c]) => c.external?.file === 'step.wgpt');
    assert.ok(external.length >= 10, `${external.length} constants refer to step.wgpt`);
    const stepBuffers = new Set(step.executor.buffers);
    for (const [i] of external) assert.ok(stepBuffers.has(prefill.executor.buffers[i]), `constant ${i} is the step's buffer`);
    const path = join(folder, 'prefill.wgpt');
    await assert.rejects(load(path, { tune: false }), (e) => e instanceof ArtifactError && e.message.startsWith(path) && /is stored in step\.wgpt: load it with the option share/.test(e.message));
    await assert.rejects(load(path, { tune: false, share: other }), (e) => e instanceof ArtifactError && /the program shared is not that file as saved/.test(e.message));
  } finally {
    lm.destroy();
    other.destroy();
  }
});

test('a prefill sharing the step\'s weights is tuned at load: its probes borrow the shared constants', { skip: !GENERATIONS.includes('llama_tiny') && HOW }, async () => {
  const folder = join(CORPUS, 'llama_tiny');
  const record = JSON.parse(readFileSync(join(folder, 'generate.json'), 'utf8'));
  const lm = await loadCausalLM(folder, { tune: true, cache: false }); // every group probed at this load
  try {
    assert.deepEqual(await regenerate(lm, record), []);
  } finally {
    lm.destroy();
  }
});
