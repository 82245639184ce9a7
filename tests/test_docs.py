"""docs/ops.md is generated from the registry and must match it."""

from webgpu_torch import opsdoc


def test_ops_table_is_up_to_date():
    assert opsdoc.main(["--check"]) == 0, "docs/ops.md is stale: run python -m webgpu_torch.opsdoc"
