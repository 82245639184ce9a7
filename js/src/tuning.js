// Per-device autotuning: a dispatch that offers options (equivalent kernels over the same buffers: GEMM
// tile configurations, attention thread layouts, a row kernel's subgroup twin) runs the one that is fastest
// on this device among those that compute what its default computes. A group (a leader and the dispatches
// that `follow` it: a split GEMM and the reduction of its slices) is chosen as a whole, by the sum of its
// members' times. The Python runtime's runtime/tuning.py does the same, with the same settings.
//
// At load, groups whose choice is not cached are timed, the most work first, until the time budget is spent,
// in probes of one group first, then as many as the budget left is expected to hold (probeSize). A group runs
// on a probe (probeSpec): copies of the buffers it binds — its constants the program's own buffers, which no
// dispatch writes — every other buffer it reads filled with seeded non-zero values (seededWords); its
// candidates share the default's copies (those it writes zeroed before each runs), so a group holds one copy of
// its buffers however many are timed. The default runs first; then each candidate is compiled, run, checked and scouted on its own, in rank order, none begun past the budget: its
// result views (a leader's `result`) must agree with the default's within the group's `tolerance`
// (disagreement), or it is left out with a warning, as is a candidate the engine refuses. Then only those
// within SLOWER times the fastest are measured (keep), REPEATS times in a compute pass of their own, in up to
// SAMPLES interleaved samples, with no more repeats than make the fastest one's repeated runs span SPAN (a long
// kernel needs none to resolve its time: on lavapipe a vocabulary projection's 8 repeats spent the budget the
// other groups needed) nor than the budget left holds for all of them (repeats; none when not even one fits,
// and the scout decides), and no sample begun past the budget. So a load overruns its budget by one
// candidate's compile, check and scout and one sample at most; a group broken off by the budget stays untimed
// and runs its default. In each group only the `top` best-ranked candidates are timed
// (compiling a candidate is most of the cost on a software adapter): candidateOrder puts the options whose
// kernels target this kind of adapter first (a kernel's `targets`; "cpu" where fit.js's adapterKind finds one), then
// the default, then the others by how close their grids are to its grid. A candidate whose kernel the device
// cannot run (a feature it lacks, a workgroup past its limits) is neither timed nor chosen, a cached choice it
// cannot run is timed again, and a group without a `result` is never tuned. The pure decisions (candidateOrder,
// probeSize, keep, repeats, seededWords, disagreement) are replayed from
// tests/conformance/tuning_rules.json by both runtimes' tests. Choices persist per adapter, engine and
// cache_version, keyed by what the candidates are (choiceKey, docs/artifact.md "Tuning": the Python runtime's
// key), in a JSON file on Node (WEBGPU_TORCH_JS_CACHE, default ~/.cache/webgpu_torch/tuning-js.json) or
// IndexedDB in a browser.
// Settings: the load options `tune` (WEBGPU_TORCH_TUNE=0: off), `tuneBudget` (WEBGPU_TORCH_TUNE_BUDGET,
// seconds, default 5), `tuneTop` (WEBGPU_TORCH_TUNE_TOP, 0 for all; default 4 on a CPU adapter, all on
// others). A device without timestamp queries keeps the defaults.

import { envVar, isNode } from './env.js';
import { CallTimeout, DeviceError } from './errors.js';
import { Executor } from './executor.js';
import { foldGrid, group, written } from './artifact.js';
import { DEVICE_FORM, widenHalf } from './dtypes.js';
import { adapterKind, runsOn, sourceFor } from './fit.js';
import { LIMITS } from './limits.js';
import * as expr from './symbolic.js';
import { dispatchTimes, median } from './timing.js';

/** @typedef {import('./artifact.js').ProgramSpec} ProgramSpec */
/** @typedef {import('./artifact.js').DispatchSpec} DispatchSpec */
/** @typedef {import('./artifact.js').Option} Option */
/** @typedef {import('./engine.js').Gpu} Gpu */
/** @typedef {Record<string, number>} Choices */
/** @typedef {{load(device: string): Promise<Choices>, save(device: string, choices: Choices): Promise<void>}} Cache */

export const TUNE_VAR = 'WEBGPU_TORCH_TUNE';
export const CACHE_VAR = 'WEBGPU_TORCH_JS_CACHE';
export const BUDGET_VAR = 'WEBGPU_TORCH_TUNE_BUDGET';
export const TOP_VAR = 'WEBGPU_TORCH_TUNE_TOP';
const REPEATS = LIMITS.tuning.repeats;
const SAMPLES = LIMITS.tuning.samples;
const GROUPS_PER_PROBE = LIMITS.tuning.groups_per_probe;
const SPAN = LIMITS.tuning.span_seconds; // a measuring pass this long needs no repeats to resolve its time
const SLOWER = LIMITS.tuning.slower; // a candidate scouted this many times slower than its group's fastest is not measured

