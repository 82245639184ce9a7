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
await test('a download that fails is refused by name', async () => {
  try {
    await load('/golden/missing.wgpt', { featureLevel });
  } catch (e) {
    return e instanceof ArtifactError && e.message.includes('HTTP 404') ? [] : [`refused with ${e}`];
  }
  return ['loaded'];
});

const CACHE = 'webgpu-torch-tests';
const TINY = new URL('/golden/tiny.wgpt', location.href).href;

/**
 * What `f` says through console.warn.
 * @param {() => Promise<unknown>} f
 */
async function warnings(f) {
  /** @type {string[]} */
  const said = [];
  const warn = console.warn;
  console.warn = (/** @type {unknown} */ m) => said.push(String(m));
  try {
    await f();
  } finally {
    console.warn = warn;
  }
  return said;
}

await test('artifactCache: a download kept whole, loaded from the cache, dropped from it once found damaged', async () => {
  await caches.delete(CACHE);
  const problems = await replayFile(TINY, 'tiny', { tune: false, featureLevel, artifactCache: CACHE });
  const cache = await caches.open(CACHE);
  const kept = await cache.match(TINY);
  if (!kept) return [...problems, 'not kept'];
  const bytes = new Uint8Array(await kept.arrayBuffer());
  if (bytes.join() !== new Uint8Array(await (await fetch(TINY)).arrayBuffer()).join()) problems.push('kept other bytes');
  bytes[bytes.length - 70] ^= 1; // a data byte: only the copy in the cache is damaged now
  await cache.put(TINY, new Response(bytes));
  try {
    (await load(TINY, { tune: false, featureLevel, artifactCache: CACHE })).destroy();
    problems.push('the damaged copy loaded: the cache was not read');
  } catch (e) {
    if (!(e instanceof ArtifactError && e.message.includes('tensor data is damaged'))) problems.push(`refused with ${e}`);
  }
  if (await cache.match(TINY)) problems.push('the damaged copy stayed in the cache');
  await caches.delete(CACHE);
  return problems;
});

await test('artifactCache: no room in the storage quota, the load goes on and says it kept nothing', async () => {
  const problems = [];
  const storage = /** @type {any} */ (navigator.storage);
  const put = Cache.prototype.put;
  for (const [why, full] of /** @type {[string, () => void][]} */ ([
    ['an estimate', () => { storage.estimate = async () => ({ quota: 1000, usage: 900 }); }],
    ['a QuotaExceededError', () => { Cache.prototype.put = async () => { throw new DOMException('no room', 'QuotaExceededError'); }; }],
  ])) {
    await caches.delete(CACHE);
    full();
    try {
      const said = await warnings(async () => problems.push(...await replayFile(TINY, 'tiny', { tune: false, featureLevel, artifactCache: CACHE })));
      if (!said.some((w) => w.includes('not kept in the artifact cache') && w.includes('quota'))) problems.push(`${why}: warned ${JSON.stringify(said)}`);
    } finally {
      delete storage.estimate;
      Cache.prototype.put = put;
    }
    if (await (await caches.open(CACHE)).match(TINY)) problems.push(`${why}: kept`);
  }
  await caches.delete(CACHE);
  return problems;
});

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
