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

import { openDevice } from '../src/index.js';
import { ORT_DIST, loadOrt } from './ort_node.js';
import { compare } from './side_by_side.js';

const args = process.argv.slice(2);
/** @param {string} flag @param {string} fallback */
const option = (flag, fallback) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : fallback);
const folder = args[0];
if (!folder || folder.startsWith('--')) throw new Error('usage: node bench/side_by_side_node.js FOLDER [--calls N] [--ort DIST]');

const { ort, adapter, version } = await loadOrt(resolve(option('--ort', ORT_DIST)));
const { device } = await openDevice({ engine: 'dawn' }); // from the instance loadOrt put on navigator.gpu
console.log(`${adapter} (Dawn for Node); onnxruntime-web ${version}`);

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
