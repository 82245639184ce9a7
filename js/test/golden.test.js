// The golden corpus (tests/golden/README.md): every valid artifact gives the outputs Python's runtime
// recorded, and every damaged one is refused with the reason the corpus gives, before reaching a device.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { ArtifactError, InputError, InputTypeError, load, parse } from '../src/index.js';
import { GOLDEN, artifacts, assertReplays, calls } from '../testkit/io.js';

const VALID = artifacts(GOLDEN);
const MISSING = 'tests/golden has no artifacts: write them with `python -m tests.golden.make` from the repository root';

test('the golden corpus is there and covers every part of the format', () => {
  assert.ok(VALID.length, MISSING);
  for (const name of ['tiny', 'mlp', 'weights_f16', 'options', 'dynamic', 'structured']) assert.ok(VALID.includes(name), `${name}: ${MISSING}`);
});

/**
 * Run every recorded call of a golden artifact and compare.
 * @param {string} name
 * @param {import('../src/program.js').LoadOptions} options
 */
async function check(name, options) {
  const path = join(GOLDEN, `${name}.wgpt`);
  const program = await load(path, options);
  try {
    await assertReplays(program, path, name);
  } finally {
    program.destroy();
  }
}

for (const name of VALID) {
  test(`golden ${name}: the recorded outputs`, () => check(name, { tune: false }));
}

test('golden weights_f16 without shader-f16: the fallback kernels over widened constants', () =>
  check('weights_f16', { tune: false, disableFeatures: ['shader-f16'] }));

test('golden options and mlp, tuned: whichever candidates win give the same outputs', async () => {
  for (const name of ['options', 'mlp']) await check(name, { tune: true, cache: false });
});

const EXPECTED = /** @type {Record<string, string>} */ (JSON.parse(readFileSync(join(GOLDEN, 'bad', 'expected.json'), 'utf8')));

for (const [name, phrase] of Object.entries(EXPECTED)) {
  test(`damaged ${name}: refused with "${phrase}"`, async () => {
    const path = join(GOLDEN, 'bad', `${name}.wgpt`);
    assert.throws(() => parse(readFileSync(path), name), (e) => e instanceof ArtifactError && e.message.includes(phrase),
      `parse must refuse it naming "${phrase}"`);
    await assert.rejects(load(path), (e) => e instanceof ArtifactError && e.message.includes(phrase) && e.message.startsWith(path));
  });
}

test('a constant argument must be the exported value, and may be left out as a keyword', async () => {
  const program = await load(join(GOLDEN, 'structured.wgpt'), { tune: false });
  const [call] = calls(join(GOLDEN, 'structured.json'));
  await program.run(call.args);
  await assert.rejects(program.run({ args: call.args, kwargs: { scale: 3 } }),
    (e) => e instanceof InputError && /exported with 2 here.*got 3/.test(e.message));
  await assert.rejects(program.run({ args: call.args, kwargs: { flag: 1 } }),
    (e) => e instanceof InputError && /exported with true here.*got 1/.test(e.message));
  await assert.rejects(program.run({ args: call.args, kwargs: { nope: 1 } }), InputTypeError);
  program.destroy();
});
