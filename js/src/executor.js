// Running a program: everything is built once here, so a call only writes inputs, encodes and reads back.
//
// Built in two halves around the constants' upload (session.js's load streams them in between; upload.js):
// `allocate` checks the spec (fitted to the device's features) against the device's limits and makes its
// buffers; `build`, for the spec tuned (the same buffers), makes one shader module per source a dispatch uses,
// explicit bind group and pipeline layouts from each kernel's `bindings`, one pipeline per kernel a dispatch
// runs, every dispatch's uniform in one uniform buffer, one bind group per dispatch, and one mappable staging
// buffer for all outputs. A failure is a DeviceError, and destroys what was made.
// A call: write the inputs, encode every dispatch into one compute pass of one command encoder, copy the
// outputs' byte ranges into the staging buffer, submit once, map once.
//
// Dynamic sizes: buffers are sized for the largest values. When a call's sizes differ from the last call's,
// prepare() rewrites the uniform words that depend on them (one write per such dispatch), folds those
// dispatches' grids and evaluates the output views; calls at the same sizes repeat nothing.

import { foldGrid } from './artifact.js';
import * as compileCost from './compile_cost.js';
import { DeviceTensor } from './device_tensor.js';
import { gather, ITEMSIZE } from './dtypes.js';
import { ArtifactError, CallTimeout, DeviceError, DeviceIndexError, InputError } from './errors.js';
import { envVar, isNode } from './env.js';
import * as expr from './symbolic.js';
import { allocated, limitProblem, sourceFor } from './fit.js';
import { LIMITS } from './limits.js';
import { memoryCap } from './memory.js';
import { MAX_UNAWAITED, stateOf } from './pool.js';

/** @typedef {import('./artifact.js').ProgramSpec} ProgramSpec */
/** @typedef {import('./engine.js').Gpu} Gpu */
/** @typedef {import('./dtypes.js').ModelDtype} ModelDtype */
/** @typedef {import('./device_tensor.js').HostTensor} HostTensor */
/** @typedef {import('./symbolic.js').Env} Env */
/**
 * An output at the current sizes: `size` bytes from byte `start` of `buffer` go to byte `slot` of the
 * staging buffer; the view's first element is element `first` from there, and its strides count elements.
 * @typedef {{buffer: GPUBuffer, start: number, size: number, first: number, slot: number, shape: number[],
 *   strides: number[], dtype: ModelDtype}} Readback
 */
/**
 * @typedef {object} ExecutorOptions
 * @property {number} [timeoutMs] milliseconds a call may take (default: WEBGPU_TORCH_TIMEOUT seconds, else 60 s); the
 *   first more, for compiling its shaders (firstCallSeconds)
 * @property {number} [maxMemory] bytes of buffers a program may ask for (default: WEBGPU_TORCH_MAX_MEMORY, else
 *   32 GiB, and on a CPU adapter 3/4 of the host's available memory: memory.js)
 * @property {import('./session.js').Program} [share] a program on the same device whose buffers this one uses:
 *   its states of the same names (each of the same shape and dtype), what one's calls write the other's read (a
 *   prefill writes the KV cache a decoder step reads; docs/artifact.md, State), and the constants this
 *   program's file refers to in that program's file (a prefill's weights; Shared constants)
 */

export const TIMEOUT_VAR = 'WEBGPU_TORCH_TIMEOUT';
const DEFAULT_TIMEOUT = LIMITS.call_timeout.seconds; // a program's first call has more: firstCallSeconds
const COMPILE_SECONDS = LIMITS.call_timeout.first_call_seconds_per_token;
// Dawn for Node polls for a pending map with setImmediate, keeping one core busy for the whole wait; on a CPU
// adapter (lavapipe) that core is taken from the shader threads. So in Node a reading call naps before asking
// for its map: NAP_FRACTION of the shortest start-to-map time of the last NAP_WINDOW reading calls (a call
// starts at its submit, or when the reading call before it mapped, whichever is later; each time is at least
// the GPU's, and a nap that outlasts the work — its map there within OVERSLEPT_MS of waking — counts half its
// time, so a long call, such as a first decoder step waiting for its encoder, does not hold later naps long). Naps under
// NAP_MIN_MS are skipped: there a timer's granularity costs more than the poll. Timed work (timing.js) naps too:
// the polling core slowed the GPU time it measured by 1.3-2.2x on lavapipe over 2 shared cores (issue 31).
export const NAP_FRACTION = 0.9;
const NAP_WINDOW = 8;
const NAP_MIN_MS = 20;
const OVERSLEPT_MS = 1;
const BUFFER_TYPE = /** @type {const} */ ({ read: 'read-only-storage', read_write: 'storage', uniform: 'uniform' });

/**
 * @param {number} n
 * @param {number} k
 */
const roundUp = (n, k) => Math.ceil(n / k) * k;

