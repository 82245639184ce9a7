// Small programs written by hand in the artifact's format, with kernels of our own, covering what the
// runtime must do: dynamic sizes (patched uniforms, folded grids), strided outputs, int64 and bool,
// float16 constants with a fallback, options chosen as a group, trees with keyword and const arguments.

import { foldGrid } from '../src/artifact.js';
import { LIMITS } from '../src/limits.js';
import { artifact, bytesOf, toHalf } from './build.js';

/** y[i] = x[i] · w[i mod cols] + bias, one thread per element over a folded grid of WG-wide workgroups. */
const AFFINE = (/** @type {string} */ type) => `${type === 'f16' ? 'enable f16;\n' : ''}// y[i] = x[i] * w[i % cols] + bias
struct Params { n: u32, cols: u32, bias: f32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<${type}>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;
override WG: u32 = 64;
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) l: u32) {
  let i = (wg.x + wg.y * nwg.x) * WG + l;
  if (i >= p.n) { return; }
  y[i] = x[i] * f32(w[i % p.cols]) + p.bias;
}
`;

/** twice[i] = 2·ids[i]; big[i] = ids[i] > limit (as u32 0/1). */
const INTS = `// twice[i] = 2 * ids[i]; big[i] = ids[i] > limit
struct Params { n: u32, limit: i32 }
@group(0) @binding(0) var<storage, read> ids: array<i32>;
@group(0) @binding(1) var<storage, read> flags: array<u32>;
@group(0) @binding(2) var<storage, read_write> twice: array<i32>;
@group(0) @binding(3) var<storage, read_write> big: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3u) {
  let i = g.x;
  if (i >= p.n) { return; }
  twice[i] = 2 * ids[i];
  big[i] = select(0u, 1u, ids[i] > p.limit) * flags[i];
}
`;

/** s[i] = a[i] + b[i] over n elements: a second stage to follow AFFINE in a group. */
const ADD = `// s[i] = a[i] + b[i]
struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> s: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;
override WG: u32 = 64;
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x >= p.n) { return; }
  s[g.x] = a[g.x] + b[g.x];
}
`;

const AFFINE_UNIFORM = { size: 16, fields: [{ name: 'n', offset: 0, type: 'u32', count: 1 },
  { name: 'cols', offset: 4, type: 'u32', count: 1 }, { name: 'bias', offset: 8, type: 'f32', count: 1 }] };
const AFFINE_BINDINGS = ['read', 'read', 'read_write', 'uniform'];
const args = (/** @type {any[]} */ ...items) => ({ type: 'tuple', items: [{ type: 'tuple', items }, { type: 'dict', keys: [], items: [] }] });
const LEAF = { type: 'leaf' };
const f32bits = (/** @type {number} */ v) => new Uint32Array(Float32Array.of(v).buffer)[0];

export const W = [0.5, -2, 3]; // the affine programs' weights; bias 1

/**
 * y = x·w + 1 for x: float32[s0, 3], s0 in [1, 40000] (up to 120,000 elements: a grid folded past 65,535
 * workgroups needs 64·65,535 elements, so the largest size stays within one dimension only when WG is big;
 * with WG = 1 it folds). Outputs: y [s0, 3], and its transpose as a strided view [3, s0].
 * @param {{dtype?: 'f32' | 'f16', wg?: number, hi?: number}} [o]
 */
