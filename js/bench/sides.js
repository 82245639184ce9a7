// What the Node sides of a benchmark share (bench.js, llm.js, llm_ort.js; none imports Dawn here, as llm.js
// runs without it): the warm-up before timed runs, the median, and the peak memory `webgpu-torch bench llm`
// reports beside the timings — the process's peak resident set (host memory; on a CPU adapter this includes
// what the driver allocates for the GPU: Linux's VmHWM, which starts afresh at exec where getrusage's maxrss
// carries the parent's peak over), and the most bytes of WebGPU buffers alive at once in Dawn for Node
// (created and not yet destroyed: a buffer dropped without destroy() stays counted, as its memory may stay
// allocated).

import { readFileSync } from 'node:fs';

/** @param {number[]} xs */
export const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/**
 * Generations for `seconds` (at least one) before the timed ones: pipelines are created at their first use, and
 * an idle GPU (and CPU) takes a moment to reach its clocks (on the H100, a step after 5 s idle took 3x its time
 * once warm).
 * @param {() => Promise<unknown>} generate
 * @param {number} seconds
 */
export async function warmUp(generate, seconds) {
  const until = performance.now() + 1e3 * seconds;
  do await generate(); while (performance.now() < until);
}

let live = 0;
let peak = 0;

/**
 * Counts the buffers every device of Dawn for Node creates from now on. Call once, before the side loads.
 * @param {any} globals the `webgpu` package's classes (imported by the caller: llm.js runs without Dawn)
 */
export function trackBuffers(globals) {
  const device = globals.GPUDevice.prototype;
  const buffer = globals.GPUBuffer.prototype;
  /** @type {WeakMap<object, number>} the live buffers' sizes */
  const sizes = new WeakMap();
  const createBuffer = device.createBuffer;
  device.createBuffer = function (/** @type {any} */ descriptor) {
    const created = createBuffer.call(this, descriptor);
    sizes.set(created, created.size);
    live += created.size;
    peak = Math.max(peak, live);
    return created;
  };
  const destroy = buffer.destroy;
  buffer.destroy = function () {
    live -= sizes.get(this) ?? 0;
    sizes.delete(this);
    return destroy.call(this);
  };
}

/** Bytes: the process's peak resident set, and the buffers' peak (0 unless trackBuffers ran). */
export function peakMemory() {
  return { peakRss: peakResident(), gpuPeak: peak };
}

/** Bytes: this process's peak resident set (Linux's VmHWM, in kB there). */
export function peakResident() {
  return 1024 * Number(readFileSync('/proc/self/status', 'utf8').match(/VmHWM:\s+(\d+)/)?.[1]);
}