/**
 * What a kernel's bind group layout depends on: its binding kinds and its Params size.
 * @param {import('./artifact.js').KernelSpec} k
 */
const layoutKey = (k) => `${k.bindings.join()}|${k.uniform?.size ?? 0}`;

/**
 * The byte range of an output's buffer a call copies out (or into a DeviceTensor of its own) for `view` at the
 * call's sizes: from its first element rounded down to 4 bytes, to one past its furthest element rounded up to
 * 4 (docs/artifact.md, "Reading outputs"); `first` is the view's first element counted from `start`.
 * @param {{shape: number[], strides: number[], offset: number}} view
 * @param {number} [itemsize] bytes per element of the device form
 * @returns {{start: number, size: number, first: number}}
 */
export function byteRange(view, itemsize = ITEMSIZE) {
  const numel = view.shape.reduce((a, b) => a * b, 1);
  const span = numel ? 1 + view.shape.reduce((s, m, k) => s + (m - 1) * view.strides[k], 0) : 0;
  const start = Math.floor((view.offset * itemsize) / 4) * 4;
  const end = Math.ceil(((view.offset + span) * itemsize) / 4) * 4;
  return { start, size: end - start, first: (view.offset * itemsize - start) / itemsize };
}

/**
 * An engine's error as one line: its first line, with a count of the lines left out (compiler output).
 * @param {unknown} e
 */
export function oneLine(e) {
  const lines = String(/** @type {Error} */ (e)?.message ?? e).split('\n').filter((l) => l.trim());
  const rest = lines.length > 1 ? ` (and ${lines.length - 1} more lines)` : '';
  return (lines[0] ?? 'unknown error').slice(0, 300) + rest;
}

/**
 * The seconds a call may take: the `timeoutMs` option's, else WEBGPU_TORCH_TIMEOUT's, else DEFAULT_TIMEOUT.
 * @param {number | undefined} timeoutMs
 */
function callTimeout(timeoutMs) {
  if (timeoutMs !== undefined) return timeoutMs / 1000;
  const value = envVar(TIMEOUT_VAR);
  if (!value) return DEFAULT_TIMEOUT;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new DeviceError(`${TIMEOUT_VAR}=${JSON.stringify(value)}: give a number of seconds`);
  return n;
}

/**
 * How long a program's first reading call may take: `timeout` seconds, and COMPILE_SECONDS for each token of
 * what the sources its dispatches run on `engine` cost to compile (compile_cost.js): lavapipe compiles a
 * kernel at its first dispatch (src/webgpu_torch/runtime/executor.py decides alike).
 * @param {ProgramSpec} spec
 * @param {string} engine
 * @param {number} timeout
 */
export function firstCallSeconds(spec, engine, timeout) {
  const sources = [...new Set(spec.dispatches.map((d) => sourceFor(spec.kernels[d.kernel], engine)))];
  return timeout + COMPILE_SECONDS * sources.reduce((sum, i) => sum + compileCost.cost(spec.sources[i]), 0);
}

/**
 * The buffer of `other` (the executor of the program `share` names) holding constant `index` of `spec`, which
 * `external` places in another file: that program must be the file's as saved (its data's CRC-32) and hold a
 * constant of the same name and layout with bytes of its own, in a buffer of the size this one needs.
 * @param {ProgramSpec} spec
 * @param {number} index
 * @param {import('./artifact.js').External} external
 * @param {Executor | undefined} other
 * @returns {GPUBuffer}
 */
function externalBuffer(spec, index, external, other) {
  const name = spec.buffers[index].name;
  const what = `constant ${JSON.stringify(name)} is stored in ${external.file}`;
  if (!other) throw new ArtifactError(`${what}: load it with the option share set to the program loaded from that file (loadCausalLM and loadSeq2Seq do)`);
  if (other.spec.dataCrc32 !== external.dataCrc32) {
    throw new ArtifactError(`${what} as it was saved before; the program shared is not that file as saved (its data checksum differs): save the folder again`);
  }
  const j = other.spec.buffers.findIndex((b, k) => b.role === 'constant' && b.name === name && !other.spec.constants.get(k)?.external);
  const theirs = other.spec.constants.get(j);
  const mine = /** @type {import('./artifact.js').Constant} */ (spec.constants.get(index));
  if (!theirs || theirs.layout !== mine.layout || allocated(other.spec.buffers[j].size) !== allocated(spec.buffers[index].size)) {
    throw new ArtifactError(`constant ${JSON.stringify(name)} is not in ${external.file} as this file describes it`);
  }
  return other.buffers[j];
}

export class Executor {
  /**
   * Build everything for `spec`, whose dispatches run as written (fitted to the device and tuned), over buffers
   * whose constants are already written: `borrowed` (allocate's).
   * @param {ProgramSpec} spec
   * @param {Gpu} gpu
   * @param {ExecutorOptions} [options]
   * @param {Map<number, GPUBuffer>} [borrowed]
   * @returns {Promise<Executor>}
   */
  static async create(spec, gpu, options = {}, borrowed = new Map()) {
    return (await Executor.allocate(spec, gpu, options, borrowed)).build(spec);
  }

