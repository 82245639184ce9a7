// onnxruntime-web's side of `webgpu-torch bench llm --ort`: a Llama model exported by torch.onnx as one
// functional step (tokens [1, T] and every layer's past keys and values [1, kv_heads, P, head_dim] in; the
// last token's logits, its greedy id and the grown caches [1, kv_heads, P + T, head_dim] out, in that order),
// run by ORT's WebGPU build on Dawn for Node: the prompt's ids in one call from empty caches (the prefill),
// then one call a token, the caches kept on the GPU between calls (ORT's gpu-buffer outputs fed back) and the
// id read back each call. Timed as llm.js times llama.cpp: the time to the first token (the prompt's call),
// then the median wall time between tokens.
//
//   node bench/llm_ort.js MODEL.onnx --prompt 1,5,9 --tokens 32 --cache KV_HEADS,HEAD_DIM [--runs 3] [--warm-up 2]
//     [--ort DIST]
//
// Prints one JSON line: the adapter, ORT's version, the timings (medians over the runs after --warm-up seconds
// of them), the ids of the last run and the peak memory (sides.js; the resident peak includes the session
// opened for the placement log, released before the timed one opens). Every node must run on ORT's WebGPU EP
// but those ORT itself keeps on the CPU for shape arithmetic (`placement`): the script fails where a node with
// float work fell back to the CPU.

import fs from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

import { globals } from 'webgpu';

import { ORT_DIST, loadOrt } from './ort_node.js';
import { median, peakMemory, trackBuffers, warmUp } from './sides.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { prompt: { type: 'string' }, tokens: { type: 'string', default: '32' }, runs: { type: 'string', default: '3' },
    'warm-up': { type: 'string', default: '2' }, cache: { type: 'string' }, ort: { type: 'string', default: ORT_DIST } },
});
const prompt = (values.prompt ?? '').split(',').map(Number);
const tokens = Number(values.tokens);
const [kvHeads, headDim] = (values.cache ?? '').split(',').map(Number);
if (positionals.length !== 1 || prompt.some((t) => !Number.isInteger(t)) || !(tokens > 0) || !(kvHeads > 0 && headDim > 0)) {
  throw new Error('usage: node bench/llm_ort.js MODEL.onnx --prompt ID,ID,... --tokens N --cache KV_HEADS,HEAD_DIM [--runs R] [--warm-up S]');
}

/**
 * Op types ORT may keep on the CPU: its shape and index arithmetic (fallback_cpu_capability's int64 chains;
 * the Llama export's are these). The log names op types, not element types: a float Add or Cast on the CPU
 * would pass; a MatMul, Softmax, IsNaN (sdpa's export) or any other type on the CPU is refused.
 */
const SHAPE_OPS = new Set(['Shape', 'Squeeze', 'Unsqueeze', 'Concat', 'Slice', 'Reshape', 'Range', 'Cast', 'Add',
  'LessOrEqual', 'Gather', 'ConstantOfShape']);

trackBuffers(globals);
const { ort, adapter, version } = await loadOrt(resolve(values.ort));
const bytes = fs.readFileSync(positionals[0]);
/** @param {object} options ORT's session options beside the WebGPU EP's */
const open = (options = {}) => ort.InferenceSession.create(bytes, { executionProviders: ['webgpu'], ...options });
const placed = await placement();
// the caches stay on the GPU; the id is read back; the logits are not read
const session = await open({ preferredOutputLocation: 'gpu-buffer' });
const [tokensName, ...pastNames] = /** @type {string[]} */ (session.inputNames);
const [logitsName, idName, ...presentNames] = /** @type {string[]} */ (session.outputNames);

/**
 * Where ORT places the model's nodes, from the verbose log of a session opened for that alone (its logging
 * would slow the timed one's runs): the op types on each execution provider. Fails if any node is on an EP
 * other than WebGPU's, but for ORT's shape arithmetic on the CPU (op types of SHAPE_OPS).
 * @returns {Promise<Record<string, Record<string, number>>>}
 */
