"""The `webgpu-torch` command: info, run, demo, florence2, llama, serve, bench."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from ..format import dtypes
from ..format.errors import WebGPUTorchError


class UsageError(Exception):
    """A command given something it cannot use (a missing file or directory, a wrong choice): one line, no
    traceback."""


def _count(text: str) -> int:
    """A count for --repeat: an integer >= 0."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a count (an integer >= 0)")
    return int(text)


def _info(args) -> int:
    from ..runtime.engine import device_info

    info = device_info(args.engine)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    for key in ("engine", "engine_module", "adapter", "vendor", "description", "backend", "adapter_type"):
        print(f"{key:14s} {info[key]}")
    print(f"{'features':14s} " + ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in info["features"].items()))
    for key in ("max-storage-buffer-binding-size", "max-buffer-size", "max-compute-workgroup-storage-size",
                "max-compute-invocations-per-workgroup", "max-compute-workgroups-per-dimension"):
        print(f"{key:14s} {info['limits'].get(key)}")
    return 0


def _random_input(spec, rng: np.random.Generator) -> np.ndarray:
    """Seeded random data for an input; a dynamic dimension takes the size the model was exported with."""
    from ..format.symbolic import hint

    shape = tuple(hint(s) for s in spec.shape)
    if spec.dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if spec.dtype.startswith("int"):
        return rng.integers(0, 100, shape).astype(spec.dtype)
    values = rng.standard_normal(shape).astype(np.float32)
    return dtypes.round_bfloat16(values) if spec.dtype == "bfloat16" else values.astype(spec.dtype)  # host form


def _run(args) -> int:
    from ..format.tree import unflatten
    from ..runtime.session import Session

    if args.save_outputs and not Path(args.save_outputs).parent.is_dir():
        raise UsageError(f"--save-outputs {args.save_outputs}: there is no directory {Path(args.save_outputs).parent}")
    session = Session.load(args.file, args.engine)
    program = session.program
    if args.input and len(args.input) != len(program.inputs):
        raise UsageError(f"{args.file} takes {len(program.inputs)} inputs "
                         f"({', '.join(i.name for i in program.inputs)}); {len(args.input)} given")
    rng = np.random.default_rng(0)
    arrays = [_load_npy(p) for p in args.input] if args.input else [_random_input(s, rng) for s in program.inputs]
    args_tree = unflatten(program.input_tree, arrays)
    outputs = session(*args_tree[0], **args_tree[1])
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        session(*args_tree[0], **args_tree[1])
        times.append(time.perf_counter() - start)
    from ..format.tree import flatten

    for i, out in enumerate(flatten(program.output_tree, outputs)):
        out = np.asarray(out)
        stats = f"mean {out.mean():.6g}  std {out.std():.6g}" if out.size and out.dtype.kind == "f" else ""
        print(f"output {i}: {out.dtype}{list(out.shape)}  {stats}")
        if args.save_outputs:
            np.save(f"{args.save_outputs}_{i}.npy", out)
    if times:
        print(f"time: {statistics.median(times) * 1e3:.3f} ms per call (median of {args.repeat})")
    return 0


def _load_npy(path: str) -> np.ndarray:
    if not Path(path).is_file():
        raise UsageError(f"--input {path}: no such file")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        raise UsageError(f"--input {path}: not a NumPy array file (.npy, as numpy.save writes)") from None


def _demo(args) -> int:
    from . import demo

    if args.model not in demo.MODELS:
        raise UsageError(f"demo --model {args.model}: choose one of {', '.join(demo.MODELS)}")
    return 0 if demo.run(args.model, args.engine, args.repeat) else 1


def _florence2(args) -> int:
    from .models import florence2

    bits = {"int4": 4, "int8": 8}.get(args.quantize)
    ok = florence2.run(args.size, args.image_size, args.new_tokens, args.seeds, args.prompt_length, args.save,
                       args.engine, args.precision, bits, args.group_size, args.weights, args.num_beams)
    return 0 if ok else 1


