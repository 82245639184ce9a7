"""Writes the conformance corpus's decision vectors (README.md beside this file): inputs chosen here, the
expected decisions computed by the Python runtime's own functions. Both suites replay them
(tests/test_conformance.py, js/test/conformance.test.js), so a decision changed in one runtime only fails CI.
Run through `python -m tests.golden.make`, after the golden files it reads.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from types import SimpleNamespace

from webgpu_torch.format import artifact, compile_cost, program, symbolic, tree
from webgpu_torch.format.errors import WebGPUTorchError
from webgpu_torch.runtime import decoding, executor, fit, generation, memory, session, tuning

from .. import schema, wgsl_cost

HERE = Path(__file__).parent
GOLDEN = HERE.parent / "golden"

SYMBOLS = {"s": {"lo": 1, "hi": 64, "hint": 5}, "t": {"lo": 0, "hi": 9, "hint": 3}}
EVALUATE = [
    (["//", "s", 2], {"s": 7}), (["//", ["+", "s", -10], 3], {"s": 7}), (["%", ["+", "s", -10], 3], {"s": 8}),
    (["%", "s", -5], {"s": 7}), (["//", "s", -5], {"s": 7}), (["%", ["*", -1, "s"], 5], {"s": 7}),
    (["+", ["*", "s", 3], -1, ["max", "t", 2], ["min", "s", 4]], {"s": 7, "t": 0}),
    (["*", "s", 1099511627776], {"s": 64}), (["//", 9007199254740991, 3], {}), (["+", "s", 1, 2, 3], {"s": 1}),
]
BOUNDS = [
    ["+", ["*", ["+", "s", -1], 37], 1], ["//", ["+", "s", 63], 64], ["%", "s", 8], ["%", "s", ["+", "t", -10]],
    ["*", ["+", "s", -32], ["+", "s", -32]], ["max", ["+", "s", -10], 0], ["min", "s", "t"],
    ["+", "s", ["*", -1, "s"]], ["//", ["+", "s", -32], 5], ["//", "s", ["+", "t", -10]], ["*", "s", "t", -2],
    7, "t",
]
PROBLEMS = [
    (["//", 4, ["+", "s", -1]], "includes 0"), (["%", 4, "t"], "includes 0"),
    (["^", 1, 2], "unknown expression operator"),
    ("u", "undeclared symbol"), (1.5, "not an integer"), (9007199254740992, "not an integer"),
    ([], "not an expression"), (["max", 1], "with 1 arguments"), (["+"], "with 0 arguments"),
    ({"a": 1}, "not an expression"), (True, "not an expression"), (["//", "s", ["max", "t", 0]], "includes 0"),
]
GRIDS = [0, 1, 65535, 65536, 131070, 131071, 1_000_000, 16_777_216, 65535 * 65535]
PROBES = [(0, 0.0, 5.0), (1, 1.0, 5.0), (2, 0.5, 5.0), (1, 4.9, 5.0), (3, 1.0, 5.0), (5, 2.5, 5.0), (7, 4.99, 5.0)]
# Devices for ranking: features and the workgroup limits (WebGPU's names; absent ones at WebGPU's defaults).
DEVICES = [
    {"about": "no optional feature, WebGPU's default limits", "features": [], "limits": {}},
    {"about": "a compatibility-mode adapter (lavapipe through ANGLE)", "features": ["shader-f16"],
     "limits": {"maxComputeInvocationsPerWorkgroup": 128, "maxComputeWorkgroupStorageSize": 16384,
                "maxComputeWorkgroupSizeX": 128, "maxComputeWorkgroupSizeY": 128}},
    {"about": "a large GPU with every feature", "features": list(program.FEATURES),
     "limits": {"maxComputeInvocationsPerWorkgroup": 1024, "maxComputeWorkgroupStorageSize": 65536,
                "maxComputeWorkgroupSizeX": 1024, "maxComputeWorkgroupSizeY": 1024}},
]
# Adapters, as the engines describe them (wgpu-py's adapter info; a browser's GPUAdapterInfo, in those names).
ADAPTERS = [
    ({"adapter_type": "CPU"}, "Dawn and wgpu-native on lavapipe or SwiftShader"),
    ({"adapter_type": "DiscreteGPU"}, "a GPU"),
    ({"adapter_type": "IntegratedGPU", "is_fallback_adapter": False}, "a GPU"),
    ({"is_fallback_adapter": True}, "a browser's software adapter, Dawn for Node on a CPU"),
    ({"is_fallback_adapter": False, "architecture": "software"}, "a software adapter not marked a fallback one"),
    ({"is_fallback_adapter": False}, "a GPU"),
    ({}, "nothing said: a GPU"),
]
ROOM = {"bytes": 32 * 2**30, "why": "default (set WEBGPU_TORCH_MAX_MEMORY)"}
# Golden files on devices: (file, what it shows, features, limits (WebGPU's names), the memory cap).
FITS = [
    ("float16", "float16 weights where the device has shader-f16: as saved", ["shader-f16"], {}, ROOM),
    ("float16", "float16 weights without shader-f16: the constants widened to float32, the kernels' fallbacks",
     [], {}, ROOM),
    ("activations_f16", "float16 activations without shader-f16: the fallbacks, over buffers sized for float32",
     [], {}, ROOM),
    ("weights_f16", "float16 GEMM weights without shader-f16, and their options' fallbacks", [], {}, ROOM),
    ("float16", "float16 constants within the memory cap, where the device has shader-f16", ["shader-f16"], {},
     {"bytes": 3500, "why": "WEBGPU_TORCH_MAX_MEMORY"}),
    ("float16", "the same constants widened past it", [], {}, {"bytes": 3500, "why": "WEBGPU_TORCH_MAX_MEMORY"}),
    ("mlp", "a buffer past the largest binding", [], {"maxStorageBufferBindingSize": 4096}, ROOM),
    ("mlp", "a buffer past the largest buffer", [], {"maxBufferSize": 4096}, ROOM),
    ("mlp", "the buffers over the memory cap", [], {}, {"bytes": 8192, "why": "WEBGPU_TORCH_MAX_MEMORY"}),
    ("mlp", "a kernel binding more storage buffers than a stage may", [], {"maxStorageBuffersPerShaderStage": 2},
     ROOM),
    ("mlp", "Params larger than a uniform binding", [], {"maxUniformBufferBindingSize": 16}, ROOM),
    ("mlp", "a workgroup of more invocations than the device runs", [],
     {"maxComputeInvocationsPerWorkgroup": 32}, ROOM),
    ("options", "more workgroup memory than the device has", [], {"maxComputeWorkgroupStorageSize": 1024}, ROOM),
]
CONTIGUITY = [([2, 3], [3, 1]), ([2, 3], [1, 2]), ([1, 3], [7, 1]), ([2, 1, 3], [3, 9, 1]), ([2, 0], [1, 1]),
              ([], []), ([4], [2]), ([3, 1], [1, 1])]
INFOS = [
    {"layers": 1, "heads": 2, "head_dim": 4, "decoder_start_token_id": 2},
    {"layers": 1, "heads": 2, "head_dim": 4, "decoder_start_token_id": 2, "eos_token_id": None},
    {"layers": 1, "heads": 2, "head_dim": 4, "decoder_start_token_id": 2, "eos_token_id": 2,
     "forced_bos_token_id": 0, "forced_eos_token_id": 2},
    {"layers": 1, "heads": 2, "head_dim": 4},
    {"layers": 1.5, "heads": 2, "head_dim": 4, "decoder_start_token_id": 2},
    {"layers": 1, "heads": 2, "head_dim": 4, "decoder_start_token_id": 2, "eos_token_id": "2"},
    [1, 2],
    {"layers": 1, "heads": 2, "head_dim": 4, "decoder_start_token_id": 2, "eos_token_id": [9, 2],
     "programs": ["prefill", "sampler"]},
    {"layers": 1, "heads": 2, "head_dim": 4, "decoder_start_token_id": 2, "eos_token_id": [9, "2"]},
    {"layers": 1, "heads": 2, "head_dim": 4, "decoder_start_token_id": 2, "programs": ["step"]},
]
# Generation: the tokens a (fake) decoder picks at each step, and max_new_tokens.
STEPS = [
    (0, [5, 7, 2, 9], 4), (0, [5, 7, 9, 9], 3), (1, [5, 2, 7, 9], 4), (1, [5, 7, 9, 9], 4), (2, [5, 7, 9, 9], 4),
    (2, [2, 7, 9, 9], 4), (2, [5, 7, 9, 9], 1), (7, [5, 7, 9, 2], 4), (7, [5, 2, 9, 9], 4),
]
SEEDS = [0, 1, 42, 2**64 - 1]
# Generation settings (decoding.options' keywords): the sampler's params, or the error.
SETTINGS = [
    {}, {"do_sample": True, "temperature": 0.7, "top_k": 0, "top_p": 0.9, "min_p": 0.05, "repetition_penalty": 1.3},
    {"max_new_tokens": 0}, {"temperature": 0}, {"top_p": 1.5}, {"min_p": -0.1}, {"top_k": -1}, {"top_k": 2.5},
    {"repetition_penalty": 0}, {"num_beams": 2, "num_return_sequences": 3}, {"num_beams": 2, "do_sample": True},
    {"num_beams": 3, "stop_strings": ["x"]}, {"early_stopping": "always"}, {"eos_token_id": [1, -2]},
    {"stop_strings": [""]}, {"seed": -1}, {"seed": 2**64}, {"top_p": 0}, {"eos_token_id": 5}, {"colour": 1},
]
# Beam searches over a stand-in model of 7 tokens (seeded logits per step): num_beams, EOS ids, max_new_tokens,
# length_penalty, early_stopping.
BEAMS = [(2, [], 5, 1.0, False), (3, [3], 6, 1.0, False), (3, [3], 6, 1.0, True), (2, [3, 5], 6, 0.5, "never"),
         (3, [3], 6, 2.0, "never"), (2, [3], 6, -1.0, False), (4, [0], 5, 1.0, True)]
STOPS = [("ab", "abc", ["bc"]), ("abc", "abcd", ["bc"]), ("", "stop", ["stop"]), ("st", "stopper", ["stop"]),
         ("las", "lastopper", ["stop"]), ("stop at", "stop at it", ["stop"]), ("x", "xy", ["q", "y"]),
         ("héllo wor", "héllo world", ["llo w"])]
# A stream's decoded texts, token by token (U+FFFD: a character whose bytes have not all come).
STREAMS = [["a", "ab", "ab c"], ["h", "h\ufffd", "h\ufffd\ufffd", "hé", "hé!"], ["\ufffd", "€"],
           ["x\ufffd", "x\ufffd"], ["ok", "ok\ufffd\ufffd"]]


def _catch(fn) -> dict:
    try:
        return {"value": fn()}
    except (ValueError, WebGPUTorchError) as e:
        return {"error": str(e)}


def expressions() -> dict:
    symbols = {n: symbolic.Symbol(n, s["lo"], s["hi"], s["hint"], "") for n, s in SYMBOLS.items()}

    def read(e):
        return symbolic.from_json(e, symbols)

    problems = []
    for e, phrase in PROBLEMS:
        got = _catch(lambda e=e: symbolic.bounds(read(e)))
        assert phrase in got.get("error", ""), (e, got)
        problems.append({"expr": e, "error": phrase})
    return {"symbols": SYMBOLS,
            "evaluate": [{"expr": e, "env": env, "value": symbolic.evaluate(read(e), env)} for e, env in EVALUATE],
            "bounds": [{"expr": e, "bounds": list(symbolic.bounds(read(e)))} for e in BOUNDS],
            "problems": problems,
            "fold_grid": [{"count": n, "grid": list(program.fold_grid(n))} for n in GRIDS]}


def _load(name: str) -> program.Program:
    return artifact.load(GOLDEN / f"{name}.wgpt")


def python_limits(limits: dict) -> dict:
    """WebGPU's limit names as wgpu-py spells them: maxComputeWorkgroupSizeX -> max-compute-workgroup-size-x."""
    return {fit.kebab(k): v for k, v in limits.items()}


