// Reading a `.wgpt` artifact (docs/artifact.md, format 2): the container, both checksums and every rule the
// contract lists, before anything reaches a device. The result is plain data (a ProgramSpec); the
// constants are views over the file's bytes, not copies.

import { crc32 } from './crc32.js';
import { ArtifactError } from './errors.js';
import * as expr from './expr.js';
import { DEVICE_SIZE, ITEMSIZE, isModelDtype } from './dtypes.js';
import * as tree from './tree.js';

/** @typedef {import('./expr.js').Expr} Expr */
/** @typedef {import('./expr.js').SymbolSpec} SymbolSpec */
/** @typedef {import('./dtypes.js').ModelDtype} ModelDtype */
/** @typedef {import('./dtypes.js').DeviceDtype} DeviceDtype */
/** @typedef {import('./tree.js').TreeSpec} TreeSpec */
/** @typedef {'read' | 'read_write' | 'uniform'} BindingKind */
/** @typedef {'u32' | 'i32' | 'f32'} Scalar */
/** @typedef {[number, number, number]} Grid */
/** @typedef {{name: string, offset: number, type: Scalar, count: number}} UniformField */
/** @typedef {{size: number, fields: UniformField[]}} UniformLayout */
/**
 * @typedef {{name: string, source: number, entry: string, overrides: Record<string, number>,
 *   bindings: BindingKind[], uniform: UniformLayout | null, requires: string[], fallback: number | null,
 *   engineSources: Record<string, number>}} KernelSpec
 */
/** @typedef {{size: number, role: 'input' | 'constant' | 'scratch', name: string}} BufferSpec */
/** @typedef {{dtype: DeviceDtype, bytes: Uint8Array}} Constant */
/** @typedef {{name: string, shape: Expr[], dtype: ModelDtype, buffer: number}} InputSpec */
/** @typedef {{buffer: number, shape: Expr[], strides: Expr[], offset: Expr, dtype: ModelDtype}} OutputSpec */
/** @typedef {{offset: number, type: Scalar, value: Expr}} Patch */
/** @typedef {{kernel: number, uniform: Uint32Array, grid: Grid}} Option */
/**
 * @typedef {{kernel: number, buffers: number[], uniform: Uint32Array, grid: Grid, node: string,
 *   patches: Patch[], count: Expr | null, options: Option[], follows: number}} DispatchSpec
 */
/**
 * @typedef {{meta: Record<string, unknown>, symbols: Record<string, SymbolSpec>, sources: string[],
 *   kernels: KernelSpec[], buffers: BufferSpec[], constants: Map<number, Constant>, inputs: InputSpec[],
 *   outputs: OutputSpec[], inputTree: TreeSpec, outputTree: TreeSpec, dispatches: DispatchSpec[]}} ProgramSpec
 */

export const MAGIC = 'WGPUTRCH';
export const CONTAINER_VERSION = 2;
export const FORMAT = 2;
export const PREAMBLE = 32;
const ALIGN = 64;
export const FEATURES = ['shader-f16', 'subgroups'];
const MAX_GRID = 65535;

/**
 * Read and validate an artifact; `where` (a path, a URL, "<bytes>") begins every message.
 * @param {Uint8Array} raw
 * @param {string} where
 * @returns {ProgramSpec}
 */
