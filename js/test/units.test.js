// The device-free parts the conformance corpus does not cover: CRC-32, expressions, float16 widening, int64
// conversion, trees, generation's forced tokens, the reader's leniency, and tuning's rules as cases.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { crc32 } from '../src/crc32.js';
import { bfloat16Bits, halfBits, toDevice, widenHalf } from '../src/dtypes.js';
import { InputError, InputTypeError, parse } from '../src/index.js';
import * as expr from '../src/symbolic.js';
import { Seq2Seq } from '../src/generation.js';
import { flatten, unflatten } from '../src/tree.js';
import { candidateOrder, disagreement, keep, probeSize, repeats, seededWords } from '../src/tuning.js';
import { container, splitArtifact } from '../testkit/build.js';
import { affine } from '../testkit/programs.js';

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

test('float16 and bfloat16 outputs round to nearest even, on the bits', () => {
  const every = Uint16Array.from({ length: 65536 }, (_, h) => h);
  const wide = widenHalf(every);
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  for (let h = 0; h < 65536; h++) {
    const nan = (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
    if (!nan) assert.equal(halfBits(wide[h]), h, `float16 ${h.toString(16)} round trip`);
    if ((h & 0x7fff) < 0x7bff) { // the midpoint of h and the next value up rounds to whichever is even
      f[0] = (new Float32Array(wide.buffer)[h] + new Float32Array(wide.buffer)[h + 1]) / 2;
      assert.equal(halfBits(u[0]), h & 1 ? h + 1 : h, `midpoint above ${h.toString(16)}`);
    }
  }
  assert.equal(halfBits(0x477fefff), 0x7bff); // just below 65520: 65504, float16's largest
  assert.equal(halfBits(0x477ff000), 0x7c00); // 65520: a tie, to the even infinity
  assert.equal(halfBits(0x33000000), 0); // 2^-25: a tie between 0 and 2^-24
  assert.equal(bfloat16Bits(0x3f808000), 0x3f80); // 1 + 2^-8: a tie, to even
  assert.equal(bfloat16Bits(0x3f818000), 0x3f82); // 1 + 3·2^-8: to even, up
  assert.equal(bfloat16Bits(0x7f7fffff), 0x7f80); // float32's largest: infinity
  assert.equal(bfloat16Bits(0xffc00001) & 0x7fc0, 0x7fc0); // NaN stays a NaN
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

// Tuning's rules, replayed from the cases the Python runtime's tests replay too.
const rules = JSON.parse(readFileSync(new URL('../../tests/conformance/tuning_rules.json', import.meta.url), 'utf8'));

test('tuning decides as tests/conformance/tuning_rules.json says', () => {
  for (const c of rules.rank) assert.deepEqual(candidateOrder(c.workgroups, c.targets, c.kind), c.order, JSON.stringify(c));
  for (const c of rules.probe_size) assert.equal(probeSize(c.timed, c.elapsed, c.budget), c.size, JSON.stringify(c));
  for (const c of rules.keep) assert.deepEqual(keep(c.scouted), c.kept, JSON.stringify(c));
  for (const c of rules.repeats) assert.equal(repeats(c.run, c.fastest, c.left), c.repeats, JSON.stringify(c));
  for (const c of rules.seeded_words) assert.deepEqual(Array.from(seededWords(c.index, c.count)), c.words, JSON.stringify(c));
  for (const c of rules.disagreement) {
    const values = (/** @type {(number | string)[]} */ v) => (c.dtype === 'int32' ? Int32Array : Float32Array).from(v.map(Number));
    assert.equal(disagreement(values(c.reference), values(c.candidate), c.tolerance) === null, c.agrees, JSON.stringify(c));
  }
});

test('the reader ignores keys it does not know and takes the optional ones as absent', () => {
  assert.doesNotThrow(() => parse(edited((h) => { delete h.meta; delete h.requires; h.unknown = 1; }), 'lenient'));
});

test('generation forces transformers\' BOS after the start token and EOS last, when the model names them', () => {
  const info = { layers: 1, heads: 1, head_dim: 1, max_length: 4, decoder_start_token_id: 2, eos_token_id: 2, forced_bos_token_id: 0, forced_eos_token_id: 2 };
  const none = /** @type {any} */ (null);
  const model = new Seq2Seq(none, none, none, info);
  // the decoder's sequence so far is 1, 2, 3, 4 tokens long, of at most 5
  assert.deepEqual([1, 2, 3, 4].map((length) => model.forced(length, 5)), [0, null, null, 2]);
  const plain = new Seq2Seq(none, none, none, { ...info, forced_bos_token_id: null, forced_eos_token_id: undefined });
  assert.deepEqual([1, 2, 3, 4].map((length) => plain.forced(length, 5)), [null, null, null, null]);
});
