// Per-device autotuning: a dispatch that offers options (equivalent kernels over the same buffers: GEMM
// tile configurations, attention thread layouts, a row kernel's subgroup twin) runs the one that is fastest
// on this device. A group (a leader and the dispatches that `follow` it: a split GEMM and the reduction of
// its slices) is chosen as a whole, by the sum of its members' times. The Python runtime's
// runtime/tuning.py does the same, with the same settings.
//
// At load, groups whose choice is not cached are timed, the most work first, until the time budget is spent,
// in probes of one group first, then as many as the budget left is expected to hold (probeSize). Each
// candidate is compiled and scouted on its own (one run after a warm-up run, on zero-filled copies of the
// buffers it binds: tile shapes, not values, set the speed), in rank order, none begun past the budget; then
// only those within SLOWER times the fastest are measured (keep), REPEATS times in a compute pass of their
// own, in up to SAMPLES interleaved samples, with as many repeats as the budget left holds for all of them
// (repeats; none when not even one fits, and the scout decides), and no sample begun past the budget. So a
// load overruns its budget by one candidate's compile and scout and one sample at most; a group broken off
// by the budget stays untimed. In each group only the `top` best-ranked candidates are timed (compiling a
// candidate is most of the cost on a software adapter): candidateOrder puts the options whose kernels target
// this kind of adapter first (a kernel's `targets`; "cpu" where device.js's adapterKind finds one), then the default,
// then the others by how close their grids are to its grid. A candidate whose kernel the device cannot run
// (a feature it lacks, a workgroup past its limits) is neither timed nor chosen, and a cached choice it
// cannot run is timed again. Groups the budget leaves untimed run their best-ranked candidate (on a GPU the
// default) and are timed at a later load. The pure decisions (adapterKind, candidateOrder, probeSize, keep,
// repeats) are replayed from tests/conformance/tuning_rules.json by both runtimes' tests. Choices persist
// per adapter and engine, keyed by what the candidates are (choiceKey, docs/artifact.md "Tuning": the Python
// runtime's key), in a JSON file on Node
// (WEBGPU_TORCH_JS_CACHE, default ~/.cache/webgpu_torch/tuning-js.json) or IndexedDB in a browser.
// Settings: the load options `tune` (WEBGPU_TORCH_TUNE=0: off), `tuneBudget` (WEBGPU_TORCH_TUNE_BUDGET,
// seconds, default 5), `tuneTop` (WEBGPU_TORCH_TUNE_TOP, default 4; 0 for all). A device without timestamp
// queries keeps the defaults.

import { adapterKind } from './device.js';
import { envVar, isNode } from './env.js';
import { DeviceError } from './errors.js';
import { Executor } from './executor.js';
import { bufferSize, runsOn, sourceFor } from './kernels.js';
import { LIMITS } from './limits.js';
import { dispatchTimes, median } from './timing.js';

/** @typedef {import('./artifact.js').ProgramSpec} ProgramSpec */
/** @typedef {import('./artifact.js').DispatchSpec} DispatchSpec */
/** @typedef {import('./artifact.js').Option} Option */
/** @typedef {import('./device.js').Gpu} Gpu */
/** @typedef {Record<string, number>} Choices */
/** @typedef {{load(device: string): Promise<Choices>, save(device: string, choices: Choices): Promise<void>}} Cache */

export const TUNE_VAR = 'WEBGPU_TORCH_TUNE';
export const CACHE_VAR = 'WEBGPU_TORCH_JS_CACHE';
export const BUDGET_VAR = 'WEBGPU_TORCH_TUNE_BUDGET';
export const TOP_VAR = 'WEBGPU_TORCH_TUNE_TOP';
const REPEATS = LIMITS.tuning.repeats;
const SAMPLES = LIMITS.tuning.samples;
const GROUPS_PER_PROBE = LIMITS.tuning.groups_per_probe;
const SLOWER = LIMITS.tuning.slower; // a candidate scouted this many times slower than its group's fastest is not measured

/**
 * @typedef {object} TuningOptions
 * @property {boolean} [tune] time the options (default: on, unless WEBGPU_TORCH_TUNE=0)
 * @property {string | false} [cache] where choices persist: a file path (Node) or IndexedDB database name
 *   (browser); false keeps them for this load only
 * @property {number} [tuneBudget] seconds of timing at one load (default 5)
 * @property {number} [tuneTop] candidates timed per group (default 4; 0 for all)
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
  return [{ kernel: d.kernel, uniform: d.uniform, grid: d.grid }, ...d.options];
}

/**
 * The dispatch indices of each group with options: its leader, then the dispatches that follow it.
 * @param {ProgramSpec} spec
 * @returns {number[][]}
 */
