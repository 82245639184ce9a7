// The conformance corpus (tests/conformance/README.md): the JavaScript runtime's decisions on the vectors
// whose expected values the Python runtime computed (tests/test_conformance.py replays them too). No device.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { foldGrid, parse } from '../src/artifact.js';
import { problem as sourceProblem } from '../src/compile_cost.js';
import { isContiguous } from '../src/dtypes.js';
import { ArtifactError } from '../src/errors.js';
import { byteRange, firstCallSeconds } from '../src/executor.js';
import * as expr from '../src/symbolic.js';
import { BeamSearch, completesStop, generationOptions, samplerParams, uniforms } from '../src/decoding.js';
import { checkInfo, Seq2Seq, textStream } from '../src/generation.js';
import { bind } from '../src/inputs.js';
import { adapterKind, forDevice, limitProblem } from '../src/fit.js';
import { LIMITS } from '../src/limits.js';
import { decide } from '../src/memory.js';
import { classProblem } from '../src/tree.js';
import { choiceKey, groups, probeSize, rank } from '../src/tuning.js';
import { GOLDEN, REPO } from '../testkit/io.js';
import { problems } from '../testkit/schema.js';
import { splitArtifact } from '../testkit/build.js';

const HERE = join(REPO, 'tests', 'conformance');
/** @param {string} name */
const vectors = (name) => JSON.parse(readFileSync(join(HERE, `${name}.json`), 'utf8'));
/** @param {string} name */
const golden = (name) => parse(readFileSync(join(GOLDEN, `${name}.wgpt`)), name);

test('js/src/limits.js holds src/webgpu_torch/format/limits.json', () => {
  const { about, ...json } = JSON.parse(readFileSync(join(REPO, 'src', 'webgpu_torch', 'format', 'limits.json'), 'utf8'));
  assert.ok(about);
  assert.deepEqual(JSON.parse(JSON.stringify(LIMITS)), json, 'js/src/limits.js is stale: run python -m tests.golden.make');
});

test('expressions: values, bounds, problems, grid folding', () => {
  const v = vectors('expressions');
  for (const c of v.evaluate) {
    assert.equal(expr.evaluate(c.expr, c.env), c.value, JSON.stringify(c));
    assert.equal(expr.compile(c.expr)(c.env), c.value, JSON.stringify(c));
  }
  for (const c of v.bounds) assert.deepEqual(expr.bounds(c.expr, v.symbols), c.bounds, JSON.stringify(c));
  for (const c of v.problems) {
    const p = expr.problem(c.expr, v.symbols);
    assert.ok(p !== null && p.includes(c.error), `${JSON.stringify(c.expr)}: ${p}`);
  }
  for (const c of v.fold_grid) assert.deepEqual(foldGrid(c.count), c.grid, String(c.count));
});

for (const c of vectors('tuning').files) {
  test(`tuning ${c.file}: groups, cache keys, ranking per device`, async () => {
    const spec = golden(c.file);
    const which = groups(spec);
    assert.deepEqual(which, c.groups);
    for (const [engine, keys] of Object.entries(c.keys)) {
      assert.deepEqual(await Promise.all(which.map((g) => choiceKey(spec, g, engine))), keys, engine);
    }
    for (const device of c.devices) {
      const features = new Set(/** @type {string[]} */ (device.features));
      const fitted = forDevice(spec, features);
      assert.deepEqual(which.map((g) => rank(fitted, g, features, device.limits)), device.ranked, device.about);
    }
  });
}

test('tuning: probe sizes', () => {
  for (const c of vectors('tuning').probe_size) {
    assert.equal(probeSize(c.timed, c.elapsed * 1000, c.budget * 1000), c.size, JSON.stringify(c));
  }
});

test('input binding: dynamic dimensions from the shapes, ranges and shapes checked', () => {
  for (const c of vectors('inputs').bind) {
    const spec = golden(c.file);
    const values = c.shapes.map((/** @type {number[]} */ shape) => ({ shape, data: null, tensor: null }));
    if (c.error) assert.throws(() => bind(spec, values), (e) => e instanceof Error && e.message.includes(c.error), c.error);
    else assert.deepEqual({ ...bind(spec, values) }, c.env); // bind keys a null-prototype object by symbol name
  }
});

test('outputs: byte ranges read back (or kept on the device), and which views pass as inputs', () => {
  const v = vectors('outputs');
  for (const c of v.readback) {
    const spec = golden(c.file);
    spec.outputs.forEach((t, i) => {
      const view = {
        shape: t.shape.map((e) => expr.evaluate(e, c.env)), strides: t.strides.map((e) => expr.evaluate(e, c.env)),
        offset: expr.evaluate(t.offset, c.env),
      };
      const { start, size, first } = byteRange(view);
      const got = { shape: view.shape, strides: view.strides, start, size, first, contiguous: isContiguous(view.shape, view.strides) };
      assert.deepEqual(got, c.outputs[i], `${c.file} output ${i}`);
    });
  }
  for (const c of v.contiguous) assert.equal(isContiguous(c.shape, c.strides), c.contiguous, JSON.stringify(c));
});

