"""Hostile artifacts for tests/test_fuzz.py and js/test/fuzz.test.js: seeded random mutations of the golden
corpus, a catalogue of targeted well-signed edits (each breaks one rule of docs/artifact.md, or asks a kernel
to run far longer than its data implies), and the worker that loads and runs them, reporting how each ended.

    python -m tests.fuzz --write DIR [--random N] [--all | --most N]   # write the variants and DIR/index.json
    python -m tests.fuzz --run DIR                          # run them in workers, print what failed
    python -m tests.fuzz --worker                           # read paths on stdin, print one JSON line each
    python -m tests.fuzz FILE                               # load FILE, call it once, print the outcome

Variants are run under the process's limits (run the parent under `ulimit -v` to give the workers an
address-space limit); `WEBGPU_TORCH_FUZZ_TIMEOUT` sets the call timeout (60 s).

A random mutation either breaks bytes (the checksums must catch it) or edits the parsed header and writes it
back with correct lengths and checksums, so the reader's validation — not the CRC — has to refuse it, or the
program must run (to any numbers): a grid scaled up, a uniform word set to 2³¹ − 1, a WGSL loop that never
exits, deep nesting, wrong types, missing keys, values at the edges of their ranges. The catalogue
(`hostile`) is deterministic: divisions by zero and 5,000-digit integers wherever an expression or integer
goes, ranks past 16, uniform layouts that disagree with their words, lone surrogates in every string, a
buffer bound twice by one dispatch with a write, outputs whose dtype, buffer or grid disagree with what
writes them, every uniform word set to 2³² − 1 (a loop bound), 24.8 GiB of scratch and 3 GiB of state, a
200,000-term WGSL expression, the costliest sources the compile-cost rules accept and the next size
(tests/wgsl_cost.py), output classes no file may choose, what the runtimes once decided apart, an infinite
loop (a clean timeout).

A worker calls each program once with zeros at the dynamic sizes' hints (tuning on: options run too).
"""

from __future__ import annotations

import copy
import functools
import gc
import itertools
import json
import os
import random
import select
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from . import wgsl_cost

GOLDEN = Path(__file__).parent / "golden"
BASES = ("tiny", "mlp", "dynamic", "structured", "options", "weights_f16", "state", "packed", "bfloat16")
DEEP = "<5,000 nested lists>"  # put in as text: json would recurse
HUGE = "<a 5,000-digit integer>"  # put in as text: json refuses to write one
EDGES = [0, 1, -1, 3, 2**16 - 1, 2**16, 2**31 - 1, 2**31, 2**32, 2**53, -(2**31), 1.5, "x", "", None, True, [],
         {}, [0, 0, 0], {"type": "leaf"}]
SURROGATE = "\ud800"  # a lone surrogate: JSON's "\ud800" escape, no Unicode text


# -- writing a header back -----------------------------------------------------------------------------------

def _pack(header: dict, blob: bytes) -> bytes:
    from .golden.damage import pack

    text = json.dumps(header).replace(json.dumps(DEEP), "[" * 5000 + "]" * 5000)
    text = text.replace(json.dumps(HUGE), "9" * 5000)
    return pack(text.encode(), blob)


def _base(name: str) -> tuple[dict, bytes]:
    from .golden.damage import parts

    return parts((GOLDEN / f"{name}.wgpt").read_bytes())


# -- random mutations ----------------------------------------------------------------------------------------

