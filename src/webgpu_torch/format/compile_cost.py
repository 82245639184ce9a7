"""What a WGSL source costs a shader compiler, counted on its text before any engine sees it: docs/artifact.md,
Compile cost, states the rules and why each bound (limits.json's) is where it is, measured;
js/src/compile_cost.js counts alike, rule for rule and message for message.

A runtime never parses WGSL: it counts tokens. Outside line comments a source must be ASCII without block
comments or private variables; a token is a run of letters, digits and `_`, or any other character that is
not blank. Drivers inline every call (lavapipe's LLVM does), so what a function costs to compile is its tokens,
plus ELEMENT_TOKENS for each element of the arrays its body names (each is zero-initialized element by
element), plus the cost of each function it calls, once per call; an entry point also pays for the arrays
declared outside functions but in workgroup variables (the device bounds those). That cost, per function and
summed over the source, and the nesting every parser recurses on (brackets, statements, `else if` links,
calls, named types and constants) are bounded.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections import Counter

from .limits import LIMITS

MAX_SOURCE_CHARS = LIMITS["max_source_chars"]
MAX_NESTING = LIMITS["max_nesting"]  # (), [] and {}; and types and constants defined through one another
MAX_STATEMENT_TOKENS = LIMITS["max_statement_tokens"]  # between two of ; { } (ours: 147 at most)
COST = LIMITS["compile_cost"]
ELEMENT_TOKENS = COST["array_element_tokens"]  # what an array element costs, as tokens

LINE_COMMENT = re.compile(r"//[^\n]*")
TOKEN = re.compile(r"[A-Za-z0-9_]+|[^ \t\n\v\f\rA-Za-z0-9_]")
INTEGER = re.compile(r"(0[xX][0-9a-fA-F]+|[0-9]+)[iu]?")
ENTRY_STAGES = ("compute", "vertex", "fragment")
DECLARATIONS = ("fn", "struct", "alias", "const")
OPENING = ("(", "[", "{")
CLOSING = {")": "(", "]": "[", "}": "{"}
SCANNED = frozenset((*OPENING, *CLOSING, ";", "<", ">", ",", "=", "if", "@", "var", *DECLARATIONS))
UNBALANCED = f"brackets nested deeper than {MAX_NESTING} (an `else if` link counting as one) or unbalanced"
TOO_COSTLY = f"more than {COST['max_source_tokens']:,} tokens, its functions' calls inlined"
LARGEST = 2**32  # a constant beyond ±LARGEST is no array size (WGSL's integers are 32 bits)


def problem(source: str) -> str | None:
    """Why `source` is refused (a phrase for "source i: ..."), or None."""
    return _scanned(source)[0]


def cost(source: str) -> int:
    """What compiling an accepted `source` costs, as tokens with its functions' calls inlined."""
    return _scanned(source)[1]


def _scanned(source: str) -> tuple[str | None, int]:
    """`source`'s verdict and cost. A loaded program is checked by the reader, its Session and its Executor:
    each source's are kept, by its digest."""
    key = hashlib.sha1(source.encode("utf-8", "surrogatepass")).digest()
    if key not in _SCANNED:
        if len(_SCANNED) >= 4096:
            _SCANNED.clear()
        _SCANNED[key] = _scan(source)
    return _SCANNED[key]


_SCANNED: dict[bytes, tuple[str | None, int]] = {}


def _scan(source: str) -> tuple[str | None, int]:
    if len(source) > MAX_SOURCE_CHARS:
        return f"{len(source):,} characters, over {MAX_SOURCE_CHARS:,}", 0
    code = LINE_COMMENT.sub("", source)
    if not code.isascii():
        return "code (outside line comments) that is not ASCII", 0
    if "/*" in code or "*/" in code:
        return "a block comment", 0
    if not _statements_ok(code):
        return f"a statement of more than {MAX_STATEMENT_TOKENS:,} tokens", 0
    tokens = TOKEN.findall(code)
    try:
        if len(tokens) > COST["max_source_tokens"]:  # a bound on its cost that needs no scan
            raise Refused(TOO_COSTLY)
        return None, _Source(tokens).check()
    except Refused as e:
        return str(e), 0


class Refused(Exception):
    """A rule the source breaks."""