/**
 * @typedef {object} TuningOptions
 * @property {boolean} [tune] time the options (default: on, unless WEBGPU_TORCH_TUNE=0)
 * @property {string | false} [cache] where choices persist: a file path (Node) or IndexedDB database name
 *   (browser); false keeps them for this load only
 * @property {number} [tuneBudget] seconds of timing at one load (default 5)
 * @property {number} [tuneTop] candidates timed per group (0 for all; default 4 on a CPU adapter, all on others)
 */

/**
 * A number from an option or an environment variable.
 * @param {number | undefined} option
 * @param {string} name
 * @param {number} fallback
 */
function setting(option, name, fallback) {
  if (option !== undefined) return option;
  const value = envVar(name);
  if (!value) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n)) throw new Error(`${name}=${JSON.stringify(value)}: give a number`);
  return n;
}

/**
 * @param {DispatchSpec} d
 * @returns {Option[]} the dispatch as written first, then its options
 */
export function candidates(d) {
  return [{ kernel: d.kernel, uniform: d.uniform, grid: d.grid, patches: d.patches, count: d.count }, ...d.options];
}

/**
 * The dynamic sizes tuning runs candidates at: each symbol's hint (the size the model was exported at).
 * @param {ProgramSpec} spec
 * @returns {Record<string, number>}
 */
export function hints(spec) {
  return Object.fromEntries(Object.entries(spec.symbols).map(([name, s]) => [name, s.hint]));
}

/**
 * The Params and grid candidate `o` runs with at the dynamic sizes `env` (its patched words filled in, its
 * count folded): what a tuning probe runs.
 * @param {Option} o
 * @param {Record<string, number>} env
 * @returns {{uniform: Uint32Array, grid: import('./artifact.js').Grid}}
 */
export function launchAt(o, env) {
  const uniform = o.uniform.slice();
  for (const p of o.patches) {
    const value = expr.evaluate(p.value, env);
    if (p.type === 'f32') new Float32Array(uniform.buffer)[p.offset / 4] = value;
    else new Int32Array(uniform.buffer)[p.offset / 4] = value; // u32 and i32 alike: the value's low 32 bits
  }
  return { uniform, grid: o.count === null ? o.grid : foldGrid(expr.evaluate(o.count, env)) };
}

/**
 * The dispatch indices of each group with options: its leader, then the dispatches that follow it.
 * @param {ProgramSpec} spec
 * @returns {number[][]}
 */
export function groups(spec) {
  return spec.dispatches.flatMap((d, i) => (d.options.length && !d.follows ? [group(spec.dispatches, i)] : []));
}

/**
 * `spec` with each group of dispatches running candidate `choice(group)`; the chosen dispatches offer no
 * options.
 * @param {ProgramSpec} spec
 * @param {number[][]} which
 * @param {number[]} chosen
 * @returns {ProgramSpec}
 */
export function choose(spec, which, chosen) {
  const dispatches = spec.dispatches.slice();
  which.forEach((members, g) => {
    for (const i of members) {
      const d = dispatches[i];
      dispatches[i] = { ...d, ...candidates(d)[chosen[g]], options: [], follows: 0, result: [] };
    }
  });
  return { ...spec, dispatches };
}

/**
 * `spec` with every group running its fastest candidate on this device (timing those not cached, within the
 * budget); `spec` itself when it has no options, tuning is off or the device has no timestamp queries.
 * @param {ProgramSpec} spec
 * @param {Gpu} gpu
 * @param {Set<string>} features
 * @param {TuningOptions} options
 * @param {GPUBuffer[]} constants the program's buffers, by index, its constants written (a probe binds them)
 * @returns {Promise<ProgramSpec>}
 */
