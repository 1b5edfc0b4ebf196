"""CPU tests of @triton.autotune kernels in op bodies: the tuning key becomes
guards (one plan per key), the config the autotuner itself chooses (its run on
the call's arguments) and its options become the plan's, choices persist on
disk, no tuning during CUDA-graph capture or on CPU/fake tensors, Triton's
pruning is honoured, failing configs are skipped (timed or not), any stack of Triton's
decorators and Autotuner subclasses launch. Timing itself needs a GPU: here the
autotuner's own ``do_bench`` hook is given fake timings and its kernel
launches run on Triton's interpreter (tests/test_gpu_autotune.py times for
real)."""

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile import TraceError, _disk_cache

from torch_tile.frontends.triton import autotune, tuning
from torch_tile.frontends.triton.kernels import launch_config
from torch_tile import _testing

NS = "tt_cpu_autotune"
_REAL_CAN_TUNE = tuning.can_tune
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


TUNED = triton.autotune(configs=CONFIGS, key=["n"])(add_kernel)
PRUNED = triton.autotune(configs=CONFIGS, key=["n"],
                         prune_configs_by={"early_config_prune": _skip_block_64})(add_kernel)
tuned_add = _add_op("add", TUNED)
pruned_add = _add_op("pruned_add", PRUNED)


def _config_of(kernel_call) -> triton.Config:
    """The config a Triton autotuner's benchmark call launches with (a variable of its closure)."""
    cells = dict(zip(kernel_call.__code__.co_freevars, kernel_call.__closure__))
    return cells["config"].cell_contents


@pytest.fixture
def timed(monkeypatch, tmp_path):
    """Lets the trace tune on CPU: the autotuners' own ``do_bench`` reports ``timed.timings`` (by config, in
    CONFIGS' order) without running anything; the blocks benchmarked are kept in ``timed.benched``."""
    _disk_cache.configure(str(tmp_path / "cache"))
    autotune._chosen.clear()

    class Timer:
        timings = [3.0, 1.0, 2.0]
        benched = []

    def do_bench(kernel_call, quantiles=None):
        block = _config_of(kernel_call).kwargs["BLOCK"]
        Timer.benched.append(block)
        timing = {c.kwargs["BLOCK"]: t for c, t in zip(CONFIGS, Timer.timings)}[block]
        if timing == float("inf"):  # as a config that does not fit the device: Triton skips it
            raise triton.runtime.errors.OutOfResources(1 << 20, 1 << 16, "shared memory")
        return [timing] * 3

    for tuner in (TUNED, PRUNED):
        monkeypatch.setattr(tuner, "cache", {})  # Triton's own in-memory choices: each test tunes afresh
        monkeypatch.setitem(vars(tuner), "do_bench", do_bench)  # over its cached property, which needs a GPU
    monkeypatch.setattr(tuning, "can_tune", lambda tracer: True)
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
    assert timed.benched == [64, 128, 256]
    assert _block_of(plan) == 128 and _options_of(plan)["num_warps"] == 4
    assert TUNED.best_config.kwargs == {"BLOCK": 128}  # the autotuner's own choice
    autotune._chosen.clear()  # as a new process: only the disk remembers
    TUNED.cache.clear()
    assert _block_of(tuned_add.trace(x, x)) == 128
    assert timed.benched == [64, 128, 256]  # not timed again
    tuned_add.trace(torch.randn(2000), torch.randn(2000))  # a new key: timed
    assert timed.benched == [64, 128, 256] * 2


def test_the_chosen_variant_compiles_for_sm90(timed):
    x = torch.randn(4096)
    plan = tuned_add.trace(x, x)
    words = _testing.specialization_keys(plan, (x, x))[0]
    compiled, _ = tt.compile_variant(plan.launches[0].kernel, words, 90)
    assert compiled.metadata.num_warps == 4 and compiled.asm["cubin"]
    (launch,) = plan.launches
    assert launch.grid[0].text == "(((x.numel() + 128) - 1) // 128)"


def test_pruning_by_the_kernels_own_rules(timed):
    timed.timings = [0.5, 2.0, 1.0]  # the pruned BLOCK=64 would have won
    plan = pruned_add.trace(torch.randn(1000), torch.randn(1000))
    assert timed.benched == [128, 256]
    assert _block_of(plan) == 256


def test_configs_that_do_not_fit_are_skipped(timed):
    timed.timings = [float("inf"), float("inf"), 2.0]  # Triton's benchmark reports them as infinitely slow
    plan = tuned_add.trace(torch.randn(1500), torch.randn(1500))
    assert _block_of(plan) == 256


@triton.jit
def add_at_least_128_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 128, "BLOCK must be at least 128")
    add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK)


