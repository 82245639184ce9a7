"""The causal-LM architectures `webgpu-torch llama --arch` builds (models/llama.py), as transformers config
fields (`model_type` picks the config class)."""

# transformers' configs of the architectures (their published config.json's shapes, rope and tying); with
# random seeded weights unless a checkpoint folder is given. The tiny ones keep an architecture's structure
# (tying, rope scaling, biases, grouped heads) at sizes a CPU adapter runs in seconds.
_LLAMA3_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
_LLAMA3 = {"model_type": "llama", "vocab_size": 128256, "rms_norm_eps": 1e-5, "rope_parameters": _LLAMA3_ROPE,
           "max_position_embeddings": 131072, "tie_word_embeddings": True, "bos_token_id": 128000,
           "eos_token_id": 128001}
_QWEN25 = {"model_type": "qwen2", "vocab_size": 151936, "rms_norm_eps": 1e-6,
           "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}, "max_position_embeddings": 32768,
           "tie_word_embeddings": True, "bos_token_id": 151643, "eos_token_id": 151643}
_TINY = {"vocab_size": 257, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2}
ARCHS = {
    # 124.7 M parameters: 12 layers of width 768 (12 query heads, 4 key/value heads), a SwiGLU MLP of 2048,
    # a 32,000-token vocabulary with an untied LM head (Llama-2's vocabulary; sizes between GPT-2 small's and
    # SmolLM's).
    "base": {"model_type": "llama", "vocab_size": 32000, "hidden_size": 768, "intermediate_size": 2048,
             "num_hidden_layers": 12, "num_attention_heads": 12, "num_key_value_heads": 4,
             "max_position_embeddings": 4096, "tie_word_embeddings": False},
    "tiny": {"model_type": "llama", **_TINY, "max_position_embeddings": 4096, "tie_word_embeddings": False},
    "llama-3.2-1b": {**_LLAMA3, "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
                     "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64},
    "llama-3.2-3b": {**_LLAMA3, "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 28,
                     "num_attention_heads": 24, "num_key_value_heads": 8, "head_dim": 128},
    "llama-3.2-tiny": {**_LLAMA3, **_TINY, "bos_token_id": 1, "eos_token_id": 2},
    "qwen2.5-0.5b": {**_QWEN25, "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
                     "num_attention_heads": 14, "num_key_value_heads": 2},
    "qwen2.5-1.5b": {**_QWEN25, "hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28,
                     "num_attention_heads": 12, "num_key_value_heads": 2},
    "qwen2.5-tiny": {**_QWEN25, **_TINY, "bos_token_id": 1, "eos_token_id": 2},
}
