"""The frontend: a torch.export ExportedProgram into the plain `Graph` that lowering consumes.

Steps: decompose to core ATen (keeping whole every op the registry has a kernel for), fold subgraphs that
depend only on constants by running them in torch, drop dead nodes, and normalise every call's arguments by its
schema. Dynamic dimensions (torch.export `Dim`s) become `symbolic.Expr`s: every SymInt in a shape or an
argument is replaced by its expression, and the nodes that only compute sizes (sym_size, operator.add, …)
disappear into those values. This is the only module of the compiler that needs torch.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind

from ..format import symbolic, tree
from ..format.errors import UnsupportedError
from ..format.symbolic import Expr, Symbol
from .graph import Graph, Node, Ref, StateSpec, TensorMeta, drop_dead, refs_in, values_in
from .ops import OPS, REFUSED
from .passes.quantized_weights import CODE_DTYPES, KEPT_WHOLE

# Folding a constant subgraph must not inflate the artifact. A folded value is stored as the smallest tensor
# it is a broadcast of (a causal mask expanded over batch and heads is stored as [S, S] and re-expanded by a
# view), and kept only when that is no larger than its constant inputs together (or tiny); larger ones stay
# as ops. Ops that read tensors only for their shape (full_like, ...) and creation ops (arange, full, ...)
# always fold: no kernel runs them.
FOLD_TINY_ELEMENTS = 1 << 12
FOLD_MAX_ELEMENTS = 1 << 26  # a value this large is not even computed at compile time
SHAPE_ONLY = ("full_like", "zeros_like", "ones_like", "empty_like", "new_full", "new_zeros", "new_ones",
              "new_empty", "new_empty_strided")
UNINITIALIZED = ("empty", "empty_like", "new_empty", "empty_strided", "empty_permuted",
                 "new_empty_strided")  # folded as zeros
# Ops whose meaning depends on how torch lays an input out in memory, not only on its values (op -> that
# argument): the node also gets "<argument>_storage_order", the input's dims from outermost to innermost in
# torch's memory, or None where the input is not the whole of a dense storage of its own.
STORAGE_READERS = {"aten.as_strided.default": "self", "aten.as_strided_scatter.default": "self"}


# Nodes that only assert facts about sizes (export has already checked them for the whole range).
SIZE_ASSERTIONS = ("_assert_scalar", "sym_constrain_range", "sym_constrain_range_for_size", "_assert_async")


def import_program(ep: ExportedProgram) -> Graph:
    ep = ep.run_decompositions(_decomposition_table())
    sig = ep.graph_signature
    sizes = _Sizes(ep)
    constants: dict[str, torch.Tensor] = {}
    inputs: list[tuple[str, TensorMeta]] = []
    problems: list[str] = []
    baked: list[Any] = []  # per user input leaf: _TENSOR, or the non-tensor value export fixed it to
    mutated = {s.target: s for s in sig.output_specs if s.kind == OutputKind.BUFFER_MUTATION}
    states: list[StateSpec] = []
    for spec in sig.input_specs:
        name = spec.arg.name
        if spec.kind == InputKind.USER_INPUT:
            val = _placeholder_val(ep, name)
            if isinstance(val, torch.Tensor):
                problem = _tensor_problem(val, f"input {name!r}")
                if problem:
                    problems.append(problem)
                else:
                    inputs.append((name, sizes.meta(val, f"input {name!r}")))
                baked.append(_TENSOR)
            elif val is None or isinstance(val, (bool, int, float, str)):
                baked.append(val)
            else:
                problems.append(f"  input {name!r}: a {type(val).__name__}; inputs are tensors or "
                                "None/bool/int/float/str values (fixed at export)")
        elif spec.kind == InputKind.BUFFER and spec.target in mutated:
            states.append(StateSpec(spec.target, name, sizes.meta(_placeholder_val(ep, name), f"buffer {name!r}")))
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            constants[name] = ep.state_dict[spec.target] if spec.target in ep.state_dict else ep.constants[
                spec.target]
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            constants[name] = ep.constants[spec.target]
        elif spec.kind != InputKind.TOKEN:  # a token only orders effectful ops (with_effects): nothing to carry
            problems.append(f"  input {name!r}: a {spec.kind.name.lower().replace('_', ' ')} input (only tensors, "
                            "parameters and buffers are supported)")
    states.sort(key=lambda st: list(mutated).index(st.name))  # as their new values come among the outputs
    problems += _state_problems(ep, states, sig)
    problems += _constant_problems(constants)
    if problems:
        raise UnsupportedError(problems, "problem")
    nodes, outputs = _convert_nodes(ep, constants, sizes)
    nodes = drop_dead(nodes, outputs)
    used = _referenced(nodes, outputs)
    defined = {node.name for node in nodes}  # folded values that nodes re-expand from their base
    kept = {k: v for k, v in constants.items() if Ref(k) in used and k not in defined}
    _check_model_dtype(inputs, kept)
    return Graph(
        inputs=inputs,
        constants={k: _to_numpy(v) for k, v in kept.items()},
        constant_meta={k: sizes.meta(v, f"constant {k!r}") for k, v in kept.items()},
        nodes=nodes,
        outputs=outputs,
        input_tree=_bake(treespec_to_json(ep.call_spec.in_spec), iter(baked)),
        output_tree=treespec_to_json(ep.call_spec.out_spec),
        meta={"torch": torch.__version__},
        symbols=sizes.table,
        states=states,
    )


def _state_problems(ep: ExportedProgram, states: list[StateSpec], sig) -> list[str]:
    """Why the program's in-place updates cannot be kept as state, in one line each: an update of anything but
    a buffer (a user input, a parameter), or a buffer that does not hold zeros at export — a program's state
    starts at zero when it is loaded (a KV cache does; batch norm's running statistics in training mode do not)."""
    others = [str(s.target) for s in sig.output_specs
              if s.kind not in (OutputKind.USER_OUTPUT, OutputKind.TOKEN, OutputKind.BUFFER_MUTATION)]
    problems = [f"  the program updates {', '.join(others)} in place; only buffers may be updated (they become "
                "the program's state)"] if others else []
    nonzero = [s.name for s in states if _buffer_value(ep, s.name).count_nonzero()]
    if nonzero:
        problems.append(f"  the program updates {', '.join(s.name for s in states)} in place, and "
                        f"{', '.join(nonzero)} does not hold zeros at export: a program's state starts at zero. "
                        "A model in training mode does this (batch norm's running statistics): call model.eval() "
                        "before torch.export")
    return problems


def _buffer_value(ep: ExportedProgram, target: str) -> torch.Tensor:
    return ep.state_dict[target] if target in ep.state_dict else ep.constants[target]


def _tensor_problem(val: torch.Tensor, what: str) -> str | None:
    """Why a tensor input cannot be one of a WebGPU program, in one line; None when it can. Its example may be
    on the meta device: only its shape and dtype are read."""
    if val.layout != torch.strided:
        return (f"  {what} is a sparse tensor ({val.layout}); WebGPU programs take dense tensors: convert it "
                "with .to_dense()")
    return None


def _constant_problems(constants: dict[str, torch.Tensor]) -> list[str]:
    """Parameters and buffers without values (on the meta device) or not dense: one line for each kind."""
    meta = [k for k, v in constants.items() if v.device.type == "meta"]
    sparse = [k for k, v in constants.items() if v.layout != torch.strided]
    problems = []
    if meta:
        problems.append(f"  {_some(meta)} on the meta device, so without values: load the weights (e.g. "
                        "model.to_empty(device='cpu'), then load_state_dict) before export")
    if sparse:
        problems.append(f"  {_some(sparse)} sparse; WebGPU programs take dense tensors: convert them with "
                        ".to_dense() before export")
    return problems


def _some(names: list[str]) -> str:
    """`constants 'a', 'b', 'c' and 4 more are` (or `constant 'a' is`)."""
    shown = ", ".join(map(repr, names[:3])) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"constant {shown} is" if len(names) == 1 else f"constants {shown} are"


def _check_model_dtype(inputs: list[tuple[str, TensorMeta]], constants: dict[str, torch.Tensor]) -> None:
    """A model whose inputs or weights are float64 is refused in one line (rather than at every node that
    computes in it)."""
    wide = [f"input {name!r}" for name, m in inputs if m.dtype == "float64"]
    wide += [f"constant {name!r}" for name, v in constants.items() if v.dtype == torch.float64]
    if not wide:
        return
    names = ", ".join(wide[:3]) + (f" and {len(wide) - 3} more" if len(wide) > 3 else "")
    raise UnsupportedError([
        f"  the model computes in float64 ({names}); WebGPU has no float64: export model.float() (or .half(), "
        ".bfloat16()) with inputs of that dtype"], "problem")


_TENSOR = object()


def _bake(spec: dict, leaves) -> dict:
    """The input tree with each non-tensor leaf replaced by a const node holding the value export fixed."""
    if spec["type"] == "leaf":
        value = next(leaves)
        return spec if value is _TENSOR else {"type": "const", "value": value}
    if "items" in spec:
        return {**spec, "items": [_bake(s, leaves) for s in spec["items"]]}
    return spec


def _decomposition_table() -> dict:
    """torch.export's core-ATen decompositions, and torch's own over ATen ops (torch._decomp) for the
    overloads outside core ATen that export keeps (`view_copy`, `dist`, `ldexp`, …: with no kernel of ours they
    could only be refused); but for the overloads the registry lowers or refuses: those stay whole, to run on their
    kernel or to be refused with their reason; and for the dequantizations of quantized weights, which
    quantized_weights.py packs (those of libraries not loaded are absent anyway)."""
    table = torch.export.default_decompositions()
    for op, fn in torch._decomp.decomposition_table.items():
        # Only decompositions written over ATen ops: torch._refs' are written over prims, which nothing lowers.
        aten_level = getattr(fn, "__module__", "") in ("torch._decomp.decompositions", "torch._ops.aten")
        if aten_level and isinstance(op, torch._ops.OpOverload) and torch.Tag.core not in op.tags and op not in table:
            table[op] = fn  # (a CustomDecompTable: no setdefault)
    for target in [*OPS, *REFUSED, *KEPT_WHOLE]:
        if not target.startswith("aten.") and target not in KEPT_WHOLE:  # our own ops: nothing to keep
            continue
        op = _loaded_target(target)
        if op in table:
            del table[op]
    seen = _DECOMPOSED.get()
    if seen is not None:
        for op, fn in table.items():
            if isinstance(op, torch._ops.OpOverload) and torch.Tag.core in op.tags:
                table[op] = _recording(fn, target_name(op), seen)
    return table


# While recording_decompositions() is active: the set that collects the core overloads decomposed.
_DECOMPOSED: ContextVar[set[str] | None] = ContextVar("decomposed", default=None)


@contextmanager
def recording_decompositions() -> Iterator[set[str]]:
    """Within it, import_program adds to the set it yields every core ATen overload that torch.export
    decomposed into other ops (coverage.py proves by test cases that such an overload compiles)."""
    seen: set[str] = set()
    token = _DECOMPOSED.set(seen)
    try:
        yield seen
    finally:
        _DECOMPOSED.reset(token)


def _recording(fn, target: str, seen: set[str]):
    def decompose(*args, **kwargs):
        seen.add(target)
        return fn(*args, **kwargs)

    return decompose


def resolve_target(target: str):
    """`"aten.addmm.default"` -> `torch.ops.aten.addmm.default`."""
    namespace, name, overload = target.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), name), overload)