  /**
   * The first half of building: `spec` checked against the device's limits and its buffers allocated, for its
   * constants to be written (upload.js) before `build`. `borrowed`: buffers by index that this program uses
   * and never destroys instead of its own (a tuning probe's constants, the program's), besides those of
   * `share`.
   * @param {ProgramSpec} spec
   * @param {Gpu} gpu
   * @param {ExecutorOptions} [options]
   * @param {Map<number, GPUBuffer>} [borrowed]
   * @returns {Promise<Executor>}
   */
  static async allocate(spec, gpu, options = {}, borrowed = new Map()) {
    const ex = new Executor(spec, gpu, options, await memoryCap(gpu, options.maxMemory));
    await ex.scoped(() => ex.buildBuffers(borrowed));
    return ex;
  }

  /**
   * The second half: pipelines, bind groups, the readback and the plan for `spec`, the allocated program with
   * each group of options resolved (tuning.js: the same buffers).
   * @param {ProgramSpec} spec
   * @returns {Promise<Executor>}
   */
  async build(spec) {
    this.spec = spec;
    await this.scoped(async () => {
      await this.buildPipelines();
      this.buildBindGroups();
      this.buildReadback();
      this.buildPlan();
    });
    if (!Object.keys(spec.symbols).length) this.prepare({});
    return this;
  }

  /**
   * Run `step` in the device's error scopes: what the engine refuses (validation, out of memory) becomes a
   * DeviceError, and any failure destroys the executor.
   * @param {() => unknown} step
   */
  async scoped(step) {
    const { device } = this;
    device.pushErrorScope('out-of-memory');
    device.pushErrorScope('validation');
    let done = false;
    try {
      await step();
      done = true;
    } finally {
      const invalid = await device.popErrorScope();
      const oom = await device.popErrorScope();
      if (!done || invalid || oom) this.destroy();
      if (done && (invalid || oom)) {
        const why = oom ? `it is out of memory: ${oneLine(oom.message)}` : oneLine(invalid?.message);
        throw new DeviceError(`the ${this.gpu.engine} engine refused this program: ${why}`);
      }
    }
  }

  /**
   * @param {ProgramSpec} spec
   * @param {Gpu} gpu
   * @param {ExecutorOptions} options
   * @param {import('./memory.js').Cap} cap the most bytes of buffers it may ask for
   */
  constructor(spec, gpu, options, cap) {
    this.spec = spec;
    this.gpu = gpu;
    this.device = gpu.device;
    this.timeout = callTimeout(options.timeoutMs);
    /** Seconds the next reading call may take: more until a call has been read (firstCallSeconds). */
    this.limit = firstCallSeconds(spec, gpu.engine, this.timeout);
    this.cap = cap;
    this.options = options;
    /** @type {Map<number, GPUBuffer>} the buffers of `share`'s program this one uses, by buffer index */
    this.shared = this.sharedBuffers();
    /** Fill scratch buffers with NaN before each call (tests: an unwritten output element cannot pass). */
    this.poisonScratch = false;
    /** Why this program refuses calls (a call that timed out); "" while usable. */
    this.failed = '';
    /** Start-to-map milliseconds of the last NAP_WINDOW reading calls and timed runs (Node: how long the next naps). */
    this.waits = /** @type {number[]} */ ([]);
    /** performance.now() when the last reading call's map completed */
    this.lastMapped = 0;
    /** @type {GPUBuffer[]} */
    this.buffers = [];
    /** @type {Set<GPUBuffer>} the buffers of another program's states this one shares: never destroyed here */
    this.borrowed = new Set();
    /** @type {GPUBuffer[]} */
    this.scratch = [];
    /** @type {Uint8Array | null} */
    this.nan = null;
    /** @type {(GPUComputePipeline | null)[]} */
    this.pipelines = [];
    /** @type {Map<string, GPUBindGroupLayout>} by the kernel's bindings, joined */
    this.groupLayouts = new Map();
    /** @type {GPUBindGroup[]} */
    this.bindGroups = [];
    /** @type {number[]} byte offset of each dispatch's uniform in `uniforms` */
    this.uniformOffsets = [];
    /** @type {GPUBuffer | null} */
    this.uniforms = null;
    /** the uniform buffer's contents, kept on the host for patching */
    this.uniformWords = new Uint32Array(0);
    /** @type {GPUBuffer[]} the staging buffers no call in flight holds */
    this.stagings = [];
    this.stagingSize = 4;
    /** @type {number[]} byte offset of each output's slot in a staging buffer */
    this.slots = [];
    /** byte offset of the status words in a staging buffer (after the outputs) */
    this.statusSlot = 0;
    /** @type {Map<number, WeakRef<DeviceTensor>>} input buffer -> the DeviceTensor the last call copied into it */
    this.held = new Map();
    /** @type {number[] | null} the symbol values of the last call, in the order of spec.symbols */
    this.sizes = null;
    // The plan at the current sizes: per dispatch its pipeline, bind group and grid (x = 0: skipped); the
    // dispatches whose uniform or grid depends on the sizes.
    /** @type {GPUComputePipeline[]} */
    this.planPipelines = [];
    /** @type {GPUBindGroup[]} */
    this.planGroups = [];
    this.planGrids = new Uint32Array(0);
    /** @type {{index: number, patches: {word: number, type: string, value: (env: Env) => number}[], count: ((env: Env) => number) | null}[]} */
    this.dynamic = [];
    /** @type {{shape: ((env: Env) => number)[], strides: ((env: Env) => number)[], offset: (env: Env) => number}[]} the outputs' views */
    this.views = [];
    /** @type {Readback[]} */
    this.readbacks = [];
    this.checkDevice();
  }

