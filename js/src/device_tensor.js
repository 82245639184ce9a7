// Tensors that stay in GPU memory between calls. `program.runOnDevice(...)` returns its outputs as
// DeviceTensors, each in a buffer of its own (copied out of the program's scratch on the GPU, so the next
// call cannot overwrite it). Passed as an input to any program on the same device, a DeviceTensor is
// copied GPU to GPU into that program's input buffer: a KV cache goes from one decoder step to the next
// without touching the host. Buffers come from the device's pool (pool.js) and go back to it when the
// tensor is released, or collected. `DeviceTensor.fromGpuBuffer` wraps a buffer the caller owns instead
// (onnxruntime-web's `Tensor.fromGpuBuffer`): it is read in place and never pooled or destroyed by us.

import { DEVICE_FORM, DEVICE_SIZE, gather, isContiguous, isModelDtype, ITEMSIZE } from './dtypes.js';
import { InputError } from './errors.js';
import { stateOf } from './pool.js';

/** @typedef {import('./dtypes.js').ModelDtype} ModelDtype */
/** @typedef {import('./dtypes.js').HostArray} HostArray */
/**
 * A tensor on the host: `data` is the host form of `dtype` (float32 → Float32Array, int32 → Int32Array,
 * int64 → BigInt64Array, bool → Uint8Array of 0 and 1), contiguous, row-major.
 * @template {ModelDtype} [D=ModelDtype]
 * @typedef {{data: import('./dtypes.js').HostArrays[D], shape: number[], dtype: D}} HostTensor
 */

/** Returns a forgotten tensor's buffer to its pool. */
const collected = new FinalizationRegistry((/** @type {{device: GPUDevice, buffer: GPUBuffer}} */ held) =>
  stateOf(held.device).pool.give(held.buffer));

export class DeviceTensor {
  /** @readonly @type {GPUDevice} */
  device;
  /** @readonly @type {GPUBuffer} the tensor's words in device form; not to be used after release() */
  buffer;
  /** @readonly @type {number[]} */
  shape;
  /** @readonly @type {number[]} in elements of the device form */
  strides;
  /** @readonly @type {number} elements from the buffer's start */
  offset;
  /** @readonly @type {ModelDtype} */
  dtype;
  /** whether release() was called: the buffer may hold another tensor now */
  released = false;
  /** @internal whether the buffer is the pool's (else the caller's, from fromGpuBuffer) */
  pooled;

  /**
   * A tensor in a pooled buffer of at least `size` bytes on `device`, or in `buffer` as given.
   * @internal
   * @param {GPUDevice} device
   * @param {number | GPUBuffer} storage a size to take from the pool, or a buffer the caller keeps
   * @param {number[]} shape
   * @param {number[]} strides elements of the device form
   * @param {number} offset elements from the buffer's start
   * @param {ModelDtype} dtype
   */
  constructor(device, storage, shape, strides, offset, dtype) {
    this.device = device;
    this.pooled = typeof storage === 'number';
    this.buffer = typeof storage === 'number' ? stateOf(device).pool.take(storage) : storage;
    this.shape = shape;
    this.strides = strides;
    this.offset = offset;
    this.dtype = dtype;
    if (this.pooled) collected.register(this, { device, buffer: this.buffer }, this);
  }

  /**
   * A contiguous tensor over a GPUBuffer the caller already has on `device`, holding `shape` elements of
   * `dtype` in device form from byte 0: float32 as f32, int32 and int64 as i32, bool as u32 (0 or 1). The
   * buffer needs COPY_SRC usage (a call copies it into the program's input on the GPU), and MAP_READ is not
   * needed: `read()` copies through a staging buffer. It stays the caller's: `release()` only marks the
   * tensor unusable, and the caller destroys the buffer when done.
   * @param {GPUBuffer} buffer
   * @param {{device: GPUDevice, dtype: ModelDtype, shape: number[]}} options
   * @returns {DeviceTensor}
   */
  static fromGpuBuffer(buffer, { device, dtype, shape }) {
    if (!isModelDtype(dtype)) throw new InputError(`fromGpuBuffer: unknown dtype ${JSON.stringify(dtype)}`);
    if (!Array.isArray(shape) || !shape.every((n) => Number.isSafeInteger(n) && n >= 0)) {
      throw new InputError(`fromGpuBuffer: bad shape ${JSON.stringify(shape)}`);
    }
    const nbytes = shape.reduce((a, b) => a * b, 1) * DEVICE_SIZE[DEVICE_FORM[dtype]];
    if (buffer.size < nbytes) {
      throw new InputError(`fromGpuBuffer: a buffer of ${buffer.size} bytes cannot hold ${dtype}[${shape.join(', ')}] (${nbytes} bytes)`);
    }
    if (!(buffer.usage & GPUBufferUsage.COPY_SRC)) {
      throw new InputError('fromGpuBuffer: the buffer needs GPUBufferUsage.COPY_SRC (a call copies it into the program\'s input)');
    }
    const strides = shape.map((_, k) => shape.slice(k + 1).reduce((a, b) => a * b, 1));
    return new DeviceTensor(device, buffer, [...shape], strides, 0, dtype);
  }

  get numel() {
    return this.shape.reduce((a, b) => a * b, 1);
  }

  isContiguous() {
    return isContiguous(this.shape, this.strides);
  }

  /**
   * Read back to the host (one copy and one map).
   * @returns {Promise<HostTensor>}
   */
  async read() {
    this.check();
    const shape = [...this.shape];
    if (this.numel === 0) return { data: gather(new Uint32Array(0), this.dtype, shape, this.strides, 0), shape, dtype: this.dtype };
    const size = this.buffer.size;
    const staging = this.device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(this.buffer, 0, staging, 0, size);
    this.device.queue.submit([encoder.finish()]);
    try {
      await staging.mapAsync(GPUMapMode.READ);
      const words = new Uint32Array(staging.getMappedRange(), 0, size / ITEMSIZE);
      return { data: gather(words, this.dtype, shape, this.strides, this.offset), shape, dtype: this.dtype };
    } finally {
      staging.destroy();
    }
  }

  /**
   * Hand the buffer back for reuse now rather than when the tensor is collected. Release a tensor only
   * after the calls that read it have been made (awaited): a later tensor may take its buffer. A tensor
   * over the caller's buffer (fromGpuBuffer) leaves the buffer alone.
   */
  release() {
    if (this.released) return;
    this.released = true;
    if (!this.pooled) return;
    collected.unregister(this);
    stateOf(this.device).pool.give(this.buffer);
  }

  /** The same as release(), under WebGPU's name for freeing a resource. */
  destroy() {
    this.release();
  }

  /** `using t = …` releases the tensor at the end of the scope. */
  [Symbol.dispose]() {
    this.release();
  }

  /** @internal */
  check() {
    if (this.released) throw new Error(`${this} was released`);
  }

  toString() {
    return `DeviceTensor(${this.dtype}[${this.shape.join(', ')}])`;
  }
}
