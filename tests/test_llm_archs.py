"""The published small-LM architectures `webgpu-torch llama --arch` builds (models/archs.py) at tiny sizes: Llama
3.2's (tied embeddings, llama3 rope scaling) and Qwen2.5's (tied, attention biases), in float32, bfloat16 and
float16, with torchao int4 weights and the compiler's own int4, against transformers on the same model; a tied
embedding table and LM head stored once; a local checkpoint folder loaded."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from webgpu_torch.tools.models import llama
from webgpu_torch.tools.models.rounded_weights import round_weights

pytestmark = pytest.mark.e2e

ARCHS = ["llama-3.2-tiny", "qwen2.5-tiny"]
NEW_TOKENS, MAX_LENGTH = 12, 40
# At transformers' small initial weights a tied LM head mostly repeats the input token; larger ones give
# greedy ids that change from token to token, so that comparing them compares something.
INIT_STD = 0.2


def _model(arch: str, dtype: str = "float32", seed: int = 0):
    model = llama.build(arch, seed=seed, init_std=INIT_STD, dtype=dtype)
    model.generation_config.eos_token_id = None
    return model


def _teacher_forced(model, lm, prompt: list[int], new_tokens: int = NEW_TOKENS) -> tuple[float, list[int]]:
    """transformers' greedy ids, and how far the compiled LM's logits fed those ids are from transformers', at
    most, relative to the logits' scale."""
    want_ids, want_logits = llama.reference_generate(model, prompt, new_tokens)
    logits = lm.generate(prompt, new_tokens, teacher=want_ids).logits
    error = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(logits, want_logits, strict=True))
    return error, want_ids


def _check(model, lm, tolerance: float = 1e-3, seed: int = 0) -> None:
    prompt = llama.sample_prompt(model, 7, seed)
    error, want_ids = _teacher_forced(model, lm, prompt)
    assert error <= tolerance, f"teacher-forced logits off by {error:.2e} of the scale"
    assert lm.generate(prompt, NEW_TOKENS).ids == want_ids
    assert len(set(want_ids)) > NEW_TOKENS // 2  # ids that say something


def _tables(program, rows: int) -> list[str]:
    """The names of the step's constants that hold a vocabulary table: `rows` rows of floats, or packed."""
    out = []
    for index, data in program.constants.items():
        packing = program.packings.get(index)
        if (packing.rows if packing else data.shape[0] if data.ndim == 2 else 0) == rows:
            out.append(program.buffers[index].name)
    return out


@pytest.mark.parametrize("arch", ARCHS)
def test_generates_as_transformers_and_stores_the_tied_table_once(arch):
    model = _model(arch)
    assert model.lm_head.weight is model.get_input_embeddings().weight
    lm = llama.compile_step(model, MAX_LENGTH)
    _check(model, lm)
    for session in (lm.step, lm.programs["prefill"]):
        assert len(_tables(session.program, model.config.vocab_size)) == 1


def test_qwen2_attention_biases_merge_with_their_weights():
    """q, k and v, each with its bias, are one linear (one GEMV in a step) per layer: linear_merging stacks the
    biases beside the weights."""
    model = _model("qwen2.5-tiny")
    program = llama.compile_step(model, MAX_LENGTH, prefill=False).step.program
    names = [program.buffers[i].name for i in program.constants]
    layers = model.config.num_hidden_layers
    assert sum(n.endswith("merged_bias") for n in names) == layers, names
    assert not any("q_proj_bias" in n or "k_proj_bias" in n for n in names)


def test_the_llama3_rope_scaling_is_transformers():
    """Llama 3.2's rope frequencies are scaled by wavelength (rope_type llama3): over 300 positions, the
    logits from the last prompt token on as transformers computes them."""
    model = _model("llama-3.2-tiny", seed=3)
    lm = llama.compile_step(model, 320)
    error, _ = _teacher_forced(model, lm, llama.sample_prompt(model, 299, seed=5), new_tokens=2)
    assert error <= 1e-3, f"teacher-forced logits off by {error:.2e} of the scale"


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("arch", ARCHS)
def test_a_16_bit_model_keeps_its_weights_in_16_bits_and_computes_in_float32(arch, dtype):
    """A bfloat16 or float16 model: its cache is of its dtype (float32 on the device), its weights are stored in
    16 bits, and it computes in float32, rounding where the model casts to its dtype (RMSNorm's output, say):
    within llama.LOGIT_BOUND[dtype] of transformers computing in float32 over the same weights, with its ids."""
    model = _model(arch, dtype)
    lm = llama.compile_step(model, MAX_LENGTH)
    program = lm.step.program
    widths = {program.buffers[i].name: data.dtype.itemsize for i, data in program.constants.items()
              if data.size >= model.config.hidden_size ** 2}
    assert set(widths.values()) == {2}, widths
    _check(model.float(), lm, llama.LOGIT_BOUND[dtype])


