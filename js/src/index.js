// webgpu_torch for JavaScript: run a compiled `.wgpt` program on WebGPU in Node (Dawn) and browsers.

export { load, Program } from './program.js';
export { CausalLM, greedy, loadCausalLM, loadSeq2Seq, Seq2Seq } from './generation.js';
export { DeviceTensor } from './device_tensor.js';
export { parse } from './artifact.js';
export { openDevice, requestAdapter } from './device.js';
export { gpuTime, dispatchTimes } from './timing.js';
export { ArtifactError, DeviceError, DeviceIndexError, InputError, InputTypeError, WebGPUTorchError } from './errors.js';
