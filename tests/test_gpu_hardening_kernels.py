"""CUDA: the example ops take strided and expanded arguments right or refuse them, and compute the
dtypes torch computes or refuse them, on the native path, where a plan traced for one call
serves the next ones that pass its guards. The cases are in kernel_hardening_cases.py, shared with
test_cpu_hardening_kernels.py; bfloat16 is tested here only."""

import pytest
import torch

import kernel_hardening_cases as cases
from conftest import requires_cuda

pytestmark = requires_cuda


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.mark.parametrize("check", cases.CASES, ids=lambda c: c.__name__)
def test_kernel_hardening(check):
    check("cuda")
    torch.cuda.synchronize()  # an asynchronous fault surfaces in its own case
