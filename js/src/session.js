// A loaded program: `load(source, options)` reads and validates the artifact's header, opens the device,
// allocates the buffers, streams the constants into them, chooses among dispatch options, and builds
// everything else once; `run` and `runOnDevice` then only check inputs, write, encode, submit and read.

import { PREAMBLE, readContainer, readHeader } from './artifact.js';
import { openDevice } from './engine.js';
import { DeviceTensor } from './device_tensor.js';
import { ArtifactError, InputError } from './errors.js';
import { Executor } from './executor.js';
import * as expr from './symbolic.js';
import { bind, checkInput, deviceForms } from './inputs.js';
import { forDevice } from './fit.js';
import { openSource } from './source.js';
import * as timing from './timing.js';
import * as tree from './tree.js';
import * as tuning from './tuning.js';
import { upload } from './upload.js';

/** @typedef {import('./artifact.js').ProgramSpec} ProgramSpec */
/** @typedef {import('./device_tensor.js').HostTensor} HostTensor */
/** @typedef {import('./dtypes.js').ModelDtype} ModelDtype */
/** @typedef {import('./inputs.js').InputValue} InputValue */
/** @typedef {import('./source.js').Source} Source */
/** @typedef {import('./tree.js').Const} Const */
/** @typedef {import('./upload.js').Progress} Progress */
/**
 * @typedef {import('./engine.js').DeviceOptions & import('./tuning.js').TuningOptions &
 *   import('./executor.js').ExecutorOptions & import('./source.js').SourceOptions &
 *   {disableFeatures?: string[], onProgress?: (progress: Progress) => void}} LoadOptions
 * `disableFeatures`: run as if the device lacked these optional features ("shader-f16": the fallbacks).
 * `onProgress`: called as the file is read, after the header and after each piece of the data.
 */
/**
 * A call in flight (Program.start): `kept` its flat outputs kept on the GPU (undefined where not kept),
 * `result()` the output structure once read, `discard()` to never read it, `host` its host seconds (encode,
 * submit; map and copy once read).
 * @typedef {{kept: (HostTensor | DeviceTensor | undefined)[], host: Record<string, number>,
 *   result: () => Promise<any>, discard: () => void}} Pending
 */
/**
 * A call's arguments: an array of positional arguments; `{args, kwargs}`; an object of tensors by input
 * name (`{input_ids: …, attention_mask: …}`, every input of `program.inputs` named once); or one tensor.
 * @typedef {unknown[] | {args?: unknown[], kwargs?: Record<string, unknown>} | Record<string, InputValue> |
 *   InputValue} Inputs
 */
/**
 * A model's results in the structure it returned them: a tensor, an array (a tuple or list), an object (a
 * dict or a transformers ModelOutput), or a constant fixed at export.
 * @template T
 * @typedef {T | Const | Tree<T>[] | {[key: string]: Tree<T>}} Tree
 */
/** @typedef {Tree<HostTensor>} Outputs what `run` returns */
/** @typedef {Tree<HostTensor | DeviceTensor>} DeviceOutputs what `runOnDevice` returns */
/**
 * One size of an input's shape: a number when static; for a dynamic size, its name (a symbol, or the
 * expression over symbols it is) and the range of values a call may give it.
 * @typedef {number | {name: string, min: number, max: number}} Dim
 */
/** @typedef {{name: string, dtype: ModelDtype, shape: ReadonlyArray<Dim>}} InputInfo an input, in call order */
/** @typedef {{dtype: ModelDtype, shape: ReadonlyArray<Dim>}} OutputInfo an output, in the order of the output tree's leaves */

/**
 * Load a program: `source` is the artifact's bytes, a Blob (a File), a URL, or (Node) a file path. It is read
 * front to back, never whole: the header is validated before anything reaches the device, then each constant
 * is written to its buffer as its bytes arrive; data found damaged at its end (its checksum; a download's
 * length) destroys what was written before anything is compiled or run.
 * @param {Source} source
 * @param {LoadOptions} [options]
 * @returns {Promise<Program>}
 */