export async function resolve(spec, gpu, features, options, constants) {
  const which = groups(spec).filter((members) => spec.dispatches[members[0]].result.length); // the others: never tuned
  const on = options.tune ?? envVar(TUNE_VAR) !== '0';
  if (!which.length || !on || !features.has('timestamp-query')) return spec;
  const cache = options.cache === false ? null : await openCache(options.cache);
  // Choices made under another cache_version are never read.
  const device = `v${LIMITS.tuning.cache_version} | ${gpu.key} | ${[...features].sort().join(',')}`;
  const chosen = cache ? await cache.load(device) : {};
  const keys = await Promise.all(which.map((members) => choiceKey(spec, members, gpu.engine)));
  /** @type {Map<string, number[]>} one group per key: equal keys time alike */
  const missing = new Map();
  keys.forEach((key, g) => {
    // A cached choice this device cannot run (a hand-edited cache, or a hostile file whose candidates look
    // like cached ones) is timed again.
    const valid = usable(spec, which[g], features, gpu.device.limits).includes(chosen[key]);
    if (!valid && !missing.has(key)) missing.set(key, which[g]);
  });
  const kind = /** @type {'cpu' | 'gpu'} */ (adapterKind(gpu.adapter));
  /** @type {Map<string, number[]>} each missing group's usable candidates, best-ranked first */
  const ranked = new Map([...missing].map(([key, members]) => [key, rank(spec, members, features, gpu.device.limits, kind)]));
  if (missing.size) {
    const timed = await measure(spec, gpu, missing, ranked, options, constants, kind);
    if (Object.keys(timed).length) {
      Object.assign(chosen, timed);
      await cache?.save(device, chosen);
    }
  }
  // A group the budget left untimed runs its default (no other candidate was checked against it), and is timed
  // at a later load.
  return choose(spec, which, keys.map((key) => chosen[key] ?? 0));
}

/**
 * For each key timed within the budget, the index of its group's fastest candidate among the best-ranked
 * usable ones, as many as `tuneTop` or the limits' `top` for this kind of adapter (a group left with one such
 * candidate takes it untimed).
 * @param {ProgramSpec} spec
 * @param {Gpu} gpu
 * @param {Map<string, number[]>} which
 * @param {Map<string, number[]>} usable
 * @param {TuningOptions} options
 * @param {GPUBuffer[]} constants
 * @param {'cpu' | 'gpu'} kind the adapter's (fit.js's adapterKind)
 * @returns {Promise<Choices>}
 */
async function measure(spec, gpu, which, usable, options, constants, kind) {
  const top = setting(options.tuneTop, TOP_VAR, LIMITS.tuning.top[kind]) || Infinity;
  const budget = setting(options.tuneBudget, BUDGET_VAR, LIMITS.tuning.budget_seconds);
  /** @type {Choices} */
  const chosen = {};
  /** @type {Map<string, number[]>} */
  const ranked = new Map();
  for (const [key, all] of usable) {
    const r = all.slice(0, top);
    if (r.length === 1 && r[0] === 0) chosen[key] = 0; // nothing to compare
    else if (r.length) ranked.set(key, r);
  }
  const members = (/** @type {string} */ key) => /** @type {number[]} */ (which.get(key));
  const order = [...ranked.keys()].sort((a, b) => work(spec, members(b)) - work(spec, members(a)));
  const start = seconds();
  const deadline = start + budget;
  const progress = new Progress(order.length);
  let timed = 0;
  let elapsed = 0;
  while (timed < order.length && (elapsed = seconds() - start) < budget) {
    const keys = order.slice(timed, timed + probeSize(timed, elapsed, budget));
    progress.show(timed, spec.dispatches[members(keys[0])[0]].node, elapsed);
    for (const key of keys) {
      const best = await fastest(spec, gpu, members(key), /** @type {number[]} */ (ranked.get(key)), deadline, constants);
      if (best !== null) chosen[key] = best;
    }
    timed += keys.length;
  }
  progress.done(order.filter((key) => key in chosen).length, order.length, seconds() - start);
  return chosen;
}

/**
 * A group's fastest candidate among those that compute what its default computes, or null where the budget
 * cut it short. The default runs first on seeded inputs (probeSpec); then the candidates are compiled, run on
 * the same inputs, checked against it and scouted one at a time in rank order, none begun past the deadline,
 * so a load overruns its budget by one candidate's compile, check and scout at most; the kept ones are then
 * measured (measured). A candidate the engine refuses (its pipeline fails to build) or whose result differs
 * from the default's is never chosen, with a warning naming it.
 * @param {ProgramSpec} spec
 * @param {Gpu} gpu
 * @param {number[]} members
 * @param {number[]} ranked
 * @param {number} deadline in seconds (the clock `seconds` reads)
 * @param {GPUBuffer[]} constants
 * @returns {Promise<number | null>}
 */