export function groups(spec) {
  const out = [];
  const ds = spec.dispatches;
  for (let i = 0; i < ds.length; i++) {
    if (!ds[i].options.length || ds[i].follows) continue;
    let last = i;
    while (last + 1 < ds.length && ds[last + 1].follows === last + 1 - i) last++;
    out.push(Array.from({ length: last - i + 1 }, (_, k) => i + k));
  }
  return out;
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
      dispatches[i] = { ...d, ...candidates(d)[chosen[g]], options: [], follows: 0 };
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
 * @returns {Promise<ProgramSpec>}
 */
export async function resolve(spec, gpu, features, options = {}) {
  const which = groups(spec);
  const on = options.tune ?? envVar(TUNE_VAR) !== '0';
  if (!which.length || !on || !features.has('timestamp-query')) return spec;
  const cache = options.cache === false ? null : await openCache(options.cache);
  const device = `${gpu.key} | ${[...features].sort().join(',')}`;
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
  /** @type {Map<string, number[]>} each missing group's usable candidates, best-ranked first */
  const ranked = new Map([...missing].map(([key, members]) => [key, rank(spec, members, features, gpu.device.limits, adapterKind(gpu.adapter))]));
  if (missing.size) {
    const timed = await measure(spec, gpu, features, missing, ranked, options);
    if (Object.keys(timed).length) {
      Object.assign(chosen, timed);
      await cache?.save(device, chosen);
    }
  }
  // A group the budget left untimed runs its best-ranked candidate (the default, unless one targets this kind
  // of adapter), and is timed at a later load.
  return choose(spec, which, keys.map((key) => chosen[key] ?? ranked.get(key)?.[0] ?? 0));
}

/**
 * For each key timed within the budget, the index of its group's fastest candidate among the best-ranked
 * usable ones (a group left with one such candidate takes it untimed).
 * @param {ProgramSpec} spec
 * @param {Gpu} gpu
 * @param {Set<string>} features
 * @param {Map<string, number[]>} which
 * @param {Map<string, number[]>} usable
 * @param {TuningOptions} options
 * @returns {Promise<Choices>}
 */
async function measure(spec, gpu, features, which, usable, options) {
  const top = setting(options.tuneTop, TOP_VAR, LIMITS.tuning.top) || Infinity;
  const budget = setting(options.tuneBudget, BUDGET_VAR, LIMITS.tuning.budget_seconds) * 1000;
  /** @type {Choices} */
  const chosen = {};
  /** @type {Map<string, number[]>} */
  const ranked = new Map();
  for (const [key, all] of usable) {
    const r = all.slice(0, top);
    if (r.length === 1) chosen[key] = r[0]; // nothing to compare
    else if (r.length) ranked.set(key, r);
  }
  const members = (/** @type {string} */ key) => /** @type {number[]} */ (which.get(key));
  const order = [...ranked.keys()].sort((a, b) => work(spec, members(b)) - work(spec, members(a)));
  const start = performance.now();
  const deadline = start + budget;
  const progress = new Progress(order.length);
  let timed = 0;
  let elapsed = 0;
  while (timed < order.length && (elapsed = performance.now() - start) < budget) {
    const keys = order.slice(timed, timed + probeSize(timed, elapsed, budget));
    progress.show(timed, spec.dispatches[members(keys[0])[0]].node, elapsed);
    for (const key of keys) {
      const best = await fastest(spec, gpu, features, members(key), /** @type {number[]} */ (ranked.get(key)), deadline);
      if (best !== null) chosen[key] = best;
    }
    timed += keys.length;
  }
  progress.done(order.filter((key) => key in chosen).length, order.length, performance.now() - start);
  return chosen;
}

/**
 * A group's fastest candidate, or null where the budget cut it short (or none runs). Candidates are compiled
 * and scouted one at a time in rank order, none begun past the deadline, so a load overruns its budget by
 * one candidate's compile and scout at most; the kept ones are then measured (measured). A candidate the
 * engine refuses (its pipeline fails to build) is never chosen.
 * @param {ProgramSpec} spec
 * @param {Gpu} gpu
 * @param {Set<string>} features
 * @param {number[]} members
 * @param {number[]} ranked
 * @param {number} deadline
 * @returns {Promise<number | null>}
 */
async function fastest(spec, gpu, features, members, ranked, deadline) {
  /** @type {Map<number, {executor: Executor, time: number}>} */
  const scouted = new Map();
  let tried = 0;
  try {
    for (const c of ranked) {
      if (tried && performance.now() >= deadline) break;
      tried++;
      let executor;
      try {
        executor = await Executor.create(probeSpec(spec, features, members, c), gpu, features);
      } catch (e) {
        if (e instanceof DeviceError) continue; // refused by the engine: never chosen
        throw e;
      }
      scouted.set(c, { executor, time: sum(await dispatchTimes(executor, 1, 1)) });
    }
    if (tried < ranked.length || !scouted.size) return null;
    const order = [...scouted.keys()];
    const kept = keep(order.map((c) => /** @type {{time: number}} */ (scouted.get(c)).time)).map((i) => order[i]);
    const times = await measured(scouted, kept, deadline);
    return kept.reduce((a, c) => (/** @type {number} */ (times.get(c)) < /** @type {number} */ (times.get(a)) ? c : a));
  } finally {
    for (const { executor } of scouted.values()) executor.destroy();
  }
}

/**
 * Seconds per run of each kept candidate: the median of up to SAMPLES samples of `repeats` runs each,
 * interleaved, none begun past the deadline; the scout's own time where not one sample fits the budget.
 * @param {Map<number, {executor: Executor, time: number}>} scouted
 * @param {number[]} kept
 * @param {number} deadline
 * @returns {Promise<Map<number, number>>}
 */
async function measured(scouted, kept, deadline) {
  const scout = (/** @type {number} */ c) => /** @type {{executor: Executor, time: number}} */ (scouted.get(c));
  const reps = kept.length > 1 ? repeats(kept.reduce((t, c) => t + scout(c).time, 0), deadline - performance.now()) : 0;
  if (!reps) return new Map(kept.map((c) => [c, scout(c).time]));
  /** @type {Map<number, number[]>} */
  const samples = new Map(kept.map((c) => [c, []]));
  const count = () => /** @type {number[]} */ (samples.get(kept[0])).length;
  while (count() < SAMPLES && (!count() || performance.now() < deadline)) {
    for (const c of kept) { // the scout warmed them up
      /** @type {number[]} */ (samples.get(c)).push(sum(await dispatchTimes(scout(c).executor, 1, reps, undefined, false)));
    }
  }
  return new Map([...samples].map(([c, t]) => [c, median(t)]));
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
 * How many times each measured dispatch repeats in its pass when one run of all of them takes `run` and
 * `left` of the budget remains (any one unit): REPEATS, or as many as SAMPLES passes of them fit (0: none
 * fits, the scout decides).
 * @param {number} run
 * @param {number} left
 */
export function repeats(run, left) {
  if (run <= 0) return REPEATS;
  return Math.max(0, Math.min(REPEATS, Math.floor(left / (SAMPLES * run))));
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
 * The candidates of a group whose every member's kernel runs on the device (kernels.js, runsOn).
 * @param {ProgramSpec} spec
 * @param {number[]} members
 * @param {Set<string>} features
 * @param {Partial<import('./kernels.js').WorkgroupLimits>} limits
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
 * @param {Partial<import('./kernels.js').WorkgroupLimits>} limits
 * @param {string} [kind]
 * @returns {number[]}
 */
export function rank(spec, members, features, limits, kind = 'gpu') {
  const leader = candidates(spec.dispatches[members[0]]);
  const runnable = new Set(usable(spec, members, features, limits));
  const order = candidateOrder(leader.map((o) => o.grid[0] * o.grid[1] * o.grid[2]), leader.map((o) => spec.kernels[o.kernel].targets), kind);
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
   * @param {number} elapsed milliseconds
   */
  show(done, node, elapsed) {
    if (this.live) process.stderr.write(`\rtuning ${done}/${this.groups} groups of dispatches (${(elapsed / 1000).toFixed(1)} s): timing the kernels for ${node}\x1b[K`);
  }

  /**
   * @param {number} timed
   * @param {number} groups
   * @param {number} elapsed milliseconds
   */
  done(timed, groups, elapsed) {
    if (!isNode || !(this.live || elapsed > 10000) || !groups) return;
    const left = timed < groups ? `; ${groups - timed} left at their defaults (${BUDGET_VAR})` : '';
    const line = `tuned ${timed}/${groups} groups of dispatches in ${(elapsed / 1000).toFixed(1)} s${left}`;
    process.stderr.write(this.live ? `\r${line}\x1b[K\n` : `${line}\n`);
  }
}

/**
 * A program of candidate `c` of the group `members` (its dispatches in order) over zero-filled scratch
 * copies of the buffers they bind.
 * @param {ProgramSpec} spec
 * @param {Set<string>} features
 * @param {number[]} members
 * @param {number} c
 * @returns {ProgramSpec}
 */
function probeSpec(spec, features, members, c) {
  /** @type {Map<number, number>} */
  const used = new Map();
  const dispatches = members.map((i) => {
    const d = spec.dispatches[i];
    const buffers = d.buffers.map((b) => {
      if (!used.has(b)) used.set(b, used.size);
      return /** @type {number} */ (used.get(b));
    });
    return { ...d, ...candidates(d)[c], buffers, patches: [], count: null, options: [], follows: 0 };
  });
  const empty = /** @type {import('./tree.js').TreeSpec} */ ({ type: 'tuple', items: [] });
  return {
    ...spec, symbols: {}, constants: new Map(), inputs: [], outputs: [], inputTree: empty, outputTree: empty, dispatches, checks: [], status: null,
    buffers: [...used.keys()].map((b) => ({ size: bufferSize(spec, b, features), role: /** @type {const} */ ('scratch'), name: '' })),
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
  for (const i of members) {
    for (const o of candidates(spec.dispatches[i])) {
      const k = spec.kernels[o.kernel];
      const source = await sha1(spec.sources[sourceFor(k, engine)]);
      const overrides = Object.keys(k.overrides).sort(byCodePoint).map((name) => [name, overrideJson(k.overrides[name])]);
      parts.push([source, k.entry, overrides, [...k.requires].sort(byCodePoint), Array.from(o.uniform), o.grid]);
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