def tuning_vectors() -> dict:
    files = []
    for name in ("options", "mlp", "portable", "precision_f16", "weights_f16"):
        p = _load(name)
        groups = tuning.groups(p)
        devices = []
        for device in DEVICES:
            fitted = fit.for_device(p, set(device["features"]))
            limits = python_limits(device["limits"])
            devices.append({**device, "ranked": [tuning.ranked_candidates(fitted, g, device["features"], limits)
                                                 for g in groups]})
        keys = {engine: [tuning.choice_key(p, g, engine) for g in groups] for engine in ("dawn", "wgpu")}
        files.append({"file": name, "groups": groups, "keys": keys, "devices": devices})
    probes = [{"timed": t, "elapsed": e, "budget": b, "size": tuning.probe_size(t, e, b)} for t, e, b in PROBES]
    return {"files": files, "probe_size": probes}


def _inputs(shapes) -> list:
    return [SimpleNamespace(shape=tuple(s)) for s in shapes]


def input_vectors() -> dict:
    cases = []
    for name, shapes in [("dynamic", [[3, 37]]), ("dynamic", [[64, 37]]), ("dynamic", [[65, 37]]),
                         ("dynamic", [[0, 37]]), ("dynamic", [[3, 36]]), ("tiny", [[2, 5]]),
                         ("structured", [[6, 5], [4], [6, 5]]), ("proto_symbol", [[5, 37]])]:
        p = _load(name)
        got = _catch(lambda p=p, shapes=shapes: session.bind(p, _inputs(shapes)))
        cases.append({"file": name, "shapes": shapes, **({"env": got["value"]} if "value" in got else got)})
    return {"bind": cases}