export function parse(raw, where) {
  /** @param {string} msg */
  const fail = (msg) => new ArtifactError(`${where}: ${msg}`);
  const magic = new TextEncoder().encode(MAGIC);
  const head = raw.subarray(0, magic.length);
  if (raw.length === 0 || head.some((b, i) => b !== magic[i])) {
    throw fail(`not a webgpu_torch program (starts with ${showBytes(head)}, expected ${JSON.stringify(MAGIC)})`);
  }
  if (raw.length < PREAMBLE) throw fail(`truncated (${raw.length} bytes) — not a complete webgpu_torch program`);
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const version = view.getUint32(8, true);
  if (version !== CONTAINER_VERSION) {
    throw fail(`container version ${version}; this webgpu_torch reads version ${CONTAINER_VERSION}`);
  }
  const headerCrc = view.getUint32(12, true);
  const h = Number(view.getBigUint64(16, true));
  const d = Number(view.getBigUint64(24, true));
  if (h % ALIGN || d % ALIGN) throw fail(`header length ${h} or data length ${d} is not a multiple of ${ALIGN}`);
  const expected = PREAMBLE + h + d;
  if (raw.length !== expected) {
    const state = raw.length < expected ? 'truncated' : 'has trailing bytes';
    throw fail(`${state}: ${raw.length.toLocaleString('en')} bytes, the header says ${expected.toLocaleString('en')}`);
  }
  const headerBytes = raw.subarray(PREAMBLE, PREAMBLE + h);
  if (crc32(headerBytes) !== headerCrc) throw fail('header is damaged (checksum mismatch)');
  let header;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(headerBytes));
  } catch (e) {
    throw fail(`damaged header: ${/** @type {Error} */ (e).message}`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) throw fail('the header is not a JSON object');
  if (header.format !== FORMAT) {
    throw fail(`program format version ${JSON.stringify(header.format)}; this webgpu_torch reads version ${FORMAT} ` +
      '— recompile the model with this version');
  }
  const data = raw.subarray(PREAMBLE + h);
  if (crc32(data) !== header.data_crc32) throw fail('tensor data is damaged (checksum mismatch)');
  try {
    return validate(header, data);
  } catch (e) {
    if (e instanceof Invalid) throw fail(e.message);
    throw e;
  }
}

/** A rule of the contract the header breaks (becomes an ArtifactError naming the file). */
class Invalid extends Error {}

/**
 * @param {boolean} ok
 * @param {string} msg
 * @returns {asserts ok}
 */
function need(ok, msg) {
  if (!ok) throw new Invalid(msg);
}

/** @param {unknown} v @param {number} lo @param {number} hi */
const isInt = (v, lo = 0, hi = Number.MAX_SAFE_INTEGER) => Number.isSafeInteger(v) && /** @type {number} */ (v) >= lo && /** @type {number} */ (v) <= hi;

/**
 * @param {any} o
 * @param {string} key
 * @param {string} what
 */
function field(o, key, what) {
  need(o !== null && typeof o === 'object' && !Array.isArray(o), `${what} is not an object`);
  need(Object.hasOwn(o, key), `${what} has no ${JSON.stringify(key)}`);
  return o[key];
}

/**
 * @param {any} o
 * @param {string} key
 * @param {string} what
 * @returns {any[]}
 */
function list(o, key, what) {
  const v = field(o, key, what);
  need(Array.isArray(v), `${what}: ${JSON.stringify(key)} is not a list`);
  return v;
}

/**
 * @param {any} header
 * @param {Uint8Array} data
 * @returns {ProgramSpec}
 */
function validate(header, data) {
  const meta = field(header, 'meta', 'the header');
  need(meta !== null && typeof meta === 'object' && !Array.isArray(meta), '"meta" is not an object');
  const symbols = readSymbols(field(header, 'symbols', 'the header'));
  const sources = list(header, 'sources', 'the header');
  need(sources.every((s) => typeof s === 'string'), 'a source is not a string');
  const kernels = list(header, 'kernels', 'the header').map((k, i) => readKernel(k, i, sources.length));
  const buffers = list(header, 'buffers', 'the header').map(readBuffer);
  const constants = readTensors(list(header, 'tensors', 'the header'), buffers, data);
  /** @param {unknown} e @param {string} what @returns {Expr} */
  const ex = (e, what) => {
    const p = expr.problem(e, symbols);
    need(p === null, `${what}: ${p}`);
    return /** @type {Expr} */ (e);
  };
  const inputs = list(header, 'inputs', 'the header').map((x, i) => readInput(x, i, buffers, symbols, ex));
  const outputs = list(header, 'outputs', 'the header').map((t, i) => readOutput(t, i, buffers, symbols, ex));
  const inputTree = field(header, 'input_tree', 'the header');
  const outputTree = field(header, 'output_tree', 'the header');
  for (const [name, t] of [['input_tree', inputTree], ['output_tree', outputTree]]) {
    const p = tree.problem(t);
    need(p === null, `${name}: ${p}`);
  }
  need(inputTree.type === 'tuple' && inputTree.items.length === 2 && ['tuple', 'list'].includes(inputTree.items[0].type) &&
    inputTree.items[1].type === 'dict', 'input_tree is not a tuple of (positional arguments, keyword arguments)');
  need(tree.countLeaves(inputTree) === inputs.length,
    `input_tree has ${tree.countLeaves(inputTree)} leaves for ${inputs.length} inputs`);
  need(tree.countLeaves(outputTree) === outputs.length,
    `output_tree has ${tree.countLeaves(outputTree)} leaves for ${outputs.length} outputs`);
  for (const [name, s] of Object.entries(symbols)) {
    need(inputs.some((x) => x.shape.includes(name)), `symbol ${name} (${s.about}) is not the size of any input dimension`);
  }
  const dispatches = list(header, 'dispatches', 'the header').map((x, i) => readDispatch(x, i, kernels, buffers, ex, symbols));
  dispatches.forEach((dsp, i) => checkGroup(dispatches, dsp, i));
  return { meta, symbols, sources, kernels, buffers, constants, inputs, outputs, inputTree, outputTree, dispatches };
}

