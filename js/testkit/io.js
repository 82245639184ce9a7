// The corpora on disk (Node): where they are, which artifacts they hold, their calls, and assertions over
// corpus.js's comparison.

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { mismatch, parseCalls, replay } from './corpus.js';

export { leaves, tensor } from './corpus.js';

export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const GOLDEN = join(REPO, 'tests', 'golden');
export const CORPUS = process.env.WEBGPU_TORCH_CORPUS || join(REPO, 'build', 'corpus');

/**
 * The calls recorded in NAME.json.
 * @param {string} path
 */
export function calls(path) {
  return parseCalls(readFileSync(path, 'utf8'));
}

/**
 * Assert `got` matches `want` (corpus.js's rule).
 * @param {{data: ArrayLike<number | bigint>, shape: number[], dtype: string}} got
 * @param {import('./corpus.js').Tensor} want
 * @param {string} what
 */
export function assertClose(got, want, what) {
  const m = mismatch(got, want, what);
  assert.ok(m === null, m ?? '');
}

/**
 * Run the calls recorded beside `path` (NAME.json) on `program`, asserting every output matches.
 * @param {import('../src/session.js').Program} program
 * @param {string} path NAME.wgpt
 * @param {string} name
 */
export async function assertReplays(program, path, name) {
  const problems = await replay(program, calls(path.replace(/\.wgpt$/, '.json')), name);
  assert.deepEqual(problems, []);
}

/**
 * The names of NAME.wgpt files in `folder` that have a NAME.json beside them.
 * @param {string} folder
 */
export function artifacts(folder) {
  if (!existsSync(folder)) return [];
  return readdirSync(folder).filter((f) => f.endsWith('.wgpt') && existsSync(join(folder, f.replace(/\.wgpt$/, '.json'))))
    .map((f) => f.replace(/\.wgpt$/, '')).sort();
}

/**
 * The Seq2Seq folders in `folder` that have a generate.json.
 * @param {string} folder
 */
export function generations(folder) {
  return existsSync(folder) ? readdirSync(folder).filter((d) => existsSync(join(folder, d, 'generate.json'))).sort() : [];
}
