"""ONNX Runtime's WebGPU execution provider as a baseline: the same torch module exported to ONNX, run on the
same GPU. Timed as wall clock with inputs from and outputs to host memory on both sides (this ORT package
cannot allocate device tensors from Python, so that is the common I/O condition).
"""

from __future__ import annotations

import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

PROVIDER = "WebGpuExecutionProvider"


def available() -> str | None:
    """Why ORT WebGPU cannot run here, or None when it can."""
    try:
        import onnxruntime as ort
    except ImportError:
        return "onnxruntime-webgpu is not installed"
    if PROVIDER not in ort.get_available_providers():
        return f"this onnxruntime ({ort.__version__}) has no {PROVIDER}"
    return None


def export(module: torch.nn.Module, args: tuple, path: str | Path, dynamic_shapes=None) -> tuple[list[str], list[str]]:
    """`module` as ONNX at `path` (torch.onnx's exporter, through torch.export); its input and output names."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(module, args, dynamo=True, verbose=False, dynamic_shapes=dynamic_shapes)
    program.save(str(path))
    graph = program.model.graph
    return [v.name for v in graph.inputs], [v.name for v in graph.outputs]


def quantize_weights(path: str | Path, out: str | Path, bits: int = 4, block_size: int = 32,
                     ops: tuple[str, ...] = ("MatMul",)) -> None:
    """The ONNX model at `path` with its constant weights quantized by onnxruntime's own quantizer (what ORT's
    users ship as q4), symmetric, `bits` per weight in blocks of `block_size`: each MatMul's as MatMulNBits
    (blocks along K) and, where `ops` names Gather, an embedding table's as GatherBlockQuantized (blocks along
    each row), written to `out`."""
    import logging

    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer

    # ERROR: quantizing a Gather warns that int4 needs opset 21 and that the raised opset "may not be a valid
    # model"; ORT (CPU, and its WebGPU EP in Node) runs it (tests/test_ort_llm.py)
    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.ERROR)

    axes = (("MatMul", 0), ("Gather", 1))
    config = DefaultWeightOnlyQuantConfig(block_size=block_size, is_symmetric=True, bits=bits,
                                          op_types_to_quantize=ops, quant_axes=axes)
    quantizer = MatMulNBitsQuantizer(onnx.load(str(path)), bits=bits, block_size=block_size, is_symmetric=True,
                                     algo_config=config, op_types_to_quantize=ops, quant_axes=axes)
    quantizer.process()
    quantizer.model.save_model_to_file(str(out), use_external_data_format=False)


def export_llm(model, path: str | Path, max_length: int) -> dict:
    """A Llama-architecture causal LM (transformers) as ONNX at `path`: its FunctionalStep (models/llama.py),
    tokens and past lengths dynamic up to `max_length`, so that one graph evaluates a prompt from empty caches
    and then one token a step. Attention is exported as transformers' eager attention (matmul, mask, softmax):
    torch.onnx writes sdpa's with an IsNaN over the softmax, which ORT's WebGPU EP leaves on the CPU. A tied LM
    head is exported as a weight of its own: torch.onnx folds the transpose of a Linear's weight into the stored
    constant only where nothing else reads it, and a MatMul over a transposed embedding table is neither
    quantizable by MatMulNBits nor free (its transpose runs every call). The cache's shape (kv heads,
    head_dim) and the graph's input and output names."""
    from torch.export import Dim

    from ..models import llama

    c = model.config
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    past = [torch.zeros(1, c.num_key_value_heads, 3, head_dim) for _ in range(2 * c.num_hidden_layers)]
    tokens = Dim("tokens", min=1, max=max_length)
    dynamic = ({1: tokens}, [{2: Dim("past", min=0, max=max_length)}] * len(past))
    head = model.get_output_embeddings()
    saved = c._attn_implementation, head.weight
    c._attn_implementation = "eager"
    head.weight = torch.nn.Parameter(head.weight.detach().clone(), requires_grad=False)
    try:
        with torch.no_grad():
            inputs, outputs = export(llama.FunctionalStep(model), (torch.tensor([[1, 2, 3, 4]]), past), path,
                                     dynamic_shapes=dynamic)
    finally:
        c._attn_implementation, head.weight = saved
    return {"cache": [c.num_key_value_heads, head_dim], "inputs": inputs, "outputs": outputs}


class OrtModel:
    def __init__(self, module: torch.nn.Module, args: tuple):
        import onnxruntime as ort

        self.version = ort.__version__
        path = Path(tempfile.mkdtemp()) / "model.onnx"
        export(module, args, path)
        self.session = ort.InferenceSession(str(path), providers=[PROVIDER])
        if self.session.get_providers()[0] != PROVIDER:
            raise RuntimeError(f"ORT did not place the model on {PROVIDER}: {self.session.get_providers()}")
        self.feeds = {i.name: a.numpy() for i, a in zip(self.session.get_inputs(), args, strict=True)}

    def __call__(self) -> list[np.ndarray]:
        return self.session.run(None, self.feeds)

    def wall_time(self, repeats: int) -> float:
        self()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            self()
            times.append(time.perf_counter() - start)
        return statistics.median(times)
