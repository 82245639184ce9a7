// The golden corpus (tests/golden/README.md): every valid artifact gives the outputs Python's runtime
// recorded, and every damaged one is refused with the reason the corpus gives, before anything runs.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { ArtifactError, InputError, InputTypeError, load, parse } from '../src/index.js';
import { GOLDEN, artifacts, assertReplays, calls } from '../testkit/io.js';

const VALID = artifacts(GOLDEN);
const EXPECTED = /** @type {Record<string, string>} */ (JSON.parse(readFileSync(join(GOLDEN, 'bad', 'expected.json'), 'utf8')));
const DAMAGED = Object.keys(EXPECTED).filter((name) => existsSync(join(GOLDEN, 'bad', `${name}.wgpt`)));
const MISSING = 'is missing from tests/golden: write the corpus with `python -m tests.golden.make` from the repository root';
// The tests below run on the files present; this one fails when any is missing.

test('the golden corpus is there and covers every part of the format', () => {
  for (const name of ['tiny', 'mlp', 'weights_f16', 'float16', 'bfloat16', 'activations_f16', 'precision_f16', 'options', 'dynamic',
    'structured', 'portable', 'integers_as_floats', 'state']) {
    assert.ok(VALID.includes(name), `${name}.wgpt ${MISSING}`);
  }
  for (const name of Object.keys(EXPECTED)) assert.ok(DAMAGED.includes(name), `bad/${name}.wgpt ${MISSING}`);
});

/**
 * Run every recorded call of a golden artifact and compare.
 * @param {string} name
 * @param {import('../src/session.js').LoadOptions} options
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

for (const name of ['weights_f16', 'float16', 'activations_f16'].filter((n) => VALID.includes(n))) {
  test(`golden ${name} without shader-f16: the fallback kernels over widened constants`, () =>
    check(name, { tune: false, disableFeatures: ['shader-f16'] }));
}

// portable: an option needs a feature no runtime knows; precision_f16: options need subgroup matrices;
// dynamic: options timed at the hint, run at every size.
for (const name of ['options', 'mlp', 'portable', 'precision_f16', 'dynamic'].filter((n) => VALID.includes(n))) {
  test(`golden ${name}, tuned: whichever candidates win give the same outputs`, () => check(name, { tune: true, cache: false }));
}

for (const name of DAMAGED) {
  const phrase = EXPECTED[name];
  test(`damaged ${name}: refused with "${phrase}"`, async () => {
    const path = join(GOLDEN, 'bad', `${name}.wgpt`);
    assert.throws(() => parse(readFileSync(path), name), (e) => e instanceof ArtifactError && e.message.includes(phrase),
      `parse must refuse it naming "${phrase}"`);
    await assert.rejects(load(path), (e) => e instanceof ArtifactError && e.message.includes(phrase) && e.message.startsWith(path));
  });
}

if (VALID.includes('structured')) {
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
}
