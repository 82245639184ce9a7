// How much host memory loading an artifact takes, measured in a process of its own (test/memory.test.js):
//
//   node --expose-gc testkit/memory_child.js PATH    prints {"baseline", "peak", "device", "arrayBuffers", "outputs"}
//
// `baseline`: the resident set once the runtime is warm (the device open, a small program loaded, run and
// destroyed: Dawn's and the shader compiler's own memory), after a garbage collection; `peak`: the most it
// reached while PATH loaded (Linux's VmHWM, reset to the baseline just before: /proc/self/clear_refs);
// `device`: the bytes of the program's buffers, which a CPU adapter (lavapipe) keeps in this process's memory
// too; `arrayBuffers`: the most JavaScript's ArrayBuffers held, sampled every 5 ms; `outputs`: a call's.

import { readFileSync, writeFileSync } from 'node:fs';

import { load } from '../src/index.js';
import { affine } from './programs.js';

/** @param {string} field a /proc/self/status line, in kB there */
const bytes = (field) => 1024 * Number(readFileSync('/proc/self/status', 'utf8').match(new RegExp(`${field}:\\s+(\\d+)`))?.[1]);

const warm = await load(affine(), { tune: false });
await warm.run([{ data: new Float32Array(15), shape: [5, 3] }]);
warm.destroy();
/** @type {() => void} */ (globalThis.gc)();
writeFileSync('/proc/self/clear_refs', '5'); // VmHWM := VmRSS
const baseline = bytes('VmRSS');
let arrayBuffers = 0;
const sample = () => { arrayBuffers = Math.max(arrayBuffers, process.memoryUsage().arrayBuffers); };
const timer = setInterval(sample, 5);
const program = await load(process.argv[2], { tune: false });
clearInterval(timer);
sample();
const peak = bytes('VmHWM');
const device = program.executor.buffers.reduce((a, b) => a + b.size, 0);
const outputs = /** @type {{data: Float32Array}[]} */ (await program.run([])).map((t) => Array.from(t.data));
program.destroy();
console.log(JSON.stringify({ baseline, peak, device, arrayBuffers, outputs }));
