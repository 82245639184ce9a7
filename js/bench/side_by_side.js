// Ours against onnxruntime-web's WebGPU execution provider on the same models, inputs and device, call for
// call, alternating. Runs in a browser page (side_by_side.html, served by `webgpu-torch bench browser`) and
// in Node (side_by_side_node.js, Dawn for Node), over a folder that `webgpu-torch bench browser` wrote:
//
//   manifest.json  {models: [{name, kind: "call" | "decoder", wgpt, onnx, inputs: [{onnx, dtype, shape, file}],
//                  ...}]}: each model compiled by us (.wgpt) and exported by torch.onnx (.onnx) from the same
//                  torch module, and its inputs as raw little-endian files
//
// kind "call": a whole call each side, host in and host out (our `run`; ORT's `run` with outputs on the CPU),
// timed by performance.now(). kind "decoder": a greedy decode of `steps` tokens from `start`, one step a call,
// the self-attention cache and the cross-attention K/V kept on the GPU on both sides (ours: the decoder's
// state, updated in place, steps pipelined as generation.js runs them; ORT's: a functional cache as
// GPU-buffer tensors), the next token read back each step, timed per step. Both sides run on the same adapter,
// each on its own device (ORT's WebGPU build makes its own, whatever env.webgpu.device says), each with its own
// defaults: our tuning, ORT's graph optimisation.

import { Decoder, DeviceTensor, generate, generationOptions, load } from '../src/index.js';

/** @typedef {{onnx: string, dtype: string, shape: number[], file: string}} InputFile */
/**
 * @typedef {{name: string, kind: 'call' | 'decoder', wgpt: string, onnx: string, inputs: InputFile[],
 *   start?: number, steps?: number, layers?: number, heads?: number, headDim?: number, tokenInput?: string,
 *   pastInputs?: string[], crossInputs?: string[], outputs?: string[]}} Entry
 * A decoder's `inputs` are its cross-attention K/V (ORT names: crossInputs); ORT's token and cache are made by
 * its decode loop (tokenInput, pastInputs); `outputs` are ORT's names: logits, token, the grown cache. Our
 * .wgpt is the stateful step (token, position, cross K/V), ORT's .onnx the functional one.
 */
/**
 * @typedef {object} Env
 * @property {(name: string) => Promise<Uint8Array>} read a file of the folder
 * @property {any} ort the onnxruntime-web module (its WebGPU build)
 * @property {GPUDevice} device the device both sides run on
 * @property {import('../src/session.js').LoadOptions} options our load options
 * @property {number} calls timed calls (steps: generations) a side
 * @property {(line: string) => void} log
 */

/** @param {number[]} xs */
export const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

const ARRAYS = /** @type {Record<string, any>} */ ({ float32: Float32Array, int64: BigInt64Array, int32: Int32Array });

/**
 * An input's bytes as a typed array of its dtype.
 * @param {Env} env
 * @param {InputFile} x
 */
async function inputData(env, x) {
  const bytes = await env.read(x.file);
  const copy = bytes.slice().buffer; // aligned for the typed array
  return new ARRAYS[x.dtype](copy);
}

/**
 * The largest difference between two outputs, relative to the second's scale (a check both sides computed
 * the same thing, not a test).
 * @param {ArrayLike<number>} a
 * @param {ArrayLike<number>} b
 */
function relativeError(a, b) {
  let err = 0;
  let scale = 0;
  for (let i = 0; i < b.length; i++) {
    err = Math.max(err, Math.abs(Number(a[i]) - Number(b[i])));
    scale = Math.max(scale, Math.abs(Number(b[i])));
  }
  return scale ? err / scale : err;
}

/**
 * @param {any} value
 * @returns {{data: ArrayLike<number>}[]}
 */
function leaves(value) {
  if (value && ArrayBuffer.isView(value.data)) return [value];
  if (Array.isArray(value)) return value.flatMap(leaves);
  if (value && typeof value === 'object') return Object.values(value).flatMap(leaves);
  return [];
}

/**
 * One model, whole calls: {ours, ort} milliseconds per call (medians) and how far apart the first outputs are.
 * @param {Entry} entry
 * @param {Env} env
 */
async function compareCalls(entry, env) {
  const [program, bytes, data] = await Promise.all([load(await env.read(entry.wgpt), env.options), env.read(entry.onnx),
    Promise.all(entry.inputs.map((x) => inputData(env, x)))]);
  const session = await env.ort.InferenceSession.create(bytes, { executionProviders: ['webgpu'] });
  try {
    const ours = data.map((d, i) => ({ data: d, shape: entry.inputs[i].shape }));
    const feeds = Object.fromEntries(entry.inputs.map((x, i) => [x.onnx, new env.ort.Tensor(x.dtype, data[i], x.shape)]));
    const runOurs = () => program.run(ours);
    const runOrt = async () => session.run(feeds);
    let mine = await runOurs(); // warm: pipelines are made at load on our side, at the first run on ORT's
    let theirs = await runOrt();
    mine = await runOurs();
    theirs = await runOrt();
    const agree = relativeError(leaves(mine)[0].data, theirs[session.outputNames[0]].data);
    const times = { ours: /** @type {number[]} */ ([]), ort: /** @type {number[]} */ ([]) };
    for (let i = 0; i < env.calls; i++) {
      for (const [side, f] of /** @type {const} */ ([['ours', runOurs], ['ort', runOrt]])) {
        const start = performance.now();
        await f();
        times[side].push(performance.now() - start);
      }
    }
    return { ours: median(times.ours), ort: median(times.ort), agree, unit: 'call' };
  } finally {
    program.destroy();
    await session.release();
  }
}

