// Reading a `.wgpt` artifact (docs/artifact.md, format 3): the container, both checksums and every rule the
// contract lists. The result is plain data (a ProgramSpec) that locates each constant in the data. A reader
// that holds the file whole checks it all at once (parse); a streaming one (session.js's load) checks the
// container and the header before anything reaches a device, and the data's length and checksum as the data
// arrives (checkLength, checkData).

import * as compileCost from './compile_cost.js';
import { crc32 } from './crc32.js';
import { ArtifactError } from './errors.js';
import * as expr from './symbolic.js';
import { DEVICE_FORM, DEVICE_SIZE, ITEMSIZE, PACKED_BITS, isModelDtype, packedBytes, packedProblem } from './dtypes.js';
import { LIMITS } from './limits.js';
import * as tree from './tree.js';

/** @typedef {import('./symbolic.js').Expr} Expr */
/** @typedef {import('./symbolic.js').SymbolSpec} SymbolSpec */
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
 *   engineSources: Record<string, number>, workgroupSize: Grid, workgroupBytes: number, targets: string[]}} KernelSpec
 */
/** @typedef {{size: number, role: 'input' | 'constant' | 'scratch' | 'status' | 'state', name: string}} BufferSpec */
/** @typedef {{name: string, buffer: number, shape: number[], dtype: ModelDtype}} StateSpec */
/** @typedef {{node: string, message: string}} CheckSpec */
/**
 * Where a constant's bytes lie in the data (`offset`, -1 when `external`: in another file of the folder);
 * `layout`: its dtype, shape and packing, as a key; `widen`: a float16 constant the device holds as float32
 * (fit.js's forDevice, without shader-f16: upload.js widens it as it writes it).
 * @typedef {{dtype: DeviceDtype | 'q4' | 'q8', offset: number, nbytes: number, layout: string, widen?: boolean,
 *   external?: External}} Constant
 */
/** @typedef {{file: string, dataCrc32: number}} External a constant's file and that file's data CRC-32 */
/** @typedef {{name: string, shape: Expr[], dtype: ModelDtype, buffer: number}} InputSpec */
/** @typedef {{buffer: number, shape: Expr[], strides: Expr[], offset: Expr, dtype: ModelDtype}} OutputSpec */
/** @typedef {{offset: number, type: Scalar, value: Expr}} Patch */
/**
 * What a dispatch runs, or might run instead: its kernel, Params words and grid, and with dynamic sizes the
 * words to fill in per call and the workgroup count (`grid` then the count's largest value folded).
 * @typedef {{kernel: number, uniform: Uint32Array, grid: Grid, patches: Patch[], count: Expr | null}} Option
 */
/** @typedef {{buffer: number, shape: number[], strides: number[], offset: number, dtype: ModelDtype | 'f16'}} ViewSpec */
/**
 * @typedef {{kernel: number, buffers: number[], uniform: Uint32Array, grid: Grid, node: string,
 *   patches: Patch[], count: Expr | null, options: Option[], follows: number, result: ViewSpec[],
 *   tolerance: number}} DispatchSpec
 * `result` and `tolerance`: a group leader's, what its candidates must agree on (docs/artifact.md, Tuning).
 */
/**
 * @typedef {{meta: Record<string, unknown>, requires: string[], symbols: Record<string, SymbolSpec>, sources: string[],
 *   kernels: KernelSpec[], buffers: BufferSpec[], constants: Map<number, Constant>, dataCrc32: number, inputs: InputSpec[],
 *   outputs: OutputSpec[], inputTree: TreeSpec, outputTree: TreeSpec, dispatches: DispatchSpec[],
 *   checks: CheckSpec[], status: number | null, states: StateSpec[]}} ProgramSpec
 * `status`: the index of the "status" buffer, whose word i check i sets when it fails (docs/artifact.md, Checks).
 * `states`: the tensors the program keeps between calls, each in a "state" buffer (docs/artifact.md, State).
 * `dataCrc32`: the CRC-32 of the data, which holds the constants' bytes.
 */

export const MAGIC = LIMITS.magic;
export const CONTAINER_VERSION = LIMITS.container_version;
export const FORMAT = LIMITS.format;
export const PREAMBLE = 32;
const ALIGN = LIMITS.align;
const SCALARS = ['u32', 'i32', 'f32'];
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/; // an entry point's or override's name (engines cut at a NUL)
// Bounds no program we compile comes near; past them a file is damaged or hostile (a grid of 65,535² never
// finishes; what a WGSL source may cost to compile: compile_cost.js): src/webgpu_torch/format/limits.json, which
// both readers use.
const MAX_GRID = LIMITS.max_workgroups_per_dim;
const MAX_WORKGROUPS = LIMITS.max_workgroups;
const MAX_TREE_DEPTH = LIMITS.max_tree_depth;
const MAX_HEADER = LIMITS.max_header_bytes;
const SCALAR_RANGE = /** @type {Record<Scalar, [number, number]>} */ (LIMITS.scalar_ranges);
const MAX_JSON_DEPTH = LIMITS.max_json_depth; // arrays and objects nested in the header (a tree 64 deep: 131)
const MAX_NUMBER = LIMITS.max_number; // 2^53 - 1: every number JSON.parse reads exactly
const MAX_RANK = LIMITS.max_rank; // dimensions of an input, output, constant or state
const EXTERNAL_FILE = new RegExp(`^(?:${LIMITS.external_file})$`); // a file of the same folder, by its whole name

/**
 * The container's fields (docs/artifact.md, Container): the header's CRC-32 and length, the data's length, and
 * the file's, `32 + H + D`.
 * @typedef {{headerCrc: number, headerLength: number, dataLength: number, size: number}} Container
 */

/**
 * Read and validate an artifact held whole; `where` (a path, a URL, "<bytes>") begins every message. Its checks
 * and their order are a streaming reader's (session.js's load): the container, the header, then the data.
 * @param {Uint8Array} raw
 * @param {string} where
 * @returns {ProgramSpec}
 */
export function parse(raw, where) {
  const container = readContainer(raw.subarray(0, PREAMBLE), raw.length, where);
  const spec = readHeader(raw.subarray(PREAMBLE, PREAMBLE + container.headerLength), container, where);
  checkData(spec, crc32(raw.subarray(PREAMBLE + container.headerLength)), where);
  return spec;
}

