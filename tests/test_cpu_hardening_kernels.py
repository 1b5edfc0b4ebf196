"""CPU: the example ops take strided and expanded arguments right or refuse them, and compute the
dtypes torch computes or refuse them, through Triton's interpreter. The cases are in
kernel_hardening_cases.py, shared with test_gpu_hardening_kernels.py."""

import pytest
import torch

import kernel_hardening_cases as cases
from conftest import requires_interpreter_scalar_loops


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.mark.parametrize("check", [
    pytest.param(c, id=c.__name__, marks=[requires_interpreter_scalar_loops] if c.needs_interpreter_loops else [])
    for c in cases.CASES
])
def test_kernel_hardening(check):
    check("cpu")
