// What a device runs for each kernel: the source it compiles (the shader-f16 fallback where the device
// lacks the feature, else the engine's own source if the kernel names one) and the features that needs.

/** @typedef {import('./artifact.js').KernelSpec} KernelSpec */
/** @typedef {import('./artifact.js').ProgramSpec} ProgramSpec */

/**
 * @param {KernelSpec} k
 * @param {Set<string>} features the device's
 * @param {string} engine
 * @returns {number} an index into the program's sources
 */
export function sourceFor(k, features, engine) {
  if (k.fallback !== null && !features.has('shader-f16')) return k.fallback;
  return k.engineSources[engine] ?? k.source;
}

/**
 * The optional features a kernel needs on a device with `features` (none of shader-f16 where it runs its
 * fallback).
 * @param {KernelSpec} k
 * @param {Set<string>} features
 */
export function needs(k, features) {
  return k.fallback !== null && !features.has('shader-f16') ? k.requires.filter((f) => f !== 'shader-f16') : k.requires;
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
