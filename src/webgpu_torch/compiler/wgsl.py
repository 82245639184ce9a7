"""Reading our WGSL kernels: specialisation, binding tables and uniform-struct packing.

A kernel file is WGSL; it may pull in a shared helper file with a `//! include name.wgsl` line, which is
replaced by that file's text. Compile-time parameters come in two forms:
  * `override NAME: T = default;` — pipeline-overridable constants, set per pipeline (flags, workgroup sizes);
  * `const NAME: T = default;` — replaced by value here, for what WGSL requires to be a true constant
    (function-scope array lengths such as a thread's register tile);
  * `alias NAME = type;` — replaced by another type here, for kernels that serve several dtypes.
The substitution touches only the value of a named declaration; there is no template language. Kernel files
hold no `enable` directive: a kernel declares the optional features it needs (KernelSpec.requires) and
`enables` writes the directives WGSL requires for them.
A helper may have a subgroup twin (`row.wgsl` and `row.subgroups.wgsl`: the same functions written with
subgroup operations); `kernel_source(file, subgroups=True)` includes the twins instead, for the kernel that
the builder offers where the device has subgroups.

The uniform struct `Params` is declared once, in the kernel; its byte layout is derived here from WGSL's
uniform-address-space layout rules, so the Python side can never disagree with the shader about offsets.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources

from ..format.program import F16, FEATURES, SCALAR_FORMAT, SUBGROUP_MATRIX, Patch, UniformField, UniformLayout
from ..format.symbolic import Expr

_CONST = re.compile(r"\bconst\s+(\w+)\s*:\s*(\w+)\s*=\s*[^;]+;")
_ALIAS = re.compile(r"\balias\s+(\w+)\s*=\s*[^;]+;")
_COMMENT = re.compile(r"//[^\n]*")
_BINDING = re.compile(
    r"@group\((\d+)\)\s*@binding\((\d+)\)\s*var<(\w+)(?:\s*,\s*(\w+))?>\s*(\w+)\s*:"
)

_INCLUDE = re.compile(r"^//! include (\S+)$", re.MULTILINE)


SUBGROUPS = "subgroups"  # the optional WebGPU feature (and WGSL extension) of subgroup operations
EXTENSIONS = {F16: "f16", SUBGROUPS: SUBGROUPS, SUBGROUP_MATRIX: "chromium_experimental_subgroup_matrix"}


def enables(features) -> str:
    """The `enable` directives a source needs for the optional WebGPU `features` its kernel declares, in the
    format's order of features."""
    unknown = set(features) - set(EXTENSIONS)
    if unknown:
        raise ValueError(f"no WGSL extension is known for the features {sorted(unknown)}")
    return "".join(f"enable {EXTENSIONS[f]};\n" for f in FEATURES if f in features)


@cache
def kernel_files() -> dict:
    """Every kernel file that ships with the op families, by name: `ops/<stem>.wgsl`, or inside a family's
    folder (`ops/gemm/gemv.wgsl`). Names are unique across folders, so a kernel or an include names a file
    by its name alone."""
    found, folders = {}, [resources.files("webgpu_torch.compiler.ops")]
    while folders:
        for entry in folders.pop().iterdir():
            if entry.is_dir():
                folders.append(entry)
            elif entry.name.endswith(".wgsl"):
                if entry.name in found:
                    raise RuntimeError(f"two kernel files are named {entry.name}")
                found[entry.name] = entry
    return found


def _shipped(filename: str):
    return kernel_files()[filename]


def subgroup_twin(filename: str) -> str:
    """The name of a helper's subgroup twin: row.wgsl -> row.subgroups.wgsl (which may not exist)."""
    return filename.removesuffix(".wgsl") + f".{SUBGROUPS}.wgsl"


@cache
def kernel_source(filename: str, subgroups: bool = False) -> str:
    """The text of a kernel file that ships beside the op modules (`kernel_files`), with each
    `//! include other.wgsl` line replaced by that file's text (a shared helper such as activation.wgsl).

    With `subgroups`, a helper that has a subgroup twin (`subgroup_twin`: the same functions written with
    subgroup operations) is included as its twin instead."""
    def include(m: re.Match) -> str:
        name = m.group(1)
        if subgroups and subgroup_twin(name) in kernel_files():
            name = subgroup_twin(name)
        return kernel_source(name, subgroups)

    return _INCLUDE.sub(include, _shipped(filename).read_text())


