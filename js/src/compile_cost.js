// What a WGSL source costs a shader compiler, counted on its text before any engine sees it: the counts of
// src/webgpu_torch/format/compile_cost.py (its docstring says what they bound and why), alike rule for rule and
// message for message; docs/artifact.md, Compile cost, states the rules and why each bound (limits.json's) is
// where it is. A runtime never parses WGSL: it counts tokens.

import { LIMITS } from './limits.js';

const MAX_SOURCE_CHARS = LIMITS.max_source_chars;
const MAX_NESTING = LIMITS.max_nesting; // (), [] and {}; and types, constants and expressions through one another
const MAX_STATEMENT_TOKENS = LIMITS.max_statement_tokens; // between two of ; { } (ours: 147 at most)
const COST = LIMITS.compile_cost;
const ELEMENT_TOKENS = COST.array_element_tokens; // what an array element costs, as tokens

const LINE_COMMENT = /\/\/[^\n]*/g;
const TOKEN = /[A-Za-z0-9_]+|[^ \t\n\v\f\rA-Za-z0-9_]/g;
const INTEGER = /^(0[xX][0-9a-fA-F]+|[0-9]+)[iu]?$/;
const ENTRY_STAGES = ['compute', 'vertex', 'fragment'];
const DECLARATIONS = ['fn', 'struct', 'alias', 'const'];
/** @param {number} n */
const count = (n) => n.toLocaleString('en');

const OPENING = ['(', '[', '{'];
const CLOSING = /** @type {Record<string, string>} */ ({ ')': '(', ']': '[', '}': '{' });
const SCANNED = new Set([...OPENING, ...Object.keys(CLOSING), ';', '<', '>', ',', '=', 'if', '@', 'var', ...DECLARATIONS]);
const UNBALANCED = `brackets nested deeper than ${MAX_NESTING} (an \`else if\` link counting as one) or unbalanced`;
const TOO_COSTLY = `more than ${count(COST.max_source_tokens)} tokens, its functions' calls inlined`;
const LARGEST = 2 ** 32; // a constant beyond ±LARGEST is no array size (WGSL's integers are 32 bits)

/** A rule the source breaks. */
class Refused extends Error {}

/**
 * Why `source` is refused (a phrase for "source i: ..."), or null.
 * @param {string} source
 * @returns {string | null}
 */
export function problem(source) {
  return scan(source).problem;
}

/**
 * What compiling an accepted `source` costs, as tokens with its functions' calls inlined.
 * @param {string} source
 */
export function cost(source) {
  return scan(source).cost;
}

/**
 * @param {string} source
 * @returns {{problem: string | null, cost: number}}
 */
function scan(source) {
  if (source.length > MAX_SOURCE_CHARS) return { problem: `${count(source.length)} characters, over ${count(MAX_SOURCE_CHARS)}`, cost: 0 };
  const code = source.replace(LINE_COMMENT, '');
  if (/[^\x00-\x7f]/.test(code)) return { problem: 'code (outside line comments) that is not ASCII', cost: 0 };
  if (code.includes('/*') || code.includes('*/')) return { problem: 'a block comment', cost: 0 };
  if (!statementsOk(code)) return { problem: `a statement of more than ${count(MAX_STATEMENT_TOKENS)} tokens`, cost: 0 };
  const tokens = code.match(TOKEN) ?? [];
  try {
    if (tokens.length > COST.max_source_tokens) throw new Refused(TOO_COSTLY); // a bound on its cost that needs no scan
    return { problem: null, cost: new Source(tokens).check() };
  } catch (e) {
    if (e instanceof Refused) return { problem: e.message, cost: 0 };
    throw e;
  }
}

/**
 * Whether every statement (the text between two of `;`, `{`, `}`) holds at most MAX_STATEMENT_TOKENS tokens.
 * Engines parse an expression recursively; one of 200,000 terms crashes some.
 * @param {string} code
 */