test('generation: seq2seq.json checked, tokens forced and stopped as the rules say', async () => {
  const v = vectors('generation');
  for (const c of v.info) {
    if (c.error) assert.throws(() => checkInfo(c.info, 'seq2seq.json'), (e) => e instanceof ArtifactError && e.message.includes(c.error), c.error);
    else assert.doesNotThrow(() => checkInfo(c.info, 'seq2seq.json'));
  }
  for (const c of v.generate) {
    let step = 0;
    const stage = {
      runOnDevice: async () => ({ release() {} }),
    };
    // The decoder's token at step i is chosen[i] (0 past the list: a step submitted after EOS, never read).
    const decoder = {
      inputs: [{ shape: [1, 1] }],
      start: async () => {
        const token = { data: Int32Array.of(c.chosen[step++] ?? 0), release() {} };
        return { kept: [undefined, token], host: {}, result: async () => [{ data: new Float32Array(3) }, token], discard() {} };
      },
    };
    const model = new Seq2Seq(/** @type {any} */ (stage), /** @type {any} */ ({ runOnDevice: async () => [] }), /** @type {any} */ (decoder), c.info);
    const { ids } = await model.generate(new Float32Array(0), new Int32Array(0), { maxNewTokens: c.max_new_tokens });
    assert.deepEqual(ids, c.ids, JSON.stringify(c));
  }
});

test('the adapter kind: fitting and tuning ask the same rule', () => {
  for (const c of vectors('device_fit').adapters) assert.equal(adapterKind(c.info), c.kind, JSON.stringify(c));
});

test('device fit: a golden file as a device runs it (features, limits, the memory cap), or why not', () => {
  for (const c of vectors('device_fit').fits) {
    let problem = null;
    /** @type {import('../src/artifact.js').ProgramSpec | null} */
    let fitted = null;
    try {
      fitted = forDevice(golden(c.file), new Set(c.features));
      problem = limitProblem(fitted, c.limits, c.cap);
    } catch (e) {
      problem = /** @type {Error} */ (e).message;
    }
    const what = `${c.file}: ${c.about}`;
    if ('refused' in c) {
      assert.equal(problem, c.refused, what);
      continue;
    }
    assert.equal(problem, null, what);
    const spec = /** @type {import('../src/artifact.js').ProgramSpec} */ (fitted);
    assert.deepEqual(spec.buffers.map((b) => b.size), c.buffers, what);
    assert.deepEqual(spec.dispatches.map((d) => d.kernel), c.kernels, what);
    assert.deepEqual(spec.dispatches.map((d) => d.options.map((o) => o.kernel)), c.options, what);
  }
});

/** @param {Record<string, unknown>} settings snake_case, as decoding.py takes them */
const camel = (settings) => Object.fromEntries(Object.entries(settings).map(([k, v]) => [k.replace(/_([a-z])/g, (_, c) => c.toUpperCase()), v]));

test('generation: draws, settings, stop strings and streamed text', async () => {
  const v = vectors('generation');
  for (const c of v.uniforms) {
    const draws = uniforms(BigInt(c.seed));
    assert.deepEqual(c.draws.map(() => draws.next().value), c.draws, c.seed);
  }
  for (const c of v.settings) {
    if (c.error) assert.throws(() => generationOptions(camel(c.settings)), (e) => e instanceof RangeError && e.message.includes(c.error), c.error);
    else assert.deepEqual([...samplerParams(generationOptions(camel(c.settings)))], c.params.map(Math.fround), JSON.stringify(c));
  }
  for (const c of v.stops) assert.equal(completesStop(c.text, c.before.length, c.stop_strings), c.stops, JSON.stringify(c));
  for (const c of v.streams) {
    const texts = c.texts.values();
    const tokenizer = { decode: () => texts.next().value };
    const ids = (async function* () { yield* c.texts.map((/** @type {string} */ _, /** @type {number} */ i) => i); })();
    const pieces = [];
    for await (const piece of textStream(ids, tokenizer)) pieces.push(piece);
    assert.deepEqual(pieces, c.pieces, JSON.stringify(c));
  }
});

test('generation: beam search bookkeeping', () => {
  for (const c of vectors('generation').beams) {
    const search = new BeamSearch({
      numBeams: c.num_beams, vocabSize: c.vocab_size, maxNewTokens: c.max_new_tokens, eos: c.eos,
      lengthPenalty: c.length_penalty, earlyStopping: c.early_stopping,
    });
    for (const step of c.steps) {
      assert.ok(search.keep === step.indices.length && !search.done);
      assert.deepEqual(search.step(step.values, step.indices), { tokens: step.tokens, beams: step.beams }, JSON.stringify(step));
      assert.equal(search.done, step.done);
    }
    const results = search.results(c.num_beams);
    assert.deepEqual(results.map((h) => h.tokens), c.sequences);
    assert.deepEqual(results.map((h) => h.score), c.scores);
  }
});

test('the header schema says of each golden header what the corpus records', () => {
  for (const c of vectors('schema').headers) {
    const { header } = splitArtifact(readFileSync(join(GOLDEN, c.file)));
    assert.equal(problems(header).length === 0, c.valid, `${c.file}: ${problems(header).join('; ')}`);
  }
});

test('compile cost: each source refused as the Python reader refuses it, with the same message, or accepted', () => {
  for (const c of vectors('compile_cost').cases) assert.equal(sourceProblem(c.source), c.problem, c.about);
});

test('output classes: the allowlist', () => {
  for (const c of vectors('classes').cases) {
    const got = classProblem(c.node);
    assert.ok(c.problem === null ? got === null : got?.includes(c.problem), `${JSON.stringify(c.node)}: ${got}`);
  }
});

test('the memory cap from the adapter and what the process may still take', () => {
  for (const c of vectors('memory').cases) assert.deepEqual(decide(c.kind, c.device_local, c.rooms), c.cap, JSON.stringify(c));
});

test('a first call may take longer by what its shaders cost to compile', () => {
  for (const c of vectors('timeouts').first_call) {
    assert.equal(firstCallSeconds(golden(c.file), c.engine, c.timeout), c.seconds, JSON.stringify(c));
  }
});