def _llama(args) -> int:
    from .models import llama

    if args.arch not in llama.ARCHS:
        raise UsageError(f"llama --arch {args.arch}: choose one of {', '.join(llama.ARCHS)}")
    sampling = {k: getattr(args, k) for k in ("temperature", "top_k", "top_p", "min_p", "repetition_penalty", "seed")}
    ok = llama.run(args.arch, args.new_tokens, args.prompt_length, args.max_length, args.seeds, args.engine,
                   args.save, args.weights, {"int4": 4, "int8": 8}.get(args.quantize), args.group_size, args.num_beams,
                   sampling if args.do_sample else None, dtype=args.dtype, precision=args.precision,
                   checkpoint=args.checkpoint)
    return 0 if ok else 1


def _serve(args) -> int:
    from . import serve

    return serve.main(args)


def _bench(args) -> int:
    from .bench.table import format_table

    rows, meta = args.suite.run(args)
    print(f"{meta['title']} on {meta['device']}; baseline: {meta['baseline']}")
    print(format_table(rows, meta.get("columns", args.suite.COLUMNS), markdown=args.markdown))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1, default=str)
    return 0


def _bench_suites() -> dict:
    """Every module of webgpu_torch.tools.bench with a run(args) function is a suite (imported lazily: torch)."""
    import pkgutil

    from . import bench

    out = {}
    for m in pkgutil.iter_modules(bench.__path__):
        if m.name != "table" and not m.name.startswith("_"):
            out[m.name] = _LazySuite(f"{bench.__name__}.{m.name}")
    return out


