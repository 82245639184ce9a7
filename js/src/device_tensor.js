// Tensors that stay in GPU memory between calls. `program.runOnDevice(...)` returns its outputs as
// DeviceTensors, each in a buffer of its own (copied out of the program's scratch on the GPU, so the next
// call cannot overwrite it). Passed as an input to any program on the same device, a DeviceTensor is
// copied GPU to GPU into that program's input buffer: a KV cache goes from one decoder step to the next
// without touching the host. Buffers come from the device's pool (pool.js) and go back to it when the
// tensor is released, or collected.

import { gather, isContiguous, ITEMSIZE } from './dtypes.js';
import { stateOf } from './pool.js';

/** @typedef {import('./dtypes.js').ModelDtype} ModelDtype */
/** @typedef {import('./dtypes.js').HostArray} HostArray */
/** @typedef {{data: HostArray, shape: number[], dtype: ModelDtype}} HostTensor */

/** Returns a forgotten tensor's buffer to its pool. */
const collected = new FinalizationRegistry((/** @type {{device: GPUDevice, buffer: GPUBuffer}} */ held) =>
  stateOf(held.device).pool.give(held.buffer));

export class DeviceTensor {
  /**
   * A tensor in a pooled buffer of at least `size` bytes on `device`.
   * @param {GPUDevice} device
   * @param {number} size
   * @param {number[]} shape
   * @param {number[]} strides elements of the device form
   * @param {number} offset elements from the buffer's start
   * @param {ModelDtype} dtype
   */
  constructor(device, size, shape, strides, offset, dtype) {
    this.device = device;
    /** @type {GPUBuffer} STORAGE | COPY_SRC | COPY_DST; do not use after release() */
    this.buffer = stateOf(device).pool.take(size);
    this.shape = shape;
    this.strides = strides;
    this.offset = offset;
    this.dtype = dtype;
    this.released = false;
    collected.register(this, { device, buffer: this.buffer }, this);
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
   * after the calls that read it have been made (awaited): a later tensor may take its buffer.
   */
  release() {
    if (this.released) return;
    this.released = true;
    collected.unregister(this);
    stateOf(this.device).pool.give(this.buffer);
  }

  check() {
    if (this.released) throw new Error(`${this} was released`);
  }

  toString() {
    return `DeviceTensor(${this.dtype}[${this.shape.join(', ')}])`;
  }
}
