// Running a program: everything is built once here, so a call only writes inputs, encodes and reads back.
//
// At construction: buffers (constants uploaded, float16 ones widened where the device lacks shader-f16),
// one shader module per source a dispatch uses, explicit bind group and pipeline layouts from each kernel's
// `bindings`, one pipeline per kernel a dispatch runs, every dispatch's uniform in one uniform buffer, one
// bind group per dispatch, and one mappable staging buffer for all outputs.
// A call: write the inputs, encode every dispatch into one compute pass of one command encoder, copy the
// outputs' byte ranges into the staging buffer, submit once, map once.
//
// Dynamic sizes: buffers are sized for the largest values. When a call's sizes differ from the last call's,
// prepare() rewrites the uniform words that depend on them (one write per such dispatch), folds those
// dispatches' grids and evaluates the output views; calls at the same sizes repeat nothing.

import { DeviceTensor } from './device_tensor.js';
import { gather, ITEMSIZE, widenHalf } from './dtypes.js';
import { DeviceError } from './errors.js';
import * as expr from './expr.js';
import { bufferSize, needs, sourceFor } from './kernels.js';

/** @typedef {import('./artifact.js').ProgramSpec} ProgramSpec */
/** @typedef {import('./artifact.js').KernelSpec} KernelSpec */
/** @typedef {import('./artifact.js').DispatchSpec} DispatchSpec */
/** @typedef {import('./artifact.js').Grid} Grid */
/** @typedef {import('./device.js').Gpu} Gpu */
/** @typedef {import('./dtypes.js').ModelDtype} ModelDtype */
/** @typedef {import('./device_tensor.js').HostTensor} HostTensor */
/**
 * An output at the current sizes: `size` bytes from byte `start` of buffer `buffer` land at byte `slot` of
 * the staging buffer; the view's strides count elements from there.
 * @typedef {{buffer: GPUBuffer, start: number, size: number, slot: number, shape: number[], strides: number[],
 *   dtype: ModelDtype}} Readback
 */

const STORAGE_USAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
const BUFFER_TYPE = /** @type {const} */ ({ read: 'read-only-storage', read_write: 'storage', uniform: 'uniform' });

/**
 * @param {number} n
 * @param {number} k
 */
const roundUp = (n, k) => Math.ceil(n / k) * k;

/**
 * A 1-D count of workgroups as an (x, y, 1) grid; kernels number workgroups x-fastest and those past the
 * count exit at once.
 * @param {number} n
 * @returns {Grid}
 */
export function foldGrid(n) {
  if (n <= 65535) return [n, 1, 1];
  const y = Math.ceil(n / 65535);
  return [Math.ceil(n / y), y, 1];
}

export class Executor {
  /**
   * Build everything for `spec` (whose dispatches run as written: tuning has chosen among options).
   * @param {ProgramSpec} spec
   * @param {Gpu} gpu
   * @param {Set<string>} features the optional features this program may use
   * @returns {Promise<Executor>}
   */
  static async create(spec, gpu, features) {
    const ex = new Executor(spec, gpu, features);
    const { device } = gpu;
    device.pushErrorScope('out-of-memory');
    device.pushErrorScope('validation');
    ex.buffers = spec.buffers.map((_, i) => device.createBuffer({ size: bufferSize(spec, i, features), usage: STORAGE_USAGE() }));
    ex.upload();
    await ex.buildPipelines();
    ex.buildBindGroups();
    ex.buildReadback();
    const invalid = await device.popErrorScope();
    const oom = await device.popErrorScope();
    if (oom) throw new DeviceError(`the device is out of memory for this program: ${oom.message}`);
    if (invalid) throw new DeviceError(`the ${gpu.engine} engine refused this program: ${invalid.message}`);
    if (!Object.keys(spec.symbols).length) ex.prepare({});
    return ex;
  }

