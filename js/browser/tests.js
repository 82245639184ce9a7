// The checks of test/golden.test.js and test/corpus.test.js, in a browser page that browser/run.js serves:
// each result is posted back to the runner as it comes.

import { ArtifactError, load, openDevice } from '../src/index.js';
import { ACROSS_ADAPTERS, loadGenerator, parseCalls, regenerate, replay } from '../testkit/corpus.js';

/** @param {string} line */
const log = (line) => fetch('/log', { method: 'POST', body: JSON.stringify({ line }) });

/** @type {string[]} */
const failed = [];
let passed = 0;

/**
 * @param {string} name
 * @param {() => Promise<string[] | void>} check resolves to the problems found (or nothing)
 */
async function test(name, check) {
  let problems;
  try {
    problems = (await check()) ?? [];
  } catch (e) {
    problems = [String(/** @type {Error} */ (e)?.stack ?? e)];
  }
  if (problems.length) failed.push(`${name}: ${problems.join('; ')}`);
  else passed++;
  await log(`${problems.length ? 'not ok' : 'ok'} - ${name}`);
}

/**
 * @param {string} url NAME.wgpt
 * @param {string} name
 * @param {import('../src/session.js').LoadOptions} options
 */
async function replayFile(url, name, options) {
  const program = await load(url, options);
  try {
    return await replay(program, parseCalls(await (await fetch(url.replace(/\.wgpt$/, '.json'))).text()), name);
  } finally {
    program.destroy();
  }
}

const manifest = await (await fetch('/manifest.json')).json();
/** The adapter's feature level (run.js's --adapter), for every program this page loads. */
const featureLevel = /** @type {'core' | 'compatibility'} */ (new URLSearchParams(location.search).get('featureLevel') ?? 'core');
const { device } = await openDevice({ featureLevel });
await log(`# device (${featureLevel}): features ${[...device.features].join(', ') || 'none'}; ` +
  `${device.limits.maxStorageBuffersPerShaderStage} storage buffers per stage, ` +
  `${device.limits.maxComputeInvocationsPerWorkgroup} invocations per workgroup`);

await test('the golden corpus is there', async () => (manifest.golden.length ? [] : ['tests/golden has no artifacts']));
for (const name of manifest.golden) await test(`golden ${name}`, () => replayFile(`/golden/${name}.wgpt`, name, { tune: false, featureLevel }));
for (const name of ['options', 'mlp']) await test(`golden ${name}, tuned`, () => replayFile(`/golden/${name}.wgpt`, name, { tune: true, featureLevel }));
for (const [name, phrase] of Object.entries(manifest.bad)) {
  await test(`damaged ${name}`, async () => {
    try {
      await load(`/golden/bad/${name}.wgpt`, { featureLevel });
    } catch (e) {
      return e instanceof ArtifactError && e.message.includes(/** @type {string} */ (phrase)) ? [] : [`refused with ${e}, not "${phrase}"`];
    }
    return ['loaded'];
  });
}
await test('the model corpus is there', async () => (manifest.models.length && manifest.generations.length ? [] : ['the model corpus is missing']));
for (const name of manifest.models) await test(`corpus ${name}`, () => replayFile(`/corpus/${name}.wgpt`, name, { tune: false, featureLevel }));
for (const name of manifest.generations) {
  await test(`corpus ${name}, generated`, async () => {
    const record = await (await fetch(`/corpus/${name}/generate.json`)).json();
    const model = await loadGenerator(new URL(`/corpus/${name}`, location.href), record, { tune: false, featureLevel });
    try {
      return await regenerate(model, record, ACROSS_ADAPTERS);
    } finally {
      model.destroy();
    }
  });
}
await fetch('/result', { method: 'POST', body: JSON.stringify({ passed, failed }) });