export function affine(o = {}) {
  const dtype = o.dtype ?? 'f32';
  const wg = o.wg ?? 64;
  const hi = o.hi ?? 300;
  const kernel = { name: 'affine', source: 0, entry: 'main', overrides: { WG: wg }, bindings: AFFINE_BINDINGS, uniform: AFFINE_UNIFORM,
    workgroup_size: [wg, 1, 1], workgroup_bytes: 0 };
  const kernels = dtype === 'f16'
    ? [{ ...kernel, name: 'affine[f16]', requires: ['shader-f16'], fallback: 1 }, { ...kernel, name: 'affine[f16 widened]', source: 1 }]
    : [kernel];
  const sources = dtype === 'f16' ? [AFFINE('f16'), AFFINE('f32')] : [AFFINE('f32')];
  const wbytes = dtype === 'f16' ? bytesOf(toHalf(W)) : bytesOf(Float32Array.from(W));
  return artifact({
    format: LIMITS.format,
    meta: { model: 'affine' },
    symbols: { s0: { lo: 1, hi, hint: 5, about: "input 'x' dim 0" } },
    sources,
    kernels,
    buffers: [{ size: 12 * hi, role: 'input', name: 'x' }, { size: wbytes.length, role: 'constant', name: 'w' },
      { size: 12 * hi, role: 'scratch', name: '' }],
    inputs: [{ name: 'x', shape: ['s0', 3], dtype: 'float32', buffer: 0 }],
    outputs: [{ buffer: 2, shape: ['s0', 3], strides: [3, 1], offset: 0, dtype: 'float32' },
      { buffer: 2, shape: [3, 's0'], strides: [1, 3], offset: 0, dtype: 'float32' }],
    input_tree: args(LEAF),
    output_tree: { type: 'tuple', items: [LEAF, LEAF] },
    dispatches: [{ kernel: 0, buffers: [0, 1, 2], uniform: [3 * hi, 3, f32bits(1), 0], grid: foldGrid(Math.ceil((3 * hi) / wg)),
      node: 'affine', patches: [[0, 'u32', ['*', 's0', 3]]], count: ['//', ['+', ['*', 's0', 3], wg - 1], wg] }],
    checks: [],
  }, [{ buffer: 1, dtype, shape: [3], bytes: wbytes }]);
}

/**
 * ids: int64[7] and flags: bool[7] (a keyword argument), plus a const keyword `mode` ("fast") →
 * {twice: int64[7], big: bool[7], mode: "fast"}.
 */
export function ints() {
  return artifact({
    format: LIMITS.format,
    meta: {},
    symbols: {},
    sources: [INTS],
    kernels: [{ name: 'ints', source: 0, entry: 'main', overrides: {}, workgroup_size: [64, 1, 1], workgroup_bytes: 0, bindings: ['read', 'read', 'read_write', 'read_write', 'uniform'],
      uniform: { size: 16, fields: [{ name: 'n', offset: 0, type: 'u32', count: 1 }, { name: 'limit', offset: 4, type: 'i32', count: 1 }] } }],
    buffers: [{ size: 28, role: 'input', name: 'ids' }, { size: 28, role: 'input', name: 'flags' },
      { size: 28, role: 'scratch', name: '' }, { size: 28, role: 'scratch', name: '' }],
    inputs: [{ name: 'ids', shape: [7], dtype: 'int64', buffer: 0 }, { name: 'flags', shape: [7], dtype: 'bool', buffer: 1 }],
    outputs: [{ buffer: 2, shape: [7], strides: [1], offset: 0, dtype: 'int64' },
      { buffer: 3, shape: [7], strides: [1], offset: 0, dtype: 'bool' }],
    input_tree: { type: 'tuple', items: [{ type: 'tuple', items: [LEAF] },
      { type: 'dict', keys: ['flags', 'mode'], items: [LEAF, { type: 'const', value: 'fast' }] }] },
    output_tree: { type: 'dict', keys: ['twice', 'big', 'mode'], items: [LEAF, LEAF, { type: 'const', value: 'fast' }], class: 'collections.OrderedDict' },
    dispatches: [{ kernel: 0, buffers: [0, 1, 2, 3], uniform: [7, 2, 0, 0], grid: [1, 1, 1], node: 'ints' }],
    checks: [],
  });
}

/**
 * z = (x·w + 1) + x for x: float32[n], as a group: the affine dispatch (options: workgroup sizes 32 and
 * 128, and a kernel that needs a feature no device has here is not possible, so option 2 requires
 * subgroups) followed by the add (options to match); its result is z. `optionBias` is option 1's bias: other
 * than 1, that option computes other numbers (tuning must leave it out); `optionN` its length: 0, it writes
 * nothing (nor must it pass on what the default wrote).
 * @param {number} n
 * @param {number} optionBias
 * @param {number} optionN
 */