export async function load(source, options = {}) {
  const reader = await openSource(source, options);
  /** @type {import('./source.js').Verdict} */
  let verdict = 'unknown';
  try {
    const container = readContainer(await reader.take(PREAMBLE), reader.size, reader.where);
    const spec = readHeader(await reader.take(container.headerLength), container, reader.where);
    options.onProgress?.({ bytes: reader.offset, totalBytes: container.size, tensors: 0, totalTensors: [...spec.constants.values()].filter((c) => !c.external).length, source: reader.where });
    const gpu = await openDevice(options);
    const disabled = new Set(options.disableFeatures ?? []);
    const features = new Set([...gpu.device.features].filter((f) => !disabled.has(f)));
    const fitted = forDevice(spec, features);
    // The file's references to another's constants are checked here (ArtifactError: named with its file).
    const executor = await Executor.allocate(fitted, gpu, options).catch((e) => {
      throw e instanceof ArtifactError ? new ArtifactError(`${reader.where}: ${e.message}`) : e;
    });
    try {
      await upload(reader, container, fitted, gpu.device, executor.buffers, options.onProgress);
      verdict = 'sound';
      const tuned = await tuning.resolve(fitted, gpu, features, options, executor.buffers);
      return Program.create(tuned, await executor.build(tuned), reader.where);
    } catch (e) {
      executor.destroy();
      throw e;
    }
  } catch (e) {
    if (verdict === 'unknown' && e instanceof ArtifactError) verdict = 'damaged';
    throw e;
  } finally {
    await reader.close(verdict);
  }
}

export class Program {
  /** @internal @type {ProgramSpec} */
  spec;
  /** @internal @type {Executor} */
  executor;
  /** @internal @type {string} where it was loaded from, for messages */
  where;
  /** @internal @type {(Uint32Array | null)[]} per input, the device form of host data that needs converting */
  scratch;
  /** @internal @type {Promise<unknown>} calls run one at a time: they share the program's buffers */
  queue = Promise.resolve();
  /** @readonly @type {ReadonlyArray<InputInfo>} the inputs, in call order, with each dynamic size's range */
  inputs;
  /** @readonly @type {ReadonlyArray<OutputInfo>} the outputs, in the order of the output tree's leaves */
  outputs;

  /**
   * @internal
   * @param {ProgramSpec} spec
   * @param {Executor} executor
   * @param {string} where
   */
  static create(spec, executor, where) {
    return new Program(spec, executor, where);
  }

  /**
   * Programs come from `load`.
   * @private
   * @param {ProgramSpec} spec
   * @param {Executor} executor
   * @param {string} where
   */
  constructor(spec, executor, where) {
    this.spec = spec;
    this.executor = executor;
    this.where = where;
    this.scratch = spec.inputs.map(() => null);
    this.inputs = Object.freeze(spec.inputs.map((x) => Object.freeze({ name: x.name, dtype: x.dtype, shape: dims(x.shape, spec) })));
    this.outputs = Object.freeze(spec.outputs.map((x) => Object.freeze({ dtype: x.dtype, shape: dims(x.shape, spec) })));
  }

  /** The GPUDevice the program runs on (for `DeviceTensor.fromGpuBuffer` and buffers of one's own). */
  get device() {
    return this.executor.device;
  }

  /** The inputs' names, in call order. */
  get inputNames() {
    return this.inputs.map((x) => x.name);
  }

  /** Provenance the compiler recorded (torch version, model name). */
  get meta() {
    return this.spec.meta;
  }

  /**
   * Run on the GPU; the outputs in the model's structure, each `{data, shape, dtype}` with a typed array.
   * The type parameter states the structure the caller knows the model returns (`run<HostTensor>(x)`).
   * @template {Outputs} [T=Outputs]
   * @param {Inputs} inputs
   * @returns {Promise<T>}
   */
  async run(inputs) {
    return /** @type {Promise<T>} */ (this.call(inputs, () => false));
  }

