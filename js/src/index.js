// webgpu_torch for JavaScript: run a compiled `.wgpt` program on WebGPU in Node (Dawn) and browsers.
// The declarations bring the libraries they name: Symbol.dispose, and WebGPU's types, which dom declares from
// TypeScript 6 on (ts5/index.d.ts adds them for TypeScript 5).
/// <reference lib="esnext.disposable" preserve="true" />
/// <reference lib="dom" preserve="true" />

export { dispatchTimes, gpuTime, load, Program } from './session.js';
export { CausalLM, greedy, loadCausalLM, loadSeq2Seq, Seq2Seq } from './generation.js';
export { DeviceTensor } from './device_tensor.js';
export { loadTokenizer, Tokenizer } from './tokenizer.js';
export { parse } from './artifact.js';
export { openDevice, requestAdapter } from './engine.js';
export { ArtifactError, DeviceError, DeviceIndexError, InputError, InputTypeError, WebGPUTorchError } from './errors.js';

// The public types (`import type { HostTensor } from '@webgpu-torch/runtime'`).
/** @typedef {import('./session.js').LoadOptions} LoadOptions */
/** @typedef {import('./session.js').Inputs} Inputs */
/** @typedef {import('./session.js').Outputs} Outputs */
/** @typedef {import('./session.js').DeviceOutputs} DeviceOutputs */
/** @typedef {import('./session.js').InputInfo} InputInfo */
/** @typedef {import('./session.js').OutputInfo} OutputInfo */
/** @typedef {import('./session.js').Dim} Dim */
/**
 * @template T
 * @typedef {import('./session.js').Tree<T>} Tree
 */
/** @typedef {import('./inputs.js').InputValue} InputValue */
/**
 * @template {import('./dtypes.js').ModelDtype} [D=import('./dtypes.js').ModelDtype]
 * @typedef {import('./device_tensor.js').HostTensor<D>} HostTensor
 */
/** @typedef {import('./dtypes.js').ModelDtype} ModelDtype */
/** @typedef {import('./dtypes.js').HostArray} HostArray */
/** @typedef {import('./source.js').Source} Source */
/** @typedef {import('./tokenizer.js').TextBatch} TextBatch */
/** @typedef {import('./artifact.js').ProgramSpec} ProgramSpec */