async function fastest(spec, gpu, members, ranked, deadline, constants) {
  /** @type {Map<number, {executor: Executor, time: number}>} */
  const scouted = new Map();
  /** @type {Candidate | null} */
  let reference = null;
  let tried = 0;
  try {
    try {
      reference = await Candidate.create(spec, gpu, members, 0, constants);
    } catch (e) {
      if (e instanceof DeviceError && !(e instanceof CallTimeout)) return null; // the default does not build: the load says so
      throw e;
    }
    for (const c of ranked) {
      if (tried && seconds() >= deadline) break;
      tried++;
      let candidate = reference;
      if (c !== 0) {
        try {
          candidate = await Candidate.create(spec, gpu, members, c, constants, reference);
        } catch (e) {
          if (!(e instanceof DeviceError) || e instanceof CallTimeout) throw e; // the rest would queue behind it
          leaveOut(spec, members, c, `the ${gpu.engine} engine refuses it: ${e.message}`);
          continue;
        }
      }
      const why = candidate.differsFrom(reference);
      if (why) {
        leaveOut(spec, members, c, `its result differs from the default's: ${why}`);
        candidate.executor.destroy();
        continue;
      }
      scouted.set(c, { executor: candidate.executor, time: sum(await dispatchTimes(candidate.executor, 1, 1, undefined, false)) });
    }
    if (tried < ranked.length) return null;
    if (!scouted.size) return 0; // every candidate timed was left out: the default
    const order = [...scouted.keys()];
    const kept = keep(order.map((c) => /** @type {{time: number}} */ (scouted.get(c)).time)).map((i) => order[i]);
    const times = await measured(scouted, kept, deadline);
    return kept.reduce((a, c) => (/** @type {number} */ (times.get(c)) < /** @type {number} */ (times.get(a)) ? c : a));
  } finally {
    for (const { executor } of scouted.values()) executor.destroy();
    if (reference && !scouted.has(0)) reference.executor.destroy();
  }
}

/** Candidate `c` of a group built over a probe and run once: its executor and its result views. */
export class Candidate {
  /**
   * @param {ProgramSpec} spec
   * @param {Gpu} gpu
   * @param {number[]} members
   * @param {number} c
   * @param {GPUBuffer[]} constants the program's buffers, by index, its constants written
   * @param {Candidate | null} [reference] the group's default, built before, whose probe buffers this one binds
   *   too (the seeded ones as they are, the written ones zeroed first, as fresh ones are), so that a group
   *   holds one copy of its buffers however many candidates are timed (alternatives bind the same buffers).
   *   None: buffers of its own, its inputs seeded.
   */
  static async create(spec, gpu, members, c, constants, reference = null) {
    const probe = probeSpec(spec, members, c);
    const borrowed = new Map([...probe.constants].map(([j, b]) => [j, constants[b]]));
    reference?.executor.buffers.forEach((b, j) => { if (!borrowed.has(j)) borrowed.set(j, b); });
    const executor = await Executor.create(probe.spec, gpu, {}, borrowed);
    try {
      const sizes = probe.spec.buffers.map((b) => b.size);
      const queue = gpu.device.queue;
      if (!reference) for (const j of probe.seeded) queue.writeBuffer(executor.buffers[j], 0, seededWords(j, sizes[j] / 4 | 0));
      const written = sizes.flatMap((_, j) => (probe.seeded.includes(j) || probe.constants.has(j) ? [] : [j]));
      if (reference) for (const j of written) queue.writeBuffer(executor.buffers[j], 0, new Uint32Array(Math.ceil(sizes[j] / 4)));
      await executor.run([], {}, []);
      return new Candidate(executor, await readViews(executor, probe.result), spec.dispatches[members[0]].tolerance);
    } catch (e) {
      executor.destroy();
      throw e;
    }
  }

  /**
   * @param {Executor} executor
   * @param {(Float32Array | Int32Array | Uint32Array)[]} result
   * @param {number} tolerance
   */
  constructor(executor, result, tolerance) {
    this.executor = executor;
    this.result = result;
    this.tolerance = tolerance;
  }

  /**
   * How this candidate's result differs from the default's `reference`, or null when it agrees.
   * @param {Candidate} reference
   */
  differsFrom(reference) {
    for (let k = 0; k < this.result.length; k++) {
      const why = disagreement(reference.result[k], this.result[k], this.tolerance);
      if (why) return this.result.length > 1 ? `result view ${k}: ${why}` : why;
    }
    return null;
  }
}

/**
 * Warn, once per kernel and reason, that tuning leaves candidate `c` of a group out.
 * @param {ProgramSpec} spec
 * @param {number[]} members
 * @param {number} c
 * @param {string} why
 */
function leaveOut(spec, members, c, why) {
  const leader = spec.dispatches[members[0]];
  const message = `webgpu-torch: tuning leaves out kernel ${spec.kernels[candidates(leader)[c].kernel].name} for node ${leader.node}: ${why}`;
  if (warned.has(message)) return;
  warned.add(message);
  console.warn(message);
}
const warned = new Set();

/**
 * The views of a probe's buffers, each in its device form (f16 widened to float32 values).
 * @param {Executor} executor
 * @param {import('./artifact.js').ViewSpec[]} views
 * @returns {Promise<(Float32Array | Int32Array | Uint32Array)[]>}
 */