/**
 * The preamble's fields, after its magic, version and lengths: `first` holds the file's first PREAMBLE bytes
 * (all of a shorter file), `size` is the file's length where known before reading it (null: a download of
 * unknown length, whose length `checkLength` checks when it ends).
 * @param {Uint8Array} first
 * @param {number | null} size
 * @param {string} where
 * @returns {Container}
 */
export function readContainer(first, size, where) {
  const magic = new TextEncoder().encode(MAGIC);
  if (first.length === 0 || first.subarray(0, magic.length).some((b, i) => b !== magic[i])) {
    throw new ArtifactError(`${where}: not a webgpu_torch program (it does not start with ${MAGIC})`);
  }
  if (first.length < PREAMBLE) throw new ArtifactError(`${where}: truncated (${first.length} bytes) — not a complete webgpu_torch program`);
  const view = new DataView(first.buffer, first.byteOffset, PREAMBLE);
  const version = view.getUint32(8, true);
  if (version !== CONTAINER_VERSION) {
    throw new ArtifactError(`${where}: container version ${version}; this webgpu_torch reads version ${CONTAINER_VERSION} — recompile the model with this version`);
  }
  const headerLength = Number(view.getBigUint64(16, true));
  const dataLength = Number(view.getBigUint64(24, true));
  const container = { headerCrc: view.getUint32(12, true), headerLength, dataLength, size: PREAMBLE + headerLength + dataLength };
  if (size !== null) checkLength(size, container, where);
  if (headerLength > MAX_HEADER) throw new ArtifactError(`${where}: a header of ${count(headerLength)} bytes is past the ${count(MAX_HEADER)} this reader takes`);
  return container;
}

/**
 * Refuse a file whose length is not the preamble's `32 + H + D`: `size` its length, or for a download of
 * unknown length, what it held when it ended (a byte past the data: `Infinity`, "more than").
 * @param {number} size
 * @param {Container} container
 * @param {string} where
 */
export function checkLength(size, container, where) {
  if (size === container.size) return;
  const state = size < container.size ? 'truncated' : 'has trailing bytes';
  const held = Number.isFinite(size) ? count(size) : `more than ${count(container.size)}`;
  throw new ArtifactError(`${where}: ${state}: ${held} bytes, the preamble says ${count(container.size)}`);
}

/**
 * The program the header `text` describes, every rule of the contract checked, its own checksum first. Its
 * constants are located in the data, not read: the data's checksum, `spec.dataCrc32`, is checked as it is
 * read (checkData).
 * @param {Uint8Array} text
 * @param {Container} container
 * @param {string} where
 * @returns {ProgramSpec}
 */
export function readHeader(text, container, where) {
  /** @param {string} msg */
  const fail = (msg) => new ArtifactError(`${where}: ${msg}`);
  if (text.length < container.headerLength) throw fail(`truncated: ${count(PREAMBLE + text.length)} bytes, the preamble says ${count(container.size)}`);
  if (crc32(text) !== container.headerCrc) throw fail('the header is damaged (checksum mismatch)');
  let header;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(text));
  } catch (e) {
    throw fail(`damaged header: ${String(/** @type {Error} */ (e).message).slice(0, 200) || 'nested too deeply'}`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) {
    throw fail(`malformed program: the header is a JSON ${Array.isArray(header) ? 'array' : typeof header}, not an object`);
  }
  try {
    checkValues(header);
  } catch (e) {
    if (e instanceof Invalid) throw fail(`malformed program: ${e.message}`);
    throw e;
  }
  if (header.format !== FORMAT) {
    throw fail(`program format ${JSON.stringify(header.format)}; this webgpu_torch reads format ${FORMAT} — recompile the model with this version`);
  }
  const { headerLength: h, dataLength: d } = container;
  if (h % ALIGN || d % ALIGN) throw fail(`malformed program: header length ${h} or data length ${d} is not a multiple of ${ALIGN}`);
  try {
    return validate(header, d);
  } catch (e) {
    if (e instanceof Invalid) throw fail(`malformed program: ${e.message}`);
    throw e;
  }
}

/**
 * Refuse data whose CRC-32 (`crc`, of all D bytes) is not the header's.
 * @param {ProgramSpec} spec
 * @param {number} crc
 * @param {string} where
 */
export function checkData(spec, crc, where) {
  if (crc !== spec.dataCrc32) throw new ArtifactError(`${where}: tensor data is damaged (checksum mismatch)`);
}

/** A rule of the contract the header breaks (becomes an ArtifactError naming the file). */
class Invalid extends Error {}

/**
 * Every number in the header within ±(2^53 - 1) (so it is read exactly: JSON.parse gives float64s), every
 * string (and key) well-formed Unicode (no lone surrogate: engines take UTF-8), arrays and objects nested at
 * most MAX_JSON_DEPTH deep. Walks the header without recursion.
 * @param {unknown} header
 */
function checkValues(header) {
  /** @type {[unknown, string, number][]} */
  const stack = [[header, 'the header', 0]];
  while (stack.length) {
    const [value, where, depth] = /** @type {[unknown, string, number]} */ (stack.pop());
    if (typeof value === 'string') {
      checkString(value, where);
    } else if (typeof value === 'number') {
      need(Math.abs(value) <= MAX_NUMBER, `${where}: the number ${value} is out of range (beyond ±(2^53 - 1))`);
    } else if (value !== null && typeof value === 'object') {
      need(depth < MAX_JSON_DEPTH, `${where}: nested deeper than ${MAX_JSON_DEPTH}`);
      for (const [key, item] of Object.entries(value)) {
        checkString(key, where);
        stack.push([item, depth ? `${where}.${key.slice(0, 40)}` : key.slice(0, 40), depth + 1]);
      }
    }
  }
}

/**
 * @param {string} text
 * @param {string} where
 */
function checkString(text, where) {
  need(!LONE_SURROGATE.test(text), `${where}: a string that is not well-formed Unicode (a lone surrogate)`);
}

const LONE_SURROGATE = /[\uD800-\uDFFF]/u; // with the u flag, a pair is one code point and does not match

/**
 * @param {boolean} ok
 * @param {string} msg
 * @returns {asserts ok}
 */
function need(ok, msg) {
  if (!ok) throw new Invalid(msg);
}

