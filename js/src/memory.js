// How many bytes of buffers one program may ask for on a device: a damaged or hostile file may ask for any.
// The rule of src/webgpu_torch/runtime/memory.py (its `decide`; tests/conformance/memory.json holds it as
// cases): `maxMemory` or WEBGPU_TORCH_MAX_MEMORY when given; else 32 GiB (WebGPU in JavaScript reports no
// memory heaps); and on a CPU adapter (fit.js's adapterKind: lavapipe, SwiftShader, whose device memory is
// the host's) no more than 3/4 of the memory this process may still take: the least of the host's available
// memory (Node's os.freemem(), a browser's navigator.deviceMemory) and, in Node on Linux, the room left under
// the process's address-space and data limits (RLIMIT_AS, RLIMIT_DATA: /proc/self/limits and status) and
// under its cgroup's memory.max (process.constrainedMemory()). Every buffer counts, bound or not. A program
// over the cap is refused before anything is allocated: a CPU adapter that runs out of memory takes the
// process down.

import { DeviceError } from './errors.js';
import { envVar, isNode } from './env.js';
import { adapterKind, CPU } from './fit.js';

export const MEMORY_VAR = 'WEBGPU_TORCH_MAX_MEMORY';
const DEFAULT_MEMORY = 32 * 2 ** 30;
const SHARE = 3 / 4;
/** Where a CPU adapter's memory runs out first, each a number of bytes this process may still take, or null. */
const ROOMS = /** @type {const} */ ({
  host: 'the host\'s available memory', address_space: 'the address space RLIMIT_AS leaves',
  data: 'the data segment RLIMIT_DATA leaves', cgroup: 'the memory its cgroup\'s memory.max leaves',
});

/** @typedef {{bytes: number, why: string}} Cap */
/** @typedef {Partial<Record<keyof typeof ROOMS, number | null>>} Rooms */

/**
 * The cap for programs on `gpu`, read now (the memory left changes).
 * @param {import('./engine.js').Gpu} gpu
 * @param {number | undefined} option the `maxMemory` load option
 * @returns {Promise<Cap>}
 */
export async function memoryCap(gpu, option) {
  if (option !== undefined) return { bytes: option, why: 'the maxMemory option' };
  const value = envVar(MEMORY_VAR);
  if (value) {
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < 0) throw new DeviceError(`${MEMORY_VAR}=${JSON.stringify(value)}: give a number of bytes`);
    return { bytes: n, why: MEMORY_VAR };
  }
  const kind = adapterKind(gpu.adapter);
  return decide(kind, null, kind === CPU ? await rooms() : {});
}

/**
 * The cap on an adapter of `kind` ("cpu" or "gpu") with `deviceLocal` bytes of memory (null: not reported),
 * where the process may still take `rooms` (ROOMS' keys, bytes; absent or null: unknown).
 * @param {string} kind
 * @param {number | null} deviceLocal
 * @param {Rooms} rooms
 * @returns {Cap}
 */
export function decide(kind, deviceLocal, rooms) {
  let out = deviceLocal === null ? { bytes: DEFAULT_MEMORY, why: `default (set ${MEMORY_VAR})` }
    : { bytes: Math.floor(deviceLocal * SHARE), why: `3/4 of the adapter's device-local memory (set ${MEMORY_VAR})` };
  if (kind !== CPU) return out;
  for (const [key, what] of Object.entries(ROOMS)) {
    const room = rooms[/** @type {keyof typeof ROOMS} */ (key)];
    if (room !== undefined && room !== null && Math.floor(Math.max(0, room) * SHARE) < out.bytes) {
      out = { bytes: Math.floor(Math.max(0, room) * SHARE), why: `3/4 of ${what}, on this CPU adapter` };
    }
  }
  return out;
}

/**
 * What this process may still take (ROOMS), where the platform says.
 * @returns {Promise<Rooms>}
 */
async function rooms() {
  if (!isNode) {
    const gib = /** @type {any} */ (globalThis).navigator?.deviceMemory; // the device's memory, rounded
    return { host: typeof gib === 'number' ? gib * 2 ** 30 : null };
  }
  const os = await import('node:os');
  const status = await procFields('/proc/self/status', /^(Vm\w+):\s+(\d+) kB/, 1024);
  const limits = await procFields('/proc/self/limits', /^Max (address space|data size)\s+(\d+)/, 1);
  const under = (/** @type {string} */ limit, /** @type {string} */ used) =>
    limits[limit] === undefined || status[used] === undefined ? null : limits[limit] - status[used];
  const constrained = process.constrainedMemory?.() ?? 0; // 0, or 2^64, without a cgroup limit
  return {
    host: os.freemem(),
    address_space: under('address space', 'VmSize'),
    data: under('data size', 'VmData'),
    cgroup: constrained > 0 && constrained < os.totalmem() ? process.availableMemory?.() ?? null : null,
  };
}

/**
 * The lines of a /proc file that `pattern` matches, as name (its first group) -> number (its second) × unit;
 * {} where there is no such file.
 * @param {string} path
 * @param {RegExp} pattern
 * @param {number} unit
 * @returns {Promise<Record<string, number>>}
 */
async function procFields(path, pattern, unit) {
  let text;
  try {
    text = await (await import('node:fs/promises')).readFile(path, 'utf8');
  } catch {
    return {};
  }
  /** @type {Record<string, number>} */
  const out = {};
  for (const line of text.split('\n')) {
    const m = line.match(pattern);
    if (m) out[m[1]] = Number(m[2]) * unit;
  }
  return out;
}