def _statements_ok(code: str) -> bool:
    """Whether every statement (the text between two of `;`, `{`, `}`) holds at most MAX_STATEMENT_TOKENS
    tokens. Engines parse an expression recursively; one of 200,000 terms crashes some."""
    return all(len(text) <= MAX_STATEMENT_TOKENS or len(TOKEN.findall(text)) <= MAX_STATEMENT_TOKENS
               for text in re.split(r"[;{}]", code))


class _Source:
    """The tokens of one source, with what one pass over them finds (or Refused: brackets and `else if` links
    nested too deep, a private variable, a function declared twice): each bracket's match, each `array<`
    type's count (the tokens between its last top-level comma and its `>`), the functions, named types
    (struct, alias), constants and workgroup variables declared."""

    def __init__(self, tokens: list[str]):
        self.t = tokens
        self.match: dict[int, int] = {}  # ( [ { -> its closing token
        self.arrays: dict[int, tuple[int | None, int]] = {}  # `array` -> (its count's comma or None, its `>`)
        self.functions: dict[str, tuple[int, bool]] = {}  # name -> (its body's `{`, whether an entry point)
        self.types: dict[str, tuple[int, int]] = {}  # struct or alias name -> its body or target's token range
        self.consts: dict[str, list[tuple[int, int]]] = {}  # name -> its initializers' token ranges
        self.workgroup: list[tuple[int, int]] = []  # the token ranges of `var<workgroup>` declarations
        self.values: dict[str, int | None] = {}
        self.elements: dict[str, int] = {}
        self._scan()

    def _scan(self) -> None:
        t, n = self.t, len(self.t)
        brackets: list[int] = []  # open ( [ {
        angles: list[list] = []  # open `<` in this statement: [index, bracket depth, last comma at that depth]
        chains = [0]  # `else if` links of the chain at each brace level
        links = 0  # the `else if` links of the chains the token is in, each a level of nesting
        declaring: list[list] = []  # [kind, name, first token of its value or -1, bracket depth]
        structs: dict[int, str] = {}  # a struct body's `{` -> the struct's name
        entry = False
        for i in [i for i, tok in enumerate(t) if tok in SCANNED]:
            tok, depth = t[i], len(brackets)
            pending = declaring[-1] if declaring and declaring[-1][3] == depth else None
            if tok in OPENING:
                if depth + links == MAX_NESTING:
                    raise Refused(UNBALANCED)
                brackets.append(i)
                if tok == "{":
                    chains.append(0)
                    angles.clear()
                    if pending and pending[0] in ("fn", "struct"):
                        declaring.pop()
                        if pending[0] == "struct":
                            structs[i] = pending[1]
                        elif pending[1] in self.functions:
                            raise Refused(f"function {pending[1]} declared twice")
                        else:
                            self.functions[pending[1]], entry = (i, entry), False
            elif tok in CLOSING:
                if not brackets or t[brackets[-1]] != CLOSING[tok]:
                    raise Refused(UNBALANCED)
                opened = brackets.pop()
                self.match[opened] = i
                if tok == "}":
                    links -= chains.pop()
                    angles.clear()
                    if opened in structs:
                        self.types[structs.pop(opened)] = (opened + 1, i)
            elif tok == ";":
                angles.clear()
                if pending and pending[0] == "workgroup":
                    declaring.pop()
                    self.workgroup.append((pending[2], i))
                elif pending and pending[0] in ("alias", "const"):
                    declaring.pop()
                    if pending[2] >= 0 and pending[0] == "alias":
                        self.types[pending[1]] = (pending[2], i)
                    elif pending[2] >= 0:
                        self.consts.setdefault(pending[1], []).append((pending[2], i))
            elif tok == "<":
                angles.append([i, depth, None])
            elif tok == ">" and angles and angles[-1][1] == depth:
                start, _, comma = angles.pop()
                if start and t[start - 1] == "array":
                    self.arrays[start - 1] = (comma, i)
            elif tok == "," and angles and angles[-1][1] == depth:
                angles[-1][2] = i
            elif tok == "=" and pending and pending[0] in ("alias", "const") and pending[2] < 0:
                pending[2] = i + 1
            elif tok == "if":
                if i and t[i - 1] == "else":
                    chains[-1] += 1
                    links += 1
                    if depth + links > MAX_NESTING:
                        raise Refused(UNBALANCED)
                else:
                    links -= chains[-1]
                    chains[-1] = 0
            elif tok == "@" and i + 1 < n and t[i + 1] in ENTRY_STAGES and not depth:
                entry = True
            elif tok == "var" and i + 2 < n and t[i + 1] == "<" and t[i + 2] in ("private", "workgroup"):
                if t[i + 2] == "private":
                    raise Refused("a private variable (var<private>), which no compiled program declares")
                declaring.append(["workgroup", "", i, depth])
            elif tok in DECLARATIONS and i + 1 < n and (not depth or tok == "const"):
                declaring.append([tok, t[i + 1], -1, depth])
        if brackets:
            raise Refused(UNBALANCED)
        self.marks = [j for j, tok in enumerate(t) if tok == "array" or tok in self.types]

    # -- constants and the elements of types -----------------------------------------------------------------
    # Each recursion (a parenthesis, max or min, a constant named, an array's element type, a named type) goes
    # one level deeper; past MAX_NESTING levels the source is refused, so no runtime's stack is at risk.
    def value(self, first: int, end: int, depth: int) -> int | None:
        """The integer constant expression tokens[first:end] (integer literals, consts, + - * / %, unary -,
        parentheses, max, min) evaluated as WGSL evaluates it, or None."""
        tokens, at = self.t[first:end], 0

        def take(tok: str) -> bool:
            nonlocal at
            if at < len(tokens) and tokens[at] == tok:
                at += 1
                return True
            return False

        def binary(level: int, depth: int) -> int | None:  # level 0: + -, level 1: * / %
            nonlocal at
            left = binary(1, depth) if level == 0 else unary(depth)
            ops = ("+", "-") if level == 0 else ("*", "/", "%")
            while left is not None and at < len(tokens) and tokens[at] in ops:
                at += 1
                left = _arithmetic(tokens[at - 1], left, binary(1, depth) if level == 0 else unary(depth))
            return left

        def unary(depth: int) -> int | None:
            nonlocal at
            sign = 1
            while take("-"):
                sign = -sign
            if at >= len(tokens):
                return None
            tok, at = tokens[at], at + 1
            if tok == "(":
                v = binary(0, _deeper(depth))
                v = v if take(")") else None
            elif tok in ("max", "min") and take("("):
                inner = _deeper(depth)
                a = binary(0, inner)
                b = binary(0, inner) if take(",") else None
                v = None if a is None or b is None or not take(")") else max(a, b) if tok == "max" else min(a, b)
            elif INTEGER.fullmatch(tok):
                v = _integer(tok)
            else:
                v = self.constant(tok, _deeper(depth))
            return None if v is None else sign * v

        result = binary(0, depth)
        return result if at == len(tokens) else None

    def constant(self, name: str, depth: int) -> int | None:
        """A `const`'s value: the largest of its declarations' (one may shadow another), or None."""
        if name not in self.values:
            values = [self.value(first, end, depth) for first, end in self.consts.get(name, [])]
            self.values[name] = max(values) if values and None not in values else None
        return self.values[name]

    def count(self, first: int, end: int, depth: int = 0) -> int:
        """The elements of the arrays and named types written in tokens[first:end], each array's its count
        times its element type's."""
        total, k = 0, bisect.bisect_left(self.marks, first)
        while k < len(self.marks) and self.marks[k] < end:
            j = self.marks[k]
            if j in self.arrays:
                total += self.array(j, _deeper(depth))
                k = bisect.bisect_right(self.marks, self.arrays[j][1])
                continue
            if self.t[j] in self.types:
                total += self.named(self.t[j], _deeper(depth))
            k += 1
        return min(total, COST["max_source_tokens"] + 1)

    def array(self, i: int, depth: int) -> int:
        comma, close = self.arrays[i]
        if comma is None:  # runtime-sized: a binding's, never allocated by the code
            return 1
        n = self.value(comma + 1, close, depth)
        if n is None or n < 1:
            raise Refused("an array whose size is not a positive constant of integer literals and consts "
                          "(+ - * / % max min)")
        elements = n * max(1, self.count(i + 2, comma, depth))
        if elements > COST["max_array_elements"]:
            raise Refused(f"an array of more than {COST['max_array_elements']:,} elements")
        return elements

    def named(self, name: str, depth: int) -> int:
        """The elements of a struct or alias."""
        if name not in self.elements:
            first, end = self.types[name]
            self.elements[name] = max(1, self.count(first, end, depth))
        return self.elements[name]

    # -- functions -------------------------------------------------------------------------------------------
    def check(self) -> int:
        """The source's cost (`costs`), or Refused when it breaks a rule."""
        if len(self.functions) > COST["max_functions"]:
            raise Refused(f"{len(self.functions):,} functions, over {COST['max_functions']:,}")
        for i in self.arrays:  # each array's size, whether or not it is charged to a function
            self.array(i, 0)
        cost, depth, total = self.costs()
        if max(depth.values(), default=0) > COST["max_call_depth"]:
            raise Refused(f"calls nested more than {COST['max_call_depth']} deep")
        for name in self.functions:
            if cost[name] > COST["max_function_tokens"]:
                raise Refused(f"function {name} costs more than {COST['max_function_tokens']:,} tokens, its "
                              "calls inlined")
        if total > COST["max_source_tokens"]:
            raise Refused(TOO_COSTLY)
        return total

    def costs(self) -> tuple[dict[str, int], dict[str, int], int]:
        """Each function's cost (its tokens, ELEMENT_TOKENS per element of its arrays, and each call's callee's
        cost) and call depth, and the source's cost: its tokens outside functions and its functions' costs.
        Each cost stops counting past max_source_tokens."""
        bodies = {open_: self.match[open_] for open_, _ in self.functions.values()}
        # Outside functions the arrays a compiler initializes, but for workgroup variables: the device's
        # maxComputeWorkgroupStorageSize bounds those, and an engine checks it before a driver compiles.
        skipped = sorted([*bodies.items(), *self.workgroup])
        starts = [0] + [last + 1 for _, last in skipped]
        module = sum(self.count(start, end) for start, end in zip(starts, [f for f, _ in skipped] + [len(self.t)],
                                                                  strict=True))
        called = [j for j, (tok, after) in enumerate(zip(self.t, self.t[1:], strict=False))
                  if after == "(" and tok in self.functions]
        own, calls = {}, {}
        for name, (open_, is_entry) in self.functions.items():
            close = bodies[open_]
            elements = self.count(open_ + 1, close) + (module if is_entry else 0)
            own[name] = close - open_ - 1 + ELEMENT_TOKENS * elements
            at = called[bisect.bisect_left(called, open_):bisect.bisect_left(called, close)]
            calls[name] = Counter(self.t[j] for j in at)
        cost, depth = {}, {}
        cap = COST["max_source_tokens"] + 1
        for name in _callees_first(calls):
            cost[name] = min(cap, own[name] + sum(k * cost[g] for g, k in calls[name].items()))
            depth[name] = 1 + max((depth[g] for g in calls[name]), default=0)
        total = len(self.t) - sum(close - open_ - 1 for open_, close in bodies.items()) + sum(cost.values())
        return cost, depth, total