def output_vectors() -> dict:
    cases = []
    for name, env_shapes in [("dynamic", [[3, 37]]), ("dynamic", [[64, 37]]), ("structured", None), ("tiny", None)]:
        p = _load(name)
        env = session.bind(p, _inputs(env_shapes)) if env_shapes else {}
        outs = []
        for t in p.outputs:
            view, start, size = executor.readback(t, env)
            item = 4
            outs.append({"shape": list(view.shape), "strides": list(view.strides), "start": start, "size": size,
                         "first": view.offset - start // item, "contiguous": view.is_contiguous()})
        cases.append({"file": name, "env": env, "outputs": outs})
    contiguity = [{"shape": s, "strides": st, "contiguous": program.Tensor(0, tuple(s), tuple(st)).is_contiguous()}
                  for s, st in CONTIGUITY]
    return {"readback": cases, "contiguous": contiguity}


def generation_vectors() -> dict:
    infos = []
    for info in INFOS:
        got = _catch(lambda info=info: generation.check_info(info, "seq2seq.json") and None)
        error = {"error": got["error"].removeprefix("seq2seq.json: ")} if "error" in got else {}
        infos.append({"info": info, **error})
    steps = []
    for which, chosen, limit in STEPS:
        info = INFOS[which]
        steps.append({"info": info, "chosen": chosen, "max_new_tokens": limit,
                      "ids": _generate(info, chosen, limit)})
    return {"info": infos, "generate": steps, "uniforms": _uniform_vectors(), "settings": _setting_vectors(),
            "beams": [_beam_vector(*case, seed=i) for i, case in enumerate(BEAMS)],
            "stops": [{"before": b, "text": t, "stop_strings": st, "stops": decoding.completes_stop(t, len(b), st)}
                      for b, t, st in STOPS],
            "streams": [{"texts": texts, "pieces": _stream(texts)} for texts in STREAMS]}


def _uniform_vectors() -> list[dict]:
    import itertools

    return [{"seed": str(seed), "draws": list(itertools.islice(decoding.uniforms(seed), 6))} for seed in SEEDS]


def _setting_vectors() -> list[dict]:
    out = []
    for settings in SETTINGS:
        got = _catch(lambda settings=settings: decoding.options(**settings).sampler_params())
        # an error's phrase up to the value it shows (each runtime shows values its own way)
        out.append({"settings": settings, **({"params": got["value"]} if "value" in got else
                                             {"error": got["error"].split(", got")[0]})})
    return out


def _beam_vector(beams: int, eos: list[int], limit: int, length_penalty: float, early, seed: int) -> dict:
    """A beam search over seeded logits: each step's top continuations as the beams program computes them
    (float32 log_softmax plus running scores, the best `keep`), and what decoding.BeamSearch decides."""
    import numpy as np

    vocab, rng = 7, np.random.default_rng(seed)
    search = decoding.BeamSearch(beams, vocab, limit, tuple(eos), length_penalty, early)
    steps = []
    while not search.done:
        logits = rng.normal(0, 2, (beams, vocab)).astype(np.float32)
        log_probs = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True)) - logits.max(
            1, keepdims=True)
        total = (log_probs + np.float32(search.scores())[:, None]).astype(np.float32).reshape(-1)
        order = sorted(range(total.size), key=lambda i: (-total[i], i))[:search.keep]
        values = [float(total[i]) for i in order]
        tokens, origins = search.step(values, order)
        steps.append({"values": values, "indices": order, "tokens": tokens, "beams": origins, "done": search.done})
    results = search.results(beams)
    return {"num_beams": beams, "vocab_size": vocab, "max_new_tokens": limit, "eos": eos,
            "length_penalty": length_penalty, "early_stopping": early, "steps": steps,
            "sequences": [h.tokens for h in results], "scores": [h.score for h in results]}


