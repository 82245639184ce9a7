// Integer expressions over a program's dynamic dimensions, in the artifact's JSON form: an integer, a
// symbol's name, or [op, a, b, …] with op one of "+" and "*" (any number of arguments), "//", "%", "max",
// "min" (two). Floor division and its remainder follow Python (the remainder takes the divisor's sign).
// Every value a valid program computes fits in 53 bits, so plain numbers are exact.

/** @typedef {number | string | ExprList} Expr */
/** @typedef {[string, ...any[]]} ExprList */
/** @typedef {{lo: number, hi: number, hint: number, about: string}} SymbolSpec */
/** @typedef {Record<string, number>} Env */
/** @typedef {[number, number]} Interval */

import { LIMITS } from './limits.js';

const ARITY = /** @type {Record<string, number>} */ ({ '+': -1, '*': -1, '//': 2, '%': 2, max: 2, min: 2 });

/**
 * Python's floor division of two exact integers (b ≠ 0).
 * @param {number} a
 * @param {number} b
 */
export function floorDiv(a, b) {
  let q = Math.floor(a / b);
  const r = a - q * b; // a rounded quotient is off by at most one; the remainder says which way
  if (b > 0 ? r < 0 : r > 0) q -= 1;
  else if (b > 0 ? r >= b : r <= b) q += 1;
  return q;
}

/**
 * The value of `e` for symbol values `env`.
 * @param {Expr} e
 * @param {Env} env
 * @returns {number}
 */
export function evaluate(e, env) {
  if (typeof e === 'number') return e;
  if (typeof e === 'string') return env[e];
  const op = e[0];
  if (op === '+') {
    let s = 0;
    for (let i = 1; i < e.length; i++) s += evaluate(e[i], env);
    return s;
  }
  if (op === '*') {
    let p = 1;
    for (let i = 1; i < e.length; i++) p *= evaluate(e[i], env);
    return p;
  }
  const a = evaluate(e[1], env);
  const b = evaluate(e[2], env);
  if (op === '//') return floorDiv(a, b);
  if (op === '%') return a - floorDiv(a, b) * b;
  return op === 'max' ? Math.max(a, b) : Math.min(a, b);
}

/**
 * `e` as a function of the symbol values: `evaluate` without walking the tree at each call.
 * @param {Expr} e
 * @returns {(env: Env) => number}
 */
export function compile(e) {
  if (typeof e === 'number') return () => e;
  if (typeof e === 'string') return (env) => env[e];
  const [op, ...args] = e;
  const parts = args.map(compile);
  if (op === '+') return parts.length === 2 ? (env) => parts[0](env) + parts[1](env) : (env) => parts.reduce((s, f) => s + f(env), 0);
  if (op === '*') return parts.length === 2 ? (env) => parts[0](env) * parts[1](env) : (env) => parts.reduce((p, f) => p * f(env), 1);
  const [a, b] = parts;
  if (op === '//') return (env) => floorDiv(a(env), b(env));
  if (op === '%') return (env) => { const x = a(env); const y = b(env); return x - floorDiv(x, y) * y; };
  return op === 'max' ? (env) => Math.max(a(env), b(env)) : (env) => Math.min(a(env), b(env));
}

/**
 * Why `e` is not a valid expression over `symbols`, or null when it is (docs/artifact.md, Expressions): well
 * formed, at most MAX_DEPTH operators deep, no divisor whose interval holds 0, and every interval of the
 * exact interval arithmetic (`bounds`) within ±MAX_MAGNITUDE — so every value evaluating it computes is an
 * integer a float64 holds exactly.
 * @param {unknown} e
 * @param {Record<string, SymbolSpec>} symbols
 * @returns {string | null}
 */
export function problem(e, symbols) {
  try {
    interval(e, symbols, 0);
    return null;
  } catch (err) {
    if (err instanceof Invalid) return err.message;
    throw err;
  }
}

/** Why an expression is invalid. */
class Invalid extends Error {}

const MAX_MAGNITUDE = LIMITS.max_number; // 2^53 - 1: every integer an expression names or computes
const MAX_DEPTH = LIMITS.max_expression_depth; // nested operators in one expression

/**
 * @param {unknown} e
 * @param {Record<string, SymbolSpec>} symbols
 * @param {number} depth
 * @returns {Interval}
 */