def _loaded_target(target: str):
    """The op of `target`, or None when its library is not loaded (torchao's ops exist once it is imported)."""
    try:
        return resolve_target(target)
    except (AttributeError, RuntimeError):
        return None


def target_name(op) -> str:
    if isinstance(op, torch._ops.OpOverload):
        return f"{op.namespace}.{op._schema.name.split('::')[1]}.{op._overloadname}"
    return getattr(op, "__name__", str(op))


def _placeholder_val(ep: ExportedProgram, name: str) -> Any:
    for n in ep.graph.nodes:
        if n.op == "placeholder" and n.name == name:
            return n.meta.get("val")
    raise KeyError(name)


class _Sizes:
    """Sizes as ints or symbolic Exprs; every dynamic dimension becomes a Symbol with its range and hint."""

    def __init__(self, ep: ExportedProgram):
        self.ranges = {str(k): v for k, v in ep.range_constraints.items()}
        self.table: dict[str, Symbol] = {}
        self._hints: dict[str, int] = {}
        for n in ep.graph.nodes:
            val = n.meta.get("val")
            for s in getattr(val, "shape", ()):
                if isinstance(s, torch.SymInt):
                    env = s.node.shape_env  # backed_var_to_val: torch >= 2.13; var_to_val before
                    hints = env.backed_var_to_val if hasattr(env, "backed_var_to_val") else env.var_to_val
                    self._hints = {str(k): int(v) for k, v in hints.items()}
                    break

    def meta(self, t: torch.Tensor, what: str) -> TensorMeta:
        return TensorMeta(tuple(self.value(s, f"{what} dim {d}") for d, s in enumerate(t.shape)),
                          str(t.dtype).removeprefix("torch."))

    def value(self, x: Any, what: str) -> int | Expr:
        if isinstance(x, bool) or not isinstance(x, (int, torch.SymInt)):
            raise UnsupportedError([f"  {what}: {x!r} is not an integer size"], "problem")
        if isinstance(x, int):
            return x
        return self._expr(x.node.expr, what)

    def _expr(self, e, what: str) -> int | Expr:
        import sympy
        from torch.utils._sympy import functions as tf

        args = [self._expr(a, what) for a in e.args]
        if e.is_Integer:
            return int(e)
        if e.is_Symbol:
            return Expr.symbol(self._symbol(str(e), what))
        if isinstance(e, sympy.Add):
            return sum(args[1:], args[0])
        if isinstance(e, sympy.Mul):
            out = args[0]
            for a in args[1:]:
                out = out * a
            return out
        if isinstance(e, tf.FloorDiv):
            return args[0] // args[1]
        if isinstance(e, (sympy.Mod, tf.Mod, tf.PythonMod)):
            return args[0] % args[1]
        if isinstance(e, (sympy.Max, sympy.Min)):
            pick = symbolic.maximum if isinstance(e, sympy.Max) else symbolic.minimum
            out = args[0]
            for a in args[1:]:
                out = pick(out, a)
            return out
        raise UnsupportedError([f"  {what}: the dynamic size {e} uses {type(e).__name__}, which is not supported"],
                               "problem")

    def _symbol(self, name: str, what: str) -> Symbol:
        if name not in self.table:
            r = self.ranges.get(name)
            lo, hi = (int(r.lower), r.upper) if r is not None else (0, None)
            if (hi is None or not getattr(hi, "is_finite", True) or str(hi) in ("oo", "int_oo")) and _unbacked(name):
                raise UnsupportedError([f"  {what}: the size {name} depends on tensor values (.item(), nonzero, "
                                        "indexing by a boolean mask) and has no upper bound: WebGPU programs need "
                                        "sizes bounded at compile time"], "problem")
            if hi is None or not getattr(hi, "is_finite", True) or str(hi) in ("oo", "int_oo"):
                raise UnsupportedError([f"  {what}: the dynamic dimension {name} has no upper bound; give it one "
                                        "(torch.export.Dim(name, max=...)) so buffers can be sized"], "problem")
            self.table[name] = Symbol(name, lo, int(hi), self._hints.get(name, lo), what)
        return self.table[name]


