// A loaded program: `load(source, options)` reads and validates the artifact, opens the device, chooses
// among dispatch options, and builds everything once; `run` and `runOnDevice` then only check inputs,
// write, encode, submit and read.

import { parse } from './artifact.js';
import { openDevice } from './device.js';
import { Executor } from './executor.js';
import { bind, checkInput, deviceForms, showShape } from './inputs.js';
import { forDevice } from './kernels.js';
import { readSource } from './source.js';
import * as tree from './tree.js';
import * as tuning from './tuning.js';

/** @typedef {import('./artifact.js').ProgramSpec} ProgramSpec */
/** @typedef {import('./device_tensor.js').DeviceTensor} DeviceTensor */
/** @typedef {import('./device_tensor.js').HostTensor} HostTensor */
/** @typedef {import('./device.js').Gpu} Gpu */
/** @typedef {import('./source.js').Source} Source */
/**
 * @typedef {import('./device.js').DeviceOptions & import('./tuning.js').TuningOptions &
 *   import('./executor.js').ExecutorOptions & {disableFeatures?: string[]}} LoadOptions
 * `disableFeatures`: run as if the device lacked these optional features ("shader-f16": the fallbacks).
 */
/**
 * A call in flight (Program.start): `kept` its flat outputs kept on the GPU (undefined where not kept),
 * `result()` the output structure once read, `discard()` to never read it, `host` its host seconds (encode,
 * submit; map and copy once read).
 * @typedef {{kept: (HostTensor | DeviceTensor | undefined)[], host: Record<string, number>,
 *   result: () => Promise<any>, discard: () => void}} Pending
 */
/**
 * The call's arguments: an array of positional arguments, {args, kwargs}, or a single tensor.
 * @typedef {unknown[] | {args?: unknown[], kwargs?: Record<string, unknown>} | import('./inputs.js').InputValue} Inputs
 */

/**
 * Load a program: `source` is the artifact's bytes, a URL, or (Node) a file path.
 * @param {Source} source
 * @param {LoadOptions} [options]
 * @returns {Promise<Program>}
 */
export async function load(source, options = {}) {
  const { bytes, where } = await readSource(source);
  const spec = parse(bytes, where);
  const gpu = await openDevice(options);
  const disabled = new Set(options.disableFeatures ?? []);
  const features = new Set([...gpu.device.features].filter((f) => !disabled.has(f)));
  const tuned = await tuning.resolve(forDevice(spec, features), gpu, features, options);
  return new Program(tuned, await Executor.create(tuned, gpu, features, options), where);
}

export class Program {
  /**
   * @param {ProgramSpec} spec
   * @param {Executor} executor
   * @param {string} where
   */
  constructor(spec, executor, where) {
    this.spec = spec;
    this.executor = executor;
    this.where = where;
    /** @type {(Uint32Array | null)[]} */
    this.scratch = spec.inputs.map(() => null);
    /** @type {Promise<unknown>} calls run one at a time: they share the program's buffers */
    this.queue = Promise.resolve();
  }

  get device() {
    return this.executor.device;
  }

  get inputs() {
    return this.spec.inputs;
  }

  get outputs() {
    return this.spec.outputs;
  }

  get meta() {
    return this.spec.meta;
  }

  /**
   * Run on the GPU; outputs in the model's structure, each {data, shape, dtype} with a typed array.
   * @param {Inputs} inputs
   * @returns {Promise<any>}
   */
  async run(inputs) {
    return this.call(inputs, () => false);
  }

  /**
   * Like run, but outputs stay on the GPU as DeviceTensors (pass them to later calls of any program on the
   * same device, or `.read()` them); the flat output indices in `read` come back to the host instead, in
   * the same submit.
   * @param {Inputs} inputs
   * @param {{read?: number[]}} [options]
   * @returns {Promise<any>}
   */
  async runOnDevice(inputs, options = {}) {
    const read = new Set(options.read ?? []);
    return this.call(inputs, (i) => !read.has(i));
  }