def test_float16_activations_stay_within_the_half_bound():
    model = _model("qwen2.5-tiny")
    lm = llama.compile_step(model, MAX_LENGTH, precision="float16")
    error, _ = _teacher_forced(model, lm, llama.sample_prompt(model, 7, 0))
    assert error <= llama.LOGIT_BOUND["precision=float16"], f"teacher-forced logits off by {error:.2e} of the scale"


@pytest.mark.parametrize("arch", ARCHS)
def test_torchao_int4_keeps_the_tied_table_tied_packed_once(arch):
    """`llama --quantize int4` on a tied model: the embedding's quantized table is the LM head's weight too,
    torch.export reads it through two dequantize nodes, and the program packs and stores it once."""
    model = _model(arch)
    llama.quantize(model, 4, 32)
    assert model.lm_head.weight is model.get_input_embeddings().weight
    lm = llama.compile_step(model, MAX_LENGTH)
    program = lm.step.program
    assert len(_tables(program, model.config.vocab_size)) == 1
    assert {p.bits for p in program.packings.values()} == {4}
    _check(model, lm)


def test_rounded_int4_weights_store_the_tied_table_once():
    """weights="int4": the compiler quantizes the one float table once for the embedding and the LM head, also
    where the float table is over the binding limit but its packed words are not (64 KiB here: 257 rows of 64
    floats; a real model's vocabulary at 128 MiB): the same constants, not the LM head's in row chunks too."""
    model = _model("llama-3.2-tiny")
    lm = llama.compile_step(model, MAX_LENGTH, weights="int4", group_size=32)
    assert len(_tables(lm.step.program, model.config.vocab_size)) == 1
    limited = llama.compile_step(model, MAX_LENGTH, prefill=False, weights="int4", group_size=32,
                                 max_binding_size=2**16)
    assert model.get_input_embeddings().weight.nbytes > 2**16
    stored = [sorted(a.nbytes for a in p.constants.values()) for p in (lm.step.program, limited.step.program)]
    assert stored[0] == stored[1]
    round_weights(model, "int4", 32)
    with torch.no_grad():
        _check(model, lm)
        _check(model, limited)


def test_float16_weights_store_the_tied_table_once_in_float16():
    """weights="float16": the embedding gathers from the float16 copy of the table its tied LM head reads, and
    the float32 table is stored nowhere (a 1B model's 128256 x 2048: 525 MB, not 1.6 GB); the program computes
    what transformers does over the same weights rounded to float16."""
    model = _model("llama-3.2-tiny")
    lm = llama.compile_step(model, MAX_LENGTH, weights="float16")
    for session in (lm.step, lm.programs["prefill"]):
        tables = [data for data in session.program.constants.values()
                  if data.ndim == 2 and data.shape[0] == model.config.vocab_size]
        assert [t.dtype for t in tables] == [np.float16], [t.dtype for t in tables]
    round_weights(model, "float16")
    with torch.no_grad():
        _check(model, lm)


@pytest.mark.host
def test_a_checkpoint_folder_is_loaded_in_its_dtype_with_its_tying(tmp_path):
    """`llama --checkpoint DIR`: from_pretrained over a local folder, the saved weights in the dtype asked for."""
    model = _model("qwen2.5-tiny", "bfloat16", seed=4)
    model.save_pretrained(tmp_path)
    loaded = llama.build("qwen2.5-tiny", dtype="bfloat16", checkpoint=str(tmp_path))
    assert loaded.lm_head.weight is loaded.get_input_embeddings().weight
    got, want = loaded.state_dict(), model.state_dict()
    assert got.keys() == want.keys()
    assert all(got[name].dtype == torch.bfloat16 and torch.equal(got[name], p) for name, p in want.items())
