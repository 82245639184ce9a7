"""docs/ops.md is generated from the registry and must match it."""

import pytest

from webgpu_torch.tools import opsdoc

pytestmark = pytest.mark.host


def test_ops_table_is_up_to_date():
    assert opsdoc.main(["--check"]) == 0, "docs/ops.md is stale: run python -m webgpu_torch.tools.opsdoc"