async function readViews(executor, views) {
  const out = [];
  for (const v of views) {
    const bytes = await executor.readBuffer(v.buffer, 'a tuning check');
    const form = v.dtype === 'f16' ? 'f16' : DEVICE_FORM[v.dtype];
    const all = form === 'f16' ? new Float32Array(widenHalf(new Uint16Array(bytes)).buffer)
      : form === 'i32' ? new Int32Array(bytes) : form === 'u32' ? new Uint32Array(bytes) : new Float32Array(bytes);
    out.push(strided(all, v.shape, v.strides, v.offset));
  }
  return out;
}

/**
 * The elements of a strided view of `all`, in row-major order, as a new array of its type.
 * @template {Float32Array | Int32Array | Uint32Array} T
 * @param {T} all
 * @param {number[]} shape
 * @param {number[]} strides
 * @param {number} offset
 * @returns {T}
 */
function strided(all, shape, strides, offset) {
  const n = shape.reduce((a, b) => a * b, 1);
  const out = /** @type {T} */ (new /** @type {any} */ (all.constructor)(n));
  const index = new Array(shape.length).fill(0);
  let at = offset;
  for (let i = 0; i < n; i++) {
    out[i] = all[at];
    for (let k = shape.length - 1; k >= 0; k--) { // odometer: bump the last axis, carry into earlier ones
      at += strides[k];
      if (++index[k] < shape[k]) break;
      at -= strides[k] * shape[k];
      index[k] = 0;
    }
  }
  return out;
}

/**
 * The contents of a probe's input buffer `index`: `count` u32 words from a hash of (index, position), each of
 * whose 16-bit halves reads as a float16 in ±[1, 2) and whose whole reads as a float32 in ±[2^-7, 2): non-zero
 * finite values of either sign, whatever a kernel reads them as (docs/artifact.md, "Tuning").
 * @param {number} index
 * @param {number} count
 * @returns {Uint32Array}
 */
export function seededWords(index, count) {
  const out = new Uint32Array(count);
  const base = Math.imul(index, GOLDEN);
  for (let w = 0; w < count; w++) {
    let x = (w + base) >>> 0;
    x ^= x >>> 16;
    x = Math.imul(x, 0x7feb352d);
    x ^= x >>> 15;
    x = Math.imul(x, 0x846ca68b);
    x ^= x >>> 16;
    out[w] = ((x & 0x83ff83ff) | 0x3c003c00) >>> 0;
  }
  return out;
}
const GOLDEN = 0x9e3779b9; // 2^32 / φ: spreads the buffers' hash inputs apart

/**
 * How a candidate's result view differs from the default's `reference`, or null when it agrees: integer
 * elements exactly; float elements with the same non-finite values (NaN, ±inf) where either has one, and the
 * finite ones within `tolerance` times the largest finite magnitude of the reference's (docs/artifact.md,
 * "Tuning").
 * @param {Float32Array | Float64Array | Int32Array | Uint32Array} reference
 * @param {Float32Array | Float64Array | Int32Array | Uint32Array} candidate
 * @param {number} tolerance
 * @returns {string | null}
 */
export function disagreement(reference, candidate, tolerance) {
  if (!(reference instanceof Float32Array || reference instanceof Float64Array)) {
    const wrong = reference.filter((v, i) => v !== candidate[i]).length;
    return wrong ? `${wrong} of ${reference.length} integers differ` : null;
  }
  let scale = 0;
  let error = 0;
  for (let i = 0; i < reference.length; i++) {
    const want = reference[i];
    const got = candidate[i];
    if (Number.isFinite(want) !== Number.isFinite(got) || (!Number.isFinite(want) && !Object.is(want, got) && !(Number.isNaN(want) && Number.isNaN(got)))) {
      return "its non-finite elements differ from the default's";
    }
    if (Number.isFinite(want)) {
      scale = Math.max(scale, Math.abs(want));
      error = Math.max(error, Math.abs(got - want));
    }
  }
  if (error > tolerance * scale) {
    return `off by up to ${error.toPrecision(3)} where the default's largest magnitude is ${scale.toPrecision(3)} (tolerance ${tolerance})`;
  }
  return null;
}

/**
 * Seconds per run of each kept candidate: the median of up to SAMPLES samples of `repeats` runs each,
 * interleaved, none begun past the deadline; the scout's own time where not one sample fits the budget.
 * @param {Map<number, {executor: Executor, time: number}>} scouted
 * @param {number[]} kept
 * @param {number} deadline in seconds (the clock `seconds` reads)
 * @returns {Promise<Map<number, number>>}
 */
