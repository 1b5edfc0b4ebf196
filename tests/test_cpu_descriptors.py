"""CPU tests of Triton host tensor descriptors (TMA) in op bodies, without a GPU:

* tracing: a descriptor is one binding (base slot, shape and stride
  expressions, static block shape) and adds no guards on the data;
* compiling for sm_90: the variant takes each descriptor as Triton's launcher
  passes it (CUtensorMap, shape, strides) with Triton's TMA metadata;
* the cuTensorMapEncodeTiled arguments the C++ launch path computes, against
  the arguments Triton's own launcher hands to its encoder (recorded through a
  fake Triton driver), the validation errors, and the per-thread cache (with
  torch_tile's fake encoder);
* the write check, autotune pre_hooks that set block shapes, the CPU
  interpreter path and fake tensors.
"""

import copy

import pytest
import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

import torch_tile as tt
from torch_tile import _C
from torch_tile import kernels as K
from torch_tile._errors import TraceError
from torch_tile._plan import BindingKind
from torch_tile.frontends.triton.compile import _compile_callback
from torch_tile.frontends.triton.kernels import launch_config
from torch_tile.frontends.triton import tuning
from torch_tile import _testing

import tma_ops as T
from conftest import requires_interpreter_scalar_loops

TENSORDESC = BindingKind.TENSORDESC


def _compiled(op, *args) -> dict:
    plan = op.trace(*args)
    words = _testing.specialization_keys(plan, args)[0]
    return _compile_callback(plan.launches[0].kernel, words, 90)


@pytest.fixture
def fake_encoder():
    _testing.use_fake_tensor_map_encoder(True)
    yield
    _testing.use_fake_tensor_map_encoder(False)


# -- tracing and compiling -----------------------------------------------------------------------------


def test_a_descriptor_is_one_binding_with_size_expressions_and_no_guards():
    plan = T.scale.trace(torch.randn(70, 100), 2.0)
    in_desc, out_desc = plan.launches[0].bindings[:2]
    assert in_desc.kind == out_desc.kind == TENSORDESC
    assert (in_desc.slot, out_desc.slot) == (0, 2)  # x, then the output (slot after the 2 arguments)
    desc = in_desc.desc
    assert [e.text for e in desc.shape] == ["x.size(0)", "x.size(1)"]
    assert [e.text for e in desc.strides] == ["x.stride(0)", "x.stride(1)"]
    assert (desc.nan_padding, desc.round_tf32, desc.name) == (False, False, "in_desc")
    # Triton's __post_init__ asserts on the data would be guards; they are launch-time checks instead.
    assert plan.guards == []


def test_the_compiled_variant_takes_descriptors_as_tritons_launcher_passes_them():
    entry = _compiled(T.scale, torch.randn(70, 100), 2.0)
    assert entry["runtime_param_types"] == ["nvTmaDesc", "i32", "i32", "i64", "i64"] * 2 + ["fp32"]
    assert entry["runtime_params"] == [0] * 5 + [1] * 5 + [2]
    assert entry["runtime_param_parts"] == [-1, 0, 1, 2, 3] * 2 + [-1]
    float32 = 7  # CU_TENSOR_MAP_DATA_TYPE_FLOAT32
    assert [m["block_size"] for m in entry["tensor_maps"]] == [[32, 32], [32, 32]]
    assert all(m["elem_type"] == float32 and m["elem_size"] == 4 for m in entry["tensor_maps"])


def test_the_key_specialises_a_descriptor_on_its_dtype():
    plan = T.scale.trace(torch.randn(64, 64), 2.0)
    words32 = _testing.specialization_keys(plan, (torch.randn(64, 64), 2.0))[0]
    plan16 = T.scale.trace(torch.randn(64, 64).half(), 2.0)
    words16 = _testing.specialization_keys(plan16, (torch.randn(64, 64).half(), 2.0))[0]
    assert words32[1] != words16[1]
    # A different address or size does not change the variant.
    assert _testing.specialization_keys(plan, (torch.randn(96, 64), 2.0))[0] == words32