async function placement() {
  // ORT's wasm prints its log by fs.writeSync to descriptors 1 and 2 (Emscripten's Node output): caught there
  const text = /** @type {string[]} */ ([]);
  const writeSync = fs.writeSync;
  fs.writeSync = /** @type {any} */ ((/** @type {any} */ fd, /** @type {any} */ data, /** @type {any[]} */ ...rest) => (
    fd === 1 || fd === 2 ? text.push(String(data)) && String(data).length : writeSync(fd, data, ...rest)));
  try {
    await (await open({ logSeverityLevel: 0, logVerbosityLevel: 0 })).release();
  } finally {
    fs.writeSync = writeSync;
  }
  const placed = placements(text.join('').split('\n'));
  const stray = Object.entries(placed).filter(([ep]) => ep !== 'WebGpuExecutionProvider')
    .flatMap(([ep, ops]) => Object.keys(ops).filter((op) => !SHAPE_OPS.has(op)).map((op) => `${op} on ${ep}`));
  if (!('WebGpuExecutionProvider' in placed) || stray.length) {
    throw new Error(`ORT did not place the model on its WebGPU EP: ${stray.join(', ') || 'no node on WebGPU'} (${JSON.stringify(placed)})`);
  }
  return placed;
}

/**
 * Op type counts by execution provider, from ORT's verbose "Node placements" lines: "Node(s) placed on [EP].
 * Number of nodes: N" then one "OpType (name)" line a node, or "All nodes placed on [EP]. Number of nodes: N".
 * @param {string[]} lines
 */
function placements(lines) {
  /** @type {Record<string, Record<string, number>>} */
  const placed = {};
  /** @type {Record<string, number> | null} */
  let ops = null;
  for (const line of lines) {
    const text = line.replace(/^.*VerifyEachNodeIsAssignedToAnEp\]/, '');
    const head = /(All nodes|Node\(s\)) placed on \[(\w+)\]\. Number of nodes: (\d+)/.exec(text);
    if (head) {
      ops = placed[head[2]] = {};
      if (head[1] === 'All nodes') ops['(all)'] = Number(head[3]);
    } else if (ops && text !== line && /^\s+\w+ \(/.test(text)) {
      const op = text.trim().split(' ')[0];
      ops[op] = (ops[op] ?? 0) + 1;
    } else if (text === line) {
      ops = null; // the placement lines are over
    }
  }
  return placed;
}

/**
 * One greedy generation from empty caches: seconds to the first token (the prompt's call), then between
 * tokens; the ids.
 */
async function generate() {
  /** @type {any[]} */
  let past = pastNames.map(() => new ort.Tensor('float32', new Float32Array(0), [1, kvHeads, 0, headDim]));
  let input = prompt;
  const ids = [];
  const steps = [];
  let last = performance.now();
  while (ids.length < tokens) {
    const feeds = { [tokensName]: new ort.Tensor('int64', BigInt64Array.from(input, BigInt), [1, input.length]) };
    pastNames.forEach((n, i) => { feeds[n] = past[i]; });
    const out = await session.run(feeds);
    const id = Number((await out[idName].getData())[0]);
    const now = performance.now();
    steps.push((now - last) / 1e3);
    last = now;
    out[logitsName].dispose();
    out[idName].dispose();
    if (ids.length) for (const t of past) t.dispose(); // the first call's are the empty CPU tensors
    past = presentNames.map((n) => out[n]);
    ids.push(id);
    input = [id];
  }
  for (const t of past) t.dispose();
  return { ids, steps };
}

await warmUp(generate, Number(values['warm-up']));
const runs = [];
for (let i = 0; i < Number(values.runs); i++) runs.push(await generate());
console.log(JSON.stringify({
  device: `${adapter} (Dawn for Node)`, version, placed,
  firstToken: median(runs.map((r) => r.steps[0])),
  perToken: median(runs.map((r) => median(r.steps.slice(1)))),
  ids: runs.at(-1)?.ids,
  ...peakMemory(),
}));
await session.release();
process.exit(0); // Dawn's instance keeps the event loop alive