def _paths(value, prefix=()):
    """Every path into a JSON value (not into WGSL text)."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            if k != "sources":
                yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _at(value, path):
    for k in path:
        value = value[k]
    return value


def _edit_header(rng: random.Random, header: dict) -> str:
    """One random edit of `header` in place; returns what it did."""
    kind = rng.choice(["value", "value", "value", "delete", "list", "uniform", "grid", "wgsl_loop", "wgsl_nest",
                       "wgsl_garbage", "deep"])
    if kind == "uniform":
        d = rng.choice([d for d in header["dispatches"] if d["uniform"]] or header["dispatches"])
        if d["uniform"]:
            d["uniform"][rng.randrange(len(d["uniform"]))] = 2**31 - 1
        return "a uniform word set to 2^31-1"
    if kind == "grid":
        d = rng.choice(header["dispatches"])
        d["grid"] = rng.choice([[65535, 65535, 1], [4096, 4096, 1], [65535, 256, 1], [1, 1, 65535]])
        return f"a grid set to {d['grid']}"
    if kind.startswith("wgsl"):
        i = rng.randrange(len(header["sources"]))
        src = header["sources"][i]
        if kind == "wgsl_loop":
            header["sources"][i] = _looped(src)
        elif kind == "wgsl_nest":
            header["sources"][i] = src.replace("return", "return " + "(" * 5000 + "0" + ")" * 5000 + ";//", 1)
        else:
            cut = rng.randrange(len(src))
            header["sources"][i] = src[:cut] + "".join(rng.choice("{}();<>@ab1") for _ in range(20)) + src[cut:]
        return INFINITE if kind == "wgsl_loop" else kind
    section = rng.choice([k for k in header if k != "sources"])  # each part of the header alike
    path = rng.choice([p for p in _paths(header) if p and p[0] == section])
    parent, key = _at(header, path[:-1]), path[-1]
    if kind == "delete" and isinstance(parent, dict):
        del parent[key]
        return f"deleted {path}"
    if kind == "list" and isinstance(parent, list):
        parent.insert(key, parent[key]) if rng.random() < 0.5 else parent.pop(key)
        return f"list resized at {path}"
    if kind == "deep":
        parent[key] = DEEP
        return f"deep nesting at {path}"
    parent[key] = rng.choice(EDGES)
    return f"{path} = {parent[key]!r}"


def mutate(seed: int) -> tuple[bytes, str]:
    """The `seed`-th random hostile artifact and a description of it."""
    from .golden.damage import pack, parts

    rng = random.Random(seed)
    base = rng.choice(BASES)
    raw = (GOLDEN / f"{base}.wgpt").read_bytes()
    r = rng.random()
    if r < 0.15:
        data = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return bytes(data), f"{base}: bits flipped"
    if r < 0.2:
        return raw[:rng.randrange(len(raw))], f"{base}: truncated"
    header, blob = parts(raw)
    if r < 0.3 and blob:
        data = bytearray(blob)
        for _ in range(16):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return pack(header, bytes(data)), f"{base}: constants overwritten (checksums fixed)"
    what = [_edit_header(rng, header) for _ in range(rng.choice([1, 1, 2, 3]))]
    return _pack(header, blob), f"{base}: " + "; ".join(what)


# -- the catalogue of targeted edits -------------------------------------------------------------------------
# Each family yields (what, edit) pairs; an edit changes a copy of a base's header (and may return new data).

Edit = Callable[[dict], None]


def _setter(path: tuple, value) -> Edit:
    def edit(h):
        _at(h, path[:-1])[path[-1]] = value
    return edit


def _expression_sites(h: dict) -> Iterator[tuple]:
    """Paths of one expression of each kind: an output's offset, size and stride, an input's size, a dispatch's
    count and a patch's value."""
    yield ("outputs", 0, "offset")
    yield ("outputs", 0, "shape", 0)
    yield ("outputs", 0, "strides", 0)
    yield ("inputs", 0, "shape", 0)
    for i, d in enumerate(h["dispatches"]):
        if "count" in d:
            yield ("dispatches", i, "count")
        if d.get("patches"):
            yield ("dispatches", i, "patches", 0, 2)


def _divisions(h: dict):
    s = next(iter(h["symbols"]), None)
    divisors = [0, ["+", 1, -1]] + ([["+", s, -h["symbols"][s]["lo"]]] if s else [])
    for path in _expression_sites(h):
        for op in ("//", "%"):
            for divisor in divisors:
                yield f"{path} = [{op!r}, 1, {divisor}]", _setter(path, [op, 1, divisor])


def _numbers(h: dict):
    big = [HUGE, 2**53, -(2**53), 2**64, 1e300]
    for path in [*_expression_sites(h), ("buffers", 0, "size"), ("dispatches", 0, "uniform", 0),
                 ("dispatches", 0, "grid", 0), ("format",), ("meta", "x"), ("data_crc32",),
                 *[("tensors", 0, "offset")][:len(h["tensors"])], ("kernels", 0, "overrides", "X")]:
        for v in big:
            yield f"{path} = {str(v)[:24]}", _setter(path, v)
    for site in _expression_sites(h):  # each term fits, what they compute does not
        for e in (["*", 2**52, 2**52], ["+", 2**53 - 1, 2**53 - 1], ["*", 2**30, ["+", 2**30, ["*", 2**30, 2]]]):
            yield f"{site} = {e}", _setter(site, e)
    for name in h["symbols"]:
        yield f"symbol {name} hi 2^53", _setter(("symbols", name, "hi"), 2**53 - 1)