function statementsOk(code) {
  return code.split(/[;{}]/).every((text) =>
    text.length <= MAX_STATEMENT_TOKENS || (text.match(TOKEN)?.length ?? 0) <= MAX_STATEMENT_TOKENS);
}

/**
 * One recursion deeper (a parenthesis, max or min, a constant named, an array's element type, a named type);
 * past MAX_NESTING levels the source is refused, so no runtime's stack is at risk.
 * @param {number} depth
 */
function deeper(depth) {
  if (depth >= MAX_NESTING) throw new Refused(`types, constants or expressions nested more than ${MAX_NESTING} deep`);
  return depth + 1;
}

/**
 * The tokens of one source, with what one pass over them finds (or Refused: brackets and `else if` links nested
 * too deep, a private variable, a function declared twice): each bracket's match, each `array<` type's count
 * (the tokens between its last top-level comma and its `>`), the functions, named types (struct, alias),
 * constants and workgroup variables declared.
 */
class Source {
  /** @param {string[]} tokens */
  constructor(tokens) {
    this.t = tokens;
    /** @type {Map<number, number>} ( [ { -> its closing token */
    this.match = new Map();
    /** @type {Map<number, [number | null, number]>} `array` -> [its count's comma or null, its `>`] */
    this.arrays = new Map();
    /** @type {Map<string, [number, boolean]>} name -> [its body's `{`, whether an entry point] */
    this.functions = new Map();
    /** @type {Map<string, [number, number]>} struct or alias name -> its body or target's token range */
    this.types = new Map();
    /** @type {Map<string, [number, number][]>} name -> its initializers' token ranges */
    this.consts = new Map();
    /** @type {[number, number][]} the token ranges of `var<workgroup>` declarations */
    this.workgroup = [];
    /** @type {Map<string, number | null>} */
    this.values = new Map();
    /** @type {Map<string, number>} */
    this.elements = new Map();
    this.scan();
  }

  scan() {
    const t = this.t;
    /** @type {number[]} open ( [ { */
    const brackets = [];
    /** @type {[number, number, number | null][]} open `<` in this statement: [index, bracket depth, last comma at that depth] */
    const angles = [];
    const chains = [0]; // `else if` links of the chain at each brace level
    let links = 0; // the `else if` links of the chains the token is in, each a level of nesting
    /** @type {[string, string, number, number][]} [kind, name, first token of its value or -1, bracket depth] */
    const declaring = [];
    /** @type {Map<number, string>} a struct body's `{` -> the struct's name */
    const structs = new Map();
    let entry = false;
    t.forEach((tok, i) => {
      if (!SCANNED.has(tok)) return;
      const depth = brackets.length;
      const top = declaring[declaring.length - 1];
      const pending = top && top[3] === depth ? top : null;
      if (OPENING.includes(tok)) {
        if (depth + links === MAX_NESTING) throw new Refused(UNBALANCED);
        brackets.push(i);
        if (tok !== '{') return;
        chains.push(0);
        angles.length = 0;
        if (pending && (pending[0] === 'fn' || pending[0] === 'struct')) {
          declaring.pop();
          if (pending[0] === 'struct') {
            structs.set(i, pending[1]);
          } else if (this.functions.has(pending[1])) {
            throw new Refused(`function ${pending[1]} declared twice`);
          } else {
            this.functions.set(pending[1], [i, entry]);
            entry = false;
          }
        }
      } else if (Object.hasOwn(CLOSING, tok)) {
        if (!brackets.length || t[brackets[brackets.length - 1]] !== CLOSING[tok]) throw new Refused(UNBALANCED);
        const opened = /** @type {number} */ (brackets.pop());
        this.match.set(opened, i);
        if (tok !== '}') return;
        links -= /** @type {number} */ (chains.pop());
        angles.length = 0;
        const name = structs.get(opened);
        if (name !== undefined) {
          structs.delete(opened);
          this.types.set(name, [opened + 1, i]);
        }
      } else if (tok === ';') {
        angles.length = 0;
        if (pending && pending[0] === 'workgroup') {
          declaring.pop();
          this.workgroup.push([pending[2], i]);
        } else if (pending && (pending[0] === 'alias' || pending[0] === 'const')) {
          declaring.pop();
          if (pending[2] >= 0 && pending[0] === 'alias') this.types.set(pending[1], [pending[2], i]);
          else if (pending[2] >= 0) this.consts.set(pending[1], [...(this.consts.get(pending[1]) ?? []), [pending[2], i]]);
        }
      } else if (tok === '<') {
        angles.push([i, depth, null]);
      } else if (tok === '>' && angles.length && angles[angles.length - 1][1] === depth) {
        const [start, , comma] = /** @type {[number, number, number | null]} */ (angles.pop());
        if (start && t[start - 1] === 'array') this.arrays.set(start - 1, [comma, i]);
      } else if (tok === ',' && angles.length && angles[angles.length - 1][1] === depth) {
        angles[angles.length - 1][2] = i;
      } else if (tok === '=' && pending && (pending[0] === 'alias' || pending[0] === 'const') && pending[2] < 0) {
        pending[2] = i + 1;
      } else if (tok === 'if') {
        if (i && t[i - 1] === 'else') {
          chains[chains.length - 1] += 1;
          links += 1;
          if (depth + links > MAX_NESTING) throw new Refused(UNBALANCED);
        } else {
          links -= chains[chains.length - 1];
          chains[chains.length - 1] = 0;
        }
      } else if (tok === '@' && ENTRY_STAGES.includes(t[i + 1]) && !depth) {
        entry = true;
      } else if (tok === 'var' && t[i + 1] === '<' && (t[i + 2] === 'private' || t[i + 2] === 'workgroup')) {
        if (t[i + 2] === 'private') throw new Refused('a private variable (var<private>), which no compiled program declares');
        declaring.push(['workgroup', '', i, depth]);
      } else if (DECLARATIONS.includes(tok) && i + 1 < t.length && (!depth || tok === 'const')) {
        declaring.push([tok, t[i + 1], -1, depth]);
      }
    });
    if (brackets.length) throw new Refused(UNBALANCED);
  }