/** @param {number} n */
const count = (n) => n.toLocaleString('en');

/**
 * @param {unknown} v
 * @returns {v is number}
 */
const isInt = (v) => Number.isSafeInteger(v);

/**
 * @param {unknown} v
 * @param {string} what
 * @returns {number}
 */
function int(v, what) {
  need(isInt(v), `${what}: ${String(JSON.stringify(v)).slice(0, 40)} is not an integer`);
  return /** @type {number} */ (v);
}

/**
 * @param {unknown} v
 * @param {string} what
 * @returns {string}
 */
function str(v, what) {
  need(typeof v === 'string', `${what}: ${String(JSON.stringify(v)).slice(0, 40)} is not a string`);
  return /** @type {string} */ (v);
}

/**
 * @param {unknown} v
 * @param {string} what
 * @returns {any[]}
 */
function list(v, what) {
  need(Array.isArray(v), `${what}: expected a list, got ${kind(v)}`);
  return /** @type {any[]} */ (v);
}

/**
 * @param {unknown} v
 * @param {string} what
 * @returns {Record<string, any>}
 */
function object(v, what) {
  need(v !== null && typeof v === 'object' && !Array.isArray(v), `${what}: expected an object, got ${kind(v)}`);
  return /** @type {Record<string, any>} */ (v);
}

/**
 * A required key of `o`.
 * @param {Record<string, any>} o
 * @param {string} key
 * @param {string} what
 */
function field(o, key, what) {
  need(Object.hasOwn(o, key), `${what}: missing field ${JSON.stringify(key)}`);
  return o[key];
}

/**
 * An optional key of `o`: its value when present (null included, which the reader then refuses as it would
 * any other value of the wrong type, as the Python reader does), else `fallback`.
 * @param {Record<string, any>} o
 * @param {string} key
 * @param {unknown} fallback
 */
function optional(o, key, fallback) {
  return Object.hasOwn(o, key) ? o[key] : fallback;
}

