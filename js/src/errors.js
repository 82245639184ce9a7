// Errors users see, the same classes as the Python runtime's (webgpu_torch/format/errors.py). Each message is one
// line naming what is wrong and, where it can, what to do.

/** Base class of every error this package throws on purpose. */
export class WebGPUTorchError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = new.target.name;
  }
}

/** A program file is not one, is damaged, or comes from an incompatible version. */
export class ArtifactError extends WebGPUTorchError {}

/** A call's input has the wrong shape or a value the device cannot hold (int64 beyond int32). */
export class InputError extends WebGPUTorchError {}

/** A call's input has the wrong dtype, or the inputs do not have the structure the model was exported with. */
export class InputTypeError extends WebGPUTorchError {}

/** A kernel found an index out of range (an embedding id past its table, say): a device-side check failed. */
export class DeviceIndexError extends WebGPUTorchError {}

/** No usable WebGPU adapter, or the adapter cannot hold the program. */
export class DeviceError extends WebGPUTorchError {}

/** Work did not finish in time (the device may still be running it); its program refuses further calls. */
export class CallTimeout extends DeviceError {}