  /**
   * The integer constant expression tokens[first:end] (integer literals, consts, + - * / %, unary -,
   * parentheses, max, min) evaluated as WGSL evaluates it, or null.
   * @param {number} first
   * @param {number} end
   * @param {number} depth
   * @returns {number | null}
   */
  value(first, end, depth) {
    const tokens = this.t.slice(first, end);
    let at = 0;
    /** @param {string} tok */
    const take = (tok) => {
      if (at < tokens.length && tokens[at] === tok) {
        at += 1;
        return true;
      }
      return false;
    };
    /**
     * level 0: + -, level 1: * / %
     * @param {number} level
     * @param {number} d
     * @returns {number | null}
     */
    const binary = (level, d) => {
      let left = level === 0 ? binary(1, d) : unary(d);
      const ops = level === 0 ? ['+', '-'] : ['*', '/', '%'];
      while (left !== null && at < tokens.length && ops.includes(tokens[at])) {
        at += 1;
        left = arithmetic(tokens[at - 1], left, level === 0 ? binary(1, d) : unary(d));
      }
      return left;
    };
    /**
     * @param {number} d
     * @returns {number | null}
     */
    const unary = (d) => {
      let sign = 1;
      while (take('-')) sign = -sign;
      if (at >= tokens.length) return null;
      const tok = tokens[at];
      at += 1;
      let v;
      if (tok === '(') {
        v = binary(0, deeper(d));
        v = take(')') ? v : null;
      } else if ((tok === 'max' || tok === 'min') && take('(')) {
        const inner = deeper(d);
        const a = binary(0, inner);
        const b = take(',') ? binary(0, inner) : null;
        v = a === null || b === null || !take(')') ? null : tok === 'max' ? Math.max(a, b) : Math.min(a, b);
      } else if (INTEGER.test(tok)) {
        v = integer(tok);
      } else {
        v = this.constant(tok, deeper(d));
      }
      return v === null ? null : sign * v;
    };
    const result = binary(0, depth);
    return at === tokens.length ? result : null;
  }

