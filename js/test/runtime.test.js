// The runtime on small programs written by hand (helpers/programs.js): dynamic sizes, strided outputs,
// int64 and bool, float16 with and without shader-f16, tuning and its cache, device tensors between
// programs, and the errors a call or a device raises.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { freemem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { LIMITS } from '../src/limits.js';

import { DeviceError, DeviceIndexError, DeviceTensor, InputError, InputTypeError, load, openDevice, requestAdapter } from '../src/index.js';
import { memoryCap } from '../src/memory.js';
import { adapterKind } from '../src/fit.js';
import { artifact, container, splitArtifact } from '../testkit/build.js';
import { GOLDEN } from '../testkit/io.js';
import { TABLE, W, affine, grouped, ints, lookup } from '../testkit/programs.js';

// 2^32 barriers per workgroup: a loop that ends in hours, which no compiler drops or refuses (tests/fuzz.py's SPIN).
const SPIN = ' var spin = 0u; loop { workgroupBarrier(); spin += 1u; if spin == 0u { break; } } ';

/**
 * @template {import('../src/index.js').ModelDtype} [D=import('../src/index.js').ModelDtype]
 * @typedef {import('../src/index.js').HostTensor<D>} HostTensor
 */

/** x·w + 1 row by row, as the affine programs compute it (in float32). */
function affineRef(/** @type {Float32Array} */ x) {
  return Float32Array.from(x, (v, i) => Math.fround(Math.fround(v * W[i % 3]) + 1));
}

/** @param {number} rows */
const rowsOf = (rows) => Float32Array.from({ length: 3 * rows }, (_, i) => ((i * 7919) % 113) / 17 - 3);

test('dynamic sizes: patched uniforms, counted grids and strided views, at changing and repeated sizes', async () => {
  const program = await load(affine(), { tune: false });
  program.executor.poisonScratch = true;
  for (const rows of [5, 29, 300, 1, 29, 29]) {
    const x = rowsOf(rows);
    const [y, t] = /** @type {HostTensor<'float32'>[]} */ (await program.run([{ data: x, shape: [rows, 3] }]));
    assert.deepEqual(y.shape, [rows, 3]);
    assert.deepEqual(Array.from(y.data), Array.from(affineRef(x)));
    assert.deepEqual(t.shape, [3, rows]);
    for (let i = 0; i < rows; i++) for (let j = 0; j < 3; j++) assert.equal(t.data[j * rows + i], y.data[i * 3 + j]);
  }
  program.destroy();
});

test('a count past 65,535 workgroups is folded into two grid dimensions', async () => {
  const rows = 40000; // 120,000 workgroups of one thread: a [60000, 2, 1] grid
  const program = await load(affine({ wg: 1, hi: rows }), { tune: false });
  const x = rowsOf(rows);
  const [y] = /** @type {HostTensor<'float32'>[]} */ (await program.run([{ data: x, shape: [rows, 3] }]));
  assert.deepEqual(Array.from(y.data), Array.from(affineRef(x)));
  program.destroy();
});

test('int64 and bool inputs and outputs, a keyword argument, a constant in the outputs', async () => {
  const program = await load(ints(), { tune: false });
  const ids = BigInt64Array.from([1n, 2n, 3n, 4n, -5n, 6n, -(2n ** 31n)]);
  const flags = Uint8Array.from([1, 1, 1, 0, 1, 1, 1]);
  const out = /** @type {Record<string, any>} */ (await program.run({ args: [ids], kwargs: { flags } }));
  assert.equal(out.mode, 'fast');
  assert.deepEqual(out.twice.data, BigInt64Array.from(ids, (v) => BigInt.asIntN(32, 2n * v)));
  assert.equal(out.twice.dtype, 'int64');
  assert.deepEqual(out.big, { data: Uint8Array.from([0, 0, 1, 0, 0, 1, 0]), shape: [7], dtype: 'bool' });
  // Other integer arrays are int64's kind too; a const keyword may be given as exported.
  const again = /** @type {Record<string, HostTensor>} */ (await program.run({ args: [Int32Array.from(ids, (v) => Number(v))], kwargs: { flags, mode: 'fast' } }));
  assert.deepEqual(again.twice.data, out.twice.data);
  await assert.rejects(program.run({ args: [BigInt64Array.from([1n, 2n, 3n, 4n, 5n, 6n, 2n ** 31n])], kwargs: { flags } }),
    (e) => e instanceof InputError && e.message === "input 'ids': int64 values must fit in int32 on WebGPU (which has no 64-bit integers); range is [1, 2147483648]");
  await assert.rejects(program.run({ args: [ids], kwargs: { flags, mode: 'slow' } }),
    (e) => e instanceof InputError && e.message.startsWith("input[1]['mode']: the program was exported with \"fast\" here"));
  program.destroy();
});

