// Fitting a program to its device (docs/artifact.md, Portability and Float16). A program's `requires` (what
// its dispatches as written need) must be features the device has; a kernel that only appears as an option
// may need anything, known to this runtime or not: tuning skips an option whose kernel `runsOn` says no to
// (a feature the device lacks, a workgroup past its limits). Where the device lacks shader-f16, every
// dispatch and option that names a kernel with a float32 `fallback` runs that instead, over float32 copies
// of the float16 constants (exact; the buffer's size doubled), its float16 activations stored as float32.
// Strides and offsets count elements, so views and uniforms are unchanged (a group's result views of float16
// activations become float32 views).

import { DeviceError } from './errors.js';

/** @typedef {import('./artifact.js').KernelSpec} KernelSpec */
/** @typedef {import('./artifact.js').ProgramSpec} ProgramSpec */
/**
 * The device limits a declared workgroup is checked against (WebGPU's names and defaults).
 * @typedef {{maxComputeWorkgroupSizeX: number, maxComputeWorkgroupSizeY: number, maxComputeWorkgroupSizeZ: number,
 *   maxComputeInvocationsPerWorkgroup: number, maxComputeWorkgroupStorageSize: number}} WorkgroupLimits
 */
const DEFAULT_LIMITS = /** @type {WorkgroupLimits} */ ({ maxComputeWorkgroupSizeX: 256, maxComputeWorkgroupSizeY: 256,
  maxComputeWorkgroupSizeZ: 64, maxComputeInvocationsPerWorkgroup: 256, maxComputeWorkgroupStorageSize: 16384 });

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
  return { ...spec, dispatches };
}

/**
 * Why a workgroup of `k` exceeds the device's `limits`, or null when it fits.
 * @param {KernelSpec} k
 * @param {Partial<WorkgroupLimits>} limits
 * @returns {string | null}
 */
export function workgroupProblem(k, limits) {
  const lim = { ...DEFAULT_LIMITS };
  for (const name of /** @type {(keyof WorkgroupLimits)[]} */ (Object.keys(DEFAULT_LIMITS))) {
    if (typeof limits[name] === 'number') lim[name] = /** @type {number} */ (limits[name]);
  }
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
 * @param {Partial<WorkgroupLimits>} limits
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

/**
 * The bytes buffer `i` takes on a device with `features`: its size rounded up to 16 (kernels may read any
 * buffer as vec4s), doubled for a float16 constant widened to float32 where the device lacks shader-f16.
 * @param {ProgramSpec} spec
 * @param {number} i
 * @param {Set<string>} features
 */
export function bufferSize(spec, i, features) {
  const widened = spec.constants.get(i)?.dtype === 'f16' && !features.has('shader-f16');
  return Math.ceil((spec.buffers[i].size * (widened ? 2 : 1)) / 16) * 16;
}
