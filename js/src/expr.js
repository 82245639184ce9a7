// Integer expressions over a program's dynamic dimensions, in the artifact's JSON form: an integer, a
// symbol's name, or [op, a, b, …] with op one of "+" and "*" (any number of arguments), "//", "%", "max",
// "min" (two). Floor division and its remainder follow Python (the remainder takes the divisor's sign).
// Every value a valid program computes fits in 53 bits, so plain numbers are exact.

/** @typedef {number | string | ExprList} Expr */
/** @typedef {[string, ...any[]]} ExprList */
/** @typedef {{lo: number, hi: number, hint: number, about: string}} SymbolSpec */
/** @typedef {Record<string, number>} Env */
/** @typedef {[number, number]} Interval */

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
 * Why `e` is not a well-formed expression over `symbols`, or null when it is.
 * @param {unknown} e
 * @param {Record<string, SymbolSpec>} symbols
 * @returns {string | null}
 */
export function problem(e, symbols) {
  if (typeof e === 'number') return Number.isSafeInteger(e) ? null : `not an integer: ${JSON.stringify(e)}`;
  if (typeof e === 'string') {
    return Object.hasOwn(symbols, e) ? null : `names an undeclared symbol ${JSON.stringify(e)}`;
  }
  if (!Array.isArray(e) || e.length === 0) return `not an expression: ${JSON.stringify(e)}`;
  const [op, ...args] = e;
  if (typeof op !== 'string' || !Object.hasOwn(ARITY, op)) {
    return `unknown expression operator ${JSON.stringify(op)}`;
  }
  const arity = ARITY[op];
  if (arity > 0 ? args.length !== arity : args.length === 0) {
    return `operator ${JSON.stringify(op)} with ${args.length} arguments`;
  }
  for (const a of args) {
    const p = problem(a, symbols);
    if (p) return p;
  }
  if (op === '//' || op === '%') {
    const [lo, hi] = bounds(args[1], symbols);
    if (lo <= 0 && hi >= 0) return `${JSON.stringify(e)}: the divisor's range [${lo}, ${hi}] includes 0`;
  }
  return null;
}

/**
 * An interval holding every value of a well-formed `e` over its symbols' ranges.
 * @param {Expr} e
 * @param {Record<string, SymbolSpec>} symbols
 * @returns {Interval}
 */
export function bounds(e, symbols) {
  if (typeof e === 'number') return [e, e];
  if (typeof e === 'string') return [symbols[e].lo, symbols[e].hi];
  const op = e[0];
  const ranges = e.slice(1).map((/** @type {Expr} */ a) => bounds(a, symbols));
  if (op === '+') return [ranges.reduce((s, r) => s + r[0], 0), ranges.reduce((s, r) => s + r[1], 0)];
  if (op === '*' || op === 'max' || op === 'min') {
    const f = op === '*' ? (/** @type {number} */ x, /** @type {number} */ y) => x * y : op === 'max' ? Math.max : Math.min;
    return ranges.slice(1).reduce((acc, r) => corners(acc, r, f), ranges[0]);
  }
  const [[alo, ahi], [blo, bhi]] = ranges;
  if (op === '%') return [Math.min(0, blo + 1), Math.max(0, bhi - 1)];
  return corners([alo, ahi], [blo, bhi], floorDiv);
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