def test_the_block_shape_is_checked_at_trace_time():
    @tt.op(f"{T.NS}::bad_block")
    def bad_block(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        T.scale_kernel[(1, 1)](TensorDescriptor.from_tensor(x, [512, 32]), TensorDescriptor.from_tensor(out, [512, 32]),
                               1.0, BM=512, BN=32)
        return out

    with pytest.raises(TraceError, match=r"block_shape \[512, 32\] exceeds the TMA box limit of 256"):
        bad_block.trace(torch.randn(8, 8))


def test_a_descriptor_over_a_foreign_tensor_is_refused():
    foreign = torch.randn(64, 64)

    @tt.op(f"{T.NS}::foreign")
    def uses_foreign(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        T.scale_kernel[(1, 1)](TensorDescriptor(foreign, [64, 64], [64, 1], [32, 32]),
                               TensorDescriptor.from_tensor(out, [32, 32]), 1.0, BM=32, BN=32)
        return out

    with pytest.raises(TraceError, match="base must be a tensor the op takes or allocates"):
        uses_foreign.trace(torch.randn(64, 64))


# -- the encoding ------------------------------------------------------------------------------------


class _RecordingUtils:
    """Triton driver utilities that record the encoder call instead of encoding."""

    def __init__(self):
        self.calls = []

    def fill_tma_descriptor_tiled(self, *args):
        self.calls.append(args)
        return object()

    fill_tma_descriptor = fill_tma_descriptor_tiled  # Triton 3.6's name


class _RecordingDriver:
    def __init__(self):
        self.utils = _RecordingUtils()


def _tritons_encoder_arguments(desc: TensorDescriptor, meta: dict) -> tuple:
    """What Triton's launcher passes to its C encoder for ``desc`` (ptr,
    swizzle, elem_size, host dtype, block, shape, strides, padding)."""
    import triton.backends.nvidia.driver as nvidia

    driver = _RecordingDriver()
    triton.runtime.driver.set_active(driver)
    try:
        try:
            nvidia.make_tensordesc_arg(desc, meta, None)
        except TypeError:  # Triton 3.6: (arg, metadata)
            nvidia.make_tensordesc_arg(desc, meta)
    finally:
        triton.runtime.driver.set_active(None)
    (call,) = driver.utils.calls
    return call


def _triton_meta_for(x: torch.Tensor, block: list) -> dict:
    """Triton's own tensordesc metadata for a descriptor over ``x`` (compiled for sm_90)."""
    entry = _compiled(T.scale, x, 1.0)
    host = entry["tensor_maps"][0]
    assert host["block_size"] == block
    return host


@pytest.mark.parametrize("dtype,shape,padding", [(torch.float32, (70, 100), "zero"), (torch.float16, (64, 200), "nan"),
                                                  (torch.bfloat16, (33, 48), "zero")])
def test_encoding_matches_the_arguments_tritons_launcher_encodes_with(dtype, shape, padding):
    x = torch.randn(*shape).to(dtype)
    meta = _triton_meta_for(x, [32, 32])
    # Triton's metadata holds the device dtype enum; torch_tile's entry the host one (as Triton's launcher maps it).
    import triton.backends.nvidia.driver as nvidia

    device_elem_type = {host: device for device, host in nvidia.TMA_DTYPE_DEVICE_TO_HOST.items()}[meta["elem_type"]]
    desc = TensorDescriptor(x, list(x.shape), list(x.stride()), [32, 32], padding)
    ptr, swizzle, elem_size, host_type, block, dims, strides, fill = _tritons_encoder_arguments(
        desc, {"swizzle": meta["swizzle"], "elem_size": meta["elem_size"], "elem_type": device_elem_type,
               "block_size": meta["block_size"], "fp4_padded": False, "is_im2col": False})
    got = _testing.tensor_map_encoding(meta, x.data_ptr(), list(x.shape), list(x.stride()), x.element_size(),
                                 nan_padding=padding == "nan")
    # Triton's C encoder reverses every list (innermost first) and turns strides into bytes.
    assert got["global_address"] == ptr
    assert got["data_type"] == host_type and got["swizzle"] == swizzle
    assert got["global_dim"] == list(reversed(dims))
    assert got["global_strides"] == [s * elem_size for s in reversed(strides[:-1])]
    assert got["box_dim"] == list(reversed(block))
    assert got["element_strides"] == [1, 1]
    assert got["oob_fill"] == fill  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA for nan padding
    assert (got["interleave"], got["l2_promotion"]) == (0, 2)  # none, L2 128B: as Triton


_META = {"swizzle": 3, "elem_size": 2, "elem_type": 6, "block_size": [64, 64]}  # bf16, 64x64 box, 128B swizzle


@pytest.mark.parametrize("base,shape,strides,elem,message", [
    (0x1008, [64, 64], [64, 1], 2, "base address 0x1008 is not 16-byte aligned"),
    (0x1000, [64, 64], [1, 64], 2, r"last dimension must be contiguous \(stride 1\), got strides \[1, 64\]"),
    (0x1000, [64, 100], [100, 1], 2, r"strides \[100, 1\] \(elements of 2 bytes\): every stride but the last"),
    (0x1000, [0, 64], [64, 1], 2, r"shape \[0, 64\]: every size must be in \[1, 2\^32\]"),
    (0x1000, [64, 64], [64, 1], 4, "elements of 4 bytes, compiled for 2"),
    (0x1000, [64], [1], 2, "has rank 1 but the kernel was compiled for rank 2"),
])
def test_bad_descriptors_get_errors_naming_the_parameter(base, shape, strides, elem, message):
    with pytest.raises(ValueError, match="tensor descriptor 'a_desc' .*" + message):
        _testing.tensor_map_encoding(_META, base, shape, strides, elem, param="a_desc")


def test_a_box_narrower_than_16_bytes_is_refused():
    meta = {**_META, "block_size": [64, 4]}
    with pytest.raises(ValueError, match="innermost block dimension spans 8 bytes; TMA needs a multiple of 16"):
        _testing.tensor_map_encoding(meta, 0x1000, [64, 64], [64, 1], 2)


def test_round_to_tf32_selects_the_tf32_data_type():
    meta = {"swizzle": 3, "elem_size": 4, "elem_type": 7, "block_size": [32, 32]}
    assert _testing.tensor_map_encoding(meta, 0x1000, [64, 64], [64, 1], 4, round_tf32=True)["data_type"] == 11


def test_the_cache_encodes_once_per_distinct_descriptor(fake_encoder):
    x = torch.empty(128, 64, dtype=torch.bfloat16)
    args = (_META, x.data_ptr(), [128, 64], [64, 1], 2)
    before = _C.counters()["tensor_map_encodes"]
    first = _testing.cached_tensor_map(*args)
    assert _testing.cached_tensor_map(*args) == first and len(first) == 128
    assert _C.counters()["tensor_map_encodes"] == before + 1
    other = _testing.cached_tensor_map(_META, x.data_ptr() + 4096, [64, 64], [64, 1], 2)
    assert other != first and _C.counters()["tensor_map_encodes"] == before + 2
    assert _testing.cached_tensor_map(*args) == first  # both kept: different cache lines or a re-encode, same map


# -- the rest of the op path -----------------------------------------------------------------------------


def test_descriptor_ops_run_on_cpu_through_the_interpreter():
    x = torch.randn(70, 100)
    torch.testing.assert_close(T.scale(x, 3.0), 3.0 * x)
    y = torch.randn(64, 96, dtype=torch.float16)
    want = y * 0.5
    T.scale_(y, 0.5)
    torch.testing.assert_close(y, want)
    a, b = torch.randn(40, 64), torch.randn(40, 64)
    torch.testing.assert_close(T.add3(a, b), a + b)


def test_descriptor_stores_count_as_writes_of_the_base_tensor():
    @tt.op(f"{T.NS}::undeclared")
    def undeclared(x: torch.Tensor) -> None:
        desc = TensorDescriptor.from_tensor(x, [32, 32])
        T.scale_kernel[(1, 1)](desc, desc, 2.0, BM=32, BN=32)

    with pytest.raises(TraceError, match=r"scale_kernel\(out_desc\) writes argument 'x', which the op does not "
                                         "declare"):
        undeclared.trace(torch.randn(32, 32))
    T.scale_.trace(torch.randn(32, 32), 2.0)  # declared: accepted


def test_autotune_pre_hook_sets_the_block_shapes_of_the_chosen_config():
    a, b = torch.randn(64, 64).half(), torch.randn(64, 96).half()
    plan = K.matmul_tma.trace(a, b)
    config = launch_config(plan.launches[0].config)
    first = K.matmul_tma_kernel.configs[0].kwargs  # CPU: no timing, the first config
    bm, bn, bk = first["BLOCK_M"], first["BLOCK_N"], first["BLOCK_K"]
    assert config.statics["a_desc"][1] == (bm, bk)
    assert config.statics["b_desc"][1] == (bk, bn)
    assert config.statics["c_desc"][1] == (bm, bn)
    entry = _compiled(K.matmul_tma, a, b)
    assert entry["runtime_param_types"].count("nvTmaDesc") == 3


@requires_interpreter_scalar_loops
def test_tma_matmul_on_cpu_matches_torch():
    a, b = torch.randn(64, 48).half(), torch.randn(48, 80).half()
    torch.testing.assert_close(K.matmul_tma(a, b).float(), a.float() @ b.float(), atol=2e-2, rtol=2e-2)


def test_tma_matmul_shape_errors_and_fake_tensors():
    with pytest.raises(ValueError, match="must both be bfloat16 or float16"):
        K.matmul_tma(torch.randn(8, 8), torch.randn(8, 8))
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        out = torch.ops.tile.matmul_tma(torch.empty(300, 128, dtype=torch.bfloat16),
                                        torch.empty(128, 72, dtype=torch.bfloat16))
    assert out.shape == (300, 72) and out.dtype == torch.bfloat16


def test_autotune_timing_runs_get_real_descriptors_with_each_configs_block_shapes(monkeypatch, tmp_path):
    """The GPU tuning path, minus the GPU: the autotuner's own run, whose every
    benchmarked launch receives real descriptors over the call's tensors,
    re-blocked by that config's pre_hook, and a concrete grid; the trace then
    keeps the fastest config."""
    from torch_tile import _disk_cache
    from torch_tile.frontends.triton import autotune
    from torch_tile.frontends.triton.interpret import InterpretLaunches

    launches = []

    def record(self, kernel, grid, args, kwargs):  # what reaches the GPU (here: the interpreter) while tuning
        if callable(grid):  # evaluated as Triton's launcher does, on the bound arguments
            grid = grid({**dict(zip(kernel.arg_names, args)), **kwargs})
        launches.append((grid, [copy.copy(a) for a in args], kwargs))  # pre_hooks re-block in place

    def do_bench(kernel_call, quantiles=None):
        kernel_call()
        return [float(len(launches))] * 3  # later configs look slower: the first one wins

    tuner = K.matmul_tma_kernel
    _disk_cache.configure(str(tmp_path / "cache"))
    monkeypatch.setattr(tuning, "can_tune", lambda tracer: True)
    monkeypatch.setattr(InterpretLaunches, "launch", record)
    monkeypatch.setitem(vars(tuner), "do_bench", do_bench)
    monkeypatch.setattr(tuner, "cache", {})
    monkeypatch.setattr(autotune, "device_name", lambda device: "test device")
    try:
        a, b = torch.randn(256, 64).half(), torch.randn(64, 512).half()
        plan = K.matmul_tma.trace(a, b)
    finally:
        _disk_cache.configure(None)
        autotune._chosen.clear()
    configs = tuner.configs
    assert len(launches) == len(configs) + 1  # one timing run per config, then the chosen config's launch
    for (grid, args, kwargs), config in zip(launches, configs + configs[:1]):
        bm, bn, bk = (config.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
        a_desc, b_desc, c_desc = args[:3]
        assert all(isinstance(d, TensorDescriptor) for d in (a_desc, b_desc, c_desc))
        # Over clones of the inputs (timing must not disturb the caller's data) and a temporary output.
        assert torch.equal(a_desc.base, a) and a_desc.base.data_ptr() != a.data_ptr() and torch.equal(b_desc.base, b)
        assert c_desc.base.shape == (256, 512)
        assert (a_desc.block_shape, b_desc.block_shape, c_desc.block_shape) == ([bm, bk], [bk, bn], [bm, bn])
        assert list(args[3:6]) == [256, 512, 64] and type(args[3]) is int
        assert grid == (min(4, (256 // bm) * (512 // bn)),)
    chosen = launch_config(plan.launches[0].config)
    assert chosen.statics["b_desc"][1] == (configs[0].kwargs["BLOCK_K"], configs[0].kwargs["BLOCK_N"])