def _unbacked(name: str) -> bool:
    """Whether a size symbol stands for a value computed from data (torch names those u0, u1, …)."""
    import sympy
    from torch.utils._sympy.symbol import SymT, symbol_is_type

    return symbol_is_type(sympy.Symbol(name), SymT.UNBACKED_INT)


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    """A constant's values; a bfloat16 one as float32 (exact: numpy has no bfloat16)."""
    t = t.detach().cpu().contiguous()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


# -- nodes -------------------------------------------------------------------------------------------------------

def _convert_nodes(ep: ExportedProgram, constants: dict[str, torch.Tensor],
                   sizes: _Sizes) -> tuple[list[Node], list[Ref]]:
    refs: dict[torch.fx.Node, Ref | int | Expr | None] = {}  # a tensor's Ref, a size node's value; None: a token
    nodes: list[Node] = []
    outputs: list[Ref] = []
    tokens = {s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.TOKEN}
    for n in ep.graph.nodes:
        val = n.meta.get("val")
        if n.op == "placeholder":
            refs[n] = None if n.name in tokens else Ref(n.name)
        elif n.op == "call_function" and _name(n) == "_local_scalar_dense":
            # A tensor's value read on the host (.item()): a node, refused by name, that stands for the 0-d
            # tensor it reads, so the nodes that use the value still have shapes.
            refs[n] = Ref(n.name)
            read = sizes.meta(n.args[0].meta["val"], f"node {n.name!r} input")
            nodes.append(Node(n.name, target_name(n.target), _normalize_args(n.name, n.target, n.args, n.kwargs, refs),
                              (read,), _source_line(n)))
        elif n.op == "call_function" and isinstance(val, (torch.SymInt, int)) and not isinstance(val, bool):
            refs[n] = sizes.value(val, f"size {n.name!r}")  # sym_size, operator.add, …: only a value
        elif n.op == "call_function" and (isinstance(val, torch.SymBool) or _name(n) in SIZE_ASSERTIONS):
            continue  # a fact about sizes, already checked by export
        elif n.op == "call_function" and n.target is operator.getitem:
            src, index = n.args
            refs[n] = _getitem(refs[src], index)
        elif n.op == "call_function" and n.target is torch.ops.higher_order.with_effects:
            # with_effects(token, op, *args) runs op in the token's order; the result is (token, *op's outputs).
            refs[n] = _Effect(n.name)
            op, args, kwargs = n.args[1], n.args[2:], n.kwargs
            outs = _output_metas(n, sizes)[1:]
            nodes.append(Node(n.name, target_name(op), _normalize_args(n.name, op, args, kwargs, refs), outs,
                              _source_line(n), effect=True))
        elif n.op == "call_function":
            refs[n] = Ref(n.name)
            args = _normalize_args(n.name, n.target, n.args, n.kwargs, refs)
            reader = STORAGE_READERS.get(target_name(n.target))
            if reader is not None:
                args[f"{reader}_storage_order"] = _storage_order(_arg_node(n, reader).meta["val"])
            folded = _try_fold(n, args, constants)
            if folded is None:
                nodes.append(Node(n.name, target_name(n.target), args, _output_metas(n, sizes), _source_line(n)))
                continue
            value, base = folded
            constants[n.name] = value  # what later folds read
            if base is not value:  # the graph reads it as a view of its base
                constants[f"{n.name}_base"] = base
                expand = {"self": Ref(f"{n.name}_base"), "size": list(value.shape), "implicit": False}
                nodes.append(Node(n.name, "aten.expand.default", expand, _output_metas(n, sizes), _source_line(n)))
        elif n.op == "output":
            # The user outputs, then the mutated buffers' new values (Graph.outputs).
            specs = ep.graph_signature.output_specs
            for kind in (OutputKind.USER_OUTPUT, OutputKind.BUFFER_MUTATION):
                for v, spec in zip(n.args[0], specs, strict=True):
                    if spec.kind != kind:
                        continue
                    if not isinstance(v, torch.fx.Node):
                        raise UnsupportedError([f"  output {v!r}: non-tensor outputs are not supported"], "problem")
                    outputs.append(refs[v])
        else:
            raise UnsupportedError([f"  node {n.name!r}: graph op {n.op!r} is not supported"])
    return nodes, outputs