def _stream(texts: list[str]) -> list[str]:
    """The pieces generation.text_stream shows for these successive decodings (the last one final)."""
    decodings = iter(texts)
    return list(generation.text_stream(range(len(texts)), lambda ids: next(decodings)))


def _generate(info: dict, chosen: list[int], limit: int) -> list[int]:
    """Python's Seq2Seq.generate over stages that return `chosen[step]` as the decoder's token."""
    import numpy as np

    stages = StandInStages(chosen)
    model = generation.Seq2Seq(stages, stages, stages, info)
    ids = model.generate(np.zeros((1, 3, 4, 4), np.float32), np.zeros((1, 2), np.int64), max_new_tokens=limit).ids
    return ids


class StandInStages:
    """The three stages of a Seq2Seq without a device: the decoder's token at step i is `chosen[i]` (0 past the
    list: a step submitted after EOS, whose token is never read)."""

    program = SimpleNamespace(inputs=[SimpleNamespace(shape=(1, 1))])  # a decoder step of one beam

    def __init__(self, chosen: list[int]):
        self.chosen = iter(chosen)

    def on_device(self, *args):
        return []

    def start(self, args, kwargs=None, keep_on_device=(), read=None):
        import numpy as np

        return _StandInCall(np.array([[next(self.chosen, 0)]]))


