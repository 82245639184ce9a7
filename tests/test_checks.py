"""Device-side checks (docs/artifact.md, Checks): an index out of range raises IndexError naming the node, as
torch raises, instead of returning a made-up row; a later call runs normally."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import webgpu_torch

from .helpers import Fn

pytestmark = pytest.mark.runtime

TABLE = torch.randn(11, 5)
CASES = {
    "embedding": (lambda i: torch.nn.functional.embedding(i, TABLE), "an embedding of 11 rows"),
    "index_select": (lambda i: TABLE.index_select(0, i), "dim 0 of size 11"),
    "gather": (lambda i: TABLE[:, :3].gather(0, i.view(-1, 1).expand(-1, 3)), "dim 0 of size 11"),
    "index": (lambda i: TABLE[i], "dims 0..0 of sizes 11"),
}


@pytest.mark.parametrize("op", sorted(CASES))
@pytest.mark.parametrize("bad", [11, -12, 2**20])
def test_an_index_out_of_range_raises_naming_the_node(op, bad):
    fn, message = CASES[op]
    good = torch.tensor([3, 0, 10, 7])
    session = webgpu_torch.compile_module(Fn(fn), (good,))
    with pytest.raises(IndexError, match=rf"node '\w+': index out of range for {message}|{message}"):
        session(torch.tensor([3, bad, 0, 7]))
    np.testing.assert_array_equal(session(good).numpy(), fn(good).numpy())  # the next call runs


def test_a_failure_in_an_on_device_call_surfaces_at_the_next_read():
    session = webgpu_torch.compile_module(Fn(CASES["embedding"][0]), (torch.tensor([1, 2]),))
    session.on_device(np.array([1, 99]))
    with pytest.raises(webgpu_torch.DeviceIndexError, match="node 'embedding'"):
        session(np.array([1, 2]))
    session(np.array([1, 2]))