async function measured(scouted, kept, deadline) {
  const scout = (/** @type {number} */ c) => /** @type {{executor: Executor, time: number}} */ (scouted.get(c));
  const times = kept.map((c) => scout(c).time);
  const reps = kept.length > 1 ? repeats(sum(times), Math.min(...times), deadline - seconds()) : 0;
  if (!reps) return new Map(kept.map((c) => [c, scout(c).time]));
  /** @type {Map<number, number[]>} */
  const samples = new Map(kept.map((c) => [c, []]));
  const count = () => /** @type {number[]} */ (samples.get(kept[0])).length;
  while (count() < SAMPLES && (!count() || seconds() < deadline)) {
    for (const c of kept) { // the scout warmed them up
      /** @type {number[]} */ (samples.get(c)).push(sum(await dispatchTimes(scout(c).executor, 1, reps, undefined, false)));
    }
  }
  return new Map([...samples].map(([c, t]) => [c, median(t)]));
}

/** The clock tuning reads, in seconds: the unit of its budget, deadlines and GPU times alike. */
function seconds() {
  return performance.now() / 1000;
}

/** @param {number[]} xs */
function sum(xs) {
  return xs.reduce((a, b) => a + b, 0);
}

/**
 * Which candidates of a group, by their scouted times, are worth measuring: those within SLOWER times the
 * fastest.
 * @param {number[]} scouted
 * @returns {number[]}
 */
export function keep(scouted) {
  const best = Math.min(...scouted);
  return scouted.flatMap((t, c) => (t <= SLOWER * best ? [c] : []));
}

/**
 * How many times each measured dispatch repeats in its pass when one run of all of them takes `run` seconds,
 * the fastest of them `fastest`, and `left` seconds of budget remain: REPEATS, but no more than make the
 * fastest one's repeated runs span SPAN (repeats resolve runs shorter than a timestamp's quantum; past that
 * they only spend the budget later groups need), nor than SAMPLES passes of them fit (0: none fits, the scout
 * decides).
 * @param {number} run
 * @param {number} fastest
 * @param {number} left
 */
export function repeats(run, fastest, left) {
  if (run <= 0) return REPEATS;
  const spanning = fastest > 0 ? Math.ceil(SPAN / fastest) : REPEATS;
  return Math.max(0, Math.min(REPEATS, spanning, Math.floor(left / (SAMPLES * run))));
}

/**
 * How many groups the next probe times: one first, then as many as the budget left holds at the time a group
 * has taken so far, at most GROUPS_PER_PROBE. A probe compiles all its candidates before it times any (most
 * of a load on a software adapter with a cold shader cache), so its size bounds the overrun.
 * @param {number} timed
 * @param {number} elapsed
 * @param {number} budget
 */
export function probeSize(timed, elapsed, budget) {
  if (timed === 0) return 1;
  return Math.max(1, Math.min(GROUPS_PER_PROBE, Math.floor((budget - elapsed) * timed / Math.max(elapsed, 1e-9))));
}

/**
 * Candidates in the order tuning times them, from each one's leader's workgroup count and its kernel's
 * targets (candidate 0 is the default): those targeting `kind` of adapter first, then the default, then the
 * rest; each part by how far (in log2) its workgroup count is from the default's (ties in candidate order).
 * @param {number[]} workgroups
 * @param {string[][]} targets
 * @param {string} kind
 * @returns {number[]}
 */
export function candidateOrder(workgroups, targets, kind) {
  const key = (/** @type {number} */ c) => [targets[c].includes(kind) ? 0 : 1, c === 0 ? 0 : 1, Math.abs(Math.log2(workgroups[c] / workgroups[0]))];
  return [...workgroups.keys()].sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    return ka[0] - kb[0] || ka[1] - kb[1] || ka[2] - kb[2] || a - b;
  });
}

/**
 * The candidates of a group whose every member's kernel runs on the device (fit.js, runsOn).
 * @param {ProgramSpec} spec
 * @param {number[]} members
 * @param {Set<string>} features
 * @param {Partial<import('./fit.js').Limits>} limits
 * @returns {number[]}
 */
export function usable(spec, members, features, limits) {
  const count = spec.dispatches[members[0]].options.length + 1;
  return [...Array(count).keys()].filter((c) => members.every((i) =>
    runsOn(spec.kernels[candidates(spec.dispatches[i])[c].kernel], features, limits)));
}

/**
 * The group's candidates this device can run, as candidateOrder orders them on `kind` of adapter.
 * @param {ProgramSpec} spec
 * @param {number[]} members
 * @param {Set<string>} features
 * @param {Partial<import('./fit.js').Limits>} limits
 * @param {string} [kind]
 * @returns {number[]}
 */