/** @param {any} j @returns {Record<string, SymbolSpec>} */
function readSymbols(j) {
  need(j !== null && typeof j === 'object' && !Array.isArray(j), '"symbols" is not an object');
  /** @type {Record<string, SymbolSpec>} */
  const out = {};
  for (const [name, s] of Object.entries(j)) {
    const what = `symbol ${name}`;
    const lo = field(s, 'lo', what);
    const hi = field(s, 'hi', what);
    const hint = field(s, 'hint', what);
    need(isInt(lo) && isInt(hi) && lo <= hi && isInt(hint), `${what}: bad range [${lo}, ${hi}] or hint ${hint}`);
    const about = s.about ?? `dimension ${name}`;
    need(typeof about === 'string', `${what}: "about" is not a string`);
    out[name] = { lo, hi, hint, about };
  }
  return out;
}

/**
 * @param {any} k
 * @param {number} i
 * @param {number} nSources
 * @returns {KernelSpec}
 */
function readKernel(k, i, nSources) {
  const what = `kernel ${i}`;
  const name = field(k, 'name', what);
  need(typeof name === 'string', `${what}: its name is not a string`);
  const it = `kernel ${i} (${name})`;
  const source = field(k, 'source', it);
  need(isInt(source, 0, nSources - 1), `${it}: bad source index ${JSON.stringify(source)}`);
  const entry = field(k, 'entry', it);
  need(typeof entry === 'string' && entry.length > 0, `${it}: bad entry point`);
  const overrides = field(k, 'overrides', it);
  need(overrides !== null && typeof overrides === 'object' && !Array.isArray(overrides) &&
    Object.values(overrides).every((v) => typeof v === 'number' && Number.isFinite(v)), `${it}: bad overrides`);
  const bindings = list(k, 'bindings', it);
  need(bindings.every((b) => b === 'read' || b === 'read_write' || b === 'uniform'), `${it}: unknown binding kind`);
  const uniforms = bindings.filter((b) => b === 'uniform').length;
  need(uniforms <= 1, `${it}: ${uniforms} uniform bindings`);
  const uniform = uniforms ? readUniform(field(k, 'uniform', it), it) : null;
  need(uniforms === 1 || k.uniform === undefined, `${it}: a uniform layout without a uniform binding`);
  const requires = k.requires ?? [];
  need(Array.isArray(requires) && requires.every((f) => FEATURES.includes(f)),
    `${it}: requires unknown features ${JSON.stringify(requires)} (known: ${FEATURES.join(', ')})`);
  const fallback = k.fallback ?? null;
  need(fallback === null || isInt(fallback, 0, nSources - 1), `${it}: bad fallback source index ${JSON.stringify(fallback)}`);
  need((fallback !== null) === requires.includes('shader-f16'), `${it}: a fallback source exactly when it requires shader-f16`);
  const engineSources = k.engine_sources ?? {};
  need(engineSources !== null && typeof engineSources === 'object' && !Array.isArray(engineSources) &&
    Object.values(engineSources).every((s) => isInt(s, 0, nSources - 1)), `${it}: bad engine_sources`);
  return { name, source, entry, overrides, bindings, uniform, requires, fallback, engineSources };
}