@dataclass(frozen=True)
class _Effect:
    """The value of a with_effects node: output 0 is the token, output i + 1 the op's output i."""

    node: str


def _getitem(src: Ref | _Effect | None, index: int) -> Ref | None:
    if isinstance(src, _Effect):
        return None if index == 0 else Ref(src.node, index - 1)
    return Ref(src.node, index)


def _name(n: torch.fx.Node) -> str:
    schema = getattr(n.target, "_schema", None)
    return schema.name.split("::")[-1] if schema is not None else getattr(n.target, "__name__", "")


def _arg_node(n: torch.fx.Node, name: str) -> torch.fx.Node:
    """The node passed as argument `name` of call `n`."""
    index = [a.name for a in n.target._schema.arguments].index(name)
    return n.args[index] if index < len(n.args) else n.kwargs[name]


def _storage_order(t: torch.Tensor) -> list[int] | None:
    """t's dims from outermost to innermost in memory, when t's elements lie densely from the start of its
    storage (a contiguous or permuted tensor); else None. (Export's fake storages grow to whatever an
    as_strided reaches, so their size says nothing: what lies beyond t's elements is the reader's to refuse.)"""
    if any(not isinstance(s, int) for s in (*t.shape, *t.stride(), t.storage_offset())):
        return None
    if t.storage_offset() != 0:
        return None
    order = sorted(range(t.ndim), key=lambda d: -t.stride(d))
    step = 1
    for d in reversed(order):
        if t.shape[d] != 1 and t.stride(d) != step:
            return None
        step *= t.shape[d]
    return order


