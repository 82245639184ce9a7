// Fitting a program to its device (docs/artifact.md, Portability and Float16): which kind of adapter it is,
// the program as the device runs it, and what it cannot hold. tests/conformance/device_fit.json holds the
// decisions as vectors, which src/webgpu_torch/runtime/fit.py (this module's twin) replays too.
//
// A program's `requires` (what its dispatches as written need) must be features the device has; a kernel that
// only appears as an option may need anything, known to this runtime or not: tuning skips an option whose
// kernel `runsOn` says no to (a feature the device lacks, a workgroup past its limits). Where the device lacks
// shader-f16, every dispatch and option that names a kernel with a float32 `fallback` runs that instead, over
// float32 copies of the float16 constants (exact: each buffer twice the constant's bytes, marked `widen` for
// upload.js to widen as the data streams in), its float16 activations stored as float32. Strides and
// offsets count elements, so views and uniforms are unchanged (a group's result views of float16 activations
// become float32 views). The fitted program must then be within the device's limits and the memory cap
// (`limitProblem`), checked before anything is allocated.

import { DeviceError } from './errors.js';
import { LIMITS } from './limits.js';

/** @typedef {import('./artifact.js').KernelSpec} KernelSpec */
/** @typedef {import('./artifact.js').ProgramSpec} ProgramSpec */
/** @typedef {import('./artifact.js').Constant} Constant */
/** @typedef {import('./memory.js').Cap} Cap */
/** @typedef {typeof LIMITS.webgpu_limits} Limits the device limits fitting reads (WebGPU's names) */
/** @typedef {{adapter_type?: string, is_fallback_adapter?: boolean, architecture?: string}} AdapterInfo */

/** The kind of adapter whose invocations run on CPU threads (a kernel's `targets`, the memory cap). */
export const CPU = 'cpu';
/** WebGPU's defaults, which every adapter offers: what a limit the device does not report allows. */
const DEFAULT_LIMITS = LIMITS.webgpu_limits;

/**
 * "cpu" for an adapter whose invocations run on CPU threads (SwiftShader, lavapipe, WARP): Dawn and wgpu-native
 * say so in `adapter_type`, browsers and Dawn for Node by `is_fallback_adapter` (`isFallbackAdapter`) or an
 * `architecture` of "software"; else "gpu". Tuning (which kernels it times first) and the memory cap (a CPU
 * adapter's memory is the host's) both ask this.
 * @param {AdapterInfo} info
 */
export function adapterKind(info) {
  const cpu = String(info.adapter_type ?? '').toLowerCase() === CPU || info.is_fallback_adapter === true;
  return cpu || info.architecture === 'software' ? CPU : 'gpu';
}

/**
 * What fitting reads of a WebGPU adapter's info, in the names adapterKind takes.
 * @param {GPUAdapterInfo | undefined} info
 * @returns {AdapterInfo}
 */
export function adapterInfo(info) {
  return { is_fallback_adapter: /** @type {any} */ (info)?.isFallbackAdapter === true, architecture: info?.architecture ?? '' };
}

/**
 * `spec` as a device with `features` runs it; DeviceError when its dispatches need a feature the device lacks.
 * @param {ProgramSpec} spec
 * @param {Set<string>} features
 * @returns {ProgramSpec}
 */
export function forDevice(spec, features) {
  const lacking = spec.requires.filter((f) => !features.has(f));
  if (lacking.length) {
    throw new DeviceError(`the program needs the ${lacking.join(', ')} feature${lacking.length > 1 ? 's' : ''}, which this ` +
      'device lacks (its dispatches were saved with such a kernel chosen; compile it without forcing one)');
  }
  if (features.has('shader-f16')) return spec;
  /** @param {number} k */
  const swap = (k) => spec.kernels[k].fallback ?? k;
  const dispatches = spec.dispatches.map((d) => ({
    ...d, kernel: swap(d.kernel), options: d.options.map((o) => ({ ...o, kernel: swap(o.kernel) })),
    result: d.result.map((t) => (t.dtype === 'f16' ? { ...t, dtype: /** @type {const} */ ('float32') } : t)),
  }));
  /** @type {Map<number, Constant>} */
  const constants = new Map([...spec.constants].map(([i, c]) => [i, c.dtype === 'f16' ? { ...c, widen: true } : c]));
  const buffers = spec.buffers.map((b, i) => (spec.constants.get(i)?.dtype === 'f16' ?
    { ...b, size: Math.max(4, 2 * /** @type {Constant} */ (spec.constants.get(i)).nbytes) } : b));
  return { ...spec, dispatches, constants, buffers };
}

/**
 * The bytes a buffer of `size` takes on the device: a multiple of 16 (kernels may bind any as vec4s).
 * @param {number} size
 */
export function allocated(size) {
  return Math.ceil(size / 16) * 16;
}

/** @param {number} n */
const count = (n) => n.toLocaleString('en');

