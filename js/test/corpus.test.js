// The model corpus the Python suite writes (tests/corpus.py): real models' artifacts with their calls and
// Python's outputs, and a Seq2Seq folder with the tokens Python generated. Node must match the outputs
// within 1e-5 of their scale and generate the same tokens. Its folder: WEBGPU_TORCH_CORPUS, default
// build/corpus at the repository root. A missing corpus fails, saying how to write it.

import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { load, loadSeq2Seq } from '../src/index.js';
import { REPO, artifacts, assertClose, calls, leaves, tensor } from '../testkit/io.js';

const CORPUS = process.env.WEBGPU_TORCH_CORPUS || join(REPO, 'build', 'corpus');
const HOW = `the model corpus is missing from ${CORPUS}: write it with ` +
  '`.venv/bin/python -m pytest tests/test_corpus.py tests/test_transformers.py tests/test_cnn.py tests/test_florence2.py` ' +
  'from the repository root (or point WEBGPU_TORCH_CORPUS at one)';
const MODELS = artifacts(CORPUS);
const GENERATIONS = existsSync(CORPUS)
  ? readdirSync(CORPUS).filter((d) => existsSync(join(CORPUS, d, 'generate.json'))).sort() : [];

test('the model corpus is there', () => {
  assert.ok(MODELS.length && GENERATIONS.length, HOW);
});

for (const name of MODELS) {
  test(`corpus ${name}: Python's outputs`, async () => {
    const program = await load(join(CORPUS, `${name}.wgpt`), { tune: false });
    try {
      for (const [n, call] of calls(join(CORPUS, `${name}.json`)).entries()) {
        const got = leaves(program.spec.outputTree, await program.run({ args: call.args, kwargs: call.kwargs }));
        assert.equal(got.length, call.outputs.length, `${name} call ${n}: output count`);
        got.forEach((g, k) => assertClose(g, call.outputs[k], `${name} call ${n} output ${k}`));
      }
    } finally {
      program.destroy();
    }
  });
}

for (const name of GENERATIONS) {
  test(`corpus ${name}: the tokens Python generated`, async () => {
    const record = JSON.parse(readFileSync(join(CORPUS, name, 'generate.json'), 'utf8'));
    const model = await loadSeq2Seq(join(CORPUS, name), { tune: false });
    try {
      const { ids } = await model.generate(tensor(record.pixel_values), tensor(record.prompt_ids),
        { maxNewTokens: record.max_new_tokens });
      assert.deepEqual(ids, record.ids);
      const forced = await model.generate(tensor(record.pixel_values), tensor(record.prompt_ids),
        { maxNewTokens: record.max_new_tokens, teacher: record.ids });
      assert.equal(forced.logits.length, record.ids.length);
      const info = model.info;
      forced.logits.forEach((l, step) => {
        const isForced = (step === 0 && info.forced_bos_token_id != null) ||
          (step === record.max_new_tokens - 1 && info.forced_eos_token_id != null);
        if (isForced) return; // a forced token is not the logits' choice
        let best = 0;
        for (let i = 1; i < l.length; i++) if (l[i] > l[best]) best = i;
        assert.equal(best, record.ids[step], `step ${step}: the teacher-forced logits' argmax`);
      });
    } finally {
      model.destroy();
    }
  });
}