class _StandInCall:
    def __init__(self, token):
        self.kept, self.token, self.host = {1: token}, token, {}

    def result(self):
        import numpy as np

        return np.zeros(3, np.float32), self.token

    def discard(self):
        pass


def _links(*chains: int) -> str:
    """A function of `if` chains one after another, each of that many `else if` links."""
    ifs = (" else ".join(f"if x < {i} {{ }}" for i in range(n + 1)) for n in chains)
    return "fn f(x: i32) {\n  " + "\n  ".join(ifs) + "\n}\n"


COST = wgsl_cost.COST
WORKGROUP = "var<workgroup> w: array<{}>;\n"
# (what, a source, a phrase of why it is refused or None): each rule of compile_cost.py at and past its bound.
SOURCES = [
    ("an empty source", "", None),
    ("a line comment holds anything", "// \u00e9 /* \nfn f() {}\n", None),
    ("code that is not ASCII", "const \u00e9 = 1;\n", "not ASCII"),
    ("a block comment", "fn f() {} /* x */\n", "a block comment"),
    ("a private variable", "var<private> p: f32;\n", "a private variable"),
    ("brackets 64 deep", "fn f() { let x = " + "(" * 63 + "1" + ")" * 63 + "; }\n", None),
    ("brackets 65 deep", "fn f() { let x = " + "(" * 64 + "1" + ")" * 64 + "; }\n", "nested deeper than 64"),
    ("an else-if link is a level of nesting", _links(62), None),
    ("an else-if link is a level of nesting, past 64", _links(63), "nested deeper than 64"),
    ("a bare if starts a new chain", _links(40, 40), None),
    ("one function more than allowed", wgsl_cost.functions(COST["max_functions"] + 1), "functions, over 256"),
    ("as many functions as allowed", wgsl_cost.functions(COST["max_functions"]), None),
    ("calls as deep as allowed", wgsl_cost.chain(COST["max_call_depth"]), None),
    ("calls one deeper", wgsl_cost.chain(COST["max_call_depth"] + 1), "calls nested more than 32 deep"),
    ("recursion", "fn a() { b(); }\nfn b() { a(); }\n", "call themselves"),
    ("a function declared twice", "fn a() {}\nfn a() {}\n", "declared twice"),
    ("a function whose inlined calls cost too much", wgsl_cost.doubling(14), "function h13 costs more"),
    ("each function within, the source past", "".join(wgsl_cost.doubling(12, n) for n in "abc"), "tokens, its"),
    ("an array of 65,535 elements", WORKGROUP.format("f32, 65535"), None),
    ("an array of 65,536 elements", WORKGROUP.format("f32, 65536"), "more than 65,535 elements"),
    ("nested arrays multiply", WORKGROUP.format("array<f32, 256>, 256"), "more than 65,535 elements"),
    ("an array of structs holds their arrays", "struct S { a: array<f32, 256>, b: f32 }\n" + WORKGROUP.format(
        "S, 256"), "more than 65,535 elements"),
    ("an alias of an array", "alias A = array<f32, 256>;\n" + WORKGROUP.format("A, 255"), None),
    ("sizes from constants", "const N = 0x100u;\nconst M = N * N - 1u;\n" + WORKGROUP.format("f32, M"), None),
    ("max and min", "const N = 256u;\n" + WORKGROUP.format("f32, max(N * N, min(3u, 4u))"), "more than 65,535"),
    ("division truncates toward zero", WORKGROUP.format("f32, -7 / 2 + 4"), None),
    ("a remainder takes the dividend's sign", WORKGROUP.format("f32, -7 % 3 + 1"), "not a positive constant"),
    ("a shadowed constant counts at its largest", "const N = 1u;\nfn f() { const N = 70000u; var a: array<f32, N>; }\n",
     "more than 65,535 elements"),
    ("an override is no constant", "override N: u32 = 4u;\n" + WORKGROUP.format("f32, N"), "not a positive constant"),
    ("a float is no size", WORKGROUP.format("f32, 4.0"), "not a positive constant"),
    ("a 13-digit literal", WORKGROUP.format("f32, 1000000000000"), "not a positive constant"),
    ("a constant defined through itself", "const N = N + 1u;\n" + WORKGROUP.format("f32, N"), "nested more than 64"),
    ("types defined through 70 others", "alias T0 = f32;\n" + "".join(f"alias T{i + 1} = T{i};\n" for i in range(70))
     + WORKGROUP.format("T70, 4"), "nested more than 64"),
    ("a function's array: 32 tokens an element", wgsl_cost.array(3000), None),
    ("a function's array past its cost", wgsl_cost.array(3100), "function h0 costs more"),
    ("an entry point pays for the module's arrays", "const t = array<f32, 4000>();\n@compute @workgroup_size(1)\n"
     "fn main() { let x = t[0]; }\n", "function main costs more"),
    ("but not for its workgroup variables", "var<workgroup> w: array<f32, 4000>;\n@compute @workgroup_size(1)\n"
     "fn main() { w[0] = 1.0; }\n", None),
    ("a struct named in a function costs its elements", "struct S { a: array<f32, 4000> }\nfn f() { var s: S; }\n",
     "function f costs more"),
]