def _ranks(h: dict):
    def output(rank):
        def edit(h):
            t = h["outputs"][0]
            t["shape"] = [1] * (rank - len(t["shape"])) + t["shape"]
            t["strides"] = [0] * (rank - len(t["strides"])) + t["strides"]
        return edit

    def input_(rank):
        def edit(h):
            x = h["inputs"][0]
            x["shape"] = [1] * (rank - len(x["shape"])) + x["shape"]
        return edit

    for rank in (17, 100):
        yield f"output 0 of rank {rank}", output(rank)
        yield f"input 0 of rank {rank}", input_(rank)


def _uniform_layouts(h: dict):
    k = next(i for i, k in enumerate(h["kernels"]) if "uniform" in k)
    size = h["kernels"][k]["uniform"]["size"]
    for new in (size - 16, size + 16, 2 * size, 0, 2**31):
        yield f"kernel {k} uniform size {new}", _setter(("kernels", k, "uniform", "size"), new)
    d = next(i for i, d in enumerate(h["dispatches"]) if d["kernel"] == k)
    words = h["dispatches"][d]["uniform"]
    yield f"dispatch {d}: uniform one word short", _setter(("dispatches", d, "uniform"), words[:-1])
    yield f"dispatch {d}: uniform 4 words long", _setter(("dispatches", d, "uniform"), words + [7, 7, 7, 7])
    yield f"dispatch {d}: uniform 2^16 words", _setter(("dispatches", d, "uniform"), words + [0] * 2**16)
    yield f"kernel {k}: a field past the size", _setter(("kernels", k, "uniform", "fields", 0, "offset"), size)
    yield f"kernel {k}: a field of 2^30 scalars", _setter(("kernels", k, "uniform", "fields", 0, "count"), 2**30)

    def both(h):  # a consistent but different layout: the kernel's Params no longer fit the binding
        h["kernels"][k]["uniform"]["size"] = 16
        h["kernels"][k]["uniform"]["fields"] = h["kernels"][k]["uniform"]["fields"][:1]
        for x in h["dispatches"]:
            if x["kernel"] == k:
                x["uniform"] = x["uniform"][:4]
                x.pop("patches", None)
                for o in x.get("options", []):
                    o["uniform"] = o["uniform"][:4]
        for other in h["kernels"]:
            if "uniform" in other and other["bindings"] == h["kernels"][k]["bindings"]:
                other["uniform"] = h["kernels"][k]["uniform"]
    yield f"kernel {k}: Params of 16 bytes, words to match", both