/**
 * @param {any} u
 * @param {string} it
 * @returns {UniformLayout}
 */
function readUniform(u, it) {
  const size = field(u, 'size', `${it} uniform`);
  need(isInt(size, 16) && size % 16 === 0, `${it}: uniform size ${JSON.stringify(size)} is not a positive multiple of 16`);
  const fields = list(u, 'fields', `${it} uniform`).map((f) => {
    const ok = f !== null && typeof f === 'object' && typeof f.name === 'string' && isInt(f.offset) && f.offset % 4 === 0 &&
      ['u32', 'i32', 'f32'].includes(f.type) && isInt(f.count, 1) && f.offset + 4 * f.count <= size;
    need(ok, `${it}: bad uniform field ${JSON.stringify(f)}`);
    return /** @type {UniformField} */ ({ name: f.name, offset: f.offset, type: f.type, count: f.count });
  });
  return { size, fields };
}

/**
 * @param {any} b
 * @param {number} i
 * @returns {BufferSpec}
 */
function readBuffer(b, i) {
  const what = `buffer ${i}`;
  const size = field(b, 'size', what);
  const role = field(b, 'role', what);
  const name = field(b, 'name', what);
  need(isInt(size, 1), `${what}: bad size ${JSON.stringify(size)}`);
  need(role === 'input' || role === 'constant' || role === 'scratch', `${what}: unknown role ${JSON.stringify(role)}`);
  need(typeof name === 'string', `${what}: its name is not a string`);
  return { size, role, name };
}

/**
 * @param {any[]} entries
 * @param {BufferSpec[]} buffers
 * @param {Uint8Array} data
 * @returns {Map<number, Constant>}
 */
function readTensors(entries, buffers, data) {
  /** @type {Map<number, Constant>} */
  const out = new Map();
  for (const t of entries) {
    const buffer = field(t, 'buffer', 'a tensor');
    need(isInt(buffer, 0, buffers.length - 1) && buffers[buffer].role === 'constant',
      `a tensor for ${JSON.stringify(buffer)}, which is not a constant buffer`);
    const what = `tensor for buffer ${buffer} (${buffers[buffer].name})`;
    need(!out.has(buffer), `two tensors for buffer ${buffer}`);
    const dtype = field(t, 'dtype', what);
    need(Object.hasOwn(DEVICE_SIZE, dtype), `${what}: unsupported dtype ${JSON.stringify(dtype)}`);
    const shape = list(t, 'shape', what);
    need(shape.every((n) => isInt(n)), `${what}: bad shape ${JSON.stringify(shape)}`);
    const offset = field(t, 'offset', what);
    const nbytes = field(t, 'nbytes', what);
    const numel = shape.reduce((a, n) => a * n, 1);
    need(isInt(offset) && isInt(nbytes) && offset % ALIGN === 0 &&
      nbytes === numel * DEVICE_SIZE[/** @type {DeviceDtype} */ (dtype)] && offset + nbytes <= data.length,
    `${what} is mis-sized or out of bounds (shape ${JSON.stringify(shape)}, ${nbytes} bytes at ${offset}, data is ${data.length} bytes)`);
    need(nbytes <= buffers[buffer].size, `${what}: ${nbytes} bytes do not fit its ${buffers[buffer].size}-byte buffer`);
    out.set(buffer, { dtype, bytes: data.subarray(offset, offset + nbytes) });
  }
  buffers.forEach((b, i) => need(b.role !== 'constant' || out.has(i), `buffer ${i} (${b.name}): constant data is missing`));
  return out;
}

/**
 * @param {any} x
 * @param {number} i
 * @param {BufferSpec[]} buffers
 * @param {Record<string, SymbolSpec>} symbols
 * @param {(e: unknown, what: string) => Expr} ex
 * @returns {InputSpec}
 */