def without_comments(source: str) -> str:
    """`source` as a program carries it: its comments and blank lines dropped (WGSL has no string literals, so
    every `//` opens a comment to the end of its line; the kernel files keep their documentation)."""
    lines = (line.rstrip() for line in _COMMENT.sub("", source).splitlines())
    return "".join(f"{line}\n" for line in lines if line)


def specialize(source: str, consts: dict[str, int | float | bool | str]) -> str:
    """Set the values of named `const` declarations (numbers) and `alias` declarations (type names, as
    strings); every name must exist in `source`."""
    missing = set(consts)

    def replace_const(m: re.Match) -> str:
        name, ty = m.group(1), m.group(2)
        if name not in consts:
            return m.group(0)
        missing.discard(name)
        return f"const {name}: {ty} = {_literal(consts[name], ty)};"

    def replace_alias(m: re.Match) -> str:
        name = m.group(1)
        if name not in consts:
            return m.group(0)
        missing.discard(name)
        return f"alias {name} = {consts[name]};"

    out = _ALIAS.sub(replace_alias, _CONST.sub(replace_const, source))
    if missing:
        raise KeyError(f"kernel has no const declaration for {sorted(missing)}")
    return out


def _literal(value: int | float | bool, ty: str) -> str:
    if ty == "bool":
        return "true" if value else "false"
    if ty == "u32":
        return f"{int(value)}u"
    if ty == "i32":
        return f"{int(value)}i"
    if ty == "f32":
        return f"{float(value)!r}f"
    raise TypeError(f"cannot specialise a const of type {ty}")


@dataclass(frozen=True)
class Binding:
    index: int
    name: str
    kind: str  # "read" | "read_write" | "uniform"


def bindings(source: str) -> tuple[Binding, ...]:
    """The kernel's bind-group-0 entries, in binding order; they must be numbered 0..n-1."""
    found = []
    for group, index, space, access, name in _BINDING.findall(source):
        if group != "0":
            raise ValueError(f"binding {name}: only @group(0) is used")
        if space == "uniform":
            kind = "uniform"
        elif space == "storage":
            kind = access or "read"
        else:
            raise ValueError(f"binding {name}: unsupported address space {space}")
        found.append(Binding(int(index), name, kind))
    found.sort(key=lambda b: b.index)
    if [b.index for b in found] != list(range(len(found))):
        raise ValueError(f"bindings must be numbered 0..n-1, got {[b.index for b in found]}")
    return tuple(found)


_WORKGROUP_SIZE = re.compile(r"@workgroup_size\(([^)]*)\)\s*fn\s+(\w+)\s*\(")
_DECL = re.compile(r"\b(?:const|override)\s+(\w+)\s*(?::\s*\w+)?\s*=\s*([^;]+);")
_ALIAS_DECL = re.compile(r"\balias\s+(\w+)\s*=\s*([^;]+?)\s*;")
_WORKGROUP_VAR = re.compile(r"\bvar<workgroup>\s+(\w+)\s*:\s*([^;]+?)\s*;")
_FN = re.compile(r"\bfn\s+(\w+)\s*\(")
_SCALAR_BYTES = {"f16": 2, "f32": 4, "i32": 4, "u32": 4, "bool": 4}


@dataclass(frozen=True)
class EntryPoint:
    """What one workgroup of an entry point takes: declared in the artifact's header (`workgroup_size`,
    `workgroup_bytes`) so that a runtime checks them against its device's limits without reading WGSL."""

    workgroup_size: tuple[int, int, int]
    workgroup_bytes: int  # workgroup variables the entry point reaches, each rounded up to 16 bytes


def entry_point(source: str, entry: str, overrides: dict[str, float]) -> EntryPoint:
    """`entry`'s @workgroup_size and the bytes of the workgroup variables the functions it calls use, each
    size evaluated from the module's const and override declarations with the pipeline's override values."""
    return _entry_point(source, entry, tuple(sorted(overrides.items())))


