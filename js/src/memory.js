// How many bytes of buffers one program may ask for on a device: a damaged or hostile file may ask for any.
// The rule of src/webgpu_torch/runtime/memory.py: `maxMemory` or WEBGPU_TORCH_MAX_MEMORY when given; else
// 32 GiB (WebGPU in JavaScript reports no memory heaps); and on a CPU adapter (fit.js's adapterKind: lavapipe,
// SwiftShader, whose device memory is the host's) no more than 3/4 of the host's available memory — Node's os.freemem(), a
// browser's navigator.deviceMemory. A program over the cap is refused before anything is allocated: a CPU
// adapter that runs out of host memory takes the process down.

import { DeviceError } from './errors.js';
import { envVar, isNode } from './env.js';
import { adapterInfo, adapterKind, CPU } from './fit.js';

export const MEMORY_VAR = 'WEBGPU_TORCH_MAX_MEMORY';
const DEFAULT_MEMORY = 32 * 2 ** 30;
const SHARE = 3 / 4;

/** @typedef {{bytes: number, why: string}} Cap */

/**
 * The cap for programs on `device`, read now (the host's available memory changes).
 * @param {GPUDevice} device
 * @param {number | undefined} option the `maxMemory` load option
 * @returns {Promise<Cap>}
 */
export async function memoryCap(device, option) {
  if (option !== undefined) return { bytes: option, why: 'the maxMemory option' };
  const value = envVar(MEMORY_VAR);
  if (value) {
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < 0) throw new DeviceError(`${MEMORY_VAR}=${JSON.stringify(value)}: give a number of bytes`);
    return { bytes: n, why: MEMORY_VAR };
  }
  const info = adapterInfo(/** @type {any} */ (device).adapterInfo);
  const host = adapterKind(info) === CPU ? await hostAvailable() : null;
  if (host !== null && host * SHARE < DEFAULT_MEMORY) {
    return { bytes: Math.floor(host * SHARE), why: '3/4 of the host\'s available memory, on this CPU adapter' };
  }
  return { bytes: DEFAULT_MEMORY, why: `default (set ${MEMORY_VAR} or the maxMemory option)` };
}

/**
 * The host memory available to a new allocation, where the platform says.
 * @returns {Promise<number | null>}
 */
async function hostAvailable() {
  if (isNode) return (await import('node:os')).freemem();
  const gib = /** @type {any} */ (globalThis).navigator?.deviceMemory; // the device's memory, rounded
  return typeof gib === 'number' ? gib * 2 ** 30 : null;
}