def compile_cost_vectors() -> dict:
    cases = []
    for what, source, phrase in SOURCES:
        got = compile_cost.problem(source)
        assert (got is None) if phrase is None else (got is not None and phrase in got), (what, got)
        cases.append({"about": what, "source": source, "problem": got})
    return {"cases": cases}


NODES = [  # (output tree node, a phrase of why it is refused or None)
    ({"type": "dict", "keys": ["a"], "class": "collections.OrderedDict"}, None),
    ({"type": "dict", "keys": ["a"], "class": "transformers.modeling_outputs.BaseModelOutput"}, None),
    ({"type": "dict", "keys": ["a"], "class": "transformers_modules.microsoft.Florence-2-base.m.Out"}, None),
    ({"type": "tuple", "class": "torch.return_types.max"}, None),
    ({"type": "tuple", "class": "tests.test_outputs.Pair", "fields": ["a"]}, None),
    ({"type": "dict", "keys": ["a"], "class": "webgpu_torch.packing.Packing"}, "not one a compiled program records"),
    ({"type": "dict", "keys": ["a"], "class": "webgpu_torch.runtime.engine.Engine"}, "not one a compiled program"),
    ({"type": "dict", "keys": ["a"], "class": "collections.defaultdict"}, "not one a compiled program records"),
    ({"type": "dict", "keys": ["a"], "class": "transformersX.Output"}, "not one a compiled program records"),
    ({"type": "dict", "keys": ["a"], "class": "transformers"}, "not one a compiled program records"),
    ({"type": "tuple", "class": "collections.OrderedDict"}, "not one a compiled program records"),
    ({"type": "dict", "keys": ["a"], "class": "torch.return_types.max"}, "not one a compiled program records"),
    ({"type": "list", "class": "torch.return_types.max"}, "not one a compiled program records"),
    ({"type": "tuple", "class": "a.Pair", "fields": ["a", "b"]}, "fields are not distinct names"),
    ({"type": "tuple", "class": "a.Pair", "fields": ["1a"]}, "fields are not distinct names"),
    ({"type": "tuple", "fields": ["a"]}, "fields are not distinct names"),
    ({"type": "dict", "keys": ["a"], "class": "a.Pair", "fields": ["a"]}, "fields are not distinct names"),
    ({"type": "tuple", "class": None}, "not a string"),
]