test('float16 constants: as written with shader-f16, widened for the fallback kernel without it', async () => {
  const x = rowsOf(7);
  const want = affineRef(x); // the weights are exact in float16
  for (const disableFeatures of [[], ['shader-f16']]) {
    const program = await load(affine({ dtype: 'f16' }), { tune: false, disableFeatures });
    const used = program.spec.kernels[program.spec.dispatches[0].kernel].name;
    assert.equal(used, disableFeatures.length ? 'affine[f16 widened]' : 'affine[f16]');
    const [y] = /** @type {HostTensor<'float32'>[]} */ (await program.run([{ data: x, shape: [7, 3] }]));
    assert.deepEqual(Array.from(y.data), Array.from(want));
    program.destroy();
  }
});

test('tuning times a group as a whole, skips candidates the device cannot run, and caches its choice', async () => {
  const cache = join(mkdtempSync(join(tmpdir(), 'wgpt-')), 'tuning.json');
  const x = Float32Array.from({ length: 37 }, (_, i) => i - 18);
  const want = Array.from(x, (v) => Math.fround(Math.fround(v * 2) + 1) + v);
  const first = await load(grouped(), { tune: true, cache, disableFeatures: ['subgroups'] });
  const [lead, follower] = first.spec.dispatches.map((d) => d.kernel);
  assert.ok([0, 1].includes(lead), 'the subgroups option is not chosen without subgroups');
  assert.equal(follower, lead + 3, 'the follower takes the leader\'s option');
  assert.deepEqual(Array.from(/** @type {HostTensor<'float32'>} */ (await first.run([x])).data), want);
  const saved = JSON.parse(readFileSync(cache, 'utf8'));
  const [device] = Object.keys(saved);
  const [key] = Object.keys(saved[device]);
  // A later load reads the cache: make it say option 1 and it runs option 1 without timing.
  saved[device][key] = 1;
  writeFileSync(cache, JSON.stringify(saved));
  const second = await load(grouped(), { tune: true, cache, disableFeatures: ['subgroups'] });
  assert.deepEqual(second.spec.dispatches.map((d) => d.kernel), [1, 4]);
  const fresh = join(mkdtempSync(join(tmpdir(), 'wgpt-')), 'tuning.json');
  const unspent = await load(grouped(), { tune: true, cache: fresh, tuneBudget: 0 });
  assert.deepEqual(unspent.spec.dispatches.map((d) => d.kernel), [0, 3], 'no budget: the defaults, timed at a later load');
  assert.ok(!existsSync(fresh));
  unspent.destroy();
  const untuned = await load(grouped(), { tune: false });
  assert.deepEqual(untuned.spec.dispatches.map((d) => d.kernel), [0, 3]);
  for (const p of [first, second, untuned]) p.destroy();
});