  /** Refuse by name, before anything is allocated, what this device cannot hold or run. */
  checkDevice() {
    const problem = limitProblem(this.spec, this.device.limits, this.cap, new Set(this.shared.keys()));
    if (problem) throw new DeviceError(problem);
  }

  /**
   * Every buffer, zero-filled (WebGPU's buffers start so), each of its allocated bytes (a float16 constant's
   * buffer as fit.js's forDevice sized it: upload.js writes it widened where the device lacks shader-f16).
   * @param {Map<number, GPUBuffer>} borrowed
   */
  buildBuffers(borrowed) {
    const { spec, device } = this;
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const shared = new Map([...borrowed, ...this.shared]);
    this.buffers = spec.buffers.map((b, i) => shared.get(i) ?? device.createBuffer({ size: allocated(b.size), usage, label: b.name || b.role }));
    this.borrowed = new Set(shared.values());
    this.scratch = this.buffers.filter((_, i) => spec.buffers[i].role === 'scratch');
  }

  /** One module per source a dispatch uses, layouts from the kernels' bindings, one pipeline per kernel run. */
  async buildPipelines() {
    const { spec, device, gpu } = this;
    const used = new Set(spec.dispatches.map((d) => d.kernel));
    /** @type {Map<number, GPUShaderModule>} */
    const modules = new Map();
    /** @type {Map<string, GPUPipelineLayout>} */
    const layouts = new Map();
    const built = spec.kernels.map(async (k, index) => {
      if (!used.has(index)) return null;
      const s = sourceFor(k, gpu.engine);
      let module = modules.get(s);
      if (!module) {
        module = device.createShaderModule({ code: spec.sources[s], label: `source ${s}` });
        modules.set(s, module);
      }
      const signature = layoutKey(k);
      let layout = layouts.get(signature);
      // Explicit, never "auto": an operand a variant never reads still has its slot. The uniform binding's
      // minimum size is the declared Params size, so a kernel whose WGSL Params is larger than the file says
      // fails here, not at a call.
      if (!layout) {
        const group = device.createBindGroupLayout({
          entries: k.bindings.map((kind, binding) => ({
            binding, visibility: GPUShaderStage.COMPUTE,
            buffer: { type: BUFFER_TYPE[kind], minBindingSize: kind === 'uniform' ? k.uniform?.size ?? 0 : 0 },
          })),
        });
        this.groupLayouts.set(signature, group);
        layout = device.createPipelineLayout({ bindGroupLayouts: [group] });
        layouts.set(signature, layout);
      }
      try {
        return await device.createComputePipelineAsync({
          layout, label: k.name, compute: { module, entryPoint: k.entry, constants: k.overrides },
        });
      } catch (e) {
        const info = await module.getCompilationInfo();
        const error = info.messages.find((m) => m.type === 'error');
        if (error) {
          throw new DeviceError(`WGSL source ${s} (kernel ${k.name}) does not compile on the ${gpu.engine} engine: ` +
            `line ${error.lineNum}: ${oneLine(error.message)}`);
        }
        throw new DeviceError(`kernel ${k.name}: the ${gpu.engine} engine rejected it: ${oneLine(e)}`);
      }
    });
    this.pipelines = await Promise.all(built);
  }

