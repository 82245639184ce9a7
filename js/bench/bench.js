// Wall time per call of artifacts in Node, and per decoder step of a Seq2Seq folder, as the Python runtime
// is measured: the median of repeated calls after a warm-up, inputs from a corpus file's first call.
//
//   node bench/bench.js [--calls N] PATH.wgpt|SEQ2SEQ_FOLDER ...
//
// A .wgpt needs PATH.json beside it (tests/golden/README.md); a folder needs generate.json (tests/corpus.py).

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { gpuTime, load, loadSeq2Seq } from '../src/index.js';
import { calls, tensor } from '../testkit/io.js';

/** @param {number[]} xs */
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/**
 * @param {string} path
 * @param {number} n
 */
async function benchProgram(path, n) {
  const program = await load(path, { tune: false });
  const [call] = calls(path.replace(/\.wgpt$/, '.json'));
  const inputs = { args: call.args, kwargs: call.kwargs };
  await program.run(inputs);
  const times = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await program.run(inputs);
    times.push(performance.now() - start);
  }
  const gpu = await gpuTime(program, 3, 3);
  console.log(`${path}: ${median(times).toFixed(3)} ms per call (wall, median of ${n}); GPU ${(gpu.seconds * 1e3).toFixed(3)} ms ` +
    `(${gpu.method}); ${program.spec.dispatches.length} dispatches`);
  program.destroy();
}

/**
 * @param {string} folder
 * @param {number} n
 */
async function benchSeq2Seq(folder, n) {
  const record = JSON.parse(readFileSync(join(folder, 'generate.json'), 'utf8'));
  const model = await loadSeq2Seq(folder, { tune: false });
  const pixels = tensor(record.pixel_values);
  const prompt = tensor(record.prompt_ids);
  await model.generate(pixels, prompt, { maxNewTokens: record.max_new_tokens });
  const steps = [];
  for (let i = 0; i < n; i++) {
    await model.generate(pixels, prompt, { maxNewTokens: record.max_new_tokens });
    steps.push(median((model.timings.decoderSteps ?? []).slice(1)) * 1e3);
  }
  console.log(`${folder}: ${median(steps).toFixed(3)} ms per decoder step (wall, median over ${n} generations of ${record.max_new_tokens})`);
  model.destroy();
}

const args = process.argv.slice(2);
let n = 20;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--calls') {
    n = Number(args[++i]);
    continue;
  }
  const path = args[i];
  if (existsSync(join(path, 'generate.json'))) await benchSeq2Seq(path, Math.max(1, n >> 2));
  else await benchProgram(path, n);
}
