"""Lowering: the imported graph, node by node through the op registry, into dispatches over virtual buffers
(through a `Builder`); then memory planning maps scratch buffers onto shared device buffers: the Program.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from ..format import dtypes, symbolic
from ..format.errors import InputError, UnsupportedError
from ..format.program import Buffer, Input, Program, State, Tensor, contiguous_strides
from ..format.symbolic import Expr
from . import planner
from .builder import Builder
from .graph import Graph, Node, Ref, map_refs, outputs_read, refs_in, values_in
from .ops import OPS, REFUSED, NodeView, elementwise, quantized
from .options import Options


def check_support(graph: Graph) -> None:
    """Every unsupported node at once, each with its op, shapes and reason (a refused op's declared reason)."""
    problems = []
    metas = graph.metas()
    read = outputs_read(graph)
    for node in graph.nodes:
        reason = _unsupported_reason(metas, node, read[node.name])
        if reason:
            problems.append(graph.describe(node, reason))
    if problems:
        raise UnsupportedError(problems)


def _unsupported_reason(metas: dict, node: Node, read: frozenset[int]) -> str | None:
    # torch names the sizes it learns only by running an op (nonzero, unique, a bool mask's selection) u0, u1,
    # ...; a program's buffers and dispatches are fixed before it runs, so no such op can be lowered.
    unbacked = sorted({s.name for m in node.outputs if m is not None for d in m.shape if isinstance(d, Expr)
                       for s in d.symbols() if s.name.startswith("u")})
    if unbacked:
        return f"output size depends on the data ({', '.join(unbacked)} is known only after running it)"
    op = OPS.get(node.target)
    if op is None:
        refusal = REFUSED.get(node.target)
        if refusal:
            return refusal.reason
        if node.effect:
            return (f"{node.target} acts beyond its outputs (torch.export orders it as an effect: it raises, "
                    "prints or mutates state on the host), which a WebGPU program cannot do")
        return f"no WebGPU kernel for {node.target}"
    tensors = [m for m in [metas[r] for r in refs_in(node.args)] + list(node.outputs) if m is not None]
    for m in tensors:
        if m.dtype not in dtypes.DTYPES:
            return f"dtype {m.dtype} is not supported on WebGPU (supported: {', '.join(dtypes.DTYPES)})"
    if _computes_nothing(node):
        return None  # every output is empty: nothing runs, so no kernel's limits apply
    if not op.dynamic:
        dims = {str(s) for m in tensors for s in m.shape if isinstance(s, Expr)}
        dims |= {str(v) for v in values_in(node.args) if isinstance(v, Expr)}
        if dims:
            return (f"this op does not take dynamic sizes yet ({', '.join(sorted(dims))}); export it with static "
                    "shapes, or keep the dynamic dimension away from it")
    if op.check is None:
        return None
    view = NodeView(node.name, node.target, map_refs(node.args, metas.__getitem__), node.outputs,
                    outputs_read=read)
    return op.check(view)


def lower(graph: Graph, options: Options) -> Program:
    check_support(graph)
    ctx = Builder(options, copy=elementwise.copy, dequantize=quantized.dequantize)
    env: dict[Ref, Tensor] = {}
    inputs = []
    for name, meta in graph.inputs:
        index = ctx.buffer(Buffer(_bytes(meta), "input", name))
        inputs.append(Input(name, meta.shape, meta.dtype, index))
        env[Ref(name)] = Tensor(index, meta.shape, contiguous_strides(meta.shape), 0, meta.dtype)
    states = []
    for s in graph.states:
        index = ctx.buffer(Buffer(_bytes(s.meta), "state", s.name))
        states.append(State(s.name, index, s.meta.shape, s.meta.dtype))
        env[Ref(s.input)] = Tensor(index, s.meta.shape, contiguous_strides(s.meta.shape), 0, s.meta.dtype)
    for name, array in graph.constants.items():
        env[Ref(name)] = ctx.constant(name, array, graph.constant_meta[name].dtype)
    read = outputs_read(graph)
    in_place = {node: env[Ref(s.input)] for node, s in _updated_in_place(graph).items()}
    metas = graph.metas()
    for node in graph.nodes:
        ctx.node = node.name
        if _computes_nothing(node):
            _bind_outputs(env, node, [ctx.new(m.shape, m.dtype) if m is not None else None for m in node.outputs])
            continue
        view = NodeView(node.name, node.target, _arguments(ctx, node, env, metas), node.outputs, node.epilogue,
                        read[node.name], in_place.get(node.name), node.half)
        op = OPS[node.target]
        if not (op.view or op.packed):
            for t in (v for v in values_in(view.args) if isinstance(v, Tensor)):
                ctx.materialize(t)
        try:
            result = op.lower(ctx, view)
        except UnsupportedError:
            raise
        except InputError as e:  # a constant the device cannot hold as this lowering needs it
            raise UnsupportedError([graph.describe(node, str(e))]) from None
        except Exception as e:  # a lowering that fails after its check passed is a bug: refuse the node, by name
            reason = (f"internal error in the lowering of {node.target} ({type(e).__name__}: {e}); please "
                      "report it with this message")
            raise UnsupportedError([graph.describe(node, reason)]) from e
        _bind_outputs(env, node, _as_model_dtypes(result, node.outputs))
    ctx.node = "output"
    outputs = []
    for r in graph.user_outputs:  # read back after the call, when a state holds its new value: never a state
        t = env[r]
        ctx.materialize(t)
        if ctx.buffers[t.buffer].role == "state":
            t = elementwise.copy(ctx, t)
        outputs.append(ctx.contiguous(t) if options.contiguous_outputs else t)
    for s, r in zip(states, graph.state_values, strict=True):
        _write_state(ctx, s, env[r])
    return _finish(ctx, inputs, outputs, graph, states)


def _bytes(meta) -> int:
    return max(symbolic.bound(meta.numel), 1) * dtypes.dtype(meta.dtype).itemsize


def _updated_in_place(graph: Graph) -> dict[str, Any]:
    """Node name -> the state whose new value it makes from the state's value at the start of the call (its
    `self`), which nothing else reads: the node may write its result over the state."""
    reads = Counter(r.node for n in graph.nodes for r in refs_in(n.args))
    reads.update(r.node for r in graph.outputs)
    found = {}
    for s, value in zip(graph.states, graph.state_values, strict=True):
        node = next((n for n in graph.nodes if n.name == value.node), None)
        if node is not None and node.args.get("self") == Ref(s.input) and reads[s.input] == 1:
            found[node.name] = s
    return found


def _write_state(ctx: Builder, state: State, value: Tensor) -> None:
    """Leave `value` in the state's buffer at the end of the call: nothing to do when a node updated it in
    place, else one copy (through scratch when the value is a view of the state itself)."""
    target = Tensor(state.buffer, state.shape, contiguous_strides(state.shape), 0, state.dtype)
    if value == target:
        return
    if value.buffer == state.buffer:
        value = elementwise.copy(ctx, value)
    elementwise.copy(ctx, value, out=target)


def _arguments(ctx: Builder, node: Node, env: dict[Ref, Tensor], metas: dict) -> dict[str, Any]:
    """The node's arguments as tensors; an f16 activation reaches only an argument its op reads f16 from
    (registry `half`), others get a float copy in the model dtype (half_storage.py never asks for one)."""
    takes = OPS[node.target].half

    def tensors(arg: str):
        def tensor(r: Ref) -> Tensor:
            t = env[r]
            if t.dtype != dtypes.F16.name or takes is True or arg in takes:
                return t
            return ctx.once(("widened", t), lambda: elementwise.emit(ctx, "copy", [t], t.shape,
                                                                           out_dtype=metas[r].dtype))
        return tensor

    return {arg: map_refs(value, tensors(arg)) for arg, value in node.args.items()}


def _computes_nothing(node: Node) -> bool:
    """Whether every output of `node` is empty (of static size 0): such a node emits no dispatch, and its
    outputs are fresh empty tensors, whatever the op (a kernel would have no element to write)."""
    metas = [m for m in node.outputs if m is not None]
    return bool(metas) and all(isinstance(m.numel, int) and m.numel == 0 for m in metas)


def _as_model_dtypes(result: Any, metas: tuple) -> Any:
    """A lowering's result with each float tensor labelled with its node output's float dtype: the float
    dtypes share their device form (f32), and kernels write float32 whatever the model's float dtype, but
    what reads a value next (a cast, the program's outputs) must see the model's."""
    def label(t, meta):  # (an f16 activation keeps its storage dtype)
        if t is None or meta is None or t.dtype == meta.dtype or not (
                t.dtype in dtypes.FLOATS and meta.dtype in dtypes.FLOATS):
            return t
        return replace(t, dtype=meta.dtype)

    if not isinstance(result, (list, tuple)):
        return label(result, metas[0] if len(metas) == 1 else None)
    return [label(t, m) for t, m in zip(result, metas, strict=False)]


def _bind_outputs(env: dict[Ref, Tensor], node: Node, result: Any) -> None:
    """A lowering returns one Tensor, or a list with one entry per output (None for an unused one)."""
    if not isinstance(result, (list, tuple)):
        env[Ref(node.name)] = result
        env[Ref(node.name, 0)] = result
        return
    for i, t in enumerate(result):
        if t is not None:
            env[Ref(node.name, i)] = t
    if len(result) == 1:
        env[Ref(node.name)] = result[0]


def _finish(ctx: Builder, inputs: list[Input], outputs: list[Tensor], graph: Graph, states: list[State]) -> Program:
    """Plan scratch buffers by liveness and renumber every buffer reference."""
    dispatches = ctx.emitter.dispatches
    n = len(dispatches)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    # A group of options (a leader and the dispatches that follow it) is run and probed as a whole: each buffer
    # it binds stays live to its end, so no output of the group shares a buffer with one of its inputs.
    group_end = list(range(n))
    for i in reversed(range(n - 1)):
        if dispatches[i + 1].follows:
            group_end[i] = group_end[i + 1]
    for i, d in enumerate(dispatches):
        for b in d.buffers:
            first.setdefault(b, i)
            last[b] = max(last.get(b, i), group_end[i])
    for t in outputs:
        first.setdefault(t.buffer, n)  # an empty output no dispatch writes still gets a buffer
        last[t.buffer] = n  # read back after the last dispatch
    scratch = [i for i, b in enumerate(ctx.buffers) if b.role == "scratch" and i in first]
    plan = planner.plan([planner.Lifetime(i, ctx.buffers[i].size, first[i], last[i]) for i in scratch])

    fixed = [i for i, b in enumerate(ctx.buffers)
             if b.role in ("input", "status", "state") or (b.role == "constant" and _used(i, first, outputs))]
    remap = {old: new for new, old in enumerate(fixed)}
    remap.update({v: len(fixed) + s for v, s in plan.slot_of.items()})
    buffers = [replace(ctx.buffers[i], size=4 * len(ctx.checks)) if i == ctx.status else ctx.buffers[i]
               for i in fixed] + [Buffer(size, "scratch") for size in plan.slot_sizes]
    re = remap.__getitem__
    program = Program(
        sources=ctx.emitter.sources,
        kernels=ctx.emitter.kernels,
        buffers=buffers,
        constants={re(i): a for i, a in ctx.constants.items() if i in remap},
        inputs=[Input(x.name, x.shape, x.dtype, re(x.buffer)) for x in inputs],
        outputs=[_rebuffer(t, re(t.buffer)) for t in outputs],
        input_tree=graph.input_tree,
        output_tree=graph.output_tree,
        dispatches=[replace(d, buffers=tuple(map(re, d.buffers)), result=tuple(_rebuffer(t, re(t.buffer))
                                                                              for t in d.result))
                    for d in dispatches],
        meta=dict(graph.meta),
        symbols=dict(graph.symbols),
        checks=list(ctx.checks),
        states=[replace(s, buffer=re(s.buffer)) for s in states],
        packings={re(i): p for i, p in ctx.constants.packings.items() if i in remap},
    )
    _check_bindings(program, ctx.options.max_binding)
    program.check()
    return program


def _check_bindings(program: Program, limit: int) -> None:
    """Refuse, naming each, the buffers a dispatch would bind beyond the binding limit."""
    problems = {}
    for d in program.dispatches:
        for b in d.buffers:
            buf = program.buffers[b]
            if buf.size > limit:
                what = f"{buf.role} {buf.name!r}" if buf.name else f"a {buf.role} tensor"
                problems[b] = (f"  node {d.node!r} binds {what} of {buf.size:,} bytes; the binding limit is "
                               f"{limit:,} (compile option max_binding_size; WebGPU guarantees 128 MiB)")
    if problems:
        raise UnsupportedError(list(problems.values()))


def _used(index: int, first: dict[int, int], outputs: list[Tensor]) -> bool:
    return index in first or any(t.buffer == index for t in outputs)


def _rebuffer(t: Tensor, buffer: int) -> Tensor:
    return Tensor(buffer, t.shape, t.strides, t.offset, t.dtype)


__all__ = ["check_support", "lower"]