  /** Every dispatch's uniform in one buffer (written once), and one bind group per dispatch. */
  buildBindGroups() {
    const { spec, device } = this;
    const align = device.limits.minUniformBufferOffsetAlignment;
    let total = 0;
    this.uniformOffsets = spec.dispatches.map((d) => {
      const at = total;
      total += d.uniform.length ? roundUp(d.uniform.length * 4, align) : 0;
      return at;
    });
    const uniforms = device.createBuffer({ size: Math.max(total, 16), usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label: 'uniforms' });
    this.uniforms = uniforms;
    const blob = new Uint32Array(Math.max(total, 16) / 4);
    spec.dispatches.forEach((d, i) => blob.set(d.uniform, this.uniformOffsets[i] / 4));
    device.queue.writeBuffer(uniforms, 0, blob);
    this.uniformWords = blob;
    this.bindGroups = spec.dispatches.map((d, i) => {
      const k = spec.kernels[d.kernel];
      let next = 0;
      const entries = k.bindings.map((kind, binding) => ({
        binding,
        resource: kind === 'uniform'
          ? { buffer: uniforms, offset: this.uniformOffsets[i], size: roundUp(d.uniform.length * 4, 16) }
          : { buffer: this.buffers[d.buffers[next++]] },
      }));
      const layout = /** @type {GPUBindGroupLayout} */ (this.groupLayouts.get(layoutKey(k)));
      return device.createBindGroup({ layout, entries, label: d.node });
    });
  }

  /** One staging buffer with a slot per output, each as large as its output can get, then the status words. */
  buildReadback() {
    const { spec } = this;
    let total = 0;
    this.slots = spec.outputs.map((t) => {
      const at = total;
      const span = /** @type {import('./symbolic.js').Expr} */ (['+', 1, ...t.shape.map((n, k) => ['*', ['+', n, -1], t.strides[k]])]);
      total += Math.max(0, expr.bound(span, spec.symbols)) * ITEMSIZE;
      return at;
    });
    this.statusSlot = total;
    total += 4 * spec.checks.length;
    this.stagingSize = Math.max(total, 4);
    this.stagings = [this.newStaging()];
  }

  /**
   * Make the dispatch plan and output reads for these dynamic sizes (nothing when they are the last
   * call's); `env` comes from binding the inputs.
   * @param {Env} env
   */
  prepare(env) {
    const { spec, device } = this;
    const sizes = Object.keys(spec.symbols).map((n) => env[n]);
    const last = this.sizes;
    if (last && sizes.every((v, i) => v === last[i])) return;
    // Patches go into the host copy of the uniform buffer, and from there to the device in one write.
    const words = this.uniformWords;
    let first = Infinity;
    let end = 0;
    for (const d of this.dynamic) {
      for (const p of d.patches) {
        if (p.type === 'f32') scalar.f32[0] = p.value(env);
        else scalar.i32[0] = p.value(env); // u32 and i32 alike: the value's low 32 bits
        words[p.word] = scalar.u32[0];
        first = Math.min(first, p.word);
        end = Math.max(end, p.word + 1);
      }
      if (d.count) this.planGrids.set(foldGrid(d.count(env)), 3 * d.index); // x = 0: no workgroups
    }
    if (end) device.queue.writeBuffer(/** @type {GPUBuffer} */ (this.uniforms), 4 * first, words, first, end - first);
    this.readbacks = this.views.map((v, i) => {
      const view = { shape: v.shape.map((f) => f(env)), strides: v.strides.map((f) => f(env)), offset: v.offset(env) };
      const { start, size, first } = byteRange(view);
      return { buffer: this.buffers[spec.outputs[i].buffer], start, size, first, slot: this.slots[i], shape: view.shape,
        strides: view.strides, dtype: spec.outputs[i].dtype };
    });
    this.sizes = sizes;
  }

  /**
   * The plan as far as it holds at any sizes (each dispatch's pipeline, bind group and static grid), and
   * what depends on the sizes compiled: the patched uniform words, the counted grids, the output views.
   */
  buildPlan() {
    const ds = this.spec.dispatches;
    this.planPipelines = ds.map((d) => /** @type {GPUComputePipeline} */ (this.pipelines[d.kernel]));
    this.planGroups = this.bindGroups;
    this.planGrids = new Uint32Array(3 * ds.length);
    ds.forEach((d, i) => this.planGrids.set(d.grid, 3 * i));
    this.dynamic = ds.flatMap((d, i) => (d.patches.length || d.count !== null ? [{
      index: i,
      patches: d.patches.map((p) => ({ word: (this.uniformOffsets[i] + p.offset) / 4, type: p.type, value: expr.compile(p.value) })),
      count: d.count === null ? null : expr.compile(d.count),
    }] : []));
    this.views = this.spec.outputs.map((t) => ({
      shape: t.shape.map(expr.compile), strides: t.strides.map(expr.compile), offset: expr.compile(t.offset),
    }));
  }

  /**
   * Encode every dispatch of one call into one compute pass of `encoder`.
   * @param {GPUCommandEncoder} encoder
   * @param {GPUComputePassTimestampWrites} [timestampWrites]
   */
  encode(encoder, timestampWrites) {
    const pass = encoder.beginComputePass(timestampWrites ? { timestampWrites } : undefined);
    const pipelines = this.planPipelines;
    const groups = this.planGroups;
    const grids = this.planGrids;
    let current = null;
    for (let i = 0; i < pipelines.length; i++) {
      const x = grids[3 * i];
      if (x === 0) continue;
      if (pipelines[i] !== current) {
        current = pipelines[i];
        pass.setPipeline(current);
      }
      pass.setBindGroup(0, groups[i]);
      pass.dispatchWorkgroups(x, grids[3 * i + 1], grids[3 * i + 2]);
    }
    pass.end();
  }

