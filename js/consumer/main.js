// A consumer of the published package, in plain JavaScript: it imports the package by name and runs a
// golden artifact through the public API only (consumer/run.js installs the packed tarball beside it).
//   node main.js GOLDEN_DIR

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { DeviceTensor, InputError, load } from '@webgpu-torch/runtime';

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
console.log('javascript consumer: ok');
