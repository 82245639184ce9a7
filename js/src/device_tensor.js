// Tensors that stay in GPU memory between calls. `program.runOnDevice(...)` returns its outputs as
// DeviceTensors, each in a buffer of its own (copied out of the program's scratch on the GPU, so the next
// call cannot overwrite it). Passed as an input to any program on the same device, a DeviceTensor is
// copied GPU to GPU into that program's input buffer: a KV cache goes from one decoder step to the next
// without touching the host.

import { gather, isContiguous, ITEMSIZE } from './dtypes.js';

/** @typedef {import('./dtypes.js').ModelDtype} ModelDtype */
/** @typedef {import('./dtypes.js').HostArray} HostArray */
/** @typedef {{data: HostArray, shape: number[], dtype: ModelDtype}} HostTensor */

export class DeviceTensor {
  /**
   * @param {GPUDevice} device
   * @param {GPUBuffer} buffer STORAGE | COPY_SRC | COPY_DST
   * @param {number[]} shape
   * @param {number[]} strides elements of the device form
   * @param {number} offset elements from the buffer's start
   * @param {ModelDtype} dtype
   */
  constructor(device, buffer, shape, strides, offset, dtype) {
    this.device = device;
    this.buffer = buffer;
    this.shape = shape;
    this.strides = strides;
    this.offset = offset;
    this.dtype = dtype;
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
    const n = this.numel;
    if (n === 0) return { data: gather(new Uint32Array(0), this.dtype, this.shape, this.strides, 0), shape: [...this.shape], dtype: this.dtype };
    const size = this.buffer.size;
    const staging = this.device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(this.buffer, 0, staging, 0, size);
    this.device.queue.submit([encoder.finish()]);
    try {
      await staging.mapAsync(GPUMapMode.READ);
      const words = new Uint32Array(staging.getMappedRange(), 0, size / ITEMSIZE);
      return { data: gather(words, this.dtype, this.shape, this.strides, this.offset), shape: [...this.shape], dtype: this.dtype };
    } finally {
      staging.destroy();
    }
  }

  /** Free the GPU memory now rather than when the tensor is collected. */
  destroy() {
    this.buffer.destroy();
  }

  toString() {
    return `DeviceTensor(${this.dtype}[${this.shape.join(', ')}])`;
  }
}