  /**
   * One call: `inputs` in spec.inputs order, each in device form (a typed array of its words, checked) or a
   * contiguous DeviceTensor of this device; `env` the dynamic sizes. An output whose `keep` flag is set stays
   * on the GPU as a DeviceTensor; the others are read back through one map.
   * @param {(ArrayBufferView | DeviceTensor)[]} inputs
   * @param {Env} env
   * @param {boolean[]} keep
   * @returns {Promise<(HostTensor | DeviceTensor)[]>}
   */
  async run(inputs, env, keep) {
    const call = await this.start(inputs, env, keep, keep.map((k) => !k));
    return /** @type {Promise<(HostTensor | DeviceTensor)[]>} */ (call.result());
  }

  /**
   * Write the inputs, encode and submit one call, and resolve without waiting for it: `kept` holds the
   * outputs whose `keep` flag is set as DeviceTensors at once (to feed the next call), and `result()` reads
   * back those whose `read` flag is set (an output may be both) through a staging buffer of the call's own,
   * so several calls may be in flight: a decoder submits its next step before it reads this one's token. A
   * DeviceTensor input already in its input buffer (the one the last call copied there: DeviceTensors never
   * change, and nothing else writes an input buffer) is not copied again: a decoder's cross K/V.
   * @param {(ArrayBufferView | DeviceTensor)[]} inputs
   * @param {Env} env
   * @param {boolean[]} keep
   * @param {boolean[]} read
   * @returns {Promise<Call>}
   */
  async start(inputs, env, keep, read) {
    if (this.failed) throw new DeviceError(`this program cannot run again: ${this.failed}`);
    const begin = performance.now();
    this.prepare(env);
    const { device, spec } = this;
    const encoder = device.createCommandEncoder();
    const held = new Map(this.held);
    this.held.clear(); // until this call's copies are submitted
    for (let i = 0; i < inputs.length; i++) {
      const value = inputs[i];
      const at = spec.inputs[i].buffer;
      const there = held.get(at);
      held.delete(at);
      if (value instanceof DeviceTensor) {
        if (value.device !== device) throw new DeviceError(`${value} lives on another device than this program`);
        const nbytes = value.numel * ITEMSIZE;
        if (nbytes && there?.deref() !== value) encoder.copyBufferToBuffer(value.buffer, value.offset * ITEMSIZE, this.buffers[at], 0, nbytes);
        held.set(at, new WeakRef(value));
      } else if (value.byteLength) {
        device.queue.writeBuffer(this.buffers[at], 0, value);
      }
    }
    if (this.poisonScratch) this.poison();
    this.encode(encoder);
    /** @type {(HostTensor | DeviceTensor | undefined)[]} */
    const kept = new Array(this.readbacks.length);
    const reading = read.some(Boolean); // a call that reads an output reads the status words with it
    const staging = reading ? (this.stagings.pop() ?? this.newStaging()) : null;
    for (let i = 0; i < this.readbacks.length; i++) {
      const r = this.readbacks[i];
      if (keep[i]) {
        kept[i] = new DeviceTensor(device, Math.max(r.size, 4), r.shape.slice(), r.strides.slice(), r.first, r.dtype);
        if (r.size) encoder.copyBufferToBuffer(r.buffer, r.start, /** @type {DeviceTensor} */ (kept[i]).buffer, 0, r.size);
      }
      if (staging && read[i] && r.size) encoder.copyBufferToBuffer(r.buffer, r.start, staging, r.slot, r.size);
    }
    if (staging && spec.checks.length) {
      encoder.copyBufferToBuffer(this.buffers[/** @type {number} */ (spec.status)], 0, staging, this.statusSlot, 4 * spec.checks.length);
    }
    const encoded = performance.now();
    device.queue.submit([encoder.finish()]);
    this.held = held;
    const submitted = performance.now();
    const call = new Call(this, kept, read, staging, this.readbacks, submitted);
    call.host.encode = (encoded - begin) * 1e-3;
    call.host.submit = (submitted - encoded) * 1e-3;
    const state = stateOf(device);
    // Work nobody waits for runs ahead at most MAX_UNAWAITED submissions: a host that out-runs the GPU would
    // otherwise queue without bound.
    if (!reading && ++state.unawaited >= MAX_UNAWAITED) {
      await this.settle(device.queue.onSubmittedWorkDone(), 'work submitted without waiting');
      state.unawaited = 0;
    }
    return call;
  }

