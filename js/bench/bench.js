// Wall time per call of artifacts in Node, and per generated token of a Seq2Seq or CausalLM folder (beside
// the decoder step's GPU time and the host's seconds per step: encode, submit, map, copy), as the Python
// runtime is measured: the median of repeated calls after a warm-up, inputs from a corpus file's first call.
//
//   node bench/bench.js [--calls N] [--json] [--tune] [--warm-up SECONDS] PATH.wgpt|GENERATION_FOLDER ...
//
// A .wgpt needs PATH.json beside it (tests/golden/README.md); a folder needs generate.json (tests/corpus.py).
// With --json a folder's figures come as one JSON line (seconds: firstToken, perToken, stepGpu, host per step
// by phase; the last generation's ids; bytes: the peak resident set and WebGPU buffers' peak, sides.js), what
// `webgpu-torch bench llm --node` reads. Programs run every dispatch's default kernel, as python_calls.py's do,
// unless --tune: then tuned at load, as the Python runtime's are by default.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { globals } from 'webgpu';

import { gpuTime, load, Seq2Seq } from '../src/index.js';
import { loadGenerator } from '../testkit/corpus.js';
import { calls, tensor } from '../testkit/io.js';
import { median, peakMemory, trackBuffers, warmUp } from './sides.js';

/**
 * @param {string} path
 * @param {number} n
 */
async function benchProgram(path, n) {
  const program = await load(path, { tune });
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
 * @param {boolean} json
 */
async function benchGeneration(folder, n, json) {
  const record = JSON.parse(readFileSync(join(folder, 'generate.json'), 'utf8'));
  const model = await loadGenerator(folder, record, { tune });
  const options = { maxNewTokens: record.max_new_tokens };
  const generate = () => (model instanceof Seq2Seq
    ? model.generate(tensor(record.pixel_values), tensor(record.prompt_ids), options)
    : model.generate(record.prompt_ids, options));
  await warmUp(generate, warmUpSeconds);
  const steps = [];
  const firsts = [];
  let ids;
  /** @type {Record<string, number[]>} */
  const host = {};
  for (let i = 0; i < n; i++) {
    ({ ids } = await generate());
    const t = model instanceof Seq2Seq ? { steps: model.timings.decoderSteps, host: model.timings.decoderHost } : model.timings;
    firsts.push((t.steps ?? [])[0]);
    steps.push(median((t.steps ?? []).slice(1)) * 1e3);
    for (const [phase, seconds] of Object.entries(t.host ?? {})) (host[phase] ??= []).push(median(seconds) * 1e3);
  }
  const step = model instanceof Seq2Seq ? model.decoder : model.step;
  const gpu = await gpuTime(step, 3, 3);
  const wall = median(steps);
  if (json) {
    const hostSeconds = Object.fromEntries(Object.entries(host).map(([phase, ms]) => [phase, median(ms) / 1e3]));
    console.log(JSON.stringify({ firstToken: median(firsts), perToken: wall / 1e3, stepGpu: gpu.seconds, host: hostSeconds, ids,
      ...peakMemory() }));
    model.destroy();
    return;
  }
  console.log(`${folder}: ${wall.toFixed(3)} ms per token (wall, median over ${n} generations of ${record.max_new_tokens}); ` +
    `decoder step GPU ${(gpu.seconds * 1e3).toFixed(3)} ms (${gpu.method}): ${(wall / (gpu.seconds * 1e3)).toFixed(2)}x; ` +
    `host per step ${Object.entries(host).map(([k, v]) => `${k} ${median(v).toFixed(3)}`).join(', ')} ms`);
  model.destroy();
}

const args = process.argv.slice(2);
let n = 20;
let json = false;
let tune = false;
let warmUpSeconds = 0;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--calls') {
    n = Number(args[++i]);
    continue;
  }
  if (args[i] === '--json') {
    json = true;
    trackBuffers(globals);
    continue;
  }
  if (args[i] === '--warm-up') {
    warmUpSeconds = Number(args[++i]);
    continue;
  }
  if (args[i] === '--tune') {
    tune = true;
    continue;
  }
  const path = args[i];
  if (existsSync(join(path, 'generate.json'))) await benchGeneration(path, Math.max(1, n >> 2), json);
  else await benchProgram(path, n);
}