  /**
   * @param {ProgramSpec} spec
   * @param {Gpu} gpu
   * @param {Set<string>} features
   */
  constructor(spec, gpu, features) {
    this.spec = spec;
    this.gpu = gpu;
    this.device = gpu.device;
    this.features = features;
    /** Fill scratch buffers with NaN before each call (tests: an unwritten output element cannot pass). */
    this.poisonScratch = false;
    /** @type {GPUBuffer[]} */
    this.buffers = [];
    /** @type {(GPUComputePipeline | null)[]} */
    this.pipelines = [];
    /** @type {GPUBindGroup[]} */
    this.bindGroups = [];
    /** @type {number[]} byte offset of each dispatch's uniform in `uniforms` */
    this.uniformOffsets = [];
    this.uniforms = /** @type {GPUBuffer} */ (/** @type {unknown} */ (null));
    this.staging = /** @type {GPUBuffer} */ (/** @type {unknown} */ (null));
    /** @type {number[]} byte offset of each output's slot in `staging` */
    this.slots = [];
    /** @type {number[] | null} the symbol values of the last call, in the order of spec.symbols */
    this.sizes = null;
    // The plan at the current sizes: per dispatch its pipeline, bind group and grid (x = 0: skipped).
    /** @type {GPUComputePipeline[]} */
    this.planPipelines = [];
    /** @type {GPUBindGroup[]} */
    this.planGroups = [];
    this.planGrids = new Uint32Array(0);
    /** @type {Readback[]} */
    this.readbacks = [];
    this.checkDevice();
  }

  /** Refuse by name what this device cannot run: a feature, a buffer size or a binding count it lacks. */
  checkDevice() {
    const { spec, device, features } = this;
    const limits = device.limits;
    const maxBinding = limits.maxStorageBufferBindingSize;
    const maxBuffer = limits.maxBufferSize;
    spec.buffers.forEach((b, i) => {
      const size = bufferSize(spec, i, features);
      if (size > Math.min(maxBinding, maxBuffer)) {
        const what = `${b.role} buffer ${i}` + (b.name ? ` (${b.name})` : '');
        throw new DeviceError(`${what} needs ${size.toLocaleString('en')} bytes; this adapter binds at most ` +
          `${maxBinding.toLocaleString('en')} (maxStorageBufferBindingSize; max buffer ${maxBuffer.toLocaleString('en')})`);
      }
    });
    for (const k of this.usedKernels()) {
      const lacking = needs(k, features).filter((f) => !features.has(f));
      if (lacking.length) {
        throw new DeviceError(`kernel ${k.name} needs the ${lacking.join(', ')} feature, which this ${this.gpu.engine} ` +
          'device lacks (a compiled program\'s default dispatches need none; this one was saved with a choice forced)');
      }
      const storage = k.bindings.filter((b) => b !== 'uniform').length;
      if (storage > limits.maxStorageBuffersPerShaderStage) {
        throw new DeviceError(`kernel ${k.name} binds ${storage} storage buffers; this adapter allows at most ` +
          `${limits.maxStorageBuffersPerShaderStage} per shader stage (maxStorageBuffersPerShaderStage)`);
      }
      if (k.uniform && k.uniform.size > limits.maxUniformBufferBindingSize) {
        throw new DeviceError(`kernel ${k.name} has a ${k.uniform.size}-byte uniform; this adapter binds at most ` +
          `${limits.maxUniformBufferBindingSize} (maxUniformBufferBindingSize)`);
      }
    }
  }

  /** The kernels a dispatch runs (not the options tuning passed over). */
  usedKernels() {
    return [...new Set(this.spec.dispatches.map((d) => d.kernel))].sort((a, b) => a - b).map((i) => this.spec.kernels[i]);
  }

  /** Write every constant to its buffer: float16 widened to float32 where the device lacks shader-f16. */
  upload() {
    const queue = this.device.queue;
    for (const [i, c] of this.spec.constants) {
      if (!c.bytes.length) continue;
      let bytes = c.bytes;
      if (c.dtype === 'f16' && !this.features.has('shader-f16')) {
        const aligned = bytes.byteOffset % 2 ? bytes.slice() : bytes;
        const wide = widenHalf(new Uint16Array(aligned.buffer, aligned.byteOffset, aligned.length / 2));
        bytes = new Uint8Array(wide.buffer);
      }
      if (bytes.length % 4) { // writes are 4-byte multiples: an odd count of float16 values gets a zero pad
        const padded = new Uint8Array(roundUp(bytes.length, 4));
        padded.set(bytes);
        bytes = padded;
      }
      queue.writeBuffer(this.buffers[i], 0, bytes);
    }
  }