/**
 * One decoder step program, greedy decoding: {ours, ort} milliseconds per token after the first (medians
 * over `calls` generations), and whether both chose the same tokens.
 * @param {Entry} entry
 * @param {Env} env
 */
async function compareDecoder(entry, env) {
  const { ort, device } = env;
  const [program, bytes, cross] = await Promise.all([load(await env.read(entry.wgpt), env.options), env.read(entry.onnx),
    Promise.all(entry.inputs.map((x) => inputData(env, x)))]);
  const outputs = /** @type {string[]} */ (entry.outputs);
  const [logitsName, tokenName, ...presentNames] = outputs;
  const session = await ort.InferenceSession.create(bytes, {
    executionProviders: ['webgpu'],
    preferredOutputLocation: Object.fromEntries(outputs.map((n) => [n, n === tokenName ? 'cpu' : 'gpu-buffer'])),
  });
  // The cross-attention K/V, uploaded once: our DeviceTensors; GPU tensors on ORT's device for ORT.
  const crossOurs = cross.map((d, i) => {
    const { shape } = entry.inputs[i];
    const strides = shape.map((_, k) => shape.slice(k + 1).reduce((a, b) => a * b, 1));
    const t = new DeviceTensor(device, d.byteLength, shape, strides, 0, 'float32');
    device.queue.writeBuffer(t.buffer, 0, d);
    return t;
  });
  /** @type {GPUDevice} */
  const ortDevice = (await ort.env.webgpu.device) ?? device;
  const crossBuffers = cross.map((d) => {
    const buffer = ortDevice.createBuffer({ size: d.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    ortDevice.queue.writeBuffer(buffer, 0, d);
    return buffer;
  });
  const crossOrt = crossBuffers.map((b, i) => ort.Tensor.fromGpuBuffer(b, { dataType: 'float32', dims: entry.inputs[i].shape }));
  const [layers, heads, headDim] = [/** @type {number} */ (entry.layers), entry.heads, entry.headDim];
  const steps = /** @type {number} */ (entry.steps);

  /** Our greedy decode (the cache is the decoder's state; generation.js's pipelined loop): the tokens and each step's ms. */
  const decodeOurs = async () => {
    const decoded = await generate(new Decoder(program), [/** @type {number} */ (entry.start)], generationOptions({ maxNewTokens: steps }), [crossOurs]);
    return { ids: decoded.ids, times: decoded.steps.map((s) => s * 1e3) };
  };

  /** ORT's greedy decode, the same way. */
  const decodeOrt = async () => {
    /** @type {any[]} */
    let past = Array(2 * layers).fill(null).map(() => new ort.Tensor('float32', new Float32Array(0), [1, heads, 0, headDim]));
    let token = /** @type {number} */ (entry.start);
    const ids = [];
    const times = [];
    for (let s = 0; s < steps; s++) {
      const start = performance.now();
      /** @type {Record<string, any>} */
      const feeds = { [/** @type {string} */ (entry.tokenInput)]: new ort.Tensor('int64', BigInt64Array.of(BigInt(token)), [1, 1]) };
      /** @type {string[]} */ (entry.pastInputs).forEach((n, i) => { feeds[n] = past[i]; });
      /** @type {string[]} */ (entry.crossInputs).forEach((n, i) => { feeds[n] = crossOrt[i]; });
      const out = await session.run(feeds);
      out[logitsName].dispose();
      if (s) for (const t of past) t.dispose();
      past = presentNames.map((n) => out[n]);
      token = Number(out[tokenName].data[0]);
      times.push(performance.now() - start);
      ids.push(token);
    }
    for (const t of past) t.dispose();
    return { ids, times };
  };

  try {
    let mine = await decodeOurs(); // warm
    let theirs = await decodeOrt();
    const perToken = { ours: /** @type {number[]} */ ([]), ort: /** @type {number[]} */ ([]) };
    for (let i = 0; i < env.calls; i++) {
      mine = await decodeOurs();
      theirs = await decodeOrt();
      perToken.ours.push(median(mine.times.slice(1)));
      perToken.ort.push(median(theirs.times.slice(1)));
    }
    const same = mine.ids.findIndex((id, i) => id !== theirs.ids[i]);
    return { ours: median(perToken.ours), ort: median(perToken.ort), agree: same < 0 ? steps : same, unit: 'token',
      ids: { ours: mine.ids, ort: theirs.ids } };
  } finally {
    for (const t of crossOurs) t.release();
    for (const b of crossBuffers) b.destroy();
    program.destroy();
    await session.release();
  }
}

/**
 * Every model of the manifest, one after another: a row each (or the reason it failed).
 * @param {{models: Entry[]}} manifest
 * @param {Env} env
 */
export async function compare(manifest, env) {
  const rows = [];
  for (const entry of manifest.models) {
    env.log(`${entry.name} ...`);
    try {
      const row = { name: entry.name, ...(entry.kind === 'decoder' ? await compareDecoder(entry, env) : await compareCalls(entry, env)) };
      env.log(`${entry.name}: ours ${row.ours.toFixed(2)} ms, ORT ${row.ort.toFixed(2)} ms per ${row.unit} (${(row.ort / row.ours).toFixed(2)}×)`);
      rows.push(row);
    } catch (e) {
      env.log(`${entry.name}: failed: ${/** @type {Error} */ (e)?.stack ?? e}`);
      rows.push({ name: entry.name, error: String(/** @type {Error} */ (e)?.message ?? e) });
    }
  }
  return rows;
}