@lru_cache(maxsize=4096)
def _entry_point(source: str, entry: str, overrides: tuple[tuple[str, float], ...]) -> EntryPoint:
    """entry_point, once per kernel: a model's GEMMs and their tuning options share a few sources."""
    overrides = dict(overrides)
    source = re.sub(r"//[^\n]*", "", source)
    sizes = {name: args for args, name in _WORKGROUP_SIZE.findall(source)}
    if entry not in sizes:
        raise ValueError(f"no @workgroup_size on entry point {entry}")
    value = _Constants(source, overrides)
    dims = [int(value(a)) for a in sizes[entry].split(",") if a.strip()]
    if not 1 <= len(dims) <= 3 or min(dims) < 1:
        raise ValueError(f"entry point {entry}: bad @workgroup_size({sizes[entry]})")
    reached = _reached(source, entry)
    total = 0
    for name, ty in _WORKGROUP_VAR.findall(source):
        if name in reached:
            total += -(-_type_bytes(ty.replace(" ", ""), value) // 16) * 16
    return EntryPoint((*dims, *[1] * (3 - len(dims))), total)


def constant(source: str, name: str, overrides: dict[str, float] | None = None) -> int:
    """The value of the module's const or override declaration `name` (overrides applied)."""
    return int(_Constants(re.sub(r"//[^\n]*", "", source), overrides or {}).name(name))


class _Constants:
    """Values of the integer (and bool) const and override declarations of a module: the pipeline's override
    value where it sets one, else the declaration's expression, evaluated (+ - * / %, max, min, select)."""

    def __init__(self, source: str, overrides: dict[str, float]):
        self.exprs = dict(_DECL.findall(source))
        self.aliases = dict(_ALIAS_DECL.findall(source))
        self.values: dict[str, float] = dict(overrides)

    def __call__(self, text: str):
        import ast

        py = re.sub(r"\b(\d+)[uif]\b", r"\1", text.strip())
        py = py.replace("&&", " and ").replace("||", " or ").replace("/", "//")
        py = re.sub(r"!(?!=)", " not ", py).replace("true", "True").replace("false", "False")
        return self._eval(ast.parse(py, mode="eval").body)

    def _eval(self, node):
        import ast
        import operator

        ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
               ast.Mod: operator.mod, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
               ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](self._eval(node.left), self._eval(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
            v = self._eval(node.operand)
            return -v if isinstance(node.op, ast.USub) else not v
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in ops:
            return ops[type(node.ops[0])](self._eval(node.left), self._eval(node.comparators[0]))
        if isinstance(node, ast.BoolOp):
            values = [self._eval(v) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min", "select"):
            args = [self._eval(a) for a in node.args]
            return {"max": max, "min": min, "select": lambda f, t, c: t if c else f}[node.func.id](*args)
        raise ValueError(f"cannot evaluate {ast.unparse(node)} at compile time")

    def name(self, name: str):
        if name not in self.values:
            if name not in self.exprs:
                raise ValueError(f"{name} is not a const or override declaration")
            self.values[name] = self(self.exprs.pop(name))  # popped first: a cycle fails as undeclared
        return self.values[name]


def _type_bytes(ty: str, value: _Constants) -> int:
    """The size of a workgroup variable's type: a scalar, vecN<T>, array<T, n> (n a const expression, T any of
    these) or an alias of one."""
    return _size_align(ty, value)[0]


def _size_align(ty: str, value: _Constants) -> tuple[int, int]:
    """(size, alignment) of a type in bytes, by WGSL's memory layout rules."""
    if ty in _SCALAR_BYTES:
        return _SCALAR_BYTES[ty], _SCALAR_BYTES[ty]
    m = re.fullmatch(r"vec([234])<(\w+)>", ty)
    if m:
        n, item = int(m.group(1)), _SCALAR_BYTES[m.group(2)]
        return item * n, item * (2 if n == 2 else 4)
    if ty.startswith("array<") and ty.endswith(">"):
        element, count = _split_last_comma(ty[len("array<"):-1])
        size, align = _size_align(element, value)
        return -(-size // align) * align * int(value(count)), align
    if ty in value.aliases:
        return _size_align(value.aliases[ty].replace(" ", ""), value)
    raise ValueError(f"workgroup variable of type {ty}: not a type this reader sizes")


def _split_last_comma(text: str) -> tuple[str, str]:
    """`text` split at its last comma outside angle brackets and parentheses."""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {">": 1, ")": 1, "<": -1, "(": -1}.get(text[i], 0)
        if text[i] == "," and depth == 0:
            return text[:i], text[i + 1:]
    raise ValueError(f"array<{text}>: no element count")


def _reached(source: str, entry: str) -> set[str]:
    """The identifiers in the bodies of `entry` and every function it calls, transitively."""
    bodies = {}
    for m in _FN.finditer(source):
        start = source.index("{", m.end())
        depth, i = 0, start
        while True:
            depth += {"{": 1, "}": -1}.get(source[i], 0)
            if depth == 0:
                break
            i += 1
        bodies[m.group(1)] = set(re.findall(r"\b\w+\b", source[start:i]))
    seen, todo, names = set(), [entry], set()
    while todo:
        fn = todo.pop()
        if fn in seen:
            continue
        seen.add(fn)
        names |= bodies[fn]
        todo += [f for f in bodies[fn] if f in bodies]
    return names


# (size, alignment) of the types a Params struct may hold, in the uniform address space.
_SCALARS = {"u32", "i32", "f32"}
_TYPE_LAYOUT = {
    **{t: (4, 4) for t in _SCALARS},
    **{f"vec2<{t}>": (8, 8) for t in _SCALARS},
    **{f"vec4<{t}>": (16, 16) for t in _SCALARS},
}
_ARRAY = re.compile(r"array<\s*(vec4<(\w+)>)\s*,\s*(\d+)\s*>")


def _fields(body: str) -> list[tuple[str, str]]:
    """`name: type` pairs of a struct body, split at the commas outside angle brackets."""
    parts, depth, cur = [], 0, []
    for ch in body:
        depth += (ch == "<") - (ch == ">")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    out = []
    for part in (p.strip() for p in parts):
        if part:
            name, ty = part.split(":", 1)
            out.append((name.strip(), re.sub(r"\s+", "", ty)))
    return out


def uniform_layout(source: str, struct_name: str = "Params") -> UniformLayout:
    """The byte layout of the struct `struct_name` that `source` declares, by WGSL's uniform layout rules."""
    m = re.search(rf"struct\s+{struct_name}\s*{{([^}}]*)}}", source)
    if not m:
        raise ValueError(f"kernel declares no struct {struct_name}")
    body = re.sub(r"//[^\n]*", "", m.group(1))
    fields, offset = [], 0
    for name, ty in _fields(body):
        arr = _ARRAY.fullmatch(ty)
        if arr:
            size, align, scalar, count = 16 * int(arr.group(3)), 16, arr.group(2), 4 * int(arr.group(3))
        elif ty in _TYPE_LAYOUT:
            size, align = _TYPE_LAYOUT[ty]
            scalar, count = ty[5:-1] if "<" in ty else ty, size // 4
        else:
            raise ValueError(f"{struct_name}.{name}: type {ty} is not supported in a uniform struct")
        offset = -(-offset // align) * align
        fields.append(UniformField(name, offset, scalar, count))
        offset += size
    return UniformLayout(tuple(fields), -(-offset // 16) * 16)


def pack(layout: UniformLayout, values: dict[str, object]) -> tuple[bytes, tuple[Patch, ...]]:
    """Pack `values` (every field by name; vectors and arrays as sequences, zero-padded). A value that is a
    dynamic size (symbolic.Expr) is packed as 0 and returned as a Patch for the runtime to fill in."""
    names = {f.name for f in layout.fields}
    if set(values) != names:
        raise KeyError(f"uniform values do not match Params: missing {sorted(names - set(values))}, "
                       f"unknown {sorted(set(values) - names)}")
    buf = bytearray(layout.size)
    patches = []
    for f in layout.fields:
        v = values[f.name]
        items = list(v) if isinstance(v, (list, tuple)) else [v]
        if len(items) > f.count:
            raise ValueError(f"Params.{f.name} holds {f.count} values, got {len(items)}")
        items += [0] * (f.count - len(items))
        for i, x in enumerate(items):
            if isinstance(x, Expr):
                patches.append(Patch(f.offset + 4 * i, f.scalar, x))
                items[i] = 0
        struct.pack_into("<" + SCALAR_FORMAT[f.scalar][1] * f.count, buf, f.offset, *items)
    return bytes(buf), tuple(patches)

