"""CPU tests: tile ops in torch.distributed, two processes over gloo (tile ops on CPU run through Triton's
interpreter): the checks of tests/distributed_checks.py, and the sharding-rule API's own errors. GPU counterpart
(NCCL, one GPU per rank): tests/test_gpu_distributed.py."""

import pytest
import torch.distributed as dist

import distributed_checks as checks
from distributed_checks import row_sum

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo")


def test_tile_ops_run_on_dtensor_shards_as_their_sharding_rules_say():
    checks.spawn(checks.sharding_checks, "cpu")


def test_a_sharding_rule_is_a_callable_or_a_shorthand():
    with pytest.raises(ValueError, match="dist_test::row_sum.register_sharding: unknown shorthand 'columnwise'"):
        row_sum.register_sharding("columnwise")
    with pytest.raises(TypeError, match="the rule must be a callable"):
        row_sum.register_sharding(3)
    with pytest.raises(ValueError, match=r"partial=\(1,\) must name outputs \(0 to 0\)"):
        row_sum.register_sharding("rowwise", partial=(1,))
    with pytest.raises(ValueError, match="partial= is for the rowwise shorthand"):
        row_sum.register_sharding("elementwise", partial=(0,))


def test_fsdp2_trains_a_model_of_tile_ops_as_one_process_does():
    checks.spawn(checks.fsdp_checks, "cpu")


def test_tensor_and_sequence_parallel_blocks_of_tile_ops_train_as_one_process_does():
    checks.spawn(checks.tensor_parallel_checks, "cpu")


def test_the_distributed_step_benchmark_runs_over_gloo(tmp_path):
    checks.benchmark_smoke(tmp_path, "cpu")