def class_vectors() -> dict:
    cases = []
    for node, phrase in NODES:
        node = {**node, "items": [{"type": "leaf"}] * len(node.get("keys", ["a"]))}
        got = tree.class_problem(node)
        assert (got is None) if phrase is None else (got is not None and phrase in got), (node, got)
        cases.append({"node": node, "problem": phrase})
    return {"cases": cases}


GIB = 2**30
CAPS = [  # (adapter kind, device-local bytes, the memory the process may still take)
    ("gpu", None, {}), ("gpu", 16 * GIB, {}), ("gpu", None, {"host": GIB}), ("cpu", None, {"host": 20 * GIB}),
    ("cpu", None, {"host": 64 * GIB}), ("cpu", None, {"host": 20 * GIB, "address_space": 2 * GIB}),
    ("cpu", None, {"host": 20 * GIB, "data": 4 * GIB, "cgroup": 3 * GIB}), ("cpu", None, {"address_space": -5}),
    ("cpu", 8 * GIB, {"host": 20 * GIB}), ("cpu", None, {"host": None, "cgroup": None}), ("cpu", None, {"host": 1001}),
]


def memory_vectors() -> dict:
    return {"cases": [{"kind": kind, "device_local": local, "rooms": rooms,
                       "cap": vars(memory.decide(kind, local, rooms))} for kind, local, rooms in CAPS]}