  /**
   * Like run, but outputs stay on the GPU as DeviceTensors (pass them to later calls of any program on the
   * same device, or `.read()` them); the flat output indices in `read` come back to the host instead, in
   * the same submit.
   * @template {DeviceOutputs} [T=DeviceOutputs]
   * @param {Inputs} inputs
   * @param {{read?: number[]}} [options]
   * @returns {Promise<T>}
   */
  async runOnDevice(inputs, options = {}) {
    const read = new Set(options.read ?? []);
    return /** @type {Promise<T>} */ (this.call(inputs, (i) => !read.has(i)));
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
    const leaves = this.byName(inputs) ?? tree.flatten(this.spec.inputTree, callArgs(inputs));
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
   * @internal
   * @param {Inputs} inputs
   * @param {(i: number) => boolean} keep
   */
  async call(inputs, keep) {
    const leaves = this.byName(inputs) ?? tree.flatten(this.spec.inputTree, callArgs(inputs));
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

  /**
   * The flat inputs of a call that names them (`{input_ids, attention_mask}`: a plain object whose keys
   * are all input names), or null for a call in the model's own structure.
   * @internal
   * @param {Inputs} inputs
   * @returns {unknown[] | null}
   */
  byName(inputs) {
    if (!isPlainObject(inputs)) return null;
    const given = Object.keys(/** @type {object} */ (inputs));
    const names = new Set(this.inputNames);
    if (!given.length || !given.every((k) => names.has(k))) return null;
    const missing = this.inputNames.filter((n) => !given.includes(n));
    if (missing.length) {
      throw new InputError(`missing input${missing.length > 1 ? 's' : ''} ${missing.map((n) => `'${n}'`).join(', ')} ` +
        `(a call by name passes every input: ${this.inputNames.join(', ')})`);
    }
    const named = /** @type {Record<string, unknown>} */ (inputs);
    return this.inputNames.map((n) => named[n]);
  }

  /** Free the program's GPU buffers now (device tensors it returned stay valid); later calls fail. */
  destroy() {
    this.executor.destroy();
  }

  /** `using program = await load(…)` destroys it at the end of the scope. */
  [Symbol.dispose]() {
    this.destroy();
  }

  toString() {
    return `Program(${this.where}: ${this.spec.dispatches.length} dispatches, inputs ` +
      `${this.inputs.map((x) => `${x.name}: ${x.dtype}[${x.shape.map((d) => typeof d === 'number' ? d : d.name).join(', ')}]`).join(', ')})`;
  }
}

/**
 * GPU seconds per call of `program` at the sizes of its last call, median over `samples` submits of at
 * least `repeats` back-to-back calls (timestamp queries where the device has them, else the wall clock).
 * @param {Program} program
 * @param {number} [repeats]
 * @param {number} [samples]
 * @returns {Promise<{seconds: number, method: 'timestamps' | 'wall clock'}>}
 */
export function gpuTime(program, repeats = 10, samples = 5) {
  return timing.gpuTime(program.executor, repeats, samples);
}

/**
 * GPU seconds of each dispatch of `program`, in order, median over `samples` runs (needs the device's
 * `timestamp-query` feature).
 * @param {Program} program
 * @param {number} [samples]
 * @param {number} [repeats] back-to-back runs of each dispatch per timed pass
 * @returns {Promise<number[]>}
 */
export function dispatchTimes(program, samples = 3, repeats = 1) {
  return timing.dispatchTimes(program.executor, samples, repeats);
}

/**
 * An input or output shape as the public API shows it: dynamic sizes with their ranges.
 * @param {import('./symbolic.js').Expr[]} shape
 * @param {ProgramSpec} spec
 * @returns {ReadonlyArray<Dim>}
 */
function dims(shape, spec) {
  return Object.freeze(shape.map((e) => {
    if (typeof e === 'number') return e;
    const [min, max] = expr.bounds(e, spec.symbols);
    return Object.freeze({ name: expr.show(e), min, max });
  }));
}

/** @param {unknown} v */
function isPlainObject(v) {
  if (v === null || typeof v !== 'object' || ArrayBuffer.isView(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
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