  async buildPipelines() {
    const { spec, device, features, gpu } = this;
    const used = new Set(spec.dispatches.map((d) => d.kernel));
    /** @type {Map<number, GPUShaderModule>} */
    const modules = new Map();
    /** @type {Map<string, GPUPipelineLayout>} */
    const layouts = new Map();
    /** @type {Map<string, GPUBindGroupLayout>} */
    this.groupLayouts = new Map();
    const built = spec.kernels.map(async (k, index) => {
      if (!used.has(index)) return null;
      const s = sourceFor(k, features, gpu.engine);
      let module = modules.get(s);
      if (!module) {
        module = device.createShaderModule({ code: spec.sources[s], label: `source ${s}` });
        modules.set(s, module);
      }
      const signature = k.bindings.join();
      let layout = layouts.get(signature);
      if (!layout) {
        const group = device.createBindGroupLayout({
          entries: k.bindings.map((kind, binding) => ({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: BUFFER_TYPE[kind] } })),
        });
        /** @type {Map<string, GPUBindGroupLayout>} */ (this.groupLayouts).set(signature, group);
        layout = device.createPipelineLayout({ bindGroupLayouts: [group] });
        layouts.set(signature, layout);
      }
      try {
        return await device.createComputePipelineAsync({
          layout, label: k.name, compute: { module, entryPoint: k.entry, constants: k.overrides },
        });
      } catch (e) {
        const info = await module.getCompilationInfo();
        const errors = info.messages.filter((m) => m.type === 'error').map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`);
        const why = errors.length ? `WGSL source ${s} does not compile: ${errors[0]}` : /** @type {Error} */ (e).message;
        throw new DeviceError(`kernel ${k.name}: the ${gpu.engine} engine rejected it: ${why.replace(/\s*\n\s*/g, ' ')}`);
      }
    });
    this.pipelines = await Promise.all(built);
  }

  buildBindGroups() {
    const { spec, device } = this;
    const align = device.limits.minUniformBufferOffsetAlignment;
    let total = 0;
    this.uniformOffsets = spec.dispatches.map((d) => {
      const at = total;
      total += d.uniform.length ? roundUp(d.uniform.length * 4, align) : 0;
      return at;
    });
    this.uniforms = device.createBuffer({ size: Math.max(total, 16), usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    const blob = new Uint32Array(Math.max(total, 16) / 4);
    spec.dispatches.forEach((d, i) => blob.set(d.uniform, this.uniformOffsets[i] / 4));
    device.queue.writeBuffer(this.uniforms, 0, blob);
    const layouts = /** @type {Map<string, GPUBindGroupLayout>} */ (this.groupLayouts);
    this.bindGroups = spec.dispatches.map((d, i) => {
      const k = spec.kernels[d.kernel];
      let next = 0;
      const entries = k.bindings.map((kind, binding) => ({
        binding,
        resource: kind === 'uniform'
          ? { buffer: this.uniforms, offset: this.uniformOffsets[i], size: roundUp(d.uniform.length * 4, 16) }
          : { buffer: this.buffers[d.buffers[next++]] },
      }));
      return device.createBindGroup({ layout: /** @type {GPUBindGroupLayout} */ (layouts.get(k.bindings.join())), entries, label: d.node });
    });
  }

  /** One staging buffer with a slot per output, each as large as its output can get. */
  buildReadback() {
    const { spec } = this;
    let total = 0;
    this.slots = spec.outputs.map((t) => {
      const at = total;
      const span = ['+', 1, ...t.shape.map((n, k) => /** @type {import('./expr.js').Expr} */ (['*', ['+', n, -1], t.strides[k]]))];
      total += Math.max(0, expr.bound(/** @type {import('./expr.js').Expr} */ (span), spec.symbols)) * ITEMSIZE;
      return at;
    });
    this.staging = this.device.createBuffer({ size: Math.max(total, 4), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    this.scratch = this.buffers.filter((_, i) => spec.buffers[i].role === 'scratch');
  }

  /**
   * Make the dispatch plan and output reads for these dynamic sizes (nothing when they are the last
   * call's); `env` comes from binding the inputs.
   * @param {import('./expr.js').Env} env
   */
  prepare(env) {
    const { spec, device } = this;
    const names = Object.keys(spec.symbols);
    const sizes = names.map((n) => env[n]);
    if (this.sizes && sizes.every((v, i) => v === /** @type {number[]} */ (this.sizes)[i])) return;
    const n = spec.dispatches.length;
    this.planPipelines = new Array(n);
    this.planGroups = new Array(n);
    this.planGrids = new Uint32Array(3 * n);
    spec.dispatches.forEach((d, i) => {
      if (d.patches.length) device.queue.writeBuffer(this.uniforms, this.uniformOffsets[i], patched(d, env));
      const grid = d.count === null ? d.grid : foldGrid(expr.evaluate(d.count, env));
      this.planPipelines[i] = /** @type {GPUComputePipeline} */ (this.pipelines[d.kernel]);
      this.planGroups[i] = this.bindGroups[i];
      this.planGrids.set(grid[0] ? grid : [0, 0, 0], 3 * i);
    });
    this.readbacks = spec.outputs.map((t, i) => {
      const shape = t.shape.map((e) => expr.evaluate(e, env));
      const strides = t.strides.map((e) => expr.evaluate(e, env));
      const numel = shape.reduce((a, b) => a * b, 1);
      const span = numel ? 1 + shape.reduce((s, m, k) => s + (m - 1) * strides[k], 0) : 0;
      return { buffer: this.buffers[t.buffer], start: expr.evaluate(t.offset, env) * ITEMSIZE, size: span * ITEMSIZE,
        slot: this.slots[i], shape, strides, dtype: t.dtype };
    });
    this.sizes = sizes;
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
      if (x === 0) continue; // a dynamic count of no workgroups
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
   * Run one call: `inputs` in spec.inputs order, each in device form (a typed array of its words, already
   * checked) or a contiguous DeviceTensor of the device; `env` the dynamic sizes. An output whose `keep`
   * flag is set stays on the GPU as a DeviceTensor; the others are read back in one map.
   * @param {(ArrayBufferView | DeviceTensor)[]} inputs
   * @param {import('./expr.js').Env} env
   * @param {boolean[] | null} keep
   * @returns {Promise<(HostTensor | DeviceTensor)[]>}
   */
  async run(inputs, env, keep) {
    this.prepare(env);
    const { device, spec } = this;
    const queue = device.queue;
    const encoder = device.createCommandEncoder();
    for (let i = 0; i < inputs.length; i++) {
      const value = inputs[i];
      const target = this.buffers[spec.inputs[i].buffer];
      if (value instanceof DeviceTensor) {
        const nbytes = value.numel * ITEMSIZE;
        if (nbytes) encoder.copyBufferToBuffer(value.buffer, value.offset * ITEMSIZE, target, 0, nbytes);
      } else if (value.byteLength) {
        queue.writeBuffer(target, 0, value);
      }
    }
    if (this.poisonScratch) this.poison();
    this.encode(encoder);
    /** @type {(HostTensor | DeviceTensor)[]} */
    const out = new Array(this.readbacks.length);
    let reading = false;
    this.readbacks.forEach((r, i) => {
      if (keep?.[i]) {
        out[i] = this.copyOut(encoder, r);
      } else if (r.size) {
        encoder.copyBufferToBuffer(r.buffer, r.start, this.staging, r.slot, r.size);
        reading = true;
      }
    });
    queue.submit([encoder.finish()]);
    if (reading) await this.staging.mapAsync(GPUMapMode.READ);
    try {
      const words = reading ? new Uint32Array(this.staging.getMappedRange()) : new Uint32Array(0);
      this.readbacks.forEach((r, i) => {
        if (!keep?.[i]) out[i] = { data: gather(words, r.dtype, r.shape, r.strides, r.slot / ITEMSIZE), shape: r.shape.slice(), dtype: r.dtype };
      });
    } finally {
      if (reading) this.staging.unmap();
    }
    return out;
  }

  /**
   * @param {GPUCommandEncoder} encoder
   * @param {Readback} r
   */
  copyOut(encoder, r) {
    const buffer = this.device.createBuffer({ size: roundUp(Math.max(r.size, 4), 16), usage: STORAGE_USAGE() });
    if (r.size) encoder.copyBufferToBuffer(r.buffer, r.start, buffer, 0, r.size);
    return new DeviceTensor(this.device, buffer, r.shape.slice(), r.strides.slice(), 0, r.dtype);
  }

  poison() {
    const largest = Math.max(0, ...(this.scratch ?? []).map((b) => b.size));
    if (!this.nan || this.nan.length < largest) this.nan = new Uint8Array(largest).fill(0xff);
    for (const b of this.scratch ?? []) this.device.queue.writeBuffer(b, 0, this.nan, 0, b.size);
  }

  /** Free the program's GPU memory. */
  destroy() {
    for (const b of this.buffers) b.destroy();
    this.uniforms?.destroy();
    this.staging?.destroy();
  }
}

/**
 * A dispatch's uniform words with its patches applied at the symbol values `env`.
 * @param {DispatchSpec} d
 * @param {import('./expr.js').Env} env
 */
function patched(d, env) {
  const words = d.uniform.slice();
  const ints = new Int32Array(words.buffer);
  const floats = new Float32Array(words.buffer);
  for (const p of d.patches) {
    const v = expr.evaluate(p.value, env);
    const at = p.offset / 4;
    if (p.type === 'u32') words[at] = v;
    else if (p.type === 'i32') ints[at] = v;
    else floats[at] = v;
  }
  return words;
}