export function rank(spec, members, features, limits, kind = 'gpu') {
  const leader = candidates(spec.dispatches[members[0]]);
  const runnable = new Set(usable(spec, members, features, limits));
  const env = hints(spec);
  const grids = leader.map((o) => launchAt(o, env).grid);
  const order = candidateOrder(grids.map((g) => g[0] * g[1] * g[2]), leader.map((o) => spec.kernels[o.kernel].targets), kind);
  return order.filter((c) => runnable.has(c));
}

/**
 * How much a group computes, roughly: its default's workgroups.
 * @param {ProgramSpec} spec
 * @param {number[]} members
 */
function work(spec, members) {
  return members.reduce((n, i) => n + spec.dispatches[i].grid.reduce((a, b) => a * b, 1), 0);
}

/** One updating line on a terminal's stderr while tuning (Node); a summary line after a long tuning. */
class Progress {
  /** @param {number} groups */
  constructor(groups) {
    this.groups = groups;
    this.live = isNode && Boolean(process.stderr.isTTY);
  }

  /**
   * @param {number} done
   * @param {string} node
   * @param {number} elapsed seconds
   */
  show(done, node, elapsed) {
    if (this.live) process.stderr.write(`\rtuning ${done}/${this.groups} groups of dispatches (${elapsed.toFixed(1)} s): timing the kernels for ${node}\x1b[K`);
  }

  /**
   * @param {number} timed
   * @param {number} groups
   * @param {number} elapsed seconds
   */
  done(timed, groups, elapsed) {
    if (!isNode || !(this.live || elapsed > 10) || !groups) return;
    const left = timed < groups ? `; ${groups - timed} left at their defaults (${BUDGET_VAR})` : '';
    const line = `tuned ${timed}/${groups} groups of dispatches in ${elapsed.toFixed(1)} s${left}`;
    process.stderr.write(this.live ? `\r${line}\x1b[K\n` : `${line}\n`);
  }
}

/**
 * A program of candidate `c` of the group `members` (its dispatches in order) over copies of the buffers they
 * bind, numbered in order of first binding, but for its constants: `constants` maps each constant's index in
 * the probe to the program's buffer it binds. Also the buffers to fill with seededWords (those the group only
 * reads) and the group's result views in these buffers.
 * @param {ProgramSpec} spec
 * @param {number[]} members
 * @param {number} c
 * @returns {{spec: ProgramSpec, constants: Map<number, number>, seeded: number[], result: import('./artifact.js').ViewSpec[]}}
 */
function probeSpec(spec, members, c) {
  /** @type {Map<number, number>} */
  const used = new Map();
  const env = hints(spec);
  const dispatches = members.map((i) => {
    const d = spec.dispatches[i];
    const buffers = d.buffers.map((b) => {
      if (!used.has(b)) used.set(b, used.size);
      return /** @type {number} */ (used.get(b));
    });
    const o = candidates(d)[c];
    return { ...d, kernel: o.kernel, ...launchAt(o, env), buffers, patches: [], count: null, options: [], follows: 0, result: [] };
  });
  const writes = new Set(members.flatMap((i) => written(spec.kernels, spec.dispatches[i])));
  const bound = [...used].filter(([b]) => spec.constants.has(b));
  // The probe borrows every constant it binds from the program's buffers (Candidate.create), one another file
  // holds (`external`, shared with that file's program) too: the probe itself never resolves where one lives.
  const constants = new Map(bound.map(([b, j]) => [j, { .../** @type {import('./artifact.js').Constant} */ (spec.constants.get(b)), external: undefined }]));
  const seeded = [...used].flatMap(([b, j]) => (constants.has(j) || writes.has(b) ? [] : [j]));
  const at = (/** @type {number} */ b) => /** @type {number} */ (used.get(b));
  const result = spec.dispatches[members[0]].result.map((t) => ({ ...t, buffer: at(t.buffer) }));
  const empty = /** @type {import('./tree.js').TreeSpec} */ ({ type: 'tuple', items: [] });
  /** @type {import('./artifact.js').BufferSpec[]} */
  const buffers = [...used].map(([b, j]) => ({ size: spec.buffers[b].size, role: constants.has(j) ? 'constant' : 'scratch', name: '' }));
  return {
    spec: { ...spec, symbols: {}, constants, inputs: [], outputs: [], inputTree: empty, outputTree: empty, dispatches, checks: [], status: null, buffers },
    constants: new Map(bound.map(([b, j]) => [j, b])),
    seeded,
    result,
  };
}

/**
 * What a group's candidates are on `engine`, independent of buffer numbering: equal keys time alike
 * (docs/artifact.md, "Tuning": the Python runtime computes the same key).
 * @param {ProgramSpec} spec
 * @param {number[]} members
 * @param {string} engine
 */
