// side_by_side.js in Node: ours and onnxruntime-web's WebGPU build on Dawn for Node (the `webgpu` package),
// for a machine without a browser (the H200 machine: device.sh side-by-side). ORT finds WebGPU through
// `navigator.gpu`, which Node lacks: it gets the Dawn instance our runtime opens its device from.
//
//   node bench/side_by_side_node.js FOLDER [--calls N] [--ort DIST]
//
// FOLDER: what `webgpu-torch bench browser --prepare-only --folder FOLDER` wrote. DIST: onnxruntime-web's
// dist folder (default bench/ort/node_modules/onnxruntime-web/dist).

import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { create, globals } from 'webgpu';

import { openDevice } from '../src/index.js';
import { compare } from './side_by_side.js';

const args = process.argv.slice(2);
/** @param {string} flag @param {string} fallback */
const option = (flag, fallback) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : fallback);
const folder = args[0];
if (!folder || folder.startsWith('--')) throw new Error('usage: node bench/side_by_side_node.js FOLDER [--calls N] [--ort DIST]');
const dist = resolve(option('--ort', join(fileURLToPath(new URL('.', import.meta.url)), 'ort', 'node_modules', 'onnxruntime-web', 'dist')));

Object.assign(globalThis, globals);
const gpu = create([]);
/** @type {any} */ (globalThis).navigator ??= {};
/** @type {any} */ (globalThis).navigator.gpu = gpu;
const { device } = await openDevice({ engine: 'dawn' });
// ORT's wasm memory is shared (its threaded build), and Dawn for Node refuses a write from a view of a
// SharedArrayBuffer ("Invalid argument"): such writes go through a copy.
const queue = Object.getPrototypeOf(device.queue);
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
const ort = await import(pathToFileURL(join(dist, 'ort.webgpu.min.mjs')).href);
ort.env.wasm.numThreads = 1;
ort.env.webgpu.adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
ort.env.wasm.wasmPaths = pathToFileURL(dist + '/').href;
const info = device.adapterInfo ?? {};
const adapter = [info.vendor, info.architecture, info.description].filter(Boolean).join(' ');
console.log(`${adapter} (Dawn for Node); onnxruntime-web ${ort.env.versions?.web}`);

const manifest = JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8'));
const rows = await compare(manifest, {
  read: async (name) => new Uint8Array(await readFile(join(folder, name))),
  ort, device, options: { engine: 'dawn', cache: false }, calls: Number(option('--calls', '20')), log: console.log,
});
console.log('| model | per | ours ms | ORT ms | ours vs ORT | outputs agree |\n|---|---|---|---|---|---|');
for (const r of rows) {
  if ('error' in r) {
    console.log(`| ${r.name} | failed: ${r.error} |`);
    continue;
  }
  const agree = r.unit === 'call' ? `${r.agree.toExponential(1)} rel` : `${r.agree} of ${/** @type {any} */ (r).ids.ours.length} tokens`;
  console.log(`| ${r.name} | ${r.unit} | ${r.ours.toFixed(3)} | ${r.ort.toFixed(3)} | ${(r.ort / r.ours).toFixed(2)}× | ${agree} |`);
}
process.exit(0); // Dawn's instance keeps the event loop alive