def _strings(h: dict):
    def insert(path):
        def edit(h):
            parent = _at(h, path[:-1])
            v = parent[path[-1]]
            parent[path[-1]] = v[:len(v) // 2] + SURROGATE + v[len(v) // 2:]
        return edit

    sites = [("sources", 0), ("kernels", 0, "name"), ("kernels", 0, "entry"), ("buffers", 0, "name"),
             ("dispatches", 0, "node"), ("inputs", 0, "name")]
    for path in sites:
        yield f"a lone surrogate in {path}", insert(path)
    yield "a lone surrogate as a meta key", lambda h: h["meta"].__setitem__(SURROGATE, 1)

    def source_comment(h):
        h["sources"][0] = "// " + SURROGATE + "\n" + h["sources"][0]
    yield "a lone surrogate in a source's comment", source_comment


def _aliasing(h: dict):
    for i, d in enumerate(h["dispatches"]):
        kinds = [b for b in h["kernels"][d["kernel"]]["bindings"] if b != "uniform"]
        writes = [j for j, b in enumerate(kinds) if b == "read_write"]
        for w in writes:
            for j in range(len(kinds)):
                if j != w:
                    path = ("dispatches", i, "buffers", j)
                    yield f"dispatch {i} binds buffer {d['buffers'][w]} at {j} and writes it at {w}", _setter(
                        path, d["buffers"][w])
            break  # one written binding per dispatch


def _outputs(h: dict):
    for k, t in enumerate(h["outputs"]):
        for dtype in ("float32", "int32", "int64", "bool"):
            if dtype != t["dtype"]:
                yield f"output {k} dtype {dtype}", _setter(("outputs", k, "dtype"), dtype)
        for b, buf in enumerate(h["buffers"]):
            if b != t["buffer"] and buf["size"] >= h["buffers"][t["buffer"]]["size"]:
                yield f"output {k} reads buffer {b} ({buf['role']})", _setter(("outputs", k, "buffer"), b)
        break


def _grids(h: dict):
    for i, d in enumerate(h["dispatches"]):
        if "count" in d:
            continue
        for grid in ([1, 1, 1], [max(1, d["grid"][0] // 2), d["grid"][1], d["grid"][2]], [65535, 256, 1]):
            if grid != d["grid"]:
                yield f"dispatch {i} grid {grid}", _setter(("dispatches", i, "grid"), grid)


def _loops(h: dict):
    """Every uniform word of a dispatch (or of one of its options) set at once to the largest u32, and to 2^31 - 1
    (one of them bounds each kernel's loops); every patch to 2^31 - 1."""
    def every_word(path, value):
        def edit(h):
            words = _at(h, path)
            words[:] = [value] * len(words)
        return edit

    for i, d in enumerate(h["dispatches"]):
        for v in (2**32 - 1, 2**31 - 1):
            yield f"dispatch {i}: every uniform word {v}", every_word(("dispatches", i, "uniform"), v)
        for o in range(len(d.get("options", []))):
            yield f"dispatch {i} option {o}: every uniform word 2^32-1", every_word(
                ("dispatches", i, "options", o, "uniform"), 2**32 - 1)
        for p in range(len(d.get("patches", []))):
            yield f"dispatch {i} patch {p} = 2^31-1", _setter(("dispatches", i, "patches", p, 2), 2**31 - 1)


def _loop_words(h: dict):
    """Each uniform word of each dispatch and option alone set to the largest u32 and to 2^31 - 1."""
    for i, d in enumerate(h["dispatches"]):
        for j in range(len(d["uniform"])):
            for v in (2**32 - 1, 2**31 - 1):
                yield f"dispatch {i} uniform word {j} = {v}", _setter(("dispatches", i, "uniform", j), v)
        for o, opt in enumerate(d.get("options", [])):
            for j in range(len(opt["uniform"])):
                path = ("dispatches", i, "options", o, "uniform", j)
                yield f"dispatch {i} option {o} uniform word {j} = 2^32-1", _setter(path, 2**32 - 1)


def _memory(h: dict):
    """Buffers of 127 MiB, each written by a copy of a dispatch that writes one: 200 scratch buffers (24.8 GiB),
    8 (1 GiB, which every adapter we run on holds), 24 states (3 GiB); and 40 states no dispatch binds."""
    w = next(i for i, d in enumerate(h["dispatches"]) if "read_write" in h["kernels"][d["kernel"]]["bindings"])

    def extra(n: int, role: str, bound: bool = True):
        def edit(h):
            d = h["dispatches"][w]
            slot = [b for b in h["kernels"][d["kernel"]]["bindings"] if b != "uniform"].index("read_write")
            for _ in range(n):
                h["buffers"].append({"size": 127 << 20, "role": role, "name": ""})
                index = len(h["buffers"]) - 1
                if role == "state":
                    h.setdefault("states", []).append({"name": f"extra{index}", "buffer": index, "shape": [127 << 18],
                                                       "dtype": "float32"})
                if bound:
                    copy_ = {key: v for key, v in copy.deepcopy(d).items() if key not in ("options", "follows")}
                    copy_["buffers"][slot] = index
                    h["dispatches"].append(copy_)
        return edit

    yield "200 scratch buffers of 127 MiB", extra(200, "scratch")
    yield "8 scratch buffers of 127 MiB", extra(8, "scratch")
    yield "24 states of 127 MiB", extra(24, "state")
    yield "40 unbound states of 127 MiB", extra(40, "state", bound=False)
    yield "a scratch buffer of 2^40 bytes", _setter(("buffers", h["dispatches"][w]["buffers"][0], "size"), 2**40)


def _complexity(h: dict):
    def expression(term, n):
        def edit(h):
            src = h["sources"][0]
            at = src.find("{", src.find("@compute")) + 1
            h["sources"][0] = src[:at] + f"\n  let _hostile = {term(n)};\n" + src[at:]
        return edit

    yield "a 200,000-term sum in a kernel", expression(lambda n: "+".join(["1"] * n), 200_000)
    yield "a 200,000-deep unary chain in a kernel", expression(lambda n: "-" * n + "1", 200_000)
    yield "a 100,000-swizzle chain in a kernel", expression(lambda n: "vec4(1.0)" + ".xyzw" * n, 100_000)


def _compile_cost(h: dict):
    """Each shape of tests/wgsl_cost.py's WORST at the largest size the rules accept in `tiny`, and one past,
    before source 0 (used by the kernel where it is tiny's)."""
    for name, (what, within, past) in _worst().items():
        for size, (wgsl, call) in (("within the limits", within), ("past them", past)):
            def edit(h, wgsl=wgsl, call=call):
                h["sources"][0] = wgsl_cost.with_source(h["sources"][0], wgsl, call)
            yield f"{name} ({what}), {size}", edit


@functools.cache
def _worst() -> dict:
    return wgsl_cost.worst()


def _classes(h: dict):
    """Output classes a file must not choose (any dataclass, any function), on the output tree's root."""
    names = ["webgpu_torch.packing.Packing", "webgpu_torch.runtime.engine.Engine", "builtins.eval", "os.system",
             "collections.defaultdict", "transformers.modeling_outputs.BaseModelOutput", "torch.return_types.max"]
    keys = [f"k{i}" for i in range(_leaves(h["output_tree"]))]
    for name in names:
        yield f"output tree a dict of class {name}", _setter(("output_tree",), {
            "type": "dict", "keys": keys, "items": [{"type": "leaf"}] * len(keys), "class": name})
        yield f"output tree a tuple of class {name}", _setter(("output_tree",), {
            "type": "tuple", "items": [{"type": "leaf"}] * len(keys), "class": name})
    yield "output tree a namedtuple of wrong fields", _setter(("output_tree",), {
        "type": "tuple", "items": [{"type": "leaf"}] * len(keys), "class": "os.stat_result", "fields": ["st_mode"]})


def _leaves(node: dict) -> int:
    return 1 if node["type"] == "leaf" else sum(_leaves(n) for n in node.get("items", []))


def _decided(h: dict):
    """What the runtimes once decided differently: a constant of 100 dimensions, a kernel's `targets` null, a
    NUL in an entry point or an override's name, a dynamic dimension named `__proto__` (which runs)."""
    if h["tensors"]:
        t = h["tensors"][0]
        yield "a constant of 100 dimensions", _setter(("tensors", 0, "shape"), [1] * 99 + t["shape"])
    yield "kernel 0 targets null", _setter(("kernels", 0, "targets"), None)
    yield "kernel 0 entry point with a NUL", lambda h: h["kernels"][0].update(entry=h["kernels"][0]["entry"] + "\0x")
    yield "kernel 0 an override named with a NUL", lambda h: h["kernels"][0].setdefault("overrides", {}).update(
        {"A\0B": 1})
    if h["symbols"]:
        def proto(h):
            (name,) = h["symbols"]
            text = json.dumps(h).replace(json.dumps(name), json.dumps("__proto__"))
            h.clear()
            h.update(json.loads(text))
        yield "a dynamic dimension named __proto__", proto


def _infinite_loops(h: dict):
    """An endless loop at the start of every source's first entry point: a clean timeout in every runtime."""
    yield f"{INFINITE} in every source", endless


def endless(h: dict) -> None:
    h["sources"] = [_looped(source) for source in h["sources"]]


def hostile_file(base: str, edit: Edit) -> bytes:
    """Golden `base` with `edit` made to its header."""
    header, blob = _base(base)
    edit(header)
    return _pack(header, blob)


INFINITE = "an infinite loop"  # what a variant whose call may time out says


# 2^32 barriers per workgroup: it ends, in hours. A loop compilers cannot drop (it synchronizes) nor refuse (Tint
# does `loop { }`, which "does not exit").
SPIN = " var spin = 0u; loop { workgroupBarrier(); spin += 1u; if spin == 0u { break; } } "


def _looped(source: str) -> str:
    at = source.find("{", source.find("@compute"))
    return source[:at + 1] + SPIN + source[at + 1:] if at >= 0 else source


FAMILIES = {"divisions": _divisions, "numbers": _numbers, "ranks": _ranks, "uniform_layouts": _uniform_layouts,
            "strings": _strings, "aliasing": _aliasing, "outputs": _outputs, "grids": _grids, "loops": _loops,
            "loop_words": _loop_words, "memory": _memory, "complexity": _complexity, "compile_cost": _compile_cost,
            "classes": _classes, "decided": _decided, "infinite_loops": _infinite_loops}
HOSTILE_BASES = ("mlp", "dynamic", "structured", "state", "packed", "bfloat16")  # float32, dynamic, state, q4, q8
# The suite's sample: this many targeted variants of each family (spread evenly over it), then RANDOM random
# mutations. The catalogue has 4,624 variants (3,352 of them loop_words); `--all` writes every one, `--most N`
# at most N of each family.
PER_FAMILY = {"loops": 64, "infinite_loops": 2}  # each of the latter waits out the call timeout
DEFAULT_PER_FAMILY = 10
RANDOM = 40


def catalogue() -> Iterator[tuple[str, str, str, Edit]]:
    """Every targeted edit: (family, its description, the base it edits, the edit)."""
    for base in HOSTILE_BASES:
        header, _ = _base(base)
        for family, make in FAMILIES.items():
            for what, edit in make(header):
                yield family, f"{base}: {family}: {what}", base, edit


def hostile(sample: bool = False, most: int | None = None) -> Iterator[tuple[str, bytes]]:
    """The targeted variants: with `sample`, the suite's share of each family; else at `most` so many of each
    (None: all), spread evenly over it. (what, the file's bytes)."""
    by_family: dict[str, list] = {}
    for family, what, base, edit in catalogue():
        by_family.setdefault(family, []).append((what, base, edit))
    for family, items in by_family.items():
        k = min(len(items), PER_FAMILY.get(family, DEFAULT_PER_FAMILY) if sample else most or len(items))
        for what, base, edit in (items[i * len(items) // k] for i in range(k)):
            yield what, hostile_file(base, edit)


def write(folder: Path, random_count: int, sample: bool = True, most: int | None = None) -> list[dict]:
    """The targeted variants (hostile()), then `random_count` random ones, as files in `folder`, with
    index.json listing [{"file", "what"}] in order, and replay.json the limits a replay applies."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.wgpt"):
        old.unlink()
    randoms = ((f"random {seed}: {what}", data) for seed in range(random_count) for data, what in [mutate(seed)])
    index = []
    for i, (what, data) in enumerate(itertools.chain(hostile(sample, most), randoms)):
        (folder / f"{i:04d}.wgpt").write_bytes(data)
        index.append({"file": f"{i:04d}.wgpt", "what": what})
    (folder / "index.json").write_text(json.dumps(index, indent=0) + "\n")
    replay = {"call_timeout": CALL_TIMEOUT, "grace": GRACE, "infinite": INFINITE}  # js/test/fuzz.test.js's too
    (folder / "replay.json").write_text(json.dumps(replay) + "\n")
    return index


# -- running one -------------------------------------------------------------------------------------------

def call(path: str) -> dict:
    """Load and run `path` once with zeros at the dynamic sizes' hints; the outcome as a dict."""
    import webgpu_torch
    from webgpu_torch.format import dtypes, symbolic, tree

    try:
        session = webgpu_torch.load(path)
    except webgpu_torch.WebGPUTorchError as e:
        return {"outcome": "refused at load", "error": type(e).__name__, "message": str(e)}
    program = session.program
    leaves = [np.zeros([symbolic.hint(s) for s in spec.shape], dtypes.dtype(spec.dtype).host)
              for spec in program.inputs]
    args, kwargs = tree.unflatten(program.input_tree, leaves)
    try:
        session(*args, **kwargs)
    except webgpu_torch.WebGPUTorchError as e:
        return {"outcome": "refused at run", "error": type(e).__name__, "message": str(e)}
    return {"outcome": "ran"}


def _outcome(path: str) -> dict:
    try:
        return call(path)
    except BaseException as e:  # what the fuzz looks for
        return {"outcome": "raw exception", "error": type(e).__name__, "message": str(e)[:500]}


def run(paths: list[Path], command: list[str], env: dict, timeout: float, cwd: Path) -> Iterator[dict]:
    """Each path's outcome from worker processes (`command` starts one: it reads paths on stdin and prints one
    JSON line per path, `"last": true` on the line after which it exits): a worker that prints nothing
    within `timeout` seconds is killed and the path reported "hung"; one that dies, "crashed" with its exit
    status and the end of its stderr. A new worker takes the rest."""
    pending = list(paths)
    while pending:
        with tempfile.TemporaryFile() as err, subprocess.Popen(
                command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                text=True, bufsize=1) as child:
            result: dict = {}
            while pending and not result.get("last"):
                child.stdin.write(f"{pending.pop(0)}\n")
                child.stdin.flush()
                ready, _, _ = select.select([child.stdout], [], [], timeout)
                line = child.stdout.readline() if ready else None
                if line:
                    result = json.loads(line)
                    yield result
                    continue
                if line is None:
                    child.kill()
                    yield {"outcome": "hung", "message": f"no outcome within {timeout:g} s"}
                else:
                    status = child.wait()
                    err.seek(0)
                    tail = err.read().decode(errors="replace")[-300:]
                    yield {"outcome": "crashed", "message": f"exit {status}: {tail}"}
                break
            child.kill()


# Seconds (WEBGPU_TORCH_TIMEOUT in the workers): no call may take longer, but those of a variant that injects
# INFINITE loops, which must end so (each of those that loads waits this long: 3 in the suite's sample). A
# first call has more for its shaders' compiling (runtime first_call_seconds); a variant's work runs in
# milliseconds on lavapipe. WEBGPU_TORCH_FUZZ_TIMEOUT sets another.
CALL_TIMEOUT = float(os.environ.get("WEBGPU_TORCH_FUZZ_TIMEOUT", 15))
GRACE = 120  # seconds past it before a silent worker is hung (lavapipe compiles slowly)
CLEAN = ("ran", "refused at load", "refused at run")


def replay(folder: Path, index: list[dict], env: dict) -> tuple[Counter, list[str]]:
    """Run every variant of `index` in Python workers (tuning on: options run too): the count of each outcome,
    and what failed — a raw exception, a crash, a hang, a call that timed out, or a message of several
    lines."""
    env = {**env, "WEBGPU_TORCH_TIMEOUT": str(CALL_TIMEOUT), "WEBGPU_TORCH_TUNE": "1"}
    command = [sys.executable, "-m", "tests.fuzz", "--worker"]
    outcomes, failures = Counter(), []
    results = run([folder / v["file"] for v in index], command, env, CALL_TIMEOUT + GRACE, Path(__file__).parent.parent)
    for v, result in zip(index, results, strict=True):
        kind = "timed out" if "did not finish within" in result.get("message", "") else result["outcome"]
        outcomes[kind] += 1
        if kind not in CLEAN and not (kind == "timed out" and INFINITE in v["what"]):
            failures.append(f"{v['what']}: {kind}: {result.get('error', '')} {result.get('message', '')[:300]}")
        elif "\n" in result.get("message", ""):
            failures.append(f"{v['what']}: a message of several lines: {result['message'][:300]}")
    return outcomes, failures


def _worker() -> None:
    """Run each path read from stdin, printing its outcome as one JSON line. A call that timed out leaves its
    device busy: the worker exits after reporting it (the parent starts another)."""
    for line in sys.stdin:
        result = _outcome(line.strip())
        last = "did not finish within" in result.get("message", "")
        print(json.dumps({**result, "last": last}), flush=True)
        if last:
            break
        gc.collect()  # the last program's buffers go before the next one allocates
    os._exit(0)  # skip engine teardown: a device that timed out may still be busy


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        _worker()
    elif sys.argv[1:2] == ["--write"]:
        folder, rest = Path(sys.argv[2]), sys.argv[3:]
        count = int(rest[rest.index("--random") + 1]) if "--random" in rest else RANDOM
        most = int(rest[rest.index("--most") + 1]) if "--most" in rest else None
        index = write(folder, count, sample="--all" not in rest and most is None, most=most)
        print(f"{len(index)} variants in {folder}")
    elif sys.argv[1:2] == ["--run"]:
        folder = Path(sys.argv[2])
        index = json.loads((folder / "index.json").read_text())
        outcomes, failures = replay(folder, index, dict(os.environ))
        print("\n".join(failures))
        print(f"{len(index)} variants on {os.environ.get('WEBGPU_TORCH_ENGINE', 'the default engine')}: "
              f"{dict(outcomes)}, {len(failures)} failures")
    else:
        print(json.dumps(_outcome(sys.argv[1])), flush=True)
        os._exit(0)
