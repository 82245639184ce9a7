// What a device's programs share: a pool of buffers for DeviceTensors, reused by size class, so a loop of
// runOnDevice calls (a decoder's steps, whose caches grow a row at a time) allocates nothing once warm; and
// the count of submissions nobody has waited for.
//
// A size class is the size rounded up to one of eight steps per power of two (at most 12.5% spare). A
// DeviceTensor's buffer comes back when the tensor is released (or garbage-collected) and waits for the next
// tensor of its class; past LIMIT bytes waiting, returned buffers are destroyed instead. Reuse needs no
// fence: every use of a buffer is a command on the device's one queue, which runs in submission order.

const LIMIT = 256 * 2 ** 20;

/**
 * @param {number} size
 */
export function sizeClass(size) {
  const s = Math.max(16, Math.ceil(size / 16) * 16);
  const step = Math.max(16, 2 ** Math.max(0, Math.floor(Math.log2(s)) + 1 - 4)); // eight steps per octave
  return Math.ceil(s / step) * step;
}

export class BufferPool {
  /**
   * @param {GPUDevice} device
   * @param {number} limit bytes that may wait for reuse
   */
  constructor(device, limit = LIMIT) {
    this.device = device;
    this.limit = limit;
    /** @type {Map<number, GPUBuffer[]>} */
    this.free = new Map();
    this.waiting = 0;
  }

  /**
   * A STORAGE | COPY_SRC | COPY_DST buffer of at least `size` bytes (its size class).
   * @param {number} size
   */
  take(size) {
    const cls = sizeClass(size);
    const buffer = this.free.get(cls)?.pop();
    if (buffer) {
      this.waiting -= cls;
      return buffer;
    }
    return this.device.createBuffer({ size: cls, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  }

  /** @param {GPUBuffer} buffer */
  give(buffer) {
    if (this.waiting + buffer.size > this.limit) {
      buffer.destroy();
      return;
    }
    let list = this.free.get(buffer.size);
    if (!list) this.free.set(buffer.size, (list = []));
    list.push(buffer);
    this.waiting += buffer.size;
  }
}

/** Submissions a device may run ahead of the host before a call waits for the queue to drain. */
export const MAX_UNAWAITED = 32;

/** @typedef {{pool: BufferPool, unawaited: number}} DeviceState */

/** @type {WeakMap<GPUDevice, DeviceState>} */
const states = new WeakMap();

/**
 * @param {GPUDevice} device
 * @returns {DeviceState}
 */
export function stateOf(device) {
  let s = states.get(device);
  if (!s) states.set(device, (s = { pool: new BufferPool(device), unawaited: 0 }));
  return s;
}