function readInput(x, i, buffers, symbols, ex) {
  const name = field(x, 'name', `input ${i}`);
  need(typeof name === 'string', `input ${i}: its name is not a string`);
  const what = `input ${i} (${name})`;
  const dtype = field(x, 'dtype', what);
  need(isModelDtype(dtype), `${what}: unsupported dtype ${JSON.stringify(dtype)}`);
  const shape = list(x, 'shape', what).map((s) => ex(s, `${what} shape`));
  need(shape.every((s) => expr.bounds(s, symbols)[0] >= 0), `${what}: a negative size`);
  const buffer = field(x, 'buffer', what);
  need(isInt(buffer, 0, buffers.length - 1) && buffers[buffer].role === 'input', `${what}: bad buffer ${JSON.stringify(buffer)}`);
  const largest = shape.reduce((/** @type {number} */ a, s) => a * expr.bound(s, symbols), 1);
  need(Math.max(1, largest) * ITEMSIZE <= buffers[buffer].size, `${what}: buffer too small`);
  return { name, shape, dtype, buffer };
}

/**
 * @param {any} t
 * @param {number} i
 * @param {BufferSpec[]} buffers
 * @param {Record<string, SymbolSpec>} symbols
 * @param {(e: unknown, what: string) => Expr} ex
 * @returns {OutputSpec}
 */
function readOutput(t, i, buffers, symbols, ex) {
  const what = `output ${i}`;
  const buffer = field(t, 'buffer', what);
  need(isInt(buffer, 0, buffers.length - 1), `${what}: bad buffer ${JSON.stringify(buffer)}`);
  const dtype = field(t, 'dtype', what);
  need(isModelDtype(dtype), `${what}: unsupported dtype ${JSON.stringify(dtype)}`);
  const shape = list(t, 'shape', what).map((s) => ex(s, `${what} shape`));
  const strides = list(t, 'strides', what).map((s) => ex(s, `${what} strides`));
  need(shape.length === strides.length, `${what}: ${shape.length} sizes but ${strides.length} strides`);
  const offset = ex(field(t, 'offset', what), `${what} offset`);
  const lows = [offset, ...strides, ...shape].map((e) => expr.bounds(e, symbols)[0]);
  need(Math.min(...lows) >= 0, `${what}: a negative size, stride or offset`);
  need(expr.bound(viewEnd({ shape, strides, offset }), symbols) * ITEMSIZE <= buffers[buffer].size,
    `${what}: view reaches past its buffer`);
  return { buffer, shape, strides, offset, dtype };
}

/**
 * One past the furthest element a view reaches, as an expression: offset + 1 + Σ (n_k − 1)·s_k (a view
 * that may hold no element reaches no further than that).
 * @param {{shape: Expr[], strides: Expr[], offset: Expr}} v
 * @returns {Expr}
 */
export function viewEnd(v) {
  return ['+', v.offset, 1, ...v.shape.map((n, k) => /** @type {Expr} */ (['*', ['+', n, -1], v.strides[k]]))];
}

/**
 * @param {any} x
 * @param {number} i
 * @param {KernelSpec[]} kernels
 * @param {BufferSpec[]} buffers
 * @param {(e: unknown, what: string) => Expr} ex
 * @param {Record<string, SymbolSpec>} symbols
 * @returns {DispatchSpec}
 */