  /** A staging buffer with a slot per output, each as large as its output can get, then the status words. */
  newStaging() {
    return this.device.createBuffer({ size: this.stagingSize, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: 'staging' });
  }

  /**
   * Check `i` failed (its status word set, by this call or a device-only call since the last read): clear
   * the status words, release the outputs kept on the device, and raise the check's error.
   * @param {number} i
   * @param {(HostTensor | DeviceTensor | undefined)[]} out
   * @returns {never}
   */
  raiseCheck(i, out) {
    const { spec } = this;
    this.device.queue.writeBuffer(this.buffers[/** @type {number} */ (spec.status)], 0, new Uint32Array(spec.checks.length));
    for (const t of out) if (t instanceof DeviceTensor) t.release();
    throw new DeviceIndexError(`node '${spec.checks[i].node}': ${spec.checks[i].message}`);
  }

  /**
   * Record `ms` from the start of a reading call (or of a timed run: timing.js) to its map: what
   * the next naps go by (NAP_*, above).
   * @param {number} ms
   */
  waited(ms) {
    this.waits = [...this.waits.slice(1 - NAP_WINDOW), ms];
  }

  /**
   * Wait for `promise` at most `seconds` (the call timeout by default); past that the program refuses further
   * calls (the GPU work itself cannot be cancelled, and the map may still complete).
   * @param {Promise<unknown>} promise
   * @param {string} what
   * @param {number} [seconds]
   */
  async settle(promise, what, seconds = this.timeout) {
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer;
    const limit = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new CallTimeout(`${what} did not finish within ${Math.round(seconds * 10) / 10} s (${TIMEOUT_VAR} ` +
        'or the timeoutMs option sets the limit); the device may still be running it')), seconds * 1000);
    });
    try {
      await Promise.race([promise, limit]);
    } catch (e) {
      this.failed = `an earlier call failed (${oneLine(e)})`;
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The state `name` as the calls so far left it, read back to the host (one copy, one map).
   * @param {string} name
   * @returns {Promise<HostTensor>}
   */
  async readState(name) {
    const s = this.state(name);
    const words = new Uint32Array(await this.readBuffer(s.buffer, `reading state ${name}`));
    const strides = s.shape.map((_, k) => s.shape.slice(k + 1).reduce((a, b) => a * b, 1));
    return { data: gather(words, s.dtype, s.shape, strides, 0), shape: s.shape.slice(), dtype: s.dtype };
  }

  /**
   * A copy of buffer `index`'s bytes, ordered after the calls made so far (one copy, one map).
   * @param {number} index
   * @param {string} what for a timeout's message
   * @returns {Promise<ArrayBuffer>}
   */
  async readBuffer(index, what) {
    const buffer = this.buffers[index];
    const staging = this.device.createBuffer({ size: buffer.size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(buffer, 0, staging, 0, buffer.size);
    this.device.queue.submit([encoder.finish()]);
    try {
      await this.settle(staging.mapAsync(GPUMapMode.READ), what);
      return staging.getMappedRange().slice(0);
    } finally {
      staging.destroy();
    }
  }

  /**
   * Zero the states `names` (every state when none is named), as at load; ordered after the calls made so far.
   * @param {string[]} [names]
   */
  resetState(names) {
    for (const s of names?.length ? names.map((n) => this.state(n)) : this.spec.states) {
      const buffer = this.buffers[s.buffer];
      this.device.queue.writeBuffer(buffer, 0, new Uint8Array(buffer.size));
    }
  }

  /**
   * The buffers of `share`'s program this one uses, by buffer index: its states of the same names, and the
   * constants this program's file places in that program's file (ArtifactError when that program is not the
   * file's, as saved, or is not given).
   * @returns {Map<number, GPUBuffer>}
   */
  sharedBuffers() {
    const other = this.options.share?.executor;
    /** @type {Map<number, GPUBuffer>} */
    const out = new Map();
    if (other && other.device !== this.device) throw new InputError('a program shares buffers only with a program on its device');
    for (const [i, c] of this.spec.constants) {
      if (c.external) out.set(i, externalBuffer(this.spec, i, c.external, other));
    }
    if (!other) return out;
    for (const s of this.spec.states) {
      const t = other.spec.states.find((x) => x.name === s.name);
      if (!t) continue;
      if (t.dtype !== s.dtype || t.shape.join() !== s.shape.join()) {
        throw new InputError(`state ${JSON.stringify(s.name)} is ${s.dtype}[${s.shape}] here and ${t.dtype}[${t.shape}] in the program sharing it`);
      }
      out.set(s.buffer, other.buffers[t.buffer]);
    }
    return out;
  }

  /** @param {string} name */
  state(name) {
    const s = this.spec.states.find((x) => x.name === name);
    if (!s) throw new RangeError(`no state ${JSON.stringify(name)} in this program (its states: ${this.spec.states.map((x) => x.name).join(', ') || 'none'})`);
    return s;
  }

  poison() {
    const largest = Math.max(0, ...this.scratch.map((b) => b.size));
    if (!this.nan || this.nan.length < largest) this.nan = new Uint8Array(largest).fill(0xff);
    for (const b of this.scratch) this.device.queue.writeBuffer(b, 0, this.nan, 0, b.size);
  }

  /** Free the program's GPU memory (DeviceTensors it returned stay valid). */
  destroy() {
    for (const b of this.buffers) if (!this.borrowed.has(b)) b.destroy();
    this.uniforms?.destroy();
    for (const b of this.stagings) b.destroy();
    this.failed = 'it was destroyed';
  }
}

/**
 * Node: sleep `ms` milliseconds, the most of the GPU's remaining work, before asking for a map (NAP_*, above);
 * whether it slept (not for less than NAP_MIN_MS, nor outside Node).
 * @param {number} ms
 */
export async function nap(ms) {
  if (!isNode || ms < NAP_MIN_MS) return false;
  await new Promise((wake) => setTimeout(wake, ms));
  return true;
}

/**
 * A submitted call (Executor.start): `kept` its outputs kept on the device, at once; `result()` waits for the
 * outputs it reads and resolves to every output in order (one both kept and read comes back read; one neither
 * as undefined). Its staging buffer goes back to the executor with result() or discard(). `host`: seconds of
 * encode and submit, then with result() map (waiting for the GPU) and copy (outputs out of mapped memory).
 */
export class Call {
  /**
   * @param {Executor} executor
   * @param {(HostTensor | DeviceTensor | undefined)[]} kept
   * @param {boolean[]} read
   * @param {GPUBuffer | null} staging
   * @param {Readback[]} readbacks
   * @param {number} submitted performance.now() at the submit
   */
  constructor(executor, kept, read, staging, readbacks, submitted) {
    this.executor = executor;
    this.kept = kept;
    this.read = read;
    this.staging = staging;
    this.readbacks = readbacks;
    this.submitted = submitted;
    /** @type {Record<string, number>} */
    this.host = {};
  }

  /** @returns {Promise<(HostTensor | DeviceTensor | undefined)[]>} */
  async result() {
    const { executor: ex, staging } = this;
    const out = this.kept.slice();
    if (!staging) return out;
    const start = performance.now();
    try {
      // Node: nap through most of the GPU's time rather than poll for it (NAP_*, above). The GPU starts a
      // call at its submit or when the call before it finished, whichever is later (calls in flight together).
      const begun = Math.max(this.submitted, ex.lastMapped);
      const napping = await nap(ex.waits.length ? NAP_FRACTION * Math.min(...ex.waits) - (start - begun) : 0);
      const woke = performance.now();
      await ex.settle(staging.mapAsync(GPUMapMode.READ), 'the call', ex.limit);
      ex.limit = ex.timeout;
      const mapped = performance.now();
      // A map there at once after a nap says the nap outlasted the work: half the time is a better bound.
      const overslept = napping && mapped - woke < OVERSLEPT_MS;
      ex.waited((mapped - begun) * (overslept ? 0.5 : 1));
      ex.lastMapped = mapped;
      stateOf(ex.device).unawaited = 0;
      const { spec } = ex;
      let failed = -1;
      try {
        const words = new Uint32Array(staging.getMappedRange());
        failed = spec.checks.findIndex((_, i) => words[ex.statusSlot / 4 + i] !== 0);
        if (failed < 0) fill(out, this.read, this.readbacks, words);
      } finally {
        staging.unmap();
      }
      this.host.map = (mapped - start) * 1e-3;
      this.host.copy = (performance.now() - mapped) * 1e-3;
      if (failed >= 0) ex.raiseCheck(failed, out);
      return out;
    } finally {
      this.discard();
    }
  }

  /** Give the staging buffer back unread (the work itself still runs): a decoder's step past EOS. */
  discard() {
    if (this.staging) this.executor.stagings.push(this.staging);
    this.staging = null;
  }
}

/**
 * The outputs read back, gathered out of the mapped staging words into host arrays.
 * @param {(HostTensor | DeviceTensor | undefined)[]} out
 * @param {boolean[]} read
 * @param {Readback[]} readbacks
 * @param {Uint32Array} words
 */
function fill(out, read, readbacks, words) {
  for (let i = 0; i < readbacks.length; i++) {
    if (!read[i]) continue;
    const r = readbacks[i];
    out[i] = { data: gather(words, r.dtype, r.shape, r.strides, r.slot / ITEMSIZE + r.first), shape: r.shape.slice(), dtype: r.dtype };
  }
  return out;
}

/** One word seen as each scalar type, to take a value's bit pattern. */
const scalar = (() => {
  const u32 = new Uint32Array(1);
  return { u32, i32: new Int32Array(u32.buffer), f32: new Float32Array(u32.buffer) };
})();