def timeout_vectors() -> dict:
    return {"first_call": [{"file": name, "engine": engine, "timeout": 20,
                            "seconds": executor.first_call_seconds(_load(name), engine, 20)}
                           for name in ("tiny", "mlp", "dynamic", "options", "precision_f16")
                           for engine in ("dawn", "wgpu")]}


def headers() -> dict[str, dict]:
    """Every golden and damaged file whose header is a JSON object, by its path under tests/golden."""
    out = {}
    for path in sorted([*GOLDEN.glob("*.wgpt"), *(GOLDEN / "bad").glob("*.wgpt")]):
        raw = path.read_bytes()
        try:
            _, _, _, length, _ = artifact.PREAMBLE.unpack_from(raw)
            header = json.loads(raw[32:32 + length], parse_constant=_not_json)
        except (ValueError, struct.error, RecursionError):  # not JSON as JavaScript reads it
            continue
        if isinstance(header, dict):
            out[str(path.relative_to(GOLDEN))] = header
    return out


def _not_json(text: str):
    raise ValueError(text)


def fitted(name: str, features: list[str], limits: dict, cap: dict) -> dict:
    """Golden file `name` fitted to a device: its buffers' sizes and each dispatch's kernel and options'
    kernels as the device runs them, or the refusal."""
    try:
        p = fit.for_device(_load(name), set(features))
        problem = fit.limit_problem(p, python_limits(limits), SimpleNamespace(**cap))
    except WebGPUTorchError as e:
        problem = str(e)
    if problem:
        return {"refused": problem}
    return {"buffers": [b.size for b in p.buffers], "kernels": [d.kernel for d in p.dispatches],
            "options": [[o.kernel for o in d.options] for d in p.dispatches]}


def device_fit_vectors() -> dict:
    adapters = [{"info": info, "kind": fit.adapter_kind(info), "why": why} for info, why in ADAPTERS]
    fits = [{"file": name, "about": about, "features": features, "limits": limits, "cap": cap,
             **fitted(name, features, limits, cap)} for name, about, features, limits, cap in FITS]
    return {"adapters": adapters, "fits": fits}


def schema_vectors() -> dict:
    """What docs/artifact.schema.json says of each header (tests/schema.py; js/testkit/schema.js must agree)."""
    return {"headers": [{"file": name, "valid": not schema.problems(h)} for name, h in headers().items()]}


def write() -> None:
    for name, make in [("expressions", expressions), ("tuning", tuning_vectors), ("inputs", input_vectors),
                       ("outputs", output_vectors), ("generation", generation_vectors), ("schema", schema_vectors),
                       ("device_fit", device_fit_vectors), ("compile_cost", compile_cost_vectors),
                       ("classes", class_vectors), ("memory", memory_vectors), ("timeouts", timeout_vectors)]:
        (HERE / f"{name}.json").write_text(json.dumps(make(), indent=1) + "\n")


if __name__ == "__main__":
    write()