class _LazySuite:
    """A bench module imported only when its suite runs (suites import torch; `webgpu-torch info` must not)."""

    def __init__(self, name: str):
        self.name = name
        self._module = None

    @property
    def summary(self) -> str:
        """The first line of the module's docstring."""
        return self.__getattr__("__doc__").splitlines()[0]

    def __getattr__(self, attr):
        if self._module is None:
            import importlib

            self._module = importlib.import_module(self.name)
        return getattr(self._module, attr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="webgpu-torch", description=__doc__)
    parser.add_argument("--engine", choices=["auto", "dawn", "wgpu"], default=None,
                        help="WebGPU engine (default: WEBGPU_TORCH_ENGINE, else Dawn if it finds an adapter)")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="the WebGPU engine, adapter, features and limits in use")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=_info)
    p = sub.add_parser("run", help="run a saved program (random inputs unless --input is given)")
    p.add_argument("file")
    p.add_argument("--input", action="append", default=[], metavar="X.npy", help="one per input, in order")
    p.add_argument("--repeat", type=_count, default=10, help="timed calls after the first")
    p.add_argument("--save-outputs", metavar="PREFIX", help="write PREFIX_<i>.npy for each output")
    p.set_defaults(fn=_run)
    p = sub.add_parser("demo", help="compile a model, run it, check it against PyTorch, print timings")
    p.add_argument("--model", default="minilm", help="minilm (all-MiniLM-L6-v2, real weights) or mlp")
    p.add_argument("--repeat", type=_count, default=20)
    p.set_defaults(fn=_demo)
    p = sub.add_parser("florence2", help="Florence-2 (random weights): compile its stages, generate, check "
                                         "against transformers, print timings")
    p.add_argument("--size", choices=["base", "tiny"], default="base")
    p.add_argument("--image-size", type=int, default=768)
    p.add_argument("--new-tokens", type=int, default=20)
    p.add_argument("--prompt-length", type=int, default=8)
    p.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    p.add_argument("--save", metavar="DIR", help="also save the three compiled stages there, with the last seed's "
                                                 "inputs and ids as generate.json (what js/bench/bench.js replays)")
    p.add_argument("--precision", choices=["float32", "float16"], default="float32",
                   help="compile option precision= (float16: matrix-unit products where the device has them)")
    p.add_argument("--quantize", choices=["int4", "int8"],
                   help="quantize the language model's Linears, LM head and embeddings with torchao first "
                        "(weight-only, symmetric), and compare with the float32 model")
    p.add_argument("--group-size", type=int, default=32, help="--quantize's group along each row")
    p.add_argument("--weights", choices=["float32", "float16"], default="float32",
                   help="compile option weights= (float16: the weights left float, the vision tower's, in half)")
    p.add_argument("--num-beams", type=int, default=1,
                   help="beam search with N beams, compared with transformers' generate(num_beams=N)")
    p.set_defaults(fn=_florence2)
    p = sub.add_parser("llama", help="a Llama-architecture causal LM (Llama, Qwen2; random weights or a local "
                                      "checkpoint): compile its decoder step, generate, check against transformers, "
                                      "print tokens/s")
    p.add_argument("--arch", "--size", default="base",
                   help="base (124.7 M parameters, Llama-2-like), tiny, or a published model's shapes with random "
                        "weights: llama-3.2-1b, qwen2.5-0.5b, … (models/archs.py; a wrong name lists them)")
    p.add_argument("--checkpoint", metavar="DIR", help="a local folder of config.json and weights (from_pretrained)")
    p.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32",
                   help="the model's dtype (16-bit weights stay 16-bit; arithmetic in float32)")
    p.add_argument("--precision", choices=["float32", "float16"], default="float32",
                   help="compile option precision= (float16: activations stored in half where the device can)")
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--prompt-length", type=int, default=8)
    p.add_argument("--max-length", "--cache", type=int, default=256, help="the KV cache's rows (prompt and new tokens)")
    p.add_argument("--seeds", type=int, nargs="*", default=[0, 1])
    p.add_argument("--save", metavar="DIR", help="also save the compiled step there, with the last seed's prompt "
                                                 "and ids as generate.json (what js/bench/bench.js replays)")
    p.add_argument("--weights", default="float32",
                   help="compile option weights= (float32, float16, int8, int4 …); with int8 or int4, transformers "
                        "runs the weights rounded as the program holds them")
    p.add_argument("--quantize", choices=["int4", "int8"],
                   help="quantize the Linears and the embedding with torchao first (weight-only, symmetric); "
                        "transformers then runs the same quantized model")
    p.add_argument("--group-size", type=int, default=32,
                   help="the group along each row of --quantize, and of --weights int4")
    p.add_argument("--num-beams", type=int, default=1,
                   help="beam search with N beams, compared with transformers' generate(num_beams=N)")
    p.add_argument("--do-sample", action="store_true",
                   help="sample (checked step by step against transformers' logits processors) instead of greedy")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=50, help="0: off")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--min-p", type=float, default=0.0)
    p.add_argument("--repetition-penalty", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0, help="the sampler's draws (SplitMix64)")
    p.set_defaults(fn=_llama)
    p = sub.add_parser("serve", help="a page on 127.0.0.1 that runs an artifact in the browser (the JS runtime)")
    from . import serve

    serve.add_arguments(p)
    p.set_defaults(fn=_serve)
    p = sub.add_parser("bench", help="benchmark suites, each against a baseline measured in the same run")
    suites = p.add_subparsers(dest="suite_name", required=True)
    for name, module in _bench_suites().items():
        s = suites.add_parser(name, help=module.summary)
        s.add_argument("--repeat", type=_count, default=5)
        s.add_argument("--markdown", action="store_true", help="print the table as Markdown")
        s.add_argument("--json", metavar="FILE", help="also write the rows and their headline as JSON")
        module.add_arguments(s)
        s.set_defaults(fn=_bench, suite=module)
    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except (WebGPUTorchError, UsageError, ImportError) as e:  # ImportError: an optional package not installed
        print(f"webgpu-torch: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a file the command reads or writes: its name and what the system said
        print(f"webgpu-torch: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
