// Fitting a program to its device (docs/artifact.md, Float16): where the device lacks shader-f16, every
// dispatch and option that names a kernel needing it runs that kernel's float32 `fallback` instead, over
// float32 copies of the float16 constants (exact; the buffer's size doubled). Strides and offsets count
// elements, so views and uniforms are unchanged. Kernels needing `subgroups` are only ever options, which
// tuning skips on a device without them.

/** @typedef {import('./artifact.js').KernelSpec} KernelSpec */
/** @typedef {import('./artifact.js').ProgramSpec} ProgramSpec */

/**
 * `spec` as a device with `features` runs it.
 * @param {ProgramSpec} spec
 * @param {Set<string>} features
 * @returns {ProgramSpec}
 */
export function forDevice(spec, features) {
  if (features.has('shader-f16')) return spec;
  /** @param {number} k */
  const swap = (k) => {
    const kernel = spec.kernels[k];
    return kernel.fallback ?? k; // a matrix-unit option has none: tuning skips it on this device
  };
  const dispatches = spec.dispatches.map((d) => ({
    ...d, kernel: swap(d.kernel), options: d.options.map((o) => ({ ...o, kernel: swap(o.kernel) })),
  }));
  return { ...spec, dispatches };
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