at_least_128_add = _add_op("at_least_128_add", triton.autotune(configs=CONFIGS, key=["n"])(add_at_least_128_kernel))
never_compiles_add = _add_op("never_compiles_add", triton.autotune(
    configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"])(add_at_least_128_kernel))


def test_where_nothing_is_timed_a_config_failing_its_static_assert_is_never_chosen(monkeypatch):
    # Triton's benchmark gives such a config no time, so its autotuner never picks it: the first config is
    # BLOCK=64, which fails; the next one, 128, is what runs on CPU and what a fake or dry trace plans.
    from torch._subclasses.fake_tensor import FakeTensorMode

    x, y = torch.randn(1000), torch.randn(1000)
    torch.testing.assert_close(at_least_128_add(x, y), x + y)
    assert _block_of(at_least_128_add.trace(x, y)) == 128
    assert _block_of(at_least_128_add.trace(x, y, device=torch.device("cuda", 0))) == 128
    with FakeTensorMode():
        assert torch.ops.tt_cpu_autotune.at_least_128_add(torch.empty(700), torch.empty(700)).shape == (700,)

    def generated(*args):
        raise AssertionError("generated again")

    monkeypatch.setattr(autotune, "launch_ttir", generated)  # the verdicts are kept per specialization
    x = torch.randn(1016)  # as 1000 to Triton: not a multiple of 16
    assert _block_of(at_least_128_add.trace(x, x)) == 128


def test_where_every_config_fails_its_static_assert_the_launch_says_so():
    with pytest.raises(tt.KernelError, match=r"kernel add_at_least_128_kernel .*BLOCK must be at least 128"):
        never_compiles_add(torch.randn(100), torch.randn(100))


def test_no_timing_during_graph_capture(timed, monkeypatch):
    x = torch.randn(3000)
    tuned_add.trace(x, x)  # warmed: chosen and persisted
    monkeypatch.setattr(autotune, "capturing", lambda: True)
    assert _block_of(tuned_add.trace(x, x)) == 128  # the kept choice, no timing
    with pytest.raises(tt.CallError, match="cannot happen during CUDA-graph capture.*before capturing"):
        tuned_add(torch.randn(3001), torch.randn(3001))  # a new key during capture: an error, never a fallback
    assert timed.benched == [64, 128, 256]


def test_fake_tensors_never_time(timed, monkeypatch):
    from torch._subclasses.fake_tensor import FakeTensorMode

    monkeypatch.setattr(tuning, "can_tune", _REAL_CAN_TUNE)  # the real check: fake tensors cannot be timed
    with FakeTensorMode():
        out = torch.ops.tt_cpu_autotune.add(torch.empty(5000), torch.empty(5000))
    assert out.shape == (5000,) and timed.benched == []


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


def _tuned_scaled_op(name, kernel):
    @tt.op(f"{NS}::{name}")
    def scaled(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n, SCALE=3)
        return out
    return scaled


@pytest.mark.parametrize("kernel", [autotune_over_heuristics, heuristics_over_autotune],
                         ids=["autotune_over_heuristics", "heuristics_over_autotune"])
def test_stacked_triton_decorators_launch(kernel):
    scaled = _tuned_scaled_op("stack_" + ("ah" if kernel is autotune_over_heuristics else "ha"), kernel)

    for n in (256, 100):  # EVEN true, then false: each case its own plan
        x = torch.randn(n)
        plan = scaled.trace(x)
        assert len(plan.launches) == 1
        torch.testing.assert_close(scaled(x), 3 * x)


# -- the autotuner's own choice, whatever its kind: Triton's, over heuristics, pruned into new configs, subclassed ----


def _triton_choice(tuner, x):
    """What Triton's own autotuner chooses for ``x`` (its launches interpreted), on a fresh cache."""
    from torch_tile._launch_mode import launch_mode
    from torch_tile.frontends.triton.launches import TuningLaunches
    from torch_tile.frontends.triton.interpret import InterpretLaunches

    tuner.cache.clear()
    n = x.numel()
    with launch_mode(TuningLaunches(InterpretLaunches())):
        tuner[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, torch.empty_like(x), n, SCALE=3)
    return tuner.best_config


def _by_block(timings: dict):
    def do_bench(kernel_call, quantiles=None):
        return [timings[_config_of(kernel_call).kwargs["BLOCK"]]] * 3
    return do_bench


def _expected_choice(tuner, x) -> dict:
    choice = _triton_choice(tuner, x).all_kwargs()
    tuner.cache.clear()
    autotune._chosen.clear()
    return choice


def _tuned(tmp_path, monkeypatch, tuner, timings):
    _disk_cache.configure(str(tmp_path / "cache"))
    monkeypatch.setattr(tuning, "can_tune", lambda tracer: True)
    monkeypatch.setattr(autotune, "device_name", lambda device: "test device")
    monkeypatch.setitem(vars(tuner), "do_bench", _by_block(timings))
    monkeypatch.setattr(tuner, "cache", {})


def _plan_kwargs(plan) -> dict:
    config = launch_config(plan.launches[0].config)
    return {**{k: v for k, v in config.statics.items() if k == "BLOCK"}, **config.options}


_STACK_TIMINGS = {64: 2.0, 128: 1.0}
autotune_over_heuristics_t = triton.autotune(configs=_configs, key=["n"])(
    triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(_scaled_copy))


def _prune_to_new_configs(configs, named_args, **kwargs):
    """As libraries write it: new Config objects (not the autotuner's own), num_warps adjusted to the size."""
    return [triton.Config(dict(c.kwargs), num_warps=1 if named_args["n"] < 1024 else 4) for c in configs]


pruned_into_new = triton.autotune(configs=_configs, key=["n"], prune_configs_by={
    "early_config_prune": _prune_to_new_configs})(triton.heuristics({"EVEN": lambda args: False})(_scaled_copy))


class _KeepingAutotuner(triton.runtime.Autotuner):
    """A library's subclass: it keeps every choice it makes (here in a list) and runs Triton's logic."""

    kept: list = []

    def run(self, *args, **kwargs):
        result = super().run(*args, **kwargs)
        _KeepingAutotuner.kept.append(self.best_config)
        return result


def _keeping_autotune(configs, key):
    def decorator(fn):
        return _KeepingAutotuner(fn, fn.arg_names, configs, key, None, None)
    return decorator


subclassed = _keeping_autotune(_configs, ["n"])(triton.heuristics({"EVEN": lambda args: False})(_scaled_copy))


@pytest.mark.parametrize("tuner", [autotune_over_heuristics_t, pruned_into_new, subclassed],
                         ids=["over_heuristics", "pruned_into_new_configs", "subclass"])
def test_the_plan_has_the_config_the_autotuner_itself_chooses(tuner, tmp_path, monkeypatch):
    _tuned(tmp_path, monkeypatch, tuner, _STACK_TIMINGS)
    op = _tuned_scaled_op(f"own_choice_{id(tuner)}", tuner)
    try:
        for n in (256, 2048):
            x = torch.randn(n)
            expected = _expected_choice(tuner, x)
            plan = op.trace(x)
            assert _plan_kwargs(plan) == {k: v for k, v in expected.items() if k in _plan_kwargs(plan)}
            assert _plan_kwargs(plan)["BLOCK"] == 128  # the faster one
            torch.testing.assert_close(op(x), 3 * x)
    finally:
        _disk_cache.configure(None)
        autotune._chosen.clear()
    if tuner is subclassed:
        # Its own timing run chose 128; a CPU call (no timing) leaves the first config, the one it ran.
        assert any(c.kwargs["BLOCK"] == 128 for c in _KeepingAutotuner.kept)
        assert all(c.kwargs in [d.kwargs for d in subclassed.configs] for c in _KeepingAutotuner.kept)


def test_autotuner_hooks_run_as_triton_runs_them(tmp_path, monkeypatch):
    seen = []
    hooked_tuner = triton.autotune(configs=_configs, key=["n"], reset_to_zero=["out_ptr"],
                                   pre_hook=lambda args, reset_only=False: seen.append(("pre", reset_only)),
                                   post_hook=lambda args, exception: seen.append(("post", exception)))(
        triton.heuristics({"EVEN": lambda args: False})(_scaled_copy))

    def run_calls(kernel_call, quantiles=None):  # a benchmark that runs the call once, as Triton's would
        kernel_call()
        return [_STACK_TIMINGS[_config_of(kernel_call).kwargs["BLOCK"]]] * 3

    _tuned(tmp_path, monkeypatch, hooked_tuner, _STACK_TIMINGS)
    monkeypatch.setitem(vars(hooked_tuner), "do_bench", run_calls)
    op = _tuned_scaled_op("hooks", hooked_tuner)
    try:
        x = torch.randn(300)
        plan = op.trace(x)
    finally:
        _disk_cache.configure(None)
        autotune._chosen.clear()
    assert _plan_kwargs(plan)["BLOCK"] == 128
    # Triton's order: per benchmarked config pre then post; then the reset before the chosen config's launch.
    assert seen == [("pre", False), ("post", None), ("pre", False), ("post", None), ("pre", True)]
    torch.testing.assert_close(op(x), 3 * x)
