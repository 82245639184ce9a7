// webgpu_torch for JavaScript: run a compiled `.wgpt` program on WebGPU in Node (Dawn) and browsers.
// The declarations bring the libraries they name: Symbol.dispose, and WebGPU's types, which dom declares from
// TypeScript 6 on (ts5/index.d.ts adds them for TypeScript 5).
/// <reference lib="esnext.disposable" preserve="true" />
/// <reference lib="dom" preserve="true" />

export { dispatchTimes, gpuTime, load, Program } from './session.js';
export { CausalLM, Decoder, generate, loadCausalLM, loadSeq2Seq, Seq2Seq, TextStream, textStream } from './generation.js';
export { generationOptions } from './decoding.js';
export { Chat, createChat, createChatWorker, WorkerChat } from './chat.js';
export { DeviceTensor } from './device_tensor.js';
export { loadTokenizer, Tokenizer } from './tokenizer.js';
export { parse } from './artifact.js';
export { openDevice, requestAdapter } from './engine.js';
export { ArtifactError, CallTimeout, DeviceError, DeviceIndexError, InputError, InputTypeError, WebGPUTorchError } from './errors.js';

// The public types (`import type { HostTensor } from '@webgpu-torch/runtime'`).
/** @typedef {import('./session.js').LoadOptions} LoadOptions */
/** @typedef {import('./upload.js').Progress} Progress */
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
/** @typedef {import('./generation.js').Generation} Generation */
/** @typedef {import('./generation.js').GenerateOptions} GenerateOptions */
/** @typedef {import('./generation.js').FolderOptions} FolderOptions */
/** @typedef {import('./decoding.js').GenerationOptions} GenerationOptions */
/** @typedef {import('./chat.js').ChatMessage} ChatMessage */
/** @typedef {import('./chat.js').ChatRequest} ChatRequest */
/** @typedef {import('./chat.js').ChatCompletion} ChatCompletion */
/** @typedef {import('./chat.js').ChatCompletionChunk} ChatCompletionChunk */
/** @typedef {import('./chat.js').Usage} Usage */
/** @typedef {import('./tokenizer.js').Message} Message */