test('tuning leaves out, with a warning, an option that computes other numbers than the default', async () => {
  const cache = join(mkdtempSync(join(tmpdir(), 'wgpt-')), 'tuning.json');
  const x = Float32Array.from({ length: 37 }, (_, i) => i - 18);
  const want = Array.from(x, (v) => Math.fround(Math.fround(v * 2) + 1) + v);
  const warnings = /** @type {string[]} */ ([]);
  const warn = console.warn;
  console.warn = (/** @type {string} */ m) => warnings.push(m);
  try {
    const program = await load(grouped(37, 1.5), { tune: true, cache, tuneTop: 0, disableFeatures: ['subgroups'] });
    assert.notEqual(program.spec.dispatches[0].kernel, 1);
    assert.deepEqual(Array.from(/** @type {HostTensor<'float32'>} */ (await program.run([x])).data), want);
    program.destroy();
  } finally {
    console.warn = warn;
  }
  assert.deepEqual(warnings.filter((m) => m.includes('affine32')).length, 1, warnings.join('\n'));
  assert.match(warnings.join('\n'), /tuning leaves out kernel affine32 for node affine: its result differs from the default's: off by up to 0\.5/);
});

test('tuning leaves out an option that writes nothing: its group\'s shared buffers are zeroed before it runs', async () => {
  const cache = join(mkdtempSync(join(tmpdir(), 'wgpt-')), 'tuning.json');
  const x = Float32Array.from({ length: 37 }, (_, i) => i - 18);
  const warnings = /** @type {string[]} */ ([]);
  const warn = console.warn;
  console.warn = (/** @type {string} */ m) => warnings.push(m);
  try {
    const program = await load(grouped(37, 1, 0), { tune: true, cache, tuneTop: 0, disableFeatures: ['subgroups'] });
    assert.notEqual(program.spec.dispatches[0].kernel, 1);
    assert.deepEqual(Array.from(/** @type {HostTensor<'float32'>} */ (await program.run([x])).data),
      Array.from(x, (v) => Math.fround(Math.fround(v * 2) + 1) + v));
    program.destroy();
  } finally {
    console.warn = warn;
  }
  assert.match(warnings.join('\n'), /tuning leaves out kernel affine32 for node affine: its result differs from the default's/);
});

test("onnxruntime-web's habits: inputs by name, dynamic ranges shown, a GPUBuffer of one's own as an input, dispose", async () => {
  const program = await load(affine({ hi: 300 }), { tune: false });
  assert.deepEqual(program.inputNames, ['x']);
  assert.deepEqual(program.inputs, [{ name: 'x', dtype: 'float32', shape: [{ name: 's0', min: 1, max: 300 }, 3] }]);
  assert.deepEqual(program.outputs, [{ dtype: 'float32', shape: [{ name: 's0', min: 1, max: 300 }, 3] },
    { dtype: 'float32', shape: [3, { name: 's0', min: 1, max: 300 }] }]);
  const x = rowsOf(13);
  const [y] = /** @type {HostTensor<'float32'>[]} */ (await program.run({ x: { data: x, shape: [13, 3] } }));
  assert.deepEqual(Array.from(y.data), Array.from(affineRef(x)));

  const ints_ = await load(ints(), { tune: false }); // by name, the constant keyword argument left out
  const ids = BigInt64Array.from([1n, 2n, 3n, 4n, -5n, 6n, 7n]);
  const flags = Uint8Array.from([1, 0, 1, 0, 1, 0, 1]);
  const named = /** @type {Record<string, any>} */ (await ints_.run({ flags, ids }));
  const structured = /** @type {Record<string, any>} */ (await ints_.run({ args: [ids], kwargs: { flags } }));
  assert.deepEqual(named, structured);
  await assert.rejects(ints_.run({ ids }), (e) => e instanceof InputError &&
    e.message === "missing input 'flags' (a call by name passes every input: ids, flags)");
  ints_[Symbol.dispose]();
  await assert.rejects(ints_.run({ flags, ids }), (e) => e instanceof DeviceError && /destroyed/.test(e.message));

  // A GPUBuffer the caller owns, in device form, wrapped as an input tensor and read in place.
  const { device } = program;
  const own = device.createBuffer({ size: x.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(own, 0, x);
  const wrapped = DeviceTensor.fromGpuBuffer(own, { device, dtype: 'float32', shape: [13, 3] });
  assert.deepEqual(Array.from(/** @type {HostTensor<'float32'>} */ (await wrapped.read()).data), Array.from(x));
  const [z] = /** @type {HostTensor<'float32'>[]} */ (await program.run({ x: wrapped }));
  assert.deepEqual(Array.from(z.data), Array.from(affineRef(x)));
  wrapped[Symbol.dispose](); // marks it released; the buffer stays the caller's
  assert.ok(wrapped.released);
  await assert.rejects(program.run([wrapped]), (e) => e instanceof InputError && /released/.test(e.message));
  device.queue.writeBuffer(own, 0, x); // still alive
  assert.throws(() => DeviceTensor.fromGpuBuffer(own, { device, dtype: 'float32', shape: [14, 3] }),
    (e) => e instanceof InputError && e.message === 'fromGpuBuffer: a buffer of 156 bytes cannot hold float32[14, 3] (168 bytes)');
  const mapped = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  assert.throws(() => DeviceTensor.fromGpuBuffer(mapped, { device, dtype: 'int64', shape: [2] }), /COPY_SRC/);
  for (const b of [own, mapped]) b.destroy();

  // Symbol.dispose on what holds GPU memory: device tensors and programs (`using` in code that has it).
  const [kept] = /** @type {DeviceTensor[]} */ (await program.runOnDevice([{ data: x, shape: [13, 3] }]));
  kept[Symbol.dispose]();
  assert.ok(kept.released);
  kept.destroy(); // twice is harmless
  program[Symbol.dispose]();
  await assert.rejects(program.run([{ data: x, shape: [13, 3] }]), (e) => e instanceof DeviceError);
});

test('device tensors stay on the GPU, pass between programs and read back', async () => {
  const a = await load(affine(), { tune: false });
  const b = await load(affine(), { tune: false });
  const x = rowsOf(11);
  const [y, t] = /** @type {DeviceTensor[]} */ (await a.runOnDevice([{ data: x, shape: [11, 3] }]));
  assert.ok(y instanceof DeviceTensor && t instanceof DeviceTensor);
  const back = await t.read();
  assert.deepEqual(back.shape, [3, 11]);
  assert.deepEqual(Array.from(back.data.subarray(0, 11), Number), Array.from({ length: 11 }, (_, i) => affineRef(x)[3 * i]));
  const [z] = /** @type {HostTensor<'float32'>[]} */ (await b.run([y])); // a GPU-to-GPU copy into b's input
  assert.deepEqual(Array.from(z.data), Array.from(affineRef(affineRef(x))));
  await assert.rejects(b.run([t]), (e) => e instanceof InputError && /strided view/.test(e.message));
  // Mixed: the transposed view read back in the same submit, the other kept.
  const [kept, read] = /** @type {[DeviceTensor, HostTensor<'float32'>]} */ (await a.runOnDevice([{ data: x, shape: [11, 3] }], { read: [1] }));
  assert.ok(kept instanceof DeviceTensor && !(read instanceof DeviceTensor));
  assert.deepEqual(read.shape, [3, 11]);
  for (const d of [y, t, kept]) d.release();
  await assert.rejects(b.run([y]), (e) => e instanceof InputError && /released/.test(e.message));
  a.destroy();
  b.destroy();
});

test('inputs of the wrong dtype, shape, size or structure are refused by name', async () => {
  const program = await load(affine(), { tune: false });
  const x = rowsOf(5);
  const cases = /** @type {[unknown, Function, RegExp][]} */ ([
    [[{ data: Float64Array.from(x), shape: [5, 3] }], InputTypeError, /^input 'x': expected dtype float32, got float64$/],
    [[{ data: x, shape: [3, 5] }], InputError, /^input 'x': expected shape \[s0, 3\] = \[3, 3\], got \[3, 5\]$/],
    [[{ data: x, shape: [15] }], InputError, /^input 'x': expected shape \[s0, 3\], got \[15\]$/],
    [[{ data: new Float32Array(3 * 301), shape: [301, 3] }], InputError, /^input 'x' dim 0 \(dynamic dimension s0\) must be in \[1, 300\], got 301$/],
    [[x], InputError, /dynamic shape \[s0, 3\]: pass \{data, shape\}/],
    [[{ data: x, shape: [4, 3] }], InputError, /15 values for shape \[4, 3\]/],
    [[x, x], InputTypeError, /^input\[0\]: expected a tuple of 1 items, got an array of 2 items$/],
    [{ args: [x], kwargs: { y: x } }, InputTypeError, /^input\[1\]: expected an object with keys \[\], got \["y"\]$/],
    [['x'], InputTypeError, /expected a typed array, \{data, shape, dtype\} or a DeviceTensor/],
  ]);
  for (const [inputs, type, message] of cases) {
    await assert.rejects(program.run(/** @type {any} */ (inputs)), (e) => e instanceof type && message.test(/** @type {Error} */ (e).message), String(message));
  }
  program.destroy();
});

test('what a device cannot hold or run is refused by name before anything is allocated', async () => {
  const gpu = await openDevice();
  const { device: shared } = gpu;
  const small = await (await requestAdapter()).requestDevice(); // WebGPU's default limits: 8 storage buffers, 128 MiB bindings
  const nine = `@group(0) @binding(0) var<storage, read_write> o: array<f32>;\n${
    Array.from({ length: 8 }, (_, i) => `@group(0) @binding(${i + 1}) var<storage, read> i${i}: array<f32>;`).join('\n')}
@compute @workgroup_size(1) fn main() { o[0] = ${Array.from({ length: 8 }, (_, i) => `i${i}[0]`).join(' + ')}; }\n`;
  const wide = artifact({
    format: LIMITS.format, meta: {}, symbols: {}, sources: [nine],
    kernels: [{ name: 'nine', source: 0, entry: 'main', overrides: {}, bindings: ['read_write', ...Array(8).fill('read')],
      workgroup_size: [1, 1, 1], workgroup_bytes: 0 }],
    buffers: [{ size: 4, role: 'scratch', name: '' }, { size: 4, role: 'input', name: 'x' }],
    inputs: [{ name: 'x', shape: [1], dtype: 'float32', buffer: 1 }],
    outputs: [{ buffer: 0, shape: [1], strides: [1], offset: 0, dtype: 'float32' }],
    input_tree: { type: 'tuple', items: [{ type: 'tuple', items: [{ type: 'leaf' }] }, { type: 'dict', keys: [], items: [] }] },
    output_tree: { type: 'leaf' },
    dispatches: [{ kernel: 0, buffers: [0, 1, 1, 1, 1, 1, 1, 1, 1], uniform: [], grid: [1, 1, 1], node: 'sum' }],
    checks: [],
  });
  await assert.rejects(load(wide, { device: small }), (e) => e instanceof DeviceError &&
    e.message === 'kernel nine binds 9 storage buffers; this adapter allows 8 per shader stage (maxStorageBuffersPerShaderStage)');
  const sum = /** @type {HostTensor<'float32'>} */ (await (await load(wide, { device: shared })).run([Float32Array.of(0.5)]));
  assert.deepEqual(Array.from(sum.data), [4]);
  await assert.rejects(load(affine({ hi: 12 * 2 ** 20 }), { device: small }), (e) => e instanceof DeviceError &&
    /^input buffer 0 \(x\) needs 150,994,944 bytes; this adapter binds at most 134,217,728/.test(e.message));
  await assert.rejects(load(affine(), { maxMemory: 1000 }), (e) => e instanceof DeviceError && /over the 0.00 GiB this process allows/.test(e.message));
  const cap = await memoryCap(gpu, undefined); // lavapipe and SwiftShader: the memory the process may take bounds it
  if (adapterKind(gpu.adapter) === 'cpu') assert.ok(cap.bytes <= freemem() && /on this CPU adapter/.test(cap.why), cap.why);
  process.env.WEBGPU_TORCH_MAX_MEMORY = '4096';
  try {
    assert.deepEqual(await memoryCap(gpu, undefined), { bytes: 4096, why: 'WEBGPU_TORCH_MAX_MEMORY' });
  } finally {
    delete process.env.WEBGPU_TORCH_MAX_MEMORY;
  }
  small.destroy();
  const storage = shared.limits.maxComputeWorkgroupStorageSize;
  const big = artifact({
    format: LIMITS.format, meta: {}, symbols: {},
    sources: [`var<workgroup> big: array<f32, ${storage / 4 + 1}>;\n@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(1) fn main() { big[0] = 1.0; workgroupBarrier(); o[0] = big[${storage / 4}]; }\n`],
    kernels: [{ name: 'big', source: 0, entry: 'main', overrides: {}, bindings: ['read_write'], workgroup_size: [1, 1, 1],
      workgroup_bytes: storage + 16 }],
    buffers: [{ size: 4, role: 'scratch', name: '' }],
    inputs: [], outputs: [{ buffer: 0, shape: [1], strides: [1], offset: 0, dtype: 'float32' }],
    input_tree: { type: 'tuple', items: [{ type: 'tuple', items: [] }, { type: 'dict', keys: [], items: [] }] },
    output_tree: { type: 'leaf' },
    dispatches: [{ kernel: 0, buffers: [0], uniform: [], grid: [1, 1, 1], node: 'big' }],
    checks: [],
  });
  await assert.rejects(load(big), (e) => e instanceof DeviceError && e.message === `kernel big: its ${(storage + 16).toLocaleString('en')} ` +
    `bytes of workgroup memory exceed this adapter's ${storage.toLocaleString('en')} (maxComputeWorkgroupStorageSize)`);
  const { header, data } = splitArtifact(grouped());
  header.dispatches = [{ ...header.dispatches[0], kernel: 2, options: undefined, result: undefined, tolerance: undefined }, { ...header.dispatches[1], follows: undefined, options: undefined }];
  header.requires = ['subgroups'];
  const forced = container(new TextEncoder().encode(JSON.stringify(header)), data);
  await assert.rejects(load(forced, { disableFeatures: ['subgroups'] }), (e) => e instanceof DeviceError &&
    e.message.startsWith('the program needs the subgroups feature, which this device lacks'));
});

test('a device-side check that fails raises, naming its node, at the call that reads back', async () => {
  const program = await load(lookup(), { tune: false });
  const good = BigInt64Array.of(0n, 4n, 2n, 1n);
  const bad = BigInt64Array.of(0n, 5n, 2n, 1n);
  const refused = (/** @type {unknown} */ e) => e instanceof DeviceIndexError && e.message === "node 'embedding': index out of range for a table of 5 rows";
  assert.deepEqual(Array.from(/** @type {HostTensor<'float32'>} */ (await program.run([good])).data), [TABLE[0], TABLE[4], TABLE[2], TABLE[1]]);
  await assert.rejects(program.run([bad]), refused);
  assert.deepEqual(Array.from(/** @type {HostTensor<'float32'>} */ (await program.run([good])).data), [10, 14, 12, 11], 'the status words were cleared');
  const kept = await program.runOnDevice([bad]); // nothing read back: the failure waits for the next read
  assert.ok(kept instanceof DeviceTensor);
  await assert.rejects(program.run([good]), refused);
  assert.deepEqual(Array.from(/** @type {HostTensor<'float32'>} */ (await program.run([good])).data), [10, 14, 12, 11]);
  kept.release();
  program.destroy();
});

test('an endless kernel ends in the timeout its load sets, the first call having its compile allowance', () => {
  const [name, message, ms] = endless('tiny', { timeoutMs: 2000, tune: false }, {});
  assert.equal(name, 'CallTimeout', message);
  const limit = Number(/within ([\d.]+) s/.exec(message)?.[1]);
  assert.ok(limit > 2 && limit < 4 && ms >= limit * 1000 - 50 && ms < 30_000, message);
});

test('an endless kernel timed by tuning ends the load', () => {
  const [name, message] = endless('mlp', { tune: true }, { WEBGPU_TORCH_TIMEOUT: '3' });
  assert.equal(name, 'CallTimeout', message);
  assert.ok(message.includes('a tuning check did not finish within 3 s'), message);
});

/**
 * What a process of its own (the device stays busy with the loop until it exits) prints after loading golden
 * `base` with an endless loop in every kernel and calling it once: the error's name, its message, the
 * milliseconds the load and call took.
 * @param {string} base
 * @param {import('../src/index.js').LoadOptions} options
 * @param {Record<string, string>} env
 * @returns {[string, string, number]}
 */
function endless(base, options, env) {
  const { header, data } = splitArtifact(readFileSync(join(GOLDEN, `${base}.wgpt`)));
  header.sources = header.sources.map((/** @type {string} */ source) => {
    const at = source.indexOf('{', source.indexOf('@compute')) + 1;
    return at ? `${source.slice(0, at)}${SPIN}${source.slice(at)}` : source;
  });
  const path = join(mkdtempSync(join(tmpdir(), 'endless-')), 'endless.wgpt');
  writeFileSync(path, container(new TextEncoder().encode(JSON.stringify(header)), data));
  const script = `import { load } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
    const start = performance.now();
    try {
      const program = await load(${JSON.stringify(path)}, ${JSON.stringify({ ...options, cache: false })});
      await program.run(program.inputs.map((x) => new Float32Array(x.shape.reduce((a, b) => a * Number(b), 1))));
    } catch (e) { console.log(JSON.stringify([e.name, e.message, performance.now() - start])); }
    process.exit(0);`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8', timeout: 120_000, env: { ...process.env, ...env },
  });
  return JSON.parse(run.stdout.trim().split('\n').pop() || '[null, "no outcome", 0]');
}