function interval(e, symbols, depth) {
  if (typeof e === 'number') {
    if (!Number.isInteger(e) || Math.abs(e) > MAX_MAGNITUDE) throw new Invalid(`not an integer: ${JSON.stringify(e)}`);
    return [e, e];
  }
  if (typeof e === 'string') {
    if (!Object.hasOwn(symbols, e)) throw new Invalid(`expression names an undeclared symbol ${JSON.stringify(e).slice(0, 40)}`);
    return [symbols[e].lo, symbols[e].hi];
  }
  if (!Array.isArray(e) || e.length === 0) throw new Invalid(`not an expression: ${String(JSON.stringify(e)).slice(0, 40)}`);
  const [op, ...args] = e;
  if (typeof op !== 'string' || !Object.hasOwn(ARITY, op)) throw new Invalid(`unknown expression operator ${JSON.stringify(op).slice(0, 20)}`);
  const arity = ARITY[op];
  if (arity > 0 ? args.length !== arity : args.length === 0) throw new Invalid(`operator ${JSON.stringify(op)} with ${args.length} arguments`);
  if (depth >= MAX_DEPTH) throw new Invalid(`an expression nested deeper than ${MAX_DEPTH}`);
  const ranges = args.map((a) => interval(a, symbols, depth + 1));
  let acc = ranges[0];
  for (const r of ranges.slice(1)) {
    if ((op === '//' || op === '%') && r[0] <= 0 && r[1] >= 0) {
      throw new Invalid(`${JSON.stringify(e).slice(0, 80)}: the divisor's range [${r[0]}, ${r[1]}] includes 0`);
    }
    acc = checked(step(op, acc, r), e);
  }
  return acc;
}

/**
 * One step of the interval arithmetic: `a op b` over intervals (b excludes 0 for "//" and "%").
 * @param {string} op
 * @param {Interval} a
 * @param {Interval} b
 * @returns {Interval}
 */
function step(op, a, b) {
  if (op === '+') return [a[0] + b[0], a[1] + b[1]];
  if (op === '%') return b[0] > 0 ? [0, b[1] - 1] : [b[0] + 1, 0]; // the remainder takes the divisor's sign
  const f = op === '*' ? (/** @type {number} */ x, /** @type {number} */ y) => x * y : op === '//' ? floorDiv : op === 'max' ? Math.max : Math.min;
  return corners(a, b, f);
}

/**
 * @param {Interval} r
 * @param {unknown} e
 * @returns {Interval}
 */
function checked(r, e) {
  if (!(r[0] >= -MAX_MAGNITUDE && r[1] <= MAX_MAGNITUDE)) {
    throw new Invalid(`${JSON.stringify(e).slice(0, 80)}: its range [${r[0]}, ${r[1]}] is beyond 53 bits`);
  }
  return r;
}

/**
 * An interval holding every value of a valid `e` over its symbols' ranges (docs/artifact.md, Expressions).
 * @param {Expr} e
 * @param {Record<string, SymbolSpec>} symbols
 * @returns {Interval}
 */
export function bounds(e, symbols) {
  if (typeof e === 'number') return [e, e];
  if (typeof e === 'string') return [symbols[e].lo, symbols[e].hi];
  const ranges = e.slice(1).map((/** @type {Expr} */ a) => bounds(a, symbols));
  return ranges.slice(1).reduce((acc, r) => step(e[0], acc, r), ranges[0]);
}

/**
 * @param {Interval} a
 * @param {Interval} b
 * @param {(x: number, y: number) => number} f
 * @returns {Interval}
 */
function corners(a, b, f) {
  const v = [f(a[0], b[0]), f(a[0], b[1]), f(a[1], b[0]), f(a[1], b[1])];
  return [Math.min(...v) + 0, Math.max(...v) + 0]; // + 0: integers, never -0
}

/**
 * The largest value of `e`: what a buffer sized by it must hold.
 * @param {Expr} e
 * @param {Record<string, SymbolSpec>} symbols
 */
export function bound(e, symbols) {
  return bounds(e, symbols)[1];
}

/**
 * `e` as text for messages: `s0`, `(s0 + 1)`, `max(s0, 4)`.
 * @param {Expr} e
 * @returns {string}
 */
export function show(e) {
  if (typeof e !== 'object') return String(e);
  const [op, ...args] = e;
  if (op === 'max' || op === 'min') return `${op}(${args.map(show).join(', ')})`;
  return `(${args.map(show).join(` ${op} `)})`;
}