  /**
   * A `const`'s value: the largest of its declarations' (one may shadow another), or null.
   * @param {string} name
   * @param {number} depth
   * @returns {number | null}
   */
  constant(name, depth) {
    if (!this.values.has(name)) {
      const values = (this.consts.get(name) ?? []).map(([first, end]) => this.value(first, end, depth));
      const known = values.length && !values.includes(null);
      this.values.set(name, known ? /** @type {number[]} */ (values).reduce((a, b) => Math.max(a, b)) : null);
    }
    return /** @type {number | null} */ (this.values.get(name));
  }

  /**
   * The elements of the arrays and named types written in tokens[first:end], each array's its count times its
   * element type's.
   * @param {number} first
   * @param {number} end
   * @param {number} [depth]
   */
  count(first, end, depth = 0) {
    let total = 0;
    for (let j = first; j < end; j += 1) {
      const array = this.arrays.get(j);
      if (array) {
        total += this.array(j, deeper(depth));
        j = array[1];
      } else if (this.types.has(this.t[j])) {
        total += this.named(this.t[j], deeper(depth));
      }
    }
    return Math.min(total, COST.max_source_tokens + 1);
  }

  /**
   * @param {number} i
   * @param {number} depth
   */
  array(i, depth) {
    const [comma, close] = /** @type {[number | null, number]} */ (this.arrays.get(i));
    if (comma === null) return 1; // runtime-sized: a binding's, never allocated by the code
    const n = this.value(comma + 1, close, depth);
    if (n === null || n < 1) {
      throw new Refused('an array whose size is not a positive constant of integer literals and consts (+ - * / % max min)');
    }
    const elements = n * Math.max(1, this.count(i + 2, comma, depth));
    if (elements > COST.max_array_elements) throw new Refused(`an array of more than ${count(COST.max_array_elements)} elements`);
    return elements;
  }

  /**
   * The elements of a struct or alias.
   * @param {string} name
   * @param {number} depth
   */
  named(name, depth) {
    if (!this.elements.has(name)) {
      const [first, end] = /** @type {[number, number]} */ (this.types.get(name));
      this.elements.set(name, Math.max(1, this.count(first, end, depth)));
    }
    return /** @type {number} */ (this.elements.get(name));
  }

  /** The source's cost (`costs`), or Refused when it breaks a rule. */
  check() {
    if (this.functions.size > COST.max_functions) throw new Refused(`${count(this.functions.size)} functions, over ${count(COST.max_functions)}`);
    for (const i of this.arrays.keys()) this.array(i, 0); // each array's size, whether or not it is charged to a function
    const { cost, depth, total } = this.costs();
    if (Math.max(0, ...depth.values()) > COST.max_call_depth) throw new Refused(`calls nested more than ${COST.max_call_depth} deep`);
    for (const name of this.functions.keys()) {
      if (/** @type {number} */ (cost.get(name)) > COST.max_function_tokens) {
        throw new Refused(`function ${name} costs more than ${count(COST.max_function_tokens)} tokens, its calls inlined`);
      }
    }
    if (total > COST.max_source_tokens) throw new Refused(TOO_COSTLY);
    return total;
  }