/** @param {unknown} v */
function kind(v) {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

/**
 * @param {Record<string, any>} header
 * @param {number} dataLength D, the data's length in bytes
 * @returns {ProgramSpec}
 */
function validate(header, dataLength) {
  const top = 'the header';
  const meta = object(optional(header, 'meta', {}), 'meta');
  const requires = list(optional(header, 'requires', []), 'requires').map((f) => str(f, 'feature'));
  const symbols = readSymbols(object(field(header, 'symbols', top), 'symbols'));
  const sources = list(field(header, 'sources', top), 'sources').map((s, i) => readSource(s, i));
  const rawKernels = list(field(header, 'kernels', top), 'kernels');
  const kernels = rawKernels.map((k, i) => readKernel(object(k, `kernel ${i}`), i, sources.length));
  kernels.forEach((k) => checkFallback(k, kernels));
  const buffers = list(field(header, 'buffers', top), 'buffers').map((b, i) => readBuffer(object(b, `buffer ${i}`), i));
  const constants = readTensors(list(field(header, 'tensors', top), 'tensors'), buffers, dataLength);
  const dataCrc32 = field(header, 'data_crc32', top);
  need(isInt(dataCrc32) && dataCrc32 >= 0 && dataCrc32 <= 0xffffffff, `data_crc32: ${String(JSON.stringify(dataCrc32)).slice(0, 40)} is not a CRC-32`);
  /** @param {unknown} e @param {string} what @returns {Expr} */
  const ex = (e, what) => {
    const p = expr.problem(e, symbols);
    need(p === null, `${what}: ${p}`);
    return /** @type {Expr} */ (e);
  };
  const inputs = list(field(header, 'inputs', top), 'inputs').map((x, i) => readInput(object(x, `input ${i}`), i, buffers, symbols, ex));
  const outputs = list(field(header, 'outputs', top), 'outputs').map((t, i) => readOutput(object(t, `output ${i}`), i, buffers, symbols, ex));
  const inputTree = readTree(field(header, 'input_tree', top), 'input_tree');
  const outputTree = readTree(field(header, 'output_tree', top), 'output_tree');
  need(inputTree.type === 'tuple' && inputTree.items.length === 2 && inputTree.items[0].type === 'tuple' &&
    inputTree.items[1].type === 'dict', 'input_tree is not a tuple of (positional arguments, keyword arguments)');
  need(tree.countLeaves(inputTree) === inputs.length, `input tree does not match the inputs (${tree.countLeaves(inputTree)} leaves for ${inputs.length})`);
  need(tree.countLeaves(outputTree) === outputs.length, `output tree does not match the outputs (${tree.countLeaves(outputTree)} leaves for ${outputs.length})`);
  for (const [name, s] of Object.entries(symbols)) {
    need(inputs.some((x) => x.shape.includes(name)), `symbol ${name} (${s.about}) is not the size of any input dimension`);
  }
  const dispatches = list(field(header, 'dispatches', top), 'dispatches').map((x, i) => readDispatch(object(x, `dispatch ${i}`), i, kernels, buffers, ex, symbols));
  dispatches.forEach((dsp, i) => checkGroup(dispatches, dsp, i));
  dispatches.forEach((dsp, i) => checkResult(dispatches, kernels, dsp, i));
  checkRequires(requires, kernels, dispatches);
  const bound = new Set([...dispatches.flatMap((x) => x.buffers), ...outputs.map((t) => t.buffer)]);
  buffers.forEach((b, i) => need(b.role !== 'scratch' || bound.has(i), `buffer ${i}: a scratch buffer no dispatch binds`));
  outputs.forEach((t, k) => {
    const why = disagreement(t, { buffers, inputs, constants, dispatches, kernels, symbols });
    need(why === null, `output ${k}: ${why}`);
  });
  const checks = list(field(header, 'checks', top), 'checks').map((raw, i) => {
    const c = object(raw, `check ${i}`);
    return { node: str(field(c, 'node', `check ${i}`), `check ${i} node`), message: str(field(c, 'message', `check ${i}`), `check ${i} message`) };
  });
  const statuses = buffers.flatMap((b, i) => (b.role === 'status' ? [i] : []));
  need(statuses.length <= 1, 'more than one status buffer');
  const status = statuses.length ? statuses[0] : null;
  need(!checks.length || (status !== null && buffers[status].size >= 4 * checks.length), 'checks without a status buffer large enough for them');
  need(outputs.every((t) => t.buffer !== status), 'a status buffer an output reads');
  const states = list(optional(header, 'states', []), 'states').map((x, i) => readState(object(x, `state ${i}`), i, buffers));
  const stated = states.map((x) => x.buffer).sort((a, b) => a - b);
  const stateBuffers = buffers.flatMap((b, i) => (b.role === 'state' ? [i] : []));
  need(stated.join() === stateBuffers.join(), 'a state buffer that is not exactly one state\'s');
  need(outputs.every((t) => !stated.includes(t.buffer)), 'an output views a state buffer');
  return { meta, requires, symbols, sources, kernels, buffers, constants, dataCrc32, inputs, outputs, inputTree, outputTree, dispatches, checks, status, states };
}

/**
 * @param {Record<string, any>} j
 * @returns {Record<string, SymbolSpec>}
 */
function readSymbols(j) {
  /** @type {Record<string, SymbolSpec>} */
  const out = Object.create(null); // keyed by the file's names: `__proto__` is one like any other
  for (const [name, raw] of Object.entries(j)) {
    const what = `symbol ${name}`;
    const s = object(raw, what);
    const lo = int(field(s, 'lo', what), `${what} lo`);
    const hi = int(field(s, 'hi', what), `${what} hi`);
    const hint = int(field(s, 'hint', what), `${what} hint`);
    need(lo >= 0 && lo <= hint && hint <= hi && hi < LIMITS.symbol_limit, `${what}: range [${lo}, ${hi}] with hint ${hint}`);
    out[name] = { lo, hi, hint, about: str(optional(s, 'about', `dimension ${name}`), `${what} about`) };
  }
  return out;
}

/**
 * @param {unknown} s
 * @param {number} i
 */
function readSource(s, i) {
  const text = str(s, `source ${i}`);
  const why = compileCost.problem(text);
  need(why === null, `source ${i}: ${why}`);
  return text;
}

/**
 * @param {Record<string, any>} k
 * @param {number} i
 * @param {number} nSources
 * @returns {KernelSpec}
 */
function readKernel(k, i, nSources) {
  const name = str(field(k, 'name', `kernel ${i}`), `kernel ${i} name`);
  const it = `kernel ${name}`;
  const source = int(field(k, 'source', it), `${it} source`);
  need(source >= 0 && source < nSources, `${it}: bad source index ${source}`);
  const entry = str(field(k, 'entry', it), `${it} entry`);
  const overrides = object(optional(k, 'overrides', {}), `${it} overrides`);
  need(Object.values(overrides).every((v) => typeof v === 'number' && Number.isFinite(v)), `${it}: an override is not a number`);
  need([entry, ...Object.keys(overrides)].every((n) => IDENTIFIER.test(n)),
    `${it}: entry point or override name ${JSON.stringify(entry.slice(0, 40))} is not a WGSL identifier`);
  const bindings = list(field(k, 'bindings', it), `${it} bindings`);
  need(bindings.every((b) => b === 'read' || b === 'read_write' || b === 'uniform'), `${it}: unknown binding kind`);
  const uniforms = bindings.filter((b) => b === 'uniform').length;
  need(uniforms === (k.uniform === undefined ? 0 : 1), `${it}: a uniform binding needs a uniform layout, and only one`);
  const uniform = uniforms ? readUniform(object(k.uniform, `${it} uniform`), it) : null;
  const requires = list(optional(k, 'requires', []), `${it} requires`).map((f) => str(f, 'feature'));
  const fallback = k.fallback === undefined ? null : int(k.fallback, `${it} fallback`);
  const engineSources = object(optional(k, 'engine_sources', {}), `${it} engine_sources`);
  need(Object.values(engineSources).every((s) => isInt(s) && s >= 0 && s < nSources), `${it}: bad engine source`);
  const workgroupSize = triple(field(k, 'workgroup_size', it), 'workgroup size');
  const [x, y, z] = workgroupSize;
  need(x >= 1 && y >= 1 && z >= 1 && x * y * z <= LIMITS.max_workgroup_invocations, `${it}: bad workgroup size ${JSON.stringify(workgroupSize)}`);
  const workgroupBytes = int(field(k, 'workgroup_bytes', it), 'workgroup bytes');
  need(workgroupBytes >= 0 && workgroupBytes <= LIMITS.max_workgroup_bytes, `${it}: bad workgroup memory ${workgroupBytes}`);
  const targets = list(optional(k, 'targets', []), `${it} targets`).map((t) => str(t, `${it} target`));
  return { name, source, entry, overrides, bindings, uniform, requires, fallback, engineSources, workgroupSize, workgroupBytes, targets };
}

/**
 * A kernel's fallback (its float32 twin, for devices without shader-f16) requires nothing and has the same
 * interface; only a kernel that requires shader-f16 names one.
 * @param {KernelSpec} k
 * @param {KernelSpec[]} kernels
 */
function checkFallback(k, kernels) {
  if (k.fallback === null) return;
  need(k.fallback >= 0 && k.fallback < kernels.length, `kernel ${k.name}: bad fallback index`);
  need(k.requires.includes('shader-f16'), `kernel ${k.name}: a fallback on a kernel that does not require shader-f16`);
  const alt = kernels[k.fallback];
  need(!alt.requires.length && sameInterface(alt, k),
    `kernel ${k.name}: its fallback ${alt.name} requires features or differs in bindings or Params`);
}

/**
 * The features a device must have to run kernel `k` as a dispatch: its `requires`, less shader-f16 when a
 * fallback (which requires nothing) runs in its place without it.
 * @param {KernelSpec} k
 * @returns {string[]}
 */
export function needs(k) {
  return k.requires.filter((f) => !(f === 'shader-f16' && k.fallback !== null));
}

/**
 * The header's `requires` is exactly what the dispatches' kernels need.
 * @param {string[]} requires
 * @param {KernelSpec[]} kernels
 * @param {DispatchSpec[]} dispatches
 */
function checkRequires(requires, kernels, dispatches) {
  const needed = new Set();
  dispatches.forEach((d, i) => {
    const k = kernels[d.kernel];
    const missing = needs(k).filter((f) => !requires.includes(f)).sort();
    const extra = missing.includes('shader-f16') ? ' and names no fallback' : '';
    need(!missing.length, `dispatch ${i}: its kernel ${k.name} needs ${missing.join(', ')}, which the file does not require${extra}`);
    for (const f of needs(k)) needed.add(f);
  });
  const unneeded = [...new Set(requires)].filter((f) => !needed.has(f)).sort();
  need(!unneeded.length, `the file requires ${unneeded.join(', ')}, which no dispatch needs`);
}

/**
 * @param {Record<string, any>} u
 * @param {string} it
 * @returns {UniformLayout}
 */
function readUniform(u, it) {
  const size = int(field(u, 'size', `${it} uniform`), `${it} uniform size`);
  const fields = list(field(u, 'fields', `${it} uniform`), `${it} uniform fields`).map((raw) => {
    const f = object(raw, `${it} uniform field`);
    const ok = typeof f.name === 'string' && isInt(f.offset) && f.offset >= 0 && f.offset % 4 === 0 &&
      SCALARS.includes(f.type) && isInt(f.count) && f.count >= 1 && f.offset + 4 * f.count <= size;
    need(ok, `${it}: bad uniform layout (field ${JSON.stringify(f).slice(0, 80)})`);
    return /** @type {UniformField} */ ({ name: f.name, offset: f.offset, type: f.type, count: f.count });
  });
  need(size >= 16 && size % 16 === 0, `${it}: bad uniform layout (size ${size} is not a positive multiple of 16)`);
  return { size, fields };
}

/**
 * @param {Record<string, any>} b
 * @param {number} i
 * @returns {BufferSpec}
 */
function readBuffer(b, i) {
  const what = `buffer ${i}`;
  const size = int(field(b, 'size', what), `${what} size`);
  need(size > 0, `${what}: bad size ${size}`);
  const role = field(b, 'role', what);
  need(['input', 'constant', 'scratch', 'status', 'state'].includes(role), `${what}: unknown role ${JSON.stringify(role)}`);
  return { size, role, name: str(optional(b, 'name', ''), `${what} name`) };
}

/**
 * @param {any[]} entries
 * @param {BufferSpec[]} buffers
 * @param {number} dataLength
 * @returns {Map<number, Constant>}
 */
function readTensors(entries, buffers, dataLength) {
  /** @type {Map<number, Constant>} */
  const out = new Map();
  for (const raw of entries) {
    const t = object(raw, 'tensor');
    const buffer = int(field(t, 'buffer', 'tensor'), 'tensor buffer');
    const dtype = field(t, 'dtype', `tensor for buffer ${buffer}`);
    const packed = Object.hasOwn(PACKED_BITS, dtype);
    need(Object.hasOwn(DEVICE_SIZE, dtype) || packed, `tensor for buffer ${buffer} has unknown dtype ${JSON.stringify(dtype)}`);
    const shape = list(field(t, 'shape', 'tensor'), 'tensor shape').map((n) => int(n, 'tensor shape'));
    need(shape.length <= MAX_RANK, `tensor for buffer ${buffer}: ${shape.length} dimensions, over ${MAX_RANK}`);
    const nbytes = int(field(t, 'nbytes', 'tensor'), 'tensor nbytes');
    const size = packed ? packedSize(t, buffer, PACKED_BITS[dtype], shape)
      : shape.reduce((a, n) => a * n, 1) * DEVICE_SIZE[/** @type {DeviceDtype} */ (dtype)];
    const layout = JSON.stringify(packed ? [dtype, shape, t.group, t.zero_points] : [dtype, shape]);
    need(!out.has(buffer), `two tensors for buffer ${buffer}`);
    need(Object.hasOwn(t, 'offset') !== Object.hasOwn(t, 'external'), `tensor for buffer ${buffer} needs exactly one of offset and external`);
    const external = Object.hasOwn(t, 'external') ? readExternal(t.external, buffer) : undefined;
    const offset = external ? -1 : int(t.offset, 'tensor offset');
    need(nbytes === size && Math.min(0, ...shape) === 0 && (external !== undefined ||
      (offset >= 0 && offset % ALIGN === 0 && offset + nbytes <= dataLength)),
    `tensor for buffer ${buffer} is mis-sized or out of bounds (shape ${JSON.stringify(shape)}, ${nbytes} bytes at ${offset}, data is ${dataLength} bytes)`);
    need(buffer >= 0 && buffer < buffers.length && buffers[buffer].role === 'constant', 'constant data for a buffer that is not a constant');
    need(nbytes <= buffers[buffer].size, `buffer ${buffer} (${buffers[buffer].name}): constant larger than buffer`);
    out.set(buffer, external ? { dtype, offset, nbytes, layout, external } : { dtype, offset, nbytes, layout });
  }
  buffers.forEach((b, i) => need(b.role !== 'constant' || out.has(i), `buffer ${i} (${b.name}): constant data is missing`));
  return out;
}

/**
 * A tensor entry's `external`: the file of the folder whose constant of the same name holds its bytes, and the
 * CRC-32 of that file's data (docs/artifact.md, Shared constants).
 * @param {unknown} raw
 * @param {number} buffer
 * @returns {External}
 */
function readExternal(raw, buffer) {
  const e = object(raw, `tensor for buffer ${buffer}: external`);
  const file = str(field(e, 'file', 'external'), 'external file');
  need(EXTERNAL_FILE.test(file), `tensor for buffer ${buffer}: external file ${JSON.stringify(file).slice(0, 80)} is not a .wgpt file name of this folder`);
  const dataCrc32 = field(e, 'data_crc32', 'external');
  need(Number.isInteger(dataCrc32) && dataCrc32 >= 0 && dataCrc32 <= 0xffffffff, `tensor for buffer ${buffer}: external data_crc32 is not a CRC-32`);
  return { file, dataCrc32 };
}

/**
 * The bytes of a packed tensor entry (docs/artifact.md, "Packed weights"), after its own fields' checks.
 * @param {Record<string, any>} t
 * @param {number} buffer
 * @param {number} bits
 * @param {number[]} shape
 * @returns {number}
 */
function packedSize(t, buffer, bits, shape) {
  const zeroPoints = field(t, 'zero_points', `tensor for buffer ${buffer}`);
  need(shape.length === 2 && typeof zeroPoints === 'boolean',
    `packed tensor for buffer ${buffer}: shape ${JSON.stringify(shape)} is not [rows, cols] or zero_points is not a boolean`);
  const group = int(field(t, 'group', `tensor for buffer ${buffer}`), 'group');
  const problem = packedProblem(bits, shape[0], shape[1], group);
  need(problem === null, `packed tensor for buffer ${buffer}: ${problem}`);
  return packedBytes(bits, shape[0], shape[1], group, zeroPoints);
}

/**
 * @param {Record<string, any>} x
 * @param {number} i
 * @param {BufferSpec[]} buffers
 * @param {Record<string, SymbolSpec>} symbols
 * @param {(e: unknown, what: string) => Expr} ex
 * @returns {InputSpec}
 */
function readInput(x, i, buffers, symbols, ex) {
  const name = str(field(x, 'name', `input ${i}`), `input ${i} name`);
  const what = `input ${name}`;
  const dtype = field(x, 'dtype', what);
  need(isModelDtype(dtype), `${what}: unknown dtype ${JSON.stringify(dtype)}`);
  const shape = list(field(x, 'shape', what), `${what} shape`).map((s) => ex(s, `${what} shape`));
  need(shape.length <= MAX_RANK, `${what}: ${shape.length} dimensions, over ${MAX_RANK}`);
  const buffer = int(field(x, 'buffer', what), `${what} buffer`);
  need(buffer >= 0 && buffer < buffers.length, `${what}: bad buffer`);
  need(buffers[buffer].role === 'input', `${what}: buffer ${buffer} is not an input buffer`);
  const largest = shape.reduce((/** @type {number} */ a, s) => a * expr.bound(s, symbols), 1);
  need(Math.max(1, largest) * ITEMSIZE <= buffers[buffer].size && shape.every((s) => expr.bounds(s, symbols)[0] >= 0),
    `${what}: buffer too small`);
  return { name, shape, dtype, buffer };
}

/**
 * @param {Record<string, any>} x
 * @param {number} i
 * @param {BufferSpec[]} buffers
 * @returns {StateSpec}
 */
function readState(x, i, buffers) {
  const name = str(field(x, 'name', `state ${i}`), `state ${i} name`);
  const what = `state ${name}`;
  const dtype = field(x, 'dtype', what);
  need(isModelDtype(dtype), `${what}: unknown dtype ${JSON.stringify(dtype)}`);
  const shape = list(field(x, 'shape', what), `${what} shape`).map((n) => int(n, `${what} shape`));
  need(shape.length <= MAX_RANK, `${what}: ${shape.length} dimensions, over ${MAX_RANK}`);
  const buffer = int(field(x, 'buffer', what), `${what} buffer`);
  need(buffer >= 0 && buffer < buffers.length, `${what}: bad buffer`);
  need(buffers[buffer].role === 'state', `${what}: buffer ${buffer} is not a state buffer`);
  need(shape.every((n) => n >= 0) && Math.max(1, shape.reduce((a, b) => a * b, 1)) * ITEMSIZE <= buffers[buffer].size,
    `${what}: bad shape or buffer too small`);
  return { name, buffer, shape, dtype };
}

/**
 * @param {Record<string, any>} t
 * @param {number} i
 * @param {BufferSpec[]} buffers
 * @param {Record<string, SymbolSpec>} symbols
 * @param {(e: unknown, what: string) => Expr} ex
 * @returns {OutputSpec}
 */
function readOutput(t, i, buffers, symbols, ex) {
  const what = `output ${i}`;
  const buffer = int(field(t, 'buffer', what), `${what} buffer`);
  need(buffer >= 0 && buffer < buffers.length, `${what}: bad buffer ${buffer}`);
  const dtype = field(t, 'dtype', what);
  need(isModelDtype(dtype), `${what}: unknown dtype ${JSON.stringify(dtype)}`);
  const shape = list(field(t, 'shape', what), `${what} shape`).map((s) => ex(s, `${what} shape`));
  const strides = list(field(t, 'strides', what), `${what} strides`).map((s) => ex(s, `${what} strides`));
  need(shape.length === strides.length, `${what}: ${shape.length} sizes but ${strides.length} strides`);
  need(shape.length <= MAX_RANK, `${what}: ${shape.length} dimensions, over ${MAX_RANK}`);
  const offset = ex(field(t, 'offset', what), `${what} offset`);
  const lows = [offset, ...strides, ...shape].map((e) => expr.bounds(e, symbols)[0]);
  need(Math.min(...lows) >= 0 && expr.bound(viewEnd({ shape, strides, offset }), symbols) * ITEMSIZE <= buffers[buffer].size,
    `${what}: view reaches past its buffer`);
  return { buffer, shape, strides, offset, dtype };
}

/**
 * How an output disagrees with what holds its buffer's data at the end of a call, or null: a scratch buffer
 * must be written by some dispatch (unless the output has no element), an input buffer must hold an input and
 * a constant buffer constants stored as the output's device form (int64 read as int32 is a view).
 * @param {OutputSpec} t
 * @param {{buffers: BufferSpec[], inputs: InputSpec[], constants: Map<number, Constant>, dispatches: DispatchSpec[],
 *   kernels: KernelSpec[], symbols: Record<string, SymbolSpec>}} p
 * @returns {string | null}
 */
function disagreement(t, p) {
  const role = p.buffers[t.buffer].role;
  const form = DEVICE_FORM[t.dtype];
  const empty = t.shape.some((n) => expr.bound(n, p.symbols) === 0);
  const writes = (/** @type {DispatchSpec} */ d) =>
    p.kernels[d.kernel].bindings.filter((b) => b !== 'uniform').some((kind, j) => kind === 'read_write' && d.buffers[j] === t.buffer);
  if (role === 'scratch' && !empty && !p.dispatches.some(writes)) return `buffer ${t.buffer} is scratch that no dispatch writes`;
  if (role === 'input' && !p.inputs.some((x) => x.buffer === t.buffer && DEVICE_FORM[x.dtype] === form)) {
    return `buffer ${t.buffer} holds no input stored as ${form} (${t.dtype})`;
  }
  const stored = role === 'constant' ? p.constants.get(t.buffer)?.dtype ?? form : form;
  if (stored !== form) return `buffer ${t.buffer} holds constants stored as ${stored}, not ${form} (${t.dtype})`;
  return null;
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
 * @param {unknown} t
 * @param {string} what
 * @param {number} depth
 * @returns {TreeSpec}
 */
function readTree(t, what, depth = 0) {
  const node = object(t, what);
  const type = node.type;
  need(['leaf', 'const', 'tuple', 'list', 'dict'].includes(type) && depth <= MAX_TREE_DEPTH, `${what}: bad tree node ${JSON.stringify(node).slice(0, 80)}`);
  if (type === 'const') {
    const v = node.value;
    need(v === null || ['boolean', 'number', 'string'].includes(typeof v), `${what}: a const tree node holds ${kind(v)}`);
  }
  if (type === 'tuple' || type === 'list' || type === 'dict') {
    list(field(node, 'items', what), `${what} items`).forEach((s) => readTree(s, what, depth + 1));
  }
  if (type === 'dict') {
    const keys = list(field(node, 'keys', what), `${what} keys`);
    need(keys.length === node.items.length && keys.every((k) => typeof k === 'string') && new Set(keys).size === keys.length,
      `${what}: a dict tree node's keys do not match its items`);
  }
  const why = tree.classProblem(node);
  need(why === null, `${what}: ${why}`);
  return /** @type {TreeSpec} */ (node);
}

/**
 * @param {Record<string, any>} x
 * @param {number} i
 * @param {KernelSpec[]} kernels
 * @param {BufferSpec[]} buffers
 * @param {(e: unknown, what: string) => Expr} ex
 * @param {Record<string, SymbolSpec>} symbols
 * @returns {DispatchSpec}
 */
function readDispatch(x, i, kernels, buffers, ex, symbols) {
  const it = `dispatch ${i}`;
  const kernel = int(field(x, 'kernel', it), `${it} kernel`);
  need(kernel >= 0 && kernel < kernels.length, `${it}: bad kernel index`);
  const k = kernels[kernel];
  const node = str(field(x, 'node', it), `${it} node`);
  const bound = list(field(x, 'buffers', it), `${it} buffers`).map((b) => int(b, `${it} buffer`));
  const storage = k.bindings.filter((b) => b !== 'uniform');
  need(bound.length === storage.length, `${it}: binds ${bound.length} of ${storage.length} buffers`);
  need(bound.every((b) => b >= 0 && b < buffers.length), `${it}: bad buffer index`);
  need(bound.every((b, j) => storage[j] !== 'read_write' || ['scratch', 'status', 'state'].includes(buffers[b].role)),
    `${it}: writes an input or a constant`);
  const uniform = readWords(field(x, 'uniform', it), it);
  const size = k.uniform?.size ?? 0;
  need(uniform.length * 4 === size, `${it}: ${uniform.length} uniform words for a ${size}-byte Params`);
  const written = bound.filter((_, j) => storage[j] === 'read_write');
  need(written.every((b) => bound.indexOf(b) === bound.lastIndexOf(b)), `${it}: binds a buffer it writes twice`);
  // Every workgroup writes something: a grid of more workgroups than the words its dispatch writes only runs
  // longer than the data implies.
  const words = Math.max(1, Math.floor([...new Set(written)].reduce((a, b) => a + buffers[b].size, 0) / 4));
  const grid = readGrid(field(x, 'grid', it), it);
  need(grid[0] * grid[1] * grid[2] <= words, `${it}: ${count(grid[0] * grid[1] * grid[2])} workgroups for ${count(words)} words written`);
  const { patches, count: workgroups } = readSizing(x, it, uniform, grid, ex, symbols);
  const options = list(optional(x, 'options', []), `${it} options`).map((raw, j) => {
    const o = object(raw, `${it} option ${j}`);
    const ok = isInt(o.kernel) && o.kernel >= 0 && o.kernel < kernels.length;
    need(ok, `${it}: bad option`);
    const alt = kernels[o.kernel];
    const optionWords = readWords(field(o, 'uniform', `${it} option`), it);
    need(sameInterface(alt, k) && optionWords.length === uniform.length, `${it}: option ${alt.name} differs in bindings or Params`);
    const optionGrid = readGrid(field(o, 'grid', `${it} option`), it);
    const n = optionGrid[0] * optionGrid[1] * optionGrid[2];
    need(n <= words, `${it}: an option of ${count(n)} workgroups for ${count(words)} words written`);
    const sizing = readSizing(o, `${it} option ${alt.name}`, optionWords, optionGrid, ex, symbols);
    need((sizing.count === null) === (workgroups === null), `${it}: option ${alt.name} is not sized as the dispatch is (a workgroup count where it has one)`);
    return { kernel: o.kernel, uniform: optionWords, grid: optionGrid, ...sizing };
  });
  const follows = int(optional(x, 'follows', 0), `${it} follows`);
  need(follows >= 0, `${it}: follows no group leader with as many options`);
  const result = list(optional(x, 'result', []), `${it} result`).map((v) => readView(object(v, `${it} result`), it, buffers));
  const tolerance = optional(x, 'tolerance', 0);
  need(typeof tolerance === 'number', `${it} tolerance: ${String(JSON.stringify(tolerance)).slice(0, 40)} is not a number`);
  need(tolerance >= 0 && tolerance <= 1, `${it}: tolerance ${tolerance} is not a number in [0, 1]`);
  return { kernel, buffers: bound, uniform, grid, node, patches, count: workgroups, options, follows, result, tolerance };
}

/**
 * A dispatch's or an option's dynamic sizing: each patch a word of its Params whose values fit its type; its
 * grid the workgroup count's largest value folded.
 * @param {Record<string, any>} x
 * @param {string} it
 * @param {Uint32Array} uniform
 * @param {Grid} grid
 * @param {(e: unknown, what: string) => Expr} ex
 * @param {Record<string, SymbolSpec>} symbols
 * @returns {{patches: Patch[], count: Expr | null}}
 */
function readSizing(x, it, uniform, grid, ex, symbols) {
  const patches = list(optional(x, 'patches', []), `${it} patches`).map((p) => {
    need(Array.isArray(p) && p.length === 3, `${it}: a uniform patch is not [offset, type, expression]`);
    const value = ex(p[2], `${it} patch`);
    const [lo, hi] = expr.bounds(value, symbols);
    const ok = isInt(p[0]) && p[0] >= 0 && p[0] <= 4 * uniform.length - 4 && p[0] % 4 === 0 && SCALARS.includes(p[1]) &&
      SCALAR_RANGE[/** @type {Scalar} */ (p[1])][0] <= lo && hi <= SCALAR_RANGE[/** @type {Scalar} */ (p[1])][1];
    need(ok, `${it}: bad uniform patch`);
    return { offset: p[0], type: p[1], value };
  });
  const workgroups = x.count === undefined ? null : ex(x.count, `${it} count`);
  if (workgroups !== null) {
    const [lo, hi] = expr.bounds(workgroups, symbols);
    const largest = Math.max(1, hi);
    need(lo >= 0 && largest <= MAX_GRID * MAX_GRID && foldGrid(largest).every((n, k) => n === grid[k]),
      `${it}: its grid is not its workgroup count's largest value folded`);
  }
  return { patches, count: workgroups };
}

/**
 * A view of a group's result (docs/artifact.md, "dispatches"): static, in its buffer.
 * @param {Record<string, any>} t
 * @param {string} it
 * @param {BufferSpec[]} buffers
 * @returns {ViewSpec}
 */
function readView(t, it, buffers) {
  const what = `${it} result view`;
  const buffer = int(field(t, 'buffer', what), `${what} buffer`);
  need(buffer >= 0 && buffer < buffers.length, `${it}: a result view of buffer ${buffer}, which its group does not write`);
  const dtype = field(t, 'dtype', what);
  need(isModelDtype(dtype) || dtype === 'f16', `${it}: a result view of unknown dtype ${JSON.stringify(dtype)}`);
  const shape = list(field(t, 'shape', what), `${what} shape`).map((n) => int(n, `${what} shape`));
  const strides = list(field(t, 'strides', what), `${what} strides`).map((n) => int(n, `${what} strides`));
  need(shape.length === strides.length, `${what}: ${shape.length} sizes but ${strides.length} strides`);
  need(shape.length <= MAX_RANK, `${it}: a result view of ${shape.length} dimensions, over ${MAX_RANK}`);
  const offset = int(field(t, 'offset', what), `${what} offset`);
  const end = offset + (shape.some((n) => n === 0) ? 0 : 1 + shape.reduce((a, n, k) => a + (n - 1) * strides[k], 0));
  need(Math.min(offset, ...shape, ...strides) >= 0 && end * (dtype === 'f16' ? 2 : ITEMSIZE) <= buffers[buffer].size,
    `${it}: a result view reaches past its buffer`);
  return { buffer, shape, strides, offset, dtype };
}

/**
 * @param {DispatchSpec[]} dispatches
 * @param {DispatchSpec} d
 * @param {number} i
 */
function checkGroup(dispatches, d, i) {
  if (!d.follows) return;
  const lead = d.follows <= i ? dispatches[i - d.follows] : null;
  const chained = d.follows === 1 || dispatches[i - 1].follows === d.follows - 1;
  need(lead !== null && chained && !lead.follows && lead.options.length > 0 && lead.options.length === d.options.length,
    `dispatch ${i}: follows no group leader with as many options`);
}

/**
 * A group's result: on its leader only, in buffers its members write.
 * @param {DispatchSpec[]} dispatches
 * @param {KernelSpec[]} kernels
 * @param {DispatchSpec} d
 * @param {number} i
 */
function checkResult(dispatches, kernels, d, i) {
  if (!d.result.length) return;
  need(d.options.length > 0 && !d.follows, `dispatch ${i}: a result on a dispatch that leads no group`);
  const writes = new Set(group(dispatches, i).flatMap((j) => written(kernels, dispatches[j])));
  for (const t of d.result) need(writes.has(t.buffer), `dispatch ${i}: a result view of buffer ${t.buffer}, which its group does not write`);
}

/**
 * The indices of the group `leader` leads: itself, then each dispatch after it whose `follows` is 1, 2, …
 * @param {DispatchSpec[]} dispatches
 * @param {number} leader
 * @returns {number[]}
 */
export function group(dispatches, leader) {
  let last = leader;
  while (last + 1 < dispatches.length && dispatches[last + 1].follows === last + 1 - leader) last++;
  return Array.from({ length: last - leader + 1 }, (_, k) => leader + k);
}

/**
 * The buffers dispatch `d` binds read_write.
 * @param {KernelSpec[]} kernels
 * @param {DispatchSpec} d
 * @returns {number[]}
 */
export function written(kernels, d) {
  const storage = kernels[d.kernel].bindings.filter((b) => b !== 'uniform');
  return d.buffers.filter((_, j) => storage[j] === 'read_write');
}

/**
 * Whether two kernels bind alike and have the same Params layout.
 * @param {KernelSpec} a
 * @param {KernelSpec} b
 */
function sameInterface(a, b) {
  return a.bindings.join() === b.bindings.join() && JSON.stringify(a.uniform) === JSON.stringify(b.uniform);
}

/**
 * @param {unknown} w
 * @param {string} it
 * @returns {Uint32Array}
 */
function readWords(w, it) {
  const words = list(w, `${it} uniform`);
  need(words.every((v) => isInt(v) && v >= 0 && v <= 0xffffffff), `${it}: a uniform word is not a u32`);
  return Uint32Array.from(words);
}

/**
 * Three integers.
 * @param {unknown} g
 * @param {string} what
 * @returns {Grid}
 */
function triple(g, what) {
  need(Array.isArray(g) && g.length === 3, `${what} ${String(JSON.stringify(g)).slice(0, 60)} is not [x, y, z]`);
  return /** @type {Grid} */ (g.map((n) => int(n, what)));
}

/**
 * @param {unknown} g
 * @param {string} it
 * @returns {Grid}
 */
function readGrid(g, it) {
  const grid = triple(g, 'grid');
  need(grid.every((n) => n >= 1 && n <= MAX_GRID) && grid[0] * grid[1] * grid[2] <= MAX_WORKGROUPS, `${it}: bad grid ${JSON.stringify(grid)}`);
  return grid;
}

/**
 * A 1-D count of workgroups as an (x, y, 1) grid (docs/artifact.md, `count`); kernels number workgroups
 * x-fastest and those past the count exit at once.
 * @param {number} n
 * @returns {Grid}
 */
export function foldGrid(n) {
  if (n <= MAX_GRID) return [n, 1, 1];
  const y = Math.ceil(n / MAX_GRID);
  return [Math.ceil(n / y), y, 1];
}

