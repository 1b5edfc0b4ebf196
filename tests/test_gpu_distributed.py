"""GPU tests: tile ops in torch.distributed over NCCL, one GPU per rank, two ranks (the checks of
tests/distributed_checks.py, as tests/test_cpu_distributed.py runs them over gloo): DTensor sharding rules, FSDP2
(eager, mixed precision with checkpointing, torch.compile) and tensor plus sequence parallel (eager, compiled)
against one process; and a smoke run of the distributed step benchmark under torchrun (its ranks sharing one disk
cache)."""

import os

import pytest
import torch
import torch.distributed as dist

import distributed_checks as checks

pytestmark = pytest.mark.skipif(torch.cuda.device_count() < checks.WORLD or not dist.is_nccl_available(),
                                reason=f"needs {checks.WORLD} GPUs and NCCL")

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast off (the device machines' NCCL set-up)


def test_tile_ops_run_on_dtensor_shards_as_their_sharding_rules_say():
    checks.spawn(checks.sharding_checks, "cuda")


def test_fsdp2_trains_a_model_of_tile_ops_as_one_process_does():
    checks.spawn(checks.fsdp_checks, "cuda")


def test_tensor_and_sequence_parallel_blocks_of_tile_ops_train_as_one_process_does():
    checks.spawn(checks.tensor_parallel_checks, "cuda")


def test_the_distributed_step_benchmark_runs_over_nccl(tmp_path):
    checks.benchmark_smoke(tmp_path, "cuda")
