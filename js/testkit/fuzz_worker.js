// The JS counterpart of `python -m tests.fuzz --worker` (tests/fuzz.py): reads artifact paths on stdin, one
// a line; loads each (tuning on, no cache: options run too) and calls it once with zeros at the dynamic
// sizes' hints; prints its outcome as one JSON line: {"outcome": "ran" | "refused at load" | "refused at run"
// | "raw exception", "error", "message", "last"}. A call that timed out leaves its device busy: the worker
// exits after reporting it ("last": true), and the parent starts another.

import { createInterface } from 'node:readline';

import { WebGPUTorchError, load } from '../src/index.js';
import * as expr from '../src/symbolic.js';
import { hostArray } from '../src/dtypes.js';
import * as tree from '../src/tree.js';

/**
 * @param {string} path
 * @returns {Promise<{outcome: string, error?: string, message?: string}>}
 */
async function call(path) {
  /** @type {import('../src/session.js').Program} */
  let program;
  try {
    program = await load(path, { tune: true, cache: false });
  } catch (e) {
    return outcome('refused at load', e);
  }
  try {
    const hints = Object.fromEntries(Object.entries(program.spec.symbols).map(([name, s]) => [name, s.hint]));
    const leaves = program.spec.inputs.map((x) => {
      const shape = x.shape.map((n) => expr.evaluate(n, hints));
      return { data: hostArray(x.dtype, shape.reduce((a, b) => a * b, 1)), shape, dtype: x.dtype };
    });
    const [args, kwargs] = /** @type {[unknown[], Record<string, unknown>]} */ (tree.unflatten(program.spec.inputTree, leaves));
    await program.run({ args, kwargs });
    return { outcome: 'ran' };
  } catch (e) {
    return outcome('refused at run', e);
  } finally {
    program.destroy();
  }
}

/**
 * @param {string} kind
 * @param {unknown} e
 */
function outcome(kind, e) {
  const error = /** @type {Error} */ (e);
  if (!(e instanceof WebGPUTorchError)) return { outcome: 'raw exception', error: error?.name ?? typeof e, message: String(error?.message ?? e).slice(0, 500) };
  return { outcome: kind, error: error.name, message: error.message };
}

for await (const line of createInterface({ input: process.stdin })) {
  let result;
  try {
    result = await call(line.trim());
  } catch (e) {
    result = { outcome: 'raw exception', error: /** @type {Error} */ (e)?.name, message: String(e).slice(0, 500) };
  }
  const last = (result.message ?? '').includes('did not finish within');
  process.stdout.write(`${JSON.stringify({ ...result, last })}\n`);
  if (last) break;
}
process.exit(0);
