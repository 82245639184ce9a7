// Opening a WebGPU device: `navigator.gpu` in a browser, Dawn (the `webgpu` package) in Node. One device
// per adapter preference is shared by every program loaded without an explicit device, so device tensors
// pass between them. The device gets the optional features we use and the adapter's own limits (WebGPU's
// defaults cap a binding at 128 MiB and a shader stage at 8 storage buffers). A compatibility-mode adapter
// (`featureLevel: "compatibility"`: WebGPU over OpenGL ES or D3D11) defaults to still lower limits (4 storage
// buffers per stage, 128 invocations per workgroup), so requesting its own limits matters more there.

import { DeviceError } from './errors.js';
import { isNode } from './env.js';
import { adapterInfo } from './fit.js';

/** Optional WebGPU features a program may use. */
export const OPTIONAL_FEATURES = ['timestamp-query', 'shader-f16', 'subgroups'];

/**
 * @typedef {object} Gpu
 * @property {GPUDevice} device
 * @property {string} engine the WebGPU implementation: "dawn" (Node, Chromium), "wgpu" (Firefox), "webkit"
 * @property {string} key the adapter and engine, for the tuning cache
 * @property {import('./fit.js').AdapterInfo} adapter what fitting, tuning and the memory cap read (fit.adapterKind)
 */

/** @type {Map<string, Promise<Gpu>>} */
const shared = new Map();

/** Dawn's instance for Node, held for the process: its devices use it, and collecting it crashes them. */
/** @type {GPU | undefined} */
let dawnInstance;

let runtimeName = isNode ? `node ${process.versions.node}` : /** @type {any} */ (globalThis).navigator?.userAgent ?? '';

/**
 * @typedef {object} DeviceOptions
 * @property {GPUDevice} [device] run on this device (its features and limits are what it was opened with)
 * @property {GPUPowerPreference} [powerPreference] the adapter to ask for (default "high-performance")
 * @property {string} [engine] the engine name that picks a kernel's `engine_sources` (default: detected)
 * @property {'core' | 'compatibility'} [featureLevel] the adapter's feature level (default "core");
 *   "compatibility" reaches adapters that only support WebGPU's compatibility mode
 */

/**
 * The device for `options`: the one given, or the shared one for its adapter preference.
 * @param {DeviceOptions} options
 * @returns {Promise<Gpu>}
 */
export async function openDevice(options = {}) {
  if (options.device) {
    const info = options.device.adapterInfo;
    const engine = options.engine ?? detectEngine();
    return { device: options.device, engine, key: deviceKey(engine, info), adapter: adapterInfo(info) };
  }
  const preference = options.powerPreference ?? 'high-performance';
  const level = options.featureLevel ?? 'core';
  const id = `${preference}/${level}/${options.engine ?? ''}`;
  let gpu = shared.get(id);
  if (!gpu) {
    gpu = open(preference, level, options.engine);
    shared.set(id, gpu);
    const forget = () => shared.delete(id); // a later call opens a new device
    gpu.then((g) => g.device.lost.then(forget), forget); // a failure is reported to this caller
  }
  return gpu;
}

/**
 * @param {GPUPowerPreference} preference
 * @param {'core' | 'compatibility'} featureLevel
 * @param {string | undefined} engine
 * @returns {Promise<Gpu>}
 */
async function open(preference, featureLevel, engine) {
  const gpu = await navigatorGpu();
  const adapter = await gpu.requestAdapter({ powerPreference: preference, featureLevel });
  if (!adapter) {
    throw new DeviceError('No WebGPU adapter was found' + (isNode
      ? ': Dawn needs a Vulkan driver; on a machine without a GPU install lavapipe (Mesa >= 25, `scripts/setup` does it)'
      : ': this browser has WebGPU but no adapter (is hardware acceleration off?)'));
  }
  const requiredFeatures = /** @type {GPUFeatureName[]} */ (OPTIONAL_FEATURES.filter((f) => adapter.features.has(f)));
  /** @type {Record<string, number>} */
  const requiredLimits = {};
  for (const name in adapter.limits) { // every limit the adapter offers, except dynamic offsets (unused)
    const value = /** @type {any} */ (adapter.limits)[name];
    if (typeof value === 'number' && /^(max|min)/.test(name) && !name.startsWith('maxDynamic')) requiredLimits[name] = value;
  }
  let device;
  try {
    device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
  } catch (e) {
    throw new DeviceError(`the WebGPU adapter refused a device: ${/** @type {Error} */ (e).message}`);
  }
  const name = engine ?? detectEngine();
  const key = deviceKey(name, adapter.info) + (featureLevel === 'core' ? '' : ` | ${featureLevel}`);
  return { device, engine: name, key, adapter: adapterInfo(adapter.info) };
}

/**
 * An adapter from `navigator.gpu`, or in Node from Dawn (for a device of one's own, to pass as `device`).
 * @param {GPURequestAdapterOptions} [options]
 * @returns {Promise<GPUAdapter>}
 */
export async function requestAdapter(options = { powerPreference: 'high-performance' }) {
  const adapter = await (await navigatorGpu()).requestAdapter(options);
  if (!adapter) throw new DeviceError('No WebGPU adapter was found');
  return adapter;
}

/** @returns {Promise<GPU>} */
async function navigatorGpu() {
  const nav = /** @type {any} */ (globalThis).navigator;
  if (nav?.gpu) return nav.gpu;
  if (!isNode) throw new DeviceError('this browser has no WebGPU (navigator.gpu is undefined; it needs a secure context)');
  let dawn;
  try {
    dawn = await import('webgpu');
  } catch (e) {
    throw new DeviceError(`the \`webgpu\` package (Dawn for Node) does not load: ${/** @type {Error} */ (e).message}; install it beside this package (npm install webgpu)`);
  }
  if (!(/** @type {any} */ (globalThis).GPUBufferUsage)) Object.assign(globalThis, dawn.globals);
  const { createRequire } = await import('node:module');
  runtimeName += `, webgpu ${createRequire(import.meta.url)('webgpu/package.json').version}`;
  dawnInstance ??= dawn.create([]);
  return dawnInstance;
}

/** @returns {string} */
function detectEngine() {
  if (isNode) return 'dawn';
  const agent = /** @type {any} */ (globalThis).navigator?.userAgent ?? '';
  if (/Firefox\//.test(agent)) return 'wgpu';
  if (/Chrom(e|ium)\/|Edg\//.test(agent)) return 'dawn';
  return 'webkit';
}

/**
 * @param {string} engine
 * @param {GPUAdapterInfo | undefined} info
 */
function deviceKey(engine, info) {
  return [engine, runtimeName, info?.vendor ?? '', info?.architecture ?? '', info?.device ?? '', info?.description ?? ''].join(' | ');
}