function readDispatch(x, i, kernels, buffers, ex, symbols) {
  const what = `dispatch ${i}`;
  const kernel = field(x, 'kernel', what);
  need(isInt(kernel, 0, kernels.length - 1), `${what}: bad kernel index ${JSON.stringify(kernel)}`);
  const k = kernels[kernel];
  const node = field(x, 'node', what);
  need(typeof node === 'string', `${what}: its node is not a string`);
  const it = `dispatch ${i} (${node})`;
  const bound = list(x, 'buffers', it);
  const storage = k.bindings.filter((b) => b !== 'uniform');
  need(bound.length === storage.length, `${it}: binds ${bound.length} buffers to kernel ${k.name}'s ${storage.length}`);
  bound.forEach((b, j) => {
    need(isInt(b, 0, buffers.length - 1), `${it}: bad buffer index ${JSON.stringify(b)}`);
    need(storage[j] !== 'read_write' || buffers[b].role === 'scratch',
      `${it}: writes ${buffers[b].role} buffer ${b} (${buffers[b].name}); only scratch buffers are written`);
  });
  const uniform = readWords(field(x, 'uniform', it), k, it);
  const grid = readGrid(field(x, 'grid', it), it);
  need(Array.isArray(x.patches ?? []), `${it}: "patches" is not a list`);
  const patches = (x.patches ?? []).map((/** @type {any} */ p) => {
    need(Array.isArray(p) && p.length === 3 && isInt(p[0], 0, 4 * uniform.length - 4) && p[0] % 4 === 0 &&
      ['u32', 'i32', 'f32'].includes(p[1]), `${it}: bad uniform patch ${JSON.stringify(p)}`);
    return { offset: p[0], type: p[1], value: ex(p[2], `${it} patch`) };
  });
  const count = x.count === undefined ? null : ex(x.count, `${it} count`);
  if (count !== null) {
    const [lo, hi] = expr.bounds(count, symbols);
    need(lo >= 0 && hi <= MAX_GRID * MAX_GRID, `${it}: workgroup count in [${lo}, ${hi}]`);
  }
  need(Array.isArray(x.options ?? []), `${it}: "options" is not a list`);
  const options = (x.options ?? []).map((/** @type {any} */ o, /** @type {number} */ j) => {
    const ok = isInt(field(o, 'kernel', `${it} option ${j}`), 0, kernels.length - 1);
    need(ok, `${it}: option ${j} has a bad kernel index`);
    const ko = kernels[o.kernel];
    need(sameInterface(ko, k), `${it}: option ${ko.name} differs from ${k.name} in bindings or Params`);
    return { kernel: o.kernel, uniform: readWords(field(o, 'uniform', `${it} option ${j}`), ko, `${it} option ${j}`),
      grid: readGrid(field(o, 'grid', `${it} option ${j}`), `${it} option ${j}`) };
  });
  need(!options.length || (count === null && !patches.length), `${it}: a dynamic dispatch has options`);
  const follows = x.follows ?? 0;
  need(isInt(follows, 0, i), `${it}: bad follows ${JSON.stringify(follows)}`);
  return { kernel, buffers: bound, uniform, grid, node, patches, count, options, follows };
}

/**
 * @param {DispatchSpec[]} dispatches
 * @param {DispatchSpec} d
 * @param {number} i
 */
function checkGroup(dispatches, d, i) {
  if (!d.follows) return;
  const lead = dispatches[i - d.follows];
  const chained = d.follows === 1 || dispatches[i - 1].follows === d.follows - 1;
  need(chained && !lead.follows && lead.options.length > 0 && lead.options.length === d.options.length,
    `dispatch ${i}: follows no group leader with as many options`);
}

/**
 * @param {KernelSpec} a
 * @param {KernelSpec} b
 */
function sameInterface(a, b) {
  return a.bindings.join() === b.bindings.join() && (a.uniform?.size ?? 0) === (b.uniform?.size ?? 0);
}

/**
 * @param {unknown} w
 * @param {KernelSpec} k
 * @param {string} it
 * @returns {Uint32Array}
 */
function readWords(w, k, it) {
  need(Array.isArray(w) && w.every((v) => isInt(v, 0, 0xffffffff)), `${it}: the uniform is not a list of u32 words`);
  if (k.uniform) need(w.length >= k.uniform.size / 4, `${it}: short uniform (${w.length} words for ${k.uniform.size} bytes)`);
  else need(w.length === 0, `${it}: a uniform for kernel ${k.name}, which has no uniform binding`);
  return Uint32Array.from(w);
}

/**
 * @param {unknown} g
 * @param {string} it
 * @returns {Grid}
 */
function readGrid(g, it) {
  need(Array.isArray(g) && g.length === 3 && g.every((n) => isInt(n, 1, MAX_GRID)), `${it}: bad grid ${JSON.stringify(g)}`);
  return /** @type {Grid} */ (g);
}

/** @param {Uint8Array} b */
function showBytes(b) {
  const text = Array.from(b, (c) => (c >= 32 && c < 127 && c !== 34 && c !== 92 ? String.fromCharCode(c)
    : `\\x${c.toString(16).padStart(2, '0')}`));
  return `"${text.join('')}"`;
}

/**
 * @param {number} n
 * @param {number} k
 */
export function roundUp(n, k) {
  return Math.ceil(n / k) * k;
}
