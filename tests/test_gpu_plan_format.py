"""GPU tests of serialized plans: a plan read back from bytes runs
exactly like the traced one: no trace, no compile, the same results."""

import pytest
import torch

import torch_tile as tt
from torch_tile import kernels as K

from conftest import requires_cuda

pytestmark = requires_cuda


@pytest.mark.parametrize("name", ["add", "softmax", "layer_norm", "matmul"])
def test_plans_loaded_from_bytes_run_like_the_traced_ones(name):
    torch.manual_seed(0)
    x = torch.randn(64, 300, device="cuda")
    cases = {
        "add": (K.add, (x, torch.randn_like(x))),
        "softmax": (K.softmax, (x,)),
        "layer_norm": (K.layer_norm, (x, torch.randn(300, device="cuda"), torch.randn(300, device="cuda"), 1e-5)),
        "matmul": (K.matmul, (x, torch.randn(300, 96, device="cuda"))),
    }
    op, args = cases[name]
    expected = op(*args)  # traced and compiled natively
    data = op.export_plans()
    assert len(tt._C.plans_from_bytes(data)["plans"]) == op.plan_count >= 1
    op.clear_plans()
    assert op.plan_count == 0 and op.load_plans(data) >= 1
    before = tt.runtime_counters()
    out = op(*args)
    after = tt.runtime_counters()
    assert after["traces"] == before["traces"]  # the loaded plan serves the call
    assert after["compiles"] == before["compiles"]  # with the variant compiled for the traced one
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