  /**
   * Each function's cost (its tokens, ELEMENT_TOKENS per element of its arrays, and each call's callee's cost)
   * and call depth, and the source's cost: its tokens outside functions and its functions' costs. Each cost
   * stops counting past max_source_tokens.
   * @returns {{cost: Map<string, number>, depth: Map<string, number>, total: number}}
   */
  costs() {
    const bodies = new Map([...this.functions.values()].map(([open]) => [open, /** @type {number} */ (this.match.get(open))]));
    // Outside functions the arrays a compiler initializes, but for workgroup variables: the device's
    // maxComputeWorkgroupStorageSize bounds those, and an engine checks it before a driver compiles.
    const skipped = [...bodies, ...this.workgroup].sort((a, b) => a[0] - b[0]);
    const starts = [0, ...skipped.map(([, last]) => last + 1)];
    const ends = [...skipped.map(([first]) => first), this.t.length];
    const module = starts.reduce((sum, start, k) => sum + this.count(start, ends[k]), 0);
    /** @type {Map<string, number>} */
    const own = new Map();
    /** @type {Map<string, Map<string, number>>} */
    const calls = new Map();
    for (const [name, [open, isEntry]] of this.functions) {
      const close = /** @type {number} */ (bodies.get(open));
      const elements = this.count(open + 1, close) + (isEntry ? module : 0);
      own.set(name, close - open - 1 + ELEMENT_TOKENS * elements);
      /** @type {Map<string, number>} */
      const called = new Map();
      for (let j = open + 1; j < close; j += 1) {
        if (this.functions.has(this.t[j]) && this.t[j + 1] === '(') called.set(this.t[j], (called.get(this.t[j]) ?? 0) + 1);
      }
      calls.set(name, called);
    }
    /** @type {Map<string, number>} */
    const cost = new Map();
    /** @type {Map<string, number>} */
    const depth = new Map();
    const cap = COST.max_source_tokens + 1;
    for (const name of calleesFirst(calls)) {
      let sum = /** @type {number} */ (own.get(name));
      let deepest = 0;
      for (const [g, k] of /** @type {Map<string, number>} */ (calls.get(name))) {
        sum += k * /** @type {number} */ (cost.get(g));
        deepest = Math.max(deepest, /** @type {number} */ (depth.get(g)));
      }
      cost.set(name, Math.min(cap, sum));
      depth.set(name, 1 + deepest);
    }
    let total = this.t.length;
    for (const [open, close] of bodies) total -= close - open - 1;
    for (const c of cost.values()) total += c;
    return { cost, depth, total };
  }
}

/**
 * `a op b` on WGSL's integers (division truncates toward zero), or null past ±LARGEST or by zero.
 * @param {string} op
 * @param {number | null} a
 * @param {number | null} b
 * @returns {number | null}
 */
function arithmetic(op, a, b) {
  if (a === null || b === null || ((op === '/' || op === '%') && b === 0)) return null;
  if (op === '/' || op === '%') {
    const q = Math.trunc(a / b);
    return bounded(op === '/' ? q : a - q * b);
  }
  return bounded(op === '+' ? a + b : op === '-' ? a - b : a * b);
}

/**
 * An integer literal's value (decimal or hex, an `i` or `u` suffix), or null past ±LARGEST.
 * @param {string} literal
 */
function integer(literal) {
  const digits = /** @type {RegExpMatchArray} */ (literal.match(INTEGER))[1];
  return digits.length > 12 ? null : bounded(Number(digits));
}

/** @param {number} v */
function bounded(v) {
  return v >= -LARGEST && v <= LARGEST ? v : null;
}

/**
 * The functions, each after every function it calls (a depth-first post-order, without recursion); a function
 * that calls itself, directly or through others, is refused.
 * @param {Map<string, Map<string, number>>} calls
 * @returns {string[]}
 */
function calleesFirst(calls) {
  /** @type {string[]} */
  const order = [];
  /** @type {Map<string, 'open' | 'done'>} */
  const state = new Map();
  for (const root of calls.keys()) {
    if (state.has(root)) continue;
    state.set(root, 'open');
    const stack = [/** @type {[string, Iterator<string>]} */ ([root, /** @type {Map<string, number>} */ (calls.get(root)).keys()])];
    while (stack.length) {
      const [name, callees] = stack[stack.length - 1];
      const next = callees.next();
      if (next.done) {
        state.set(name, 'done');
        order.push(name);
        stack.pop();
      } else if (state.get(next.value) === 'open') {
        throw new Refused('functions that call themselves (directly or through others)');
      } else if (!state.has(next.value)) {
        state.set(next.value, 'open');
        stack.push([next.value, /** @type {Map<string, number>} */ (calls.get(next.value)).keys()]);
      }
    }
  }
  return order;
}