/**
 * Why a device with `limits` (WebGPU's defaults where absent) and the memory cap `cap` (memory.js) cannot
 * hold `spec` as fitted, or null: every buffer within one binding and one buffer, all of them but those
 * `shared` with a program already loaded within the cap, and each kernel a dispatch runs within a shader
 * stage's storage bindings, uniform size and workgroup limits.
 * @param {ProgramSpec} spec
 * @param {Partial<Limits>} limits
 * @param {Cap} cap
 * @param {Set<number>} [shared] buffer indices
 * @returns {string | null}
 */
export function limitProblem(spec, limits, cap, shared = new Set()) {
  const lim = withDefaults(limits);
  const binding = lim.maxStorageBufferBindingSize;
  const largest = lim.maxBufferSize;
  for (const [i, b] of spec.buffers.entries()) {
    if (allocated(b.size) > Math.min(binding, largest)) {
      const what = `${b.role} buffer ${i}` + (b.name ? ` (${b.name})` : '');
      return `${what} needs ${count(allocated(b.size))} bytes; this adapter binds at most ${count(binding)} ` +
        `(maxStorageBufferBindingSize; maxBufferSize ${count(largest)})`;
    }
  }
  const total = spec.buffers.reduce((n, b, i) => n + (shared.has(i) ? 0 : allocated(b.size)), 0);
  if (total > cap.bytes) {
    return `the program needs ${(total / 2 ** 30).toFixed(2)} GiB of buffers, over the ` +
      `${(cap.bytes / 2 ** 30).toFixed(2)} GiB this process allows: ${cap.why}`;
  }
  const storage = lim.maxStorageBuffersPerShaderStage;
  const uniform = lim.maxUniformBufferBindingSize;
  for (const index of [...new Set(spec.dispatches.map((d) => d.kernel))].sort((a, b) => a - b)) {
    const k = spec.kernels[index];
    const bound = k.bindings.filter((b) => b !== 'uniform').length;
    if (bound > storage) {
      return `kernel ${k.name} binds ${bound} storage buffers; this adapter allows ${storage} per shader stage ` +
        '(maxStorageBuffersPerShaderStage)';
    }
    if (k.uniform && k.uniform.size > uniform) {
      return `kernel ${k.name}: its ${k.uniform.size}-byte Params exceed this adapter's ${uniform}-byte uniform ` +
        'bindings (maxUniformBufferBindingSize)';
    }
    const tooLarge = workgroupProblem(k, lim);
    if (tooLarge) return `kernel ${k.name}: ${tooLarge}`;
  }
  return null;
}

/**
 * @param {Partial<Limits>} limits
 * @returns {Limits}
 */
function withDefaults(limits) {
  const lim = { ...DEFAULT_LIMITS };
  for (const name of /** @type {(keyof Limits)[]} */ (Object.keys(DEFAULT_LIMITS))) {
    if (typeof limits[name] === 'number') lim[name] = /** @type {number} */ (limits[name]);
  }
  return lim;
}

/**
 * Why a workgroup of `k` exceeds the device's `limits`, or null when it fits.
 * @param {KernelSpec} k
 * @param {Partial<Limits>} limits
 * @returns {string | null}
 */
export function workgroupProblem(k, limits) {
  const lim = withDefaults(limits);
  const [x, y, z] = k.workgroupSize;
  if (x > lim.maxComputeWorkgroupSizeX || y > lim.maxComputeWorkgroupSizeY || z > lim.maxComputeWorkgroupSizeZ ||
      x * y * z > lim.maxComputeInvocationsPerWorkgroup) {
    return `its workgroup of ${x}×${y}×${z} invocations exceeds this adapter's ${lim.maxComputeWorkgroupSizeX}×` +
      `${lim.maxComputeWorkgroupSizeY}×${lim.maxComputeWorkgroupSizeZ}, ${lim.maxComputeInvocationsPerWorkgroup} in all ` +
      '(maxComputeWorkgroupSize*, maxComputeInvocationsPerWorkgroup)';
  }
  if (k.workgroupBytes > lim.maxComputeWorkgroupStorageSize) {
    return `its ${k.workgroupBytes.toLocaleString('en')} bytes of workgroup memory exceed this adapter's ` +
      `${lim.maxComputeWorkgroupStorageSize.toLocaleString('en')} (maxComputeWorkgroupStorageSize)`;
  }
  return null;
}

/**
 * Whether a device with `features` and `limits` can run `k` (as fitted by forDevice).
 * @param {KernelSpec} k
 * @param {Set<string>} features
 * @param {Partial<Limits>} limits
 */
export function runsOn(k, features, limits) {
  return k.requires.every((f) => features.has(f)) && workgroupProblem(k, limits) === null;
}

/**
 * The source a kernel compiles from on `engine` (a kernel may name one per engine).
 * @param {KernelSpec} k
 * @param {string} engine
 */
export function sourceFor(k, engine) {
  return k.engineSources[engine] ?? k.source;
}
