// llama.cpp's side of `webgpu-torch bench llm`: a GGUF model through node-llama-cpp's prebuilt Vulkan backend,
// a prompt of token ids evaluated, then greedy decoding, timed as the Python runtime's generate is: time to
// first token (the prompt's evaluation and the first sampled token), then the median wall time between tokens.
//
//   GGML_VK_VISIBLE_DEVICES=0 node bench/llm.js MODEL.gguf --prompt 1,5,9 --tokens 32 [--runs 3] [--warm-up 2]
//     [--kv-cache F32]
//
// --kv-cache: the type of the keys and values cached (llama.cpp's default F16, or F32); --warm-up: seconds of
// generations before the timed ones.
// Prints one JSON line: the Vulkan device's name, the layers offloaded, each run's timings, the ids of the
// last run, the process's peak resident set, and how much the device's used memory grew from before the model
// loaded to after the runs (the whole device's count: other processes' allocations show in it, and on a CPU
// device it is the host's). The layers must all be on the GPU (gpuLayers "max"), and the script fails where
// llama.cpp found no Vulkan device: without GGML_VK_VISIBLE_DEVICES ggml-vulkan skips CPU devices (lavapipe),
// and node-llama-cpp would run on the CPU instead. Needs `npm install --ignore-scripts --no-save` in
// bench/llama-cpp/ (with NODE_LLAMA_CPP_SKIP_DOWNLOAD=true: the prebuilt binaries come as npm packages, nothing
// is built).

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { median, peakResident, warmUp } from './sides.js';

// Imported by URL: the runtime's type check (tsconfig) must pass where the package is not installed.
const nodeLlamaCpp = new URL('./llama-cpp/node_modules/node-llama-cpp/', import.meta.url);
const { getLlama, LlamaLogLevel } = await import(new URL('dist/index.js', nodeLlamaCpp).href);
const { version } = JSON.parse(readFileSync(new URL('package.json', nodeLlamaCpp), 'utf8'));

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { prompt: { type: 'string' }, tokens: { type: 'string', default: '32' }, runs: { type: 'string', default: '3' },
    'warm-up': { type: 'string', default: '2' }, 'kv-cache': { type: 'string', default: 'F16' } },
});
const prompt = (values.prompt ?? '').split(',').map(Number);
const tokens = Number(values.tokens);
if (positionals.length !== 1 || prompt.some((t) => !Number.isInteger(t)) || !(tokens > 0)) {
  throw new Error('usage: node bench/llm.js MODEL.gguf --prompt ID,ID,... --tokens N [--runs R] [--warm-up S]');
}

const llama = await getLlama({ gpu: 'vulkan', build: 'never', logLevel: LlamaLogLevel.error });
const devices = await llama.getGpuDeviceNames();
if (llama.gpu !== 'vulkan' || devices.length === 0) {
  throw new Error(`llama.cpp found no Vulkan device (gpu: ${llama.gpu}); set GGML_VK_VISIBLE_DEVICES for a CPU one`);
}
const vramBefore = (await llama.getVramState()).used;
const model = await llama.loadModel({ modelPath: positionals[0], gpuLayers: 'max' });
const kvCache = values['kv-cache'];
const context = await model.createContext({ contextSize: prompt.length + tokens + 1, batchSize: prompt.length,
  sequences: 1, experimentalKvCacheKeyType: kvCache, experimentalKvCacheValueType: kvCache });
const sequence = context.getSequence();

/** One greedy generation from an empty cache: seconds to the first token, then between tokens; the ids. */
async function generate() {
  await sequence.clearHistory();
  const ids = [];
  const steps = [];
  let last = performance.now();
  for await (const id of sequence.evaluate(prompt, { temperature: 0 })) {
    const now = performance.now();
    steps.push((now - last) / 1e3);
    last = now;
    ids.push(id);
    if (ids.length === tokens) break;
  }
  return { ids, steps };
}

await warmUp(generate, Number(values['warm-up']));
const runs = [];
for (let i = 0; i < Number(values.runs); i++) runs.push(await generate());
console.log(JSON.stringify({
  device: devices.join(', '), kvCache, gpuLayers: model.gpuLayers, layers: model.fileInsights.totalLayers,
  version,
  firstToken: median(runs.map((r) => r.steps[0])),
  perToken: median(runs.map((r) => median(r.steps.slice(1)))),
  ids: runs.at(-1)?.ids,
  peakRss: peakResident(),
  vramGrowth: (await llama.getVramState()).used - vramBefore,
}));
await context.dispose();
await model.dispose();
await llama.dispose();
