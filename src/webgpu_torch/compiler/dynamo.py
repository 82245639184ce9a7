"""`torch.compile(model, backend="webgpu")`: each FX graph TorchDynamo captures is exported with torch.export
and compiled through the same pipeline as `compile`; graph breaks and guards are torch's.

A graph that cannot run on WebGPU (an op without a kernel, a dtype or size it cannot take) runs in eager
PyTorch instead, after one warning naming why, so a model always gives eager's numbers. Graphs are compiled
for inference: with autograd recording (a parameter or input that requires grad, outside `torch.no_grad()`),
the graph runs eagerly too, since a WebGPU result carries no gradient. Dynamo passes a module's parameters
and buffers as graph inputs; they are baked into the program as constants when the graph is compiled (as
torch.export reads weights), so a call uploads only the real inputs and folds and fusions see the weights.
Results come back on the device of the first input tensor.

The backend is found by name through the `torch_dynamo_backends` entry point; importing this module is not
needed.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable

import torch

from ..format.errors import WebGPUTorchError
from . import compile as compile_program


def backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    reason = _eager_reason(gm, example_inputs)
    if reason is None:
        weights = _weights(gm, example_inputs)
        module = _WithWeights(gm, example_inputs, weights)
        runtime = tuple(x for i, x in enumerate(example_inputs) if i not in weights)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exported = torch.export.export(module, runtime)
            session = compile_program(exported)
        except WebGPUTorchError as e:
            reason = str(e)
        except Exception as e:  # torch.export cannot take every graph Dynamo can
            reason = f"torch.export could not export the graph: {type(e).__name__}: {str(e).splitlines()[0]}"
    if reason is not None:
        warnings.warn(f"webgpu backend: this graph runs in eager PyTorch: {reason}", stacklevel=2)
        return gm.forward
    return _runner(session, weights)


_WEIGHT_SOURCE = re.compile(r"\._(parameters|buffers)\[")


def _weights(gm: torch.fx.GraphModule, example_inputs: list) -> set[int]:
    """The indices of the graph inputs that are a module's parameters or buffers."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    out = set()
    for i, (node, x) in enumerate(zip(placeholders, example_inputs, strict=True)):
        source = getattr(node.meta.get("grapharg"), "source", None)
        if isinstance(x, torch.nn.Parameter) or (source is not None and _WEIGHT_SOURCE.search(source.name)):
            out.add(i)
    return out


class _WithWeights(torch.nn.Module):
    """The graph with its weight inputs held as buffers: forward takes the other inputs, in order."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: list, weights: set[int]):
        super().__init__()
        self.gm, self.count, self.weights = gm, len(example_inputs), sorted(weights)
        for i in self.weights:
            self.register_buffer(f"w{i}", example_inputs[i].detach())

    def forward(self, *args):
        it = iter(args)
        return self.gm(*(getattr(self, f"w{i}") if i in self.weights else next(it) for i in range(self.count)))


def _eager_reason(gm: torch.fx.GraphModule, example_inputs: list) -> str | None:
    if not all(isinstance(x, torch.Tensor) for x in example_inputs):
        return "the graph takes symbolic sizes (dynamic shapes under torch.compile are not supported yet)"
    if torch.is_grad_enabled() and any(t.requires_grad for t in (*example_inputs, *gm.parameters())):
        return "autograd is recording; WebGPU graphs are for inference (call it under torch.no_grad())"
    return None


def _runner(session, weights: set[int]) -> Callable:
    def run(*args):
        args = [a for i, a in enumerate(args) if i not in weights]
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))
        out = session(*(a.detach().cpu() if isinstance(a, torch.Tensor) else a for a in args))
        if device.type == "cpu":
            return out
        return torch.utils._pytree.tree_map(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t, out)

    run.session = session  # for inspection: the compiled program behind this graph
    return run
