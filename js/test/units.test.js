// The device-free parts: CRC-32, expressions, float16 widening, int64 conversion, trees, tuning's decision
// vectors, and reader rules the golden corpus does not break one by one.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { crc32 } from '../src/crc32.js';
import { toDevice, widenHalf } from '../src/dtypes.js';
import { ArtifactError, InputError, InputTypeError, parse } from '../src/index.js';
import * as expr from '../src/expr.js';
import { Seq2Seq } from '../src/generation.js';
import { flatten, unflatten } from '../src/tree.js';
import { adapterKind, keep, probeSize, rank, repeats } from '../src/tuning.js';
import { container, splitArtifact } from '../testkit/build.js';
import { affine, grouped } from '../testkit/programs.js';

test('CRC-32 is zlib\'s', () => {
  const text = new TextEncoder().encode('The quick brown fox jumps over the lazy dog');
  assert.equal(crc32(text), 0x414fa339);
  assert.equal(crc32(new Uint8Array(0)), 0);
  assert.equal(crc32(text.subarray(0, 5)), crc32(Uint8Array.from(text.subarray(0, 5)))); // views of any offset
});

test('expressions evaluate with Python\'s floor division and remainder, and bound over their ranges', () => {
  const env = { s: 7, t: -3 };
  assert.equal(expr.evaluate(['//', 's', 2], env), 3);
  assert.equal(expr.evaluate(['//', 't', 2], env), -2);
  assert.equal(expr.evaluate(['%', 't', 5], env), 2);
  assert.equal(expr.evaluate(['%', 's', -5], env), -3);
  assert.equal(expr.evaluate(['+', ['*', 's', 3], -1, ['max', 't', 2], ['min', 's', 4]], env), 26);
  assert.equal(expr.floorDiv(2 ** 53 - 1, 3), (2 ** 53 - 1 - 1) / 3); // no rounding past the exact quotient
  for (const e of /** @type {expr.Expr[]} */ ([['//', 't', 2], ['%', 's', -5], ['+', ['*', 's', 3, 't'], -1, ['max', 't', 2], ['min', 's', 4]], 5, 's'])) {
    assert.equal(expr.compile(e)(env), expr.evaluate(e, env), JSON.stringify(e));
  }
  const symbols = { s: { lo: 1, hi: 64, hint: 5, about: '' } };
  assert.deepEqual(expr.bounds(['+', ['*', ['+', 's', -1], 37], 1], symbols), [1, 2332]);
  assert.deepEqual(expr.bounds(['//', ['+', 's', 63], 64], symbols), [1, 1]);
  assert.deepEqual(expr.bounds(['%', 's', 8], symbols), [0, 7]);
  assert.match(String(expr.problem(['//', 4, ['+', 's', -1]], symbols)), /divisor's range \[0, 63\] includes 0/);
  assert.match(String(expr.problem(['^', 1, 2], symbols)), /unknown expression operator "\^"/);
  assert.match(String(expr.problem('u', symbols)), /undeclared symbol "u"/);
  assert.match(String(expr.problem(1.5, symbols)), /not an integer/);
});

test('float16 widens exactly: normals, subnormals, zeros, infinities, NaN', () => {
  const half = Uint16Array.of(0x3c00, 0xc000, 0x0001, 0x03ff, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7bff);
  const wide = new Float32Array(widenHalf(half).buffer);
  assert.deepEqual(Array.from(wide.subarray(0, 7)), [1, -2, 2 ** -24, 1023 * 2 ** -24, -0, Infinity, -Infinity]);
  assert.ok(Number.isNaN(wide[7]));
  assert.equal(wide[8], 65504);
});

test('integers in device form: int64 refused beyond int32, the others as int32 bits', () => {
  const scratch = new Uint32Array(4);
  assert.deepEqual(Array.from(new Int32Array(toDevice(BigInt64Array.of(-1n, 5n), 'int64', scratch, 'x').buffer, 0, 2)), [-1, 5]);
  assert.deepEqual(Array.from(/** @type {Uint32Array} */ (toDevice(Uint8Array.of(0, 3, 1), 'bool', scratch, 'x'))), [0, 1, 1]);
  assert.throws(() => toDevice(Float64Array.of(2 ** 31), 'int64', scratch, "input 'x'"),
    (e) => e instanceof InputError && /range is \[2147483648, 2147483648\]/.test(e.message));
});

test('trees: positional and keyword arguments, omitted constant keywords, outputs rebuilt', () => {
  const spec = /** @type {import('../src/tree.js').TreeSpec} */ ({ type: 'tuple', items: [
    { type: 'tuple', items: [{ type: 'leaf' }, { type: 'list', items: [{ type: 'leaf' }, { type: 'leaf' }] }] },
    { type: 'dict', keys: ['mask', 'eps'], items: [{ type: 'leaf' }, { type: 'const', value: 0.5 }] }] });
  assert.deepEqual(flatten(spec, [['a', ['b', 'c']], { mask: 'm' }]), ['a', 'b', 'c', 'm']);
  assert.deepEqual(flatten(spec, [['a', ['b', 'c']], { mask: 'm', eps: 0.5 }]), ['a', 'b', 'c', 'm']);
  assert.throws(() => flatten(spec, [['a', ['b']], { mask: 'm' }]),
    (e) => e instanceof InputTypeError && e.message === 'input[0][1]: expected a list of 2 items, got an array of 1 items');
  assert.throws(() => flatten(spec, [['a', ['b', 'c']], {}]), InputTypeError);
  assert.throws(() => flatten(spec, [['a', ['b', 'c']], { mask: 'm', eps: true }]), InputError);
  const out = /** @type {import('../src/tree.js').TreeSpec} */ ({ type: 'dict', keys: ['y', 'n'], items: [{ type: 'leaf' }, { type: 'const', value: null }] });
  assert.deepEqual(unflatten(out, [1]), { y: 1, n: null });
});

/**
 * An affine artifact with its header edited.
 * @param {(header: any) => void} edit
 * @param {Uint8Array} [raw]
 */
function edited(edit, raw = affine()) {
  const { header, data } = splitArtifact(raw);
  edit(header);
  return container(new TextEncoder().encode(JSON.stringify(header)), data);
}

// Tuning's pure decisions, replayed from the vectors the Python runtime's tests replay too.
const decisions = JSON.parse(readFileSync(new URL('../../tests/golden/decisions/tuning.json', import.meta.url), 'utf8'));

test('tuning decides as tests/golden/decisions/tuning.json says', () => {
  for (const c of decisions.adapter_kind) assert.equal(adapterKind(c.info), c.kind, JSON.stringify(c));
  for (const c of decisions.rank) assert.deepEqual(rank(c.workgroups, c.targets, c.kind), c.order, JSON.stringify(c));
  for (const c of decisions.probe_size) assert.equal(probeSize(c.timed, c.elapsed, c.budget), c.size, JSON.stringify(c));
  for (const c of decisions.keep) assert.deepEqual(keep(c.scouted), c.kept, JSON.stringify(c));
  for (const c of decisions.repeats) assert.equal(repeats(c.run, c.left), c.repeats, JSON.stringify(c));
});

test('the reader refuses what the contract rules out beyond the golden cases', () => {
  const cases = /** @type {[(h: any) => void, RegExp, Uint8Array?][]} */ ([
    [(h) => { h.input_tree = h.input_tree.items[0]; }, /input_tree is not a tuple of \(positional arguments, keyword arguments\)/],
    [(h) => { h.inputs[0].shape = [5, 3]; }, /symbol s0 \(input 'x' dim 0\) is not the size of any input dimension/],
    [(h) => { h.symbols.s0.hi = 2 ** 31; }, /symbol s0: range/],
    [(h) => { h.dispatches[0].patches[0][1] = 'f64'; }, /dispatch 0: bad uniform patch/],
    [(h) => { h.dispatches[0].patches[0][0] = 16; }, /dispatch 0: bad uniform patch/],
    [(h) => { h.dispatches[0].count = ['*', 's0', 1000]; }, /dispatch 0: bad workgroup count/],
    [(h) => { h.outputs[1].strides = [1, 4]; }, /output 1: view reaches past its buffer/],
    [(h) => { h.buffers.push({ size: 4, role: 'scratch', name: '' }); }, /a scratch buffer no dispatch binds/],
    [(h) => { h.sources[0] += '('.repeat(65) + ')'.repeat(65); }, /brackets nested deeper than 64/],
    [(h) => { h.kernels[0].uniform.size = 12; }, /bad uniform layout/],
    [(h) => { h.dispatches[1].follows = 2; }, /dispatch 1: bad follows|follows no group leader/, grouped()],
    [(h) => { h.dispatches[0].options[0].kernel = 3; }, /option add64 differs in bindings or Params/, grouped()],
  ]);
  for (const [edit, message, raw] of cases) {
    assert.throws(() => parse(edited(edit, raw), 'edited'), (e) => e instanceof ArtifactError && message.test(e.message), String(message));
  }
  assert.doesNotThrow(() => parse(edited((h) => { delete h.meta; h.unknown = 1; }), 'lenient'));
});

test('generation forces transformers\' BOS first and EOS last, when the model names them', () => {
  const info = { layers: 1, heads: 1, head_dim: 1, decoder_start_token_id: 2, eos_token_id: 2, forced_bos_token_id: 0, forced_eos_token_id: 2 };
  const none = /** @type {any} */ (null);
  const model = new Seq2Seq(none, none, none, info);
  assert.deepEqual([0, 1, 2, 3].map((step) => model.forced(step, 4, 7)), [0, 7, 7, 2]);
  const plain = new Seq2Seq(none, none, none, { ...info, forced_bos_token_id: null, forced_eos_token_id: undefined });
  assert.deepEqual([0, 1, 2, 3].map((step) => plain.forced(step, 4, 7)), [7, 7, 7, 7]);
});