def _normalize_args(name: str, op, args: tuple, kwargs: dict, refs: dict) -> dict[str, Any]:
    """Arguments by schema name, in schema order, with defaults filled in."""
    schema = getattr(op, "_schema", None)
    if schema is None:
        raise UnsupportedError([f"  node {name!r}: {op} is not an ATen operator"])
    out: dict[str, Any] = {}
    for i, arg in enumerate(schema.arguments):
        if i < len(args) and not arg.kwarg_only:
            value = args[i]
        elif arg.name in kwargs:
            value = kwargs[arg.name]
        elif arg.has_default_value():
            value = arg.default_value
        else:
            value = None
        out[arg.name] = _convert_value(value, refs)
    return out


def _convert_value(v: Any, refs: dict) -> Any:
    if isinstance(v, torch.fx.Node):
        return refs[v]
    if isinstance(v, (list, tuple)):
        return [_convert_value(x, refs) for x in v]
    if isinstance(v, torch.dtype):
        return str(v).removeprefix("torch.")
    if isinstance(v, (torch.device, torch.layout, torch.memory_format)):
        return str(v)
    return v


def _output_metas(n: torch.fx.Node, sizes: _Sizes) -> tuple[TensorMeta | None, ...]:
    val = n.meta.get("val")
    what = f"node {n.name!r} output"
    if isinstance(val, torch.Tensor):
        return (sizes.meta(val, what),)
    if isinstance(val, (list, tuple)):
        return tuple(sizes.meta(v, what) if isinstance(v, torch.Tensor) else None for v in val)
    return ()


