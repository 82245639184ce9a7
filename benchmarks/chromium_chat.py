"""A causal LM's chat page in headless Chromium, by hand at sizes CI does not run (Llama-3.2-1B int4): the time the
page takes to load the folder, the memory Chromium's processes peak at, the reply's time to first token and
tokens/s in the page's Web Worker, and whether its ids are those the Python runtime generates for the prompt.

    python benchmarks/chromium_chat.py FOLDER [--adapter swiftshader] [--new-tokens 8] [--json OUT]

FOLDER is a folder `webgpu-torch serve --model NAME` compiled (its page.json holds the seeded prompt), e.g.
`serve --model llama-3.2-1b --weights int4`'s in ~/.cache/webgpu_torch/serve/.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from webgpu_torch.runtime.generation import CausalLM
from webgpu_torch.tools import serve
from webgpu_torch.tools.headless import ADAPTERS, Chromium

STATE = "['ready', 'done', 'error'].includes(document.body?.dataset.state) && document.body.dataset.state"


def chat(site: serve.Site, adapter: str) -> dict:
    """Load the page, send the prompt's ids, wait for the reply: the page's result with the load's seconds
    and the peak memory of Chromium's processes past what they held before the page opened."""
    server = serve.start(site)
    try:
        with Chromium(adapter) as browser:
            before = browser.memory(reset=True)
            start = time.perf_counter()
            browser.open(f"http://127.0.0.1:{server.server_address[1]}/?tune=0&timeout=3600")
            state = browser.wait_for(STATE, timeout=3600)
            loaded = time.perf_counter() - start
            if state != "ready":
                raise RuntimeError(f"the page is {state}: {_status(browser)}")
            browser.evaluate("document.body.dataset.state = 'sending'; "
                             f"document.getElementById('message').value = {json.dumps(site.config['prompt'])}"
                             ".join(' '); document.getElementById('send').click()")
            state = browser.wait_for(STATE.replace("'ready', ", ""), timeout=3600)
            if state != "done":
                raise RuntimeError(f"the reply ended in {state} after {time.perf_counter() - start:.0f} s: "
                                   f"{_status(browser)}")
            peaks = browser.memory()
            result = browser.evaluate("window.result")
            peak = sum(p - before.get(pid, (0, 0))[0] for pid, (_, p) in peaks.items())
            return {**result, "loadSeconds": loaded, "peakHostBytes": peak}
    finally:
        server.shutdown()


def _status(browser: Chromium) -> str:
    text = browser.evaluate("document.getElementById('status').textContent")
    return f"{text} {browser.console()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--adapter", choices=ADAPTERS, default="swiftshader")
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--json")
    args = parser.parse_args()
    page = args.folder / "page.json"
    if not page.is_file():
        raise SystemExit(f"{args.folder}: no page.json; give a folder `webgpu-torch serve --model NAME` compiled "
                         "(~/.cache/webgpu_torch/serve/NAME-...)")
    config = json.loads(page.read_text()) | {"maxNewTokens": args.new_tokens}
    result = chat(serve.Site(config, {"/model/": args.folder.resolve()}), args.adapter)
    reply = result["replies"][0]
    want = CausalLM.load(args.folder).generate(config["prompt"], args.new_tokens).ids
    weights = result["memory"]["weights"]
    print(f"{config['name']} in Chromium ({args.adapter}): loaded in {result['loadSeconds']:.1f} s, "
          f"{weights / 2**20:.0f} MiB of weights; peak host memory {result['peakHostBytes'] / 2**20:.0f} MiB "
          f"(past what Chromium held before)")
    print(f"reply: {reply['content']}: first token {reply['firstTokenMs'] / 1e3:.1f} s, "
          f"{reply['tokensPerSecond']:.2f} tokens/s")
    print(f"the Python runtime's ids: {want}: {'the same' if reply['content'] == want else 'DIFFERENT'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"adapter": args.adapter, "python ids": want, **result}, indent=1))


if __name__ == "__main__":
    main()