export async function choiceKey(spec, members, engine) {
  const parts = [];
  const env = hints(spec);
  for (const i of members) {
    for (const o of candidates(spec.dispatches[i])) {
      const k = spec.kernels[o.kernel];
      const source = await sha1(spec.sources[sourceFor(k, engine)]);
      const overrides = Object.keys(k.overrides).sort(byCodePoint).map((name) => [name, overrideJson(k.overrides[name])]);
      const { uniform, grid } = launchAt(o, env);
      parts.push([source, k.entry, overrides, [...k.requires].sort(byCodePoint), Array.from(uniform), grid]);
    }
  }
  return sha1(JSON.stringify(parts));
}

/**
 * @param {string} a
 * @param {string} b
 */
const byCodePoint = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * An override value in a choice key: the integer when it is one, else its binary64 bits in hex.
 * @param {number} v
 * @returns {number | string}
 */
function overrideJson(v) {
  if (Number.isSafeInteger(v)) return v;
  const bits = new DataView(new ArrayBuffer(8));
  bits.setFloat64(0, v);
  return Array.from(new Uint8Array(bits.buffer), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** @type {Map<string, Promise<string>>} */
const digests = new Map();

/**
 * The SHA-1 of `text` as hex (each distinct text hashed once per process).
 * @param {string} text
 */
function sha1(text) {
  let d = digests.get(text);
  if (!d) {
    d = crypto.subtle.digest('SHA-1', new TextEncoder().encode(text)).then((h) =>
      Array.from(new Uint8Array(h), (b) => b.toString(16).padStart(2, '0')).join(''));
    if (text.length > 256) digests.set(text, d); // sources recur across groups; small keys do not
  }
  return d;
}

/**
 * @param {string | undefined} where
 * @returns {Promise<Cache>}
 */
async function openCache(where) {
  return isNode ? fileCache(where ?? envVar(CACHE_VAR) ?? await defaultPath()) : indexedDbCache(where ?? 'webgpu_torch');
}

async function defaultPath() {
  const { homedir } = await import('node:os');
  const { join } = await import('node:path');
  return join(homedir(), '.cache', 'webgpu_torch', 'tuning-js.json');
}

/**
 * A JSON file {device: {choice key: candidate}}; unreadable means empty, unwritable means this process only.
 * @param {string} path
 * @returns {Cache}
 */
function fileCache(path) {
  const read = async () => {
    const fs = await import('node:fs/promises');
    try {
      const data = JSON.parse(await fs.readFile(path, 'utf8'));
      return data !== null && typeof data === 'object' && !Array.isArray(data) ? data : {};
    } catch {
      return {};
    }
  };
  return {
    async load(device) {
      const entry = (await read())[device];
      return entry !== null && typeof entry === 'object' ? entry : {};
    },
    async save(device, choices) {
      const fs = await import('node:fs/promises');
      const { dirname } = await import('node:path');
      const all = await read(); // merged afresh: another process may have written meanwhile
      all[device] = { ...all[device], ...choices };
      try {
        await fs.mkdir(dirname(path), { recursive: true });
        const tmp = `${path}.${process.pid}.tmp`;
        await fs.writeFile(tmp, JSON.stringify(all, null, 1));
        await fs.rename(tmp, path); // atomic: a concurrent load never reads half a file
      } catch {
        // a read-only home: the choices hold for this load only
      }
    },
  };
}

/**
 * An IndexedDB database with one store, "tuning": device → choices.
 * @param {string} name
 * @returns {Cache}
 */
function indexedDbCache(name) {
  /** @returns {Promise<IDBDatabase | null>} */
  const open = () => new Promise((done) => {
    if (typeof indexedDB === 'undefined') return done(null);
    const request = indexedDB.open(name, 1);
    request.onupgradeneeded = () => request.result.createObjectStore('tuning');
    request.onsuccess = () => done(request.result);
    request.onerror = () => done(null); // private browsing and the like: no persistence
  });
  /**
   * @template T
   * @param {IDBRequest<T>} r
   * @returns {Promise<T | undefined>}
   */
  const settle = (r) => new Promise((done) => {
    r.onsuccess = () => done(r.result);
    r.onerror = () => done(undefined);
  });
  return {
    async load(device) {
      const db = await open();
      if (!db) return {};
      const entry = await settle(db.transaction('tuning').objectStore('tuning').get(device));
      db.close();
      return entry ?? {};
    },
    async save(device, choices) {
      const db = await open();
      if (!db) return;
      await settle(db.transaction('tuning', 'readwrite').objectStore('tuning').put(choices, device));
      db.close();
    },
  };
}
