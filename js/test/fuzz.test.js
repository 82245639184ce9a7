// Hostile well-signed artifacts (tests/fuzz.py writes them, with the Python suite's tests/test_fuzz.py, to
// build/fuzz, or WEBGPU_TORCH_FUZZ): each is loaded and called once in a worker process
// (testkit/fuzz_worker.js); every one must end in a package error or a completed call — never an exception
// of another class, a crashed worker, or one silent past the call timeout plus a grace.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';

import { REPO } from '../testkit/io.js';

const FOLDER = process.env.WEBGPU_TORCH_FUZZ || join(REPO, 'build', 'fuzz');
const HOW = `the hostile files are missing from ${FOLDER}: write them with ` +
  '`.venv/bin/python -m pytest tests/test_fuzz.py` (or `.venv/bin/python -m tests.fuzz --write build/fuzz`) from the repository root';
assert.ok(existsSync(join(FOLDER, 'replay.json')), HOW);
/** @type {{call_timeout: number, grace: number, infinite: string}} the Python suite's limits (tests/fuzz.py) */
const REPLAY = JSON.parse(readFileSync(join(FOLDER, 'replay.json'), 'utf8'));
// Seconds (WEBGPU_TORCH_TIMEOUT in the workers): no call may take longer, but those of a variant that injects
// INFINITE loops, which must end so; WEBGPU_TORCH_FUZZ_TIMEOUT sets another.
const CALL_TIMEOUT = Number(process.env.WEBGPU_TORCH_FUZZ_TIMEOUT || REPLAY.call_timeout);
const INFINITE = REPLAY.infinite; // what such a variant says
const GRACE = REPLAY.grace; // seconds past it before a silent worker counts as hung

/**
 * Each path's outcome, from worker processes: one that prints nothing within the limit is killed ("hung"),
 * one that exits before answering has "crashed"; a new worker takes the rest.
 * @param {string[]} paths
 * @returns {AsyncGenerator<Record<string, any>>}
 */
async function* run(paths) {
  const pending = [...paths];
  while (pending.length) {
    const child = spawn(process.execPath, [join(REPO, 'js', 'testkit', 'fuzz_worker.js')], {
      env: { ...process.env, WEBGPU_TORCH_TIMEOUT: String(CALL_TIMEOUT) }, stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-2000); });
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    let last = false;
    while (pending.length && !last) {
      child.stdin.write(`${pending.shift()}\n`);
      /** @type {ReturnType<typeof setTimeout> | undefined} */
      let timer;
      const silent = new Promise((resolve) => { timer = setTimeout(() => resolve('hung'), (CALL_TIMEOUT + GRACE) * 1000); });
      const next = await Promise.race([lines.next(), exited.then(() => 'exited'), silent]);
      clearTimeout(timer);
      if (next === 'hung') {
        child.kill('SIGKILL');
        yield { outcome: 'hung' };
        break;
      }
      if (next === 'exited' || /** @type {IteratorResult<string>} */ (next).done) {
        yield { outcome: 'crashed', message: `exit ${await exited}: ${stderr.slice(-300)}` };
        break;
      }
      const result = JSON.parse(/** @type {IteratorResult<string>} */ (next).value);
      last = result.last;
      yield result;
    }
    child.stdin.end();
    child.kill('SIGKILL');
  }
}

test('hostile artifacts end in a package error or a completed call, never a crash, a hang or another exception', async () => {
  assert.ok(existsSync(join(FOLDER, 'index.json')), HOW);
  const index = /** @type {{file: string, what: string}[]} */ (JSON.parse(readFileSync(join(FOLDER, 'index.json'), 'utf8')));
  /** @type {Record<string, number>} */
  const outcomes = {};
  const failures = [];
  let i = 0;
  for await (const result of run(index.map((v) => join(FOLDER, v.file)))) {
    const { what } = index[i++];
    const kind = result.message?.includes('did not finish within') ? 'timed out' : result.outcome;
    outcomes[kind] = (outcomes[kind] ?? 0) + 1;
    const clean = ['ran', 'refused at load', 'refused at run'].includes(kind) || (kind === 'timed out' && what.includes(INFINITE));
    if (!clean) failures.push(`${what}: ${kind}: ${result.error ?? ''} ${result.message ?? ''}`);
    else if (result.message?.includes('\n')) failures.push(`${what}: a message of several lines: ${result.message.slice(0, 300)}`);
  }
  console.log(JSON.stringify(outcomes));
  assert.deepEqual(failures, []);
  assert.equal(i, index.length);
});
