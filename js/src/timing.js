// GPU time from timestamp queries: per dispatch (what tuning compares) and per call (benchmarks). Every wait is
// the executor's (Executor.settle): timed work that does not finish within its timeout fails, as a call does.
// In Node each wait first naps through most of the work it expects (executor.js, nap): Dawn's polling for a
// map would take a core from a CPU adapter's shader threads, and the timestamps would time that contention.

import { NAP_FRACTION, nap } from './executor.js';

/** @typedef {import('./executor.js').Executor} Executor */

const MAX_QUERIES = 4096; // WebGPU's largest query set

/**
 * @param {number[]} xs
 */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** A query set and the buffers that read it back. */
class Timestamps {
  /**
   * @param {Executor} executor whose device it times, and whose waits it waits
   * @param {number} count
   */
  constructor(executor, count) {
    const { device } = executor;
    this.executor = executor;
    this.device = device;
    this.count = count;
    this.querySet = device.createQuerySet({ type: 'timestamp', count });
    this.resolve = device.createBuffer({ size: 8 * count, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
    this.read = device.createBuffer({ size: 8 * count, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  }

  /**
   * @param {number | undefined} begin
   * @param {number | undefined} end
   * @returns {GPUComputePassTimestampWrites | undefined}
   */
  writes(begin, end) {
    if (begin === undefined && end === undefined) return undefined;
    return { querySet: this.querySet, beginningOfPassWriteIndex: begin, endOfPassWriteIndex: end };
  }

  /**
   * Resolve the first `used` queries, submit `encoder` and return the timestamps in nanoseconds, napping
   * through most of the `expected` milliseconds the work should take (0: unknown).
   * @param {GPUCommandEncoder} encoder
   * @param {number} used
   * @param {number} expected
   * @returns {Promise<BigUint64Array>}
   */
  async finish(encoder, used = this.count, expected = 0) {
    encoder.resolveQuerySet(this.querySet, 0, used, this.resolve, 0);
    encoder.copyBufferToBuffer(this.resolve, 0, this.read, 0, 8 * used);
    this.device.queue.submit([encoder.finish()]);
    await nap(NAP_FRACTION * expected);
    await this.executor.settle(this.read.mapAsync(GPUMapMode.READ, 0, 8 * used), 'timed work');
    try {
      return new BigUint64Array(this.read.getMappedRange(0, 8 * used).slice(0));
    } finally {
      this.read.unmap();
    }
  }

  destroy() {
    this.querySet.destroy();
    this.resolve.destroy();
    this.read.destroy();
  }
}

/**
 * GPU seconds of each dispatch of `executor`'s current plan, median over `samples` runs after a warm-up
 * (unless `warmUp` is false). Each dispatch runs `repeats` times back to back in a compute pass of its own,
 * timed by timestamps. With `only`, just those dispatches run, and the others' times are NaN. Needs the
 * device's `timestamp-query` feature.
 * @param {Executor} executor
 * @param {number} samples
 * @param {number} repeats
 * @param {number[]} [only]
 * @param {boolean} [warmUp]
 * @returns {Promise<number[]>}
 */
export async function dispatchTimes(executor, samples = 3, repeats = 1, only = undefined, warmUp = true) {
  const n = executor.planPipelines.length;
  const timed = only ? [...new Set(only)].sort((a, b) => a - b) : [...Array(n).keys()];
  const perPass = MAX_QUERIES / 2;
  const stamps = new Timestamps(executor, 2 * Math.min(Math.max(timed.length, 1), perPass));
  /** @type {number[][]} */
  const runs = Array.from({ length: n }, () => []);
  const whole = timed.length === n && n <= perPass; // one pass of every dispatch: a run's time, repeated
  /** @type {number[]} per pass of dispatches, its last sample's milliseconds from first begin to last end */
  const spans = [whole ? perRun(executor) * repeats : 0];
  try {
    for (let sample = warmUp ? 0 : 1; sample <= samples; sample++) { // sample 0 is the warm-up
      for (let first = 0; first < timed.length; first += perPass) {
        const count = Math.min(perPass, timed.length - first);
        const encoder = executor.device.createCommandEncoder();
        for (let j = 0; j < count; j++) {
          const i = timed[first + j];
          const pass = encoder.beginComputePass({ timestampWrites: stamps.writes(2 * j, 2 * j + 1) });
          pass.setPipeline(executor.planPipelines[i]);
          pass.setBindGroup(0, executor.planGroups[i]);
          const g = executor.planGrids.subarray(3 * i, 3 * i + 3);
          if (g[0]) for (let r = 0; r < repeats; r++) pass.dispatchWorkgroups(g[0], g[1], g[2]);
          pass.end();
        }
        const t = await stamps.finish(encoder, 2 * count, spans[first / perPass] ?? 0);
        spans[first / perPass] = Number(t[2 * count - 1] - t[0]) * 1e-6;
        if (whole) executor.waited(spans[0] / repeats);
        if (sample) for (let j = 0; j < count; j++) runs[timed[first + j]].push(Number(t[2 * j + 1] - t[2 * j]) * 1e-9 / repeats);
      }
    }
  } finally {
    stamps.destroy();
  }
  return runs.map((r) => (r.length ? median(r) : NaN));
}

/**
 * Milliseconds one call of `executor` is expected to take: the shortest start-to-map time of its recent
 * reading calls (the naps' own estimate; executor.js), 0 before its first.
 * @param {Executor} executor
 */
function perRun(executor) {
  return executor.waits.length ? Math.min(...executor.waits) : 0;
}

/** Seconds a timed submit should last: timestamps are quantised (Dawn: to 65.5 µs on some GPUs). */
const MIN_SPAN = 2e-3;

/**
 * GPU seconds per call of `executor` at its current sizes: at least `repeats` back-to-back calls per submit
 * (more for short programs, so a submit spans MIN_SPAN), median over `samples` submits. Inputs are whatever
 * the buffers hold. Uses timestamps where the device has them, else the wall clock around submit-and-wait.
 * @param {Executor} executor
 * @param {number} repeats
 * @param {number} samples
 * @returns {Promise<{seconds: number, method: 'timestamps' | 'wall clock'}>}
 */
export async function gpuTime(executor, repeats = 10, samples = 5) {
  for (;;) {
    const t = await timeCalls(executor, repeats, 1);
    if (t.seconds * repeats >= MIN_SPAN || repeats >= 4096) break;
    repeats *= 4;
  }
  return timeCalls(executor, repeats, samples);
}

/**
 * @param {Executor} executor
 * @param {number} repeats
 * @param {number} samples
 * @returns {Promise<{seconds: number, method: 'timestamps' | 'wall clock'}>}
 */
async function timeCalls(executor, repeats, samples) {
  const { device } = executor;
  const stamps = device.features.has('timestamp-query') ? new Timestamps(executor, 2) : null;
  const perCall = [];
  let expected = perRun(executor) * repeats;
  try {
    for (let sample = 0; sample <= samples; sample++) {
      const encoder = device.createCommandEncoder();
      let seconds;
      if (stamps) {
        for (let r = 0; r < repeats; r++) executor.encode(encoder, stamps.writes(r === 0 ? 0 : undefined, r === repeats - 1 ? 1 : undefined));
        const t = await stamps.finish(encoder, 2, expected);
        seconds = Number(t[1] - t[0]) * 1e-9;
        expected = seconds * 1e3;
      } else {
        for (let r = 0; r < repeats; r++) executor.encode(encoder);
        const start = performance.now();
        device.queue.submit([encoder.finish()]);
        await executor.settle(device.queue.onSubmittedWorkDone(), 'timed work');
        seconds = (performance.now() - start) * 1e-3;
      }
      if (sample) perCall.push(seconds / repeats);
    }
  } finally {
    stamps?.destroy();
  }
  return { seconds: median(perCall), method: stamps ? 'timestamps' : 'wall clock' };
}