def _source_line(n: torch.fx.Node) -> str:
    """`file.py:12 \\`code\\``, the innermost user frame of the node's stack trace."""
    frames = re.findall(r'File "([^"]+)", line (\d+), in \w+\n\s*(.*)', n.meta.get("stack_trace") or "")
    if not frames:
        return ""
    path, line, code = frames[-1]
    return f"{path.rsplit('/', 1)[-1]}:{line} `{code.strip()}`"


# -- constant folding --------------------------------------------------------------------------------------------

def _try_fold(n: torch.fx.Node, args: dict[str, Any],
              constants: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(value, base) when the node can be computed at compile time: every tensor it reads is a constant (or
    is read for its shape alone) and it is deterministic; `base` is the value's broadcast base (the value
    itself when nothing repeats). None when it cannot be folded or its base outgrows its inputs."""
    if torch.Tag.nondeterministic_seeded in getattr(n.target, "tags", ()):
        return None
    if any(symbolic.is_dynamic(v) for v in values_in(args)):
        return None  # its value depends on a dynamic size
    name = _name(n)  # _normalize_args has checked it is an ATen operator
    reads = [] if name in SHAPE_ONLY else list(refs_in(args))
    if any(r.index is not None or r.node not in constants for r in reads):
        return None
    if any(a.op == "placeholder" and str(constants[a.name].dtype).removeprefix("torch.") in CODE_DTYPES
           for a in n.all_input_nodes if a.name in constants):
        return None  # 8-bit codes of quantized weights (model constants; an 8-bit value folding made, such as
        # torch.eye's uint8 aranges, is none): folded, they would widen (quantized_weights.py packs them)
    val = n.meta.get("val")
    if not isinstance(val, torch.Tensor) or any(not isinstance(s, int) for s in val.shape):
        return None
    if val.numel() > FOLD_MAX_ELEMENTS:
        return None
    fn_args = [_realize_fx(a, constants) for a in n.args]
    fn_kwargs = {k: _realize_fx(v, constants) for k, v in n.kwargs.items()}
    with torch.no_grad():
        result = n.target(*fn_args, **fn_kwargs)
    if not isinstance(result, torch.Tensor):
        return None
    result = torch.zeros_like(result) if name in UNINITIALIZED else result.contiguous()
    base = broadcast_base(result)
    if reads and base.numel() > max(FOLD_TINY_ELEMENTS, sum(constants[r.node].numel() for r in reads)):
        return None
    return result, base


def broadcast_base(t: torch.Tensor) -> torch.Tensor:
    """The smallest tensor `t` is an expansion of: each dim along which every slice is equal shrinks to 1.
    Returns `t` itself when no dim shrinks."""
    base = t
    for d in range(t.ndim):
        if base.shape[d] > 1 and torch.equal(base, base.narrow(d, 0, 1).expand_as(base)):
            base = base.narrow(d, 0, 1)
    return t if base is t else base.contiguous()


def _realize_fx(v: Any, constants: dict[str, torch.Tensor]) -> Any:
    """An fx argument as a value: constants by name; any other tensor (read only for its shape) as zeros."""
    if isinstance(v, torch.fx.Node):
        if v.name in constants:
            return constants[v.name]
        val = v.meta["val"]
        return torch.zeros(val.shape, dtype=val.dtype)
    if isinstance(v, (list, tuple)):
        return type(v)(_realize_fx(x, constants) for x in v)
    return v


def _referenced(nodes: list[Node], outputs: list[Ref]) -> set[Ref]:
    used = {Ref(r.node) for r in outputs}
    for node in nodes:
        used.update(Ref(r.node) for r in refs_in(node.args))
    return used


# -- pytree specs ------------------------------------------------------------------------------------------------

def treespec_to_json(spec) -> dict:
    if spec.is_leaf():
        return {"type": "leaf"}
    children = [treespec_to_json(c) for c in _children(spec)]
    if spec.type is tuple:
        return {"type": "tuple", "items": children}
    if spec.type is list:
        return {"type": "list", "items": children}
    if spec.type is dict:
        return {"type": "dict", "keys": list(spec.context), "items": children}
    if spec.type is type(None):
        return {"type": "const", "value": None}
    # torch's pytree files every namedtuple under one marker type, with the class itself as the context
    cls = spec.context if isinstance(spec.context, type) else spec.type
    keys = _context_keys(spec)
    if keys is not None and len(keys) == len(children):
        node = {"type": "dict", "keys": keys, "items": children, "class": tree.class_name(cls)}
    else:  # a namedtuple, or another sequence
        node = {"type": "tuple", "items": children, "class": tree.class_name(cls)}
        if isinstance(getattr(cls, "_fields", None), tuple):
            node["fields"] = list(cls._fields)
    if tree.class_problem(node):  # a class no runtime rebuilds (a defaultdict, torch.Size): its plain container
        node.pop("class")
        node.pop("fields", None)
    return node


def _children(spec) -> list:
    return list(spec.children()) if hasattr(spec, "children") else list(spec.children_specs)


def _context_keys(spec) -> list[str] | None:
    ctx = spec.context
    if isinstance(ctx, (list, tuple)) and all(isinstance(k, str) for k in ctx):
        return list(ctx)
    if isinstance(ctx, (list, tuple)) and len(ctx) == 2 and isinstance(ctx[1], (list, tuple)):
        return [str(k) for k in ctx[1]]
    return None
