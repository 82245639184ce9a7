"""A chat for the random-weights Llama, which has no tokenizer: a chat model's tokenizer made here, and the
replies the Python runtime gives a conversation, which the JavaScript chat (js/src/chat.js) must give too.

The tokenizer is a byte-level BPE (as Llama 3's, Qwen's and SmolLM's) trained to exactly the model's
vocabulary, so that every id the model generates decodes, with ChatML's special tokens and a ChatML chat
template (SmolLM2's). No chat model's tokenizer ships offline; this one takes the same path: tokenizer.json
through @huggingface/tokenizers, the template through @huggingface/jinja, against transformers'
apply_chat_template."""

from __future__ import annotations

from pathlib import Path

# SmolLM2-Instruct's template: a default system message, each message between <|im_start|>ROLE and <|im_end|>.
TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
# Ids 0, 1 and 2: <|im_end|>, the end of a turn, is the tokenizer's EOS and the random Llama's (its config's 2).
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TEXT = """You are a helpful assistant. Hello! How are you today? Tell me more about WebGPU, please.
WebGPU runs compute shaders on any GPU: a browser page, a laptop or a phone. The compiler turns a PyTorch model
into WGSL kernels, one program file that runs in Python and in JavaScript. A chat model reads the conversation,
then writes its reply one token after another, and the page shows each word as soon as it comes. Why is the sky
blue? Because the air scatters short waves of light more than long ones. What time is it? It is late; the café
closes at nine. Thanks, that was quick and clear. Could you say it again in fewer words? Sure, here it is."""


def write(folder: str | Path, vocab_size: int):
    """Train the tokenizer to `vocab_size` ids, save it with the template into `folder` (tokenizer.json,
    tokenizer_config.json, and chat_template.jinja where transformers saves templates by themselves); the
    transformers tokenizer."""
    import tokenizers
    import transformers
    from tokenizers import decoders, models, pre_tokenizers, trainers

    bpe = tokenizers.Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    # The alphabet is the text's own bytes (not all 256), which leaves room for merges within vocab_size.
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False)
    bpe.train_from_iterator([TEXT], trainer)
    if bpe.get_vocab_size() != vocab_size:
        raise ValueError(f"the text gives {bpe.get_vocab_size()} tokens, not {vocab_size}: give it more words")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                                bos_token="<|im_start|>", chat_template=TEMPLATE)
    fast.save_pretrained(folder)
    return fast


def reply(lm, tokenizer, messages: list[dict], max_tokens: int, temperature: float = 0.0, **sampling) -> dict:
    """The reply the JavaScript chat gives `messages` with OpenAI's settings (temperature 0: greedy; top_p,
    top_k — 0, off, by default — seed): the prompt ids (transformers' apply_chat_template), the generated ids
    (stopping after the tokenizer's EOS, which is the model's, or at `max_tokens`, or where the cache ends, as
    the chat does), the reply's text and finish_reason."""
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)["input_ids"]
    settings = {"do_sample": True, "temperature": temperature, "top_k": 0, **sampling} if temperature else {}
    room = lm.info["max_length"] - len(prompt) + 1  # the last token needs no row
    ids = lm.generate(prompt, min(max_tokens, room), eos_token_id=[tokenizer.eos_token_id], **settings).ids
    return {"prompt_ids": prompt, "ids": ids, "content": tokenizer.decode(ids, skip_special_tokens=True),
            "finish_reason": "stop" if ids[-1] == tokenizer.eos_token_id else "length"}
