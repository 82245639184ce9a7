// A consumer of the published package, in plain JavaScript: it imports the package by name and runs a
// golden artifact through the public API only (consumer/run.js installs the packed tarball beside it).
//   node main.js GOLDEN_DIR

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { DeviceTensor, InputError, load, loadTokenizer } from '@webgpu-torch/runtime';

const golden = process.argv[2];
const call = JSON.parse(readFileSync(join(golden, 'mlp.json'), 'utf8')).calls[0];
const f32 = (/** @type {{data: string}} */ t) => new Float32Array(Uint8Array.from(Buffer.from(t.data, 'base64')).buffer);
const x = f32(call.args[0]);
const want = f32(call.outputs[0]);

const program = await load(join(golden, 'mlp.wgpt'), { tune: false, cache: false });
assert.deepEqual(program.inputs, [{ name: 'input', dtype: 'float32', shape: [5, 37] }]);
for (const y of [await program.run([x]), await program.run({ input: x })]) { // positional, by name
  assert.deepEqual(y.shape, [5, 3]);
  y.data.forEach((v, i) => assert.ok(Math.abs(v - want[i]) <= 1e-5 * 4, `output ${i}: ${v} != ${want[i]}`));
}
await assert.rejects(program.run([new Float32Array(3)]), InputError);

const kept = await program.runOnDevice([x]);
assert.ok(kept instanceof DeviceTensor);
assert.deepEqual(Array.from((await kept.read()).data), Array.from((await program.run([x])).data));
kept[Symbol.dispose]();
program[Symbol.dispose]();
await assert.rejects(program.run([x]), /cannot run again/);

const dynamic = await load(join(golden, 'dynamic.wgpt'), { tune: false, cache: false });
assert.deepEqual(dynamic.inputs[0].shape, [{ name: 's77', min: 1, max: 64 }, 37]);
dynamic.destroy();
// The tokenizer helper, its library resolved from the installed package: a tiny WordPiece tokenizer.json.
const vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', 'hello', 'world', '##s'];
const special = (/** @type {number} */ id) => ({ id, content: vocab[id], single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
const folder = mkdtempSync(join(tmpdir(), 'tokenizer-'));
writeFileSync(join(folder, 'tokenizer.json'), JSON.stringify({
  version: '1.0', truncation: null, padding: null, added_tokens: [0, 1, 2, 3].map(special),
  normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
  pre_tokenizer: { type: 'BertPreTokenizer' },
  post_processor: { type: 'BertProcessing', sep: ['[SEP]', 3], cls: ['[CLS]', 2] },
  decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
  model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100,
    vocab: Object.fromEntries(vocab.map((t, i) => [t, i])) },
}));
const tokenizer = await loadTokenizer(folder);
const batch = tokenizer.batch(['Hello worlds!', 'hello']);
assert.deepEqual(batch.input_ids.shape, [2, 6]); // [CLS] hello world ##s [UNK] [SEP], and a padded row
assert.deepEqual(Array.from(batch.input_ids.data, Number), [2, 4, 5, 6, 1, 3, 2, 4, 3, 0, 0, 0]);
assert.deepEqual(Array.from(batch.attention_mask.data, Number), [1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0]);
assert.equal(tokenizer.decode([2, 4, 5, 6, 3], { skipSpecialTokens: true }), 'hello worlds');
console.log('javascript consumer: ok');