  /**
   * Submit a call and resolve once it is submitted, before it finishes: `kept` holds the flat outputs in
   * `keep` as DeviceTensors at once, and `result()` waits for those in `read` (by default the others; an
   * output may be both) and resolves to the output structure. Calls may be in flight together: a decoder
   * passes this step's token, kept on the GPU, to the next step before reading it back.
   * @param {Inputs} inputs
   * @param {{keep?: number[], read?: number[]}} [options]
   * @returns {Promise<Pending>}
   */
  async start(inputs, options = {}) {
    const leaves = tree.flatten(this.spec.inputTree, callArgs(inputs));
    const checked = this.spec.inputs.map((x, i) => checkInput(x, leaves[i]));
    const env = bind(this.spec, checked);
    const keep = new Set(options.keep ?? []);
    const read = options.read ? new Set(options.read) : null;
    const flags = this.spec.outputs.map((_, i) => keep.has(i));
    const reads = this.spec.outputs.map((_, i) => (read ? read.has(i) : !keep.has(i)));
    const started = this.queue.then(() => this.executor.start(deviceForms(this.spec, checked, this.scratch), env, flags, reads));
    this.queue = started.catch(() => {});
    const call = await started;
    return {
      kept: call.kept,
      host: call.host,
      result: async () => tree.unflatten(this.spec.outputTree, await call.result()),
      discard: () => call.discard(),
    };
  }

  /**
   * @param {Inputs} inputs
   * @param {(i: number) => boolean} keep
   */
  async call(inputs, keep) {
    const leaves = tree.flatten(this.spec.inputTree, callArgs(inputs));
    const checked = this.spec.inputs.map((x, i) => checkInput(x, leaves[i]));
    const env = bind(this.spec, checked);
    const flags = this.spec.outputs.map((_, i) => keep(i));
    // Host data is converted when the call starts: the per-input scratch serves one call at a time.
    const result = this.queue.then(() => this.executor.run(deviceForms(this.spec, checked, this.scratch), env, flags));
    this.queue = result.catch(() => {});
    return result.then((leaves) => tree.unflatten(this.spec.outputTree, leaves));
  }

  /** The names of the tensors this program keeps between calls (a KV cache), zero at load. */
  get states() {
    return this.spec.states.map((s) => s.name);
  }

  /**
   * State `name` as the calls made so far left it (after those still queued).
   * @param {string} name
   * @returns {Promise<HostTensor>}
   */
  async readState(name) {
    const result = this.queue.then(() => this.executor.readState(name));
    this.queue = result.catch(() => {});
    return result;
  }

  /**
   * Zero the named states (every state when none is named), after the calls made so far.
   * @param {...string} names
   * @returns {Promise<void>}
   */
  async resetState(...names) {
    const result = this.queue.then(() => this.executor.resetState(names));
    this.queue = result.catch(() => {});
    return result;
  }

  /** Free the program's GPU buffers (device tensors it returned stay valid). */
  destroy() {
    this.executor.destroy();
  }

  toString() {
    const s = this.spec;
    return `Program(${this.where}: ${s.dispatches.length} dispatches, inputs ` +
      `${s.inputs.map((x) => `${x.name}: ${x.dtype}${showShape(x.shape)}`).join(', ')})`;
  }
}

/**
 * (args, kwargs) from what a caller passes.
 * @param {Inputs} inputs
 * @returns {[unknown[], Record<string, unknown>]}
 */
function callArgs(inputs) {
  if (Array.isArray(inputs)) return [inputs, {}];
  if (inputs !== null && typeof inputs === 'object' && !ArrayBuffer.isView(inputs) &&
      ('args' in inputs || 'kwargs' in inputs) && !('data' in inputs)) {
    const { args = [], kwargs = {} } = /** @type {{args?: unknown[], kwargs?: Record<string, unknown>}} */ (inputs);
    return [args, kwargs];
  }
  return [[inputs], {}];
}
