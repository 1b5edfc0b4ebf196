"""CPU tests of @triton.autotune kernels in op bodies (issue 5, item 3): the
tuning key becomes guards (one plan per key), the chosen config's
meta-parameters and options become the plan's, choices persist on disk, no
timing during CUDA-graph capture or on CPU/fake tensors, Triton's pruning is
honoured, failing configs are skipped. Timing itself needs a GPU: here a stub
stands in for it (tests/test_gpu_autotune.py times for real)."""

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile import TraceError, _disk_cache
from torch_tile._tracer import Tracer
from torch_tile.frontends.triton import autotune
from torch_tile.frontends.triton.kernels import launch_config

NS = "tt_cpu_autotune"
_REAL_CAN_MEASURE = Tracer._can_measure
CONFIGS = [triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4),
           triton.Config({"BLOCK": 256}, num_warps=8)]


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _skip_block_64(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] != 64]


def _add_op(name, tuned_kernel):
    def body(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        tuned_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
        return out

    return tt.op(f"{NS}::{name}", body)


tuned_add = _add_op("add", triton.autotune(configs=CONFIGS, key=["n"])(add_kernel))
pruned_add = _add_op("pruned_add", triton.autotune(configs=CONFIGS, key=["n"],
                                                   prune_configs_by={"early_config_prune": _skip_block_64})(add_kernel))


@pytest.fixture
def timed(monkeypatch, tmp_path):
    """Pretends the trace can time configs: ``timed.timings`` are the results;
    each timing round is recorded in ``timed.rounds``."""
    _disk_cache.configure(str(tmp_path / "cache"))
    autotune._chosen.clear()

    class Timer:
        timings = [3.0, 1.0, 2.0]
        rounds = []

    def fake_measure(self, tuner, grid, args, kwargs):
        def measure(configs):
            Timer.rounds.append([c.kwargs["BLOCK"] for c in configs])
            by_block = {c.kwargs["BLOCK"]: t for c, t in zip(CONFIGS, Timer.timings)}
            return [by_block[c.kwargs["BLOCK"]] for c in configs]
        return measure

    monkeypatch.setattr(Tracer, "_can_measure", lambda self: True)
    monkeypatch.setattr(Tracer, "_measure", fake_measure)
    monkeypatch.setattr(autotune, "device_name", lambda device: "test device")
    yield Timer
    _disk_cache.configure(None)
    autotune._chosen.clear()


def _block_of(plan) -> int:
    (launch,) = plan.launches
    return launch_config(launch.config).statics["BLOCK"]


def _options_of(plan) -> dict:
    (launch,) = plan.launches
    return launch_config(launch.config).options


def test_cpu_path_runs_the_first_config_correctly():
    x, y = torch.randn(1000), torch.randn(1000)
    torch.testing.assert_close(tuned_add(x, y), x + y)
    plan = tuned_add.trace(x, y)
    assert _block_of(plan) == 64 and _options_of(plan)["num_warps"] == 2
    assert any(guard.text == "x.numel() == 1000" for guard in plan.guards)  # the tuning key is guarded


def test_fastest_config_is_chosen_persisted_and_reused(timed):
    x = torch.randn(1000)
    plan = tuned_add.trace(x, x)
    assert timed.rounds == [[64, 128, 256]]
    assert _block_of(plan) == 128 and _options_of(plan)["num_warps"] == 4
    autotune._chosen.clear()  # as a new process: only the disk remembers
    assert _block_of(tuned_add.trace(x, x)) == 128
    assert timed.rounds == [[64, 128, 256]]  # not timed again
    tuned_add.trace(torch.randn(2000), torch.randn(2000))  # a new key: timed
    assert len(timed.rounds) == 2


def test_the_chosen_variant_compiles_for_sm90(timed):
    x = torch.randn(4096)
    plan = tuned_add.trace(x, x)
    words = tt._C.testing.specialization_keys(plan, (x, x))[0]
    compiled, _ = tt.compile_variant(plan.launches[0].kernel, words, 90)
    assert compiled.metadata.num_warps == 4 and compiled.asm["cubin"]
    (launch,) = plan.launches
    assert launch.grid[0].text == "(((x.numel() + 128) - 1) // 128)"


def test_pruning_by_the_kernels_own_rules(timed):
    timed.timings = [0.5, 2.0, 1.0]  # the pruned BLOCK=64 would have won
    plan = pruned_add.trace(torch.randn(1000), torch.randn(1000))
    assert timed.rounds == [[128, 256]]
    assert _block_of(plan) == 256


def test_failing_configs_are_skipped_and_reported(timed):
    timed.timings = [float("inf"), float("inf"), 2.0]
    with pytest.warns(RuntimeWarning, match="skipped configs that failed"):
        plan = tuned_add.trace(torch.randn(1500), torch.randn(1500))
    assert _block_of(plan) == 256
    timed.timings = [float("inf")] * 3
    with pytest.raises(TraceError, match="every config failed"):
        tuned_add.trace(torch.randn(1600), torch.randn(1600))


def test_no_timing_during_graph_capture(timed, monkeypatch):
    x = torch.randn(3000)
    tuned_add.trace(x, x)  # warmed: chosen and persisted
    monkeypatch.setattr(autotune, "capturing", lambda: True)
    assert _block_of(tuned_add.trace(x, x)) == 128  # the kept choice, no timing
    with pytest.raises(TraceError, match="cannot happen during CUDA-graph capture.*before capturing"):
        tuned_add.trace(torch.randn(3001), torch.randn(3001))  # a new key during capture
    assert len(timed.rounds) == 1


def test_fake_tensors_never_time(timed, monkeypatch):
    from torch._subclasses.fake_tensor import FakeTensorMode

    monkeypatch.setattr(Tracer, "_can_measure", _REAL_CAN_MEASURE)  # the real check: fake tensors cannot be timed
    with FakeTensorMode():
        out = torch.ops.tt_cpu_autotune.add(torch.empty(5000), torch.empty(5000))
    assert out.shape == (5000,) and timed.rounds == []


def test_config_pre_hook_work_on_tensors_is_an_aten_step_of_the_plan():
    @triton.autotune(configs=[triton.Config({"BLOCK": 64}, pre_hook=lambda args: args["x_ptr"].zero_())],
                     key=["n"])
    @triton.jit
    def hooked_kernel(x_ptr, n, BLOCK: tl.constexpr):
        pass

    @tt.op(f"{NS}::hooked")
    def hooked(x: torch.Tensor) -> None:
        hooked_kernel[(1,)](x, x.numel())

    # The hook's zero_() runs before the launch on every call (as Triton runs
    # it before each launch), so it is a write the op must declare.
    with pytest.raises(TraceError, match=r"aten::zero_ \(at .*\) writes argument 'x', which the op does not "
                                         "declare"):
        hooked.trace(torch.randn(8))

    @tt.op(f"{NS}::hooked_declared", mutates_args=["x"])
    def hooked_declared(x: torch.Tensor) -> None:
        hooked_kernel[(1,)](x, x.numel())

    plan = hooked_declared.trace(torch.randn(8))
    assert [(s.name, s.num_outputs) for s in plan.aten_steps] == [("aten::zero_", 0)]
    assert [s.kind for s in plan.order] == [tt._plan.StepKind.ATEN, tt._plan.StepKind.LAUNCH]


@triton.jit
def _scaled_copy(x_ptr, out_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) * SCALE)
    else:
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * SCALE, mask=mask)


_configs = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})]
# Under the autotuner a heuristic sees the chosen config; over it, only the arguments (as in Triton).
autotune_over_heuristics = triton.autotune(configs=_configs, key=["n"])(
    triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(_scaled_copy))
heuristics_over_autotune = triton.heuristics({"EVEN": lambda args: args["n"] % 128 == 0})(
    triton.autotune(configs=_configs, key=["n"])(_scaled_copy))


@pytest.mark.parametrize("kernel", [autotune_over_heuristics, heuristics_over_autotune],
                         ids=["autotune_over_heuristics", "heuristics_over_autotune"])
def test_stacked_triton_decorators_launch(kernel):
    name = "stack_" + ("ah" if kernel is autotune_over_heuristics else "ha")

    @tt.op(f"{NS}::{name}")
    def scaled(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n, SCALE=3)
        return out

    for n in (256, 100):  # EVEN true, then false: each case its own plan
        x = torch.randn(n)
        plan = scaled.trace(x)
        assert len(plan.launches) == 1
        torch.testing.assert_close(scaled(x), 3 * x)