def _deeper(depth: int) -> int:
    if depth >= MAX_NESTING:
        raise Refused(f"types, constants or expressions nested more than {MAX_NESTING} deep")
    return depth + 1


def _arithmetic(op: str, a: int | None, b: int | None) -> int | None:
    """`a op b` on WGSL's integers (division truncates toward zero), or None past ±LARGEST or by zero."""
    if a is None or b is None or (op in "/%" and b == 0):
        return None
    if op in "/%":
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        return _bounded(q if op == "/" else a - q * b)
    return _bounded(a + b if op == "+" else a - b if op == "-" else a * b)


def _integer(literal: str) -> int | None:
    """An integer literal's value (decimal or hex, an `i` or `u` suffix), or None past ±LARGEST."""
    digits = INTEGER.fullmatch(literal).group(1)
    if len(digits) > 12:
        return None
    return _bounded(int(digits, 16) if digits[:2] in ("0x", "0X") else int(digits))


def _bounded(v: int) -> int | None:
    return v if -LARGEST <= v <= LARGEST else None


def _callees_first(calls: dict[str, Counter]) -> list[str]:
    """The functions, each after every function it calls (a depth-first post-order, without recursion); a
    function that calls itself, directly or through others, is refused."""
    order, state = [], {}
    for root in calls:
        if root in state:
            continue
        state[root] = "open"
        stack = [(root, iter(calls[root]))]
        while stack:
            name, callees = stack[-1]
            g = next(callees, None)
            if g is None:
                state[name] = "done"
                order.append(name)
                stack.pop()
            elif state.get(g) == "open":
                raise Refused("functions that call themselves (directly or through others)")
            elif g not in state:
                state[g] = "open"
                stack.append((g, iter(calls[g])))
    return order
