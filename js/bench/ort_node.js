// onnxruntime-web's WebGPU build in Node, on Dawn for Node (the `webgpu` package): for the bench scripts that
// run ORT without a browser (side_by_side_node.js, llm_ort.js). ORT finds WebGPU through `navigator.gpu`,
// which Node lacks: it gets this Dawn instance, and the adapter it opens its own device from.

import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { create, globals } from 'webgpu';

/** onnxruntime-web's dist folder as js/bench/ort's `npm ci` installs it. */
export const ORT_DIST = join(fileURLToPath(new URL('.', import.meta.url)), 'ort', 'node_modules', 'onnxruntime-web', 'dist');

/**
 * ORT's wasm memory is shared (its threaded build), and Dawn for Node refuses a write from a view of a
 * SharedArrayBuffer ("Invalid argument"): every queue's such writes go through a copy.
 */
function copySharedWrites() {
  const queue = /** @type {any} */ (globals).GPUQueue.prototype;
  const writeBuffer = queue.writeBuffer;
  queue.writeBuffer = function (/** @type {any[]} */ ...a) {
    const data = a[2];
    if (ArrayBuffer.isView(data) && data.buffer instanceof SharedArrayBuffer) {
      const [offset = 0, size] = [a[3], a[4]];
      const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      const unit = /** @type {any} */ (data).BYTES_PER_ELEMENT ?? 1;
      a[2] = bytes.slice(offset * unit, size === undefined ? undefined : (offset + size) * unit);
      a.length = 3;
    }
    return writeBuffer.apply(this, a);
  };
}

/**
 * ORT's WebGPU build loaded from `dist` on one wasm thread, its adapter Dawn's high-performance one: the module,
 * the Dawn instance (for our side's device, where a script has one) and the adapter's name.
 * @param {string} dist
 */
export async function loadOrt(dist = ORT_DIST) {
  Object.assign(globalThis, globals);
  const gpu = create([]);
  /** @type {any} */ (globalThis).navigator ??= {};
  /** @type {any} */ (globalThis).navigator.gpu = gpu;
  copySharedWrites();
  const ort = await import(pathToFileURL(join(dist, 'ort.webgpu.min.mjs')).href);
  ort.env.wasm.numThreads = 1;
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) throw new Error('Dawn for Node found no WebGPU adapter');
  ort.env.webgpu.adapter = adapter;
  ort.env.wasm.wasmPaths = pathToFileURL(dist + '/').href;
  const info = adapter.info ?? {};
  const name = [info.vendor, info.architecture, info.description].filter(Boolean).join(' ');
  return { ort, gpu, adapter: name, version: /** @type {string} */ (ort.env.versions?.web) };
}