export function grouped(n = 37, optionBias = 1, optionN = n) {
  const kernel = (/** @type {string} */ name, /** @type {number} */ source, /** @type {number} */ wg, /** @type {string[]} */ requires = []) => ({
    name, source, entry: 'main', overrides: { WG: wg }, bindings: AFFINE_BINDINGS, workgroup_size: [wg, 1, 1], workgroup_bytes: 0,
    uniform: source === 0 ? AFFINE_UNIFORM : { size: 16, fields: [{ name: 'n', offset: 0, type: 'u32', count: 1 }] },
    ...(requires.length ? { requires } : {}),
  });
  const kernels = [kernel('affine64', 0, 64), kernel('affine32', 0, 32), kernel('affine128', 0, 128, ['subgroups']),
    kernel('add64', 1, 64), kernel('add32', 1, 32), kernel('add128', 1, 128)];
  const u = [n, 1, f32bits(1), 0];
  const u1 = [optionN, 1, f32bits(optionBias), 0];
  const a = [n, 0, 0, 0];
  const g = (/** @type {number} */ wg) => [Math.ceil(n / wg), 1, 1];
  return artifact({
    format: LIMITS.format,
    meta: {},
    symbols: {},
    sources: [AFFINE('f32'), ADD],
    kernels,
    buffers: [{ size: 4 * n, role: 'input', name: 'x' }, { size: 4, role: 'constant', name: 'w' },
      { size: 4 * n, role: 'scratch', name: '' }, { size: 4 * n, role: 'scratch', name: '' }],
    inputs: [{ name: 'x', shape: [n], dtype: 'float32', buffer: 0 }],
    outputs: [{ buffer: 3, shape: [n], strides: [1], offset: 0, dtype: 'float32' }],
    input_tree: args(LEAF),
    output_tree: LEAF,
    dispatches: [
      { kernel: 0, buffers: [0, 1, 2], uniform: u, grid: g(64), node: 'affine',
        options: [{ kernel: 1, uniform: u1, grid: g(32) }, { kernel: 2, uniform: u, grid: g(128) }],
        result: [{ buffer: 3, shape: [n], strides: [1], offset: 0, dtype: 'float32' }], tolerance: 1e-4 },
      { kernel: 3, buffers: [2, 0, 3], uniform: a, grid: g(64), node: 'add', follows: 1,
        options: [{ kernel: 4, uniform: [optionN, 0, 0, 0], grid: g(32) }, { kernel: 5, uniform: a, grid: g(128) }] },
    ],
    checks: [],
  }, [{ buffer: 1, dtype: 'f32', shape: [1], bytes: bytesOf(Float32Array.of(2)) }]);
}

/** rows[i] = table[ids[i]], the index clamped; an index outside the table sets status word 0 (a device check). */
const LOOKUP = `// rows[i] = table[ids[i]]; an id outside [0, rows) reads a clamped row and sets status[0]
struct Params { n: u32, rows: u32 }
@group(0) @binding(0) var<storage, read> ids: array<i32>;
@group(0) @binding(1) var<storage, read> table: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> status: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x >= p.n) { return; }
  let id = ids[g.x];
  if (id < 0 || u32(id) >= p.rows) { status[0] = 1u; }
  out[g.x] = table[u32(clamp(id, 0, i32(p.rows) - 1))];
}
`;

export const TABLE = [10, 11, 12, 13, 14];

/** rows = table[ids] for ids: int64[4] and a table of 5 rows, with its device-side check. */
export function lookup() {
  return artifact({
    format: LIMITS.format,
    meta: {},
    symbols: {},
    sources: [LOOKUP],
    kernels: [{ name: 'lookup', source: 0, entry: 'main', overrides: {}, workgroup_size: [64, 1, 1], workgroup_bytes: 0, bindings: ['read', 'read', 'read_write', 'read_write', 'uniform'],
      uniform: { size: 16, fields: [{ name: 'n', offset: 0, type: 'u32', count: 1 }, { name: 'rows', offset: 4, type: 'u32', count: 1 }] } }],
    buffers: [{ size: 16, role: 'input', name: 'ids' }, { size: 20, role: 'constant', name: 'table' },
      { size: 16, role: 'scratch', name: '' }, { size: 4, role: 'status', name: '' }],
    inputs: [{ name: 'ids', shape: [4], dtype: 'int64', buffer: 0 }],
    outputs: [{ buffer: 2, shape: [4], strides: [1], offset: 0, dtype: 'float32' }],
    input_tree: args(LEAF),
    output_tree: LEAF,
    dispatches: [{ kernel: 0, buffers: [0, 1, 2, 3], uniform: [4, 5, 0, 0], grid: [1, 1, 1], node: 'embedding' }],
    checks: [{ node: 'embedding', message: 'index out of range for a table of 5 rows' }],
  }, [{ buffer: 1, dtype: 'f32', shape: [5], bytes: bytesOf(Float32Array.from(TABLE)) }]);
}
