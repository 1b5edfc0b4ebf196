"""Tile ops launching CUDA C++ kernels, without a GPU (GPU counterpart: tests/test_gpu_cuda_ops.py): the
body traces into a plan (a launch step per kernel), variants compile with NVRTC for sm_90 and export into a
bundle; the launch metadata follows the kernel's declaration (parameter widths and kinds from the cubin and
the mangled name); bad launches are refused while tracing or compiling, with clear errors; the CPU path
refuses (nothing interprets CUDA C++) and the fake/meta path runs."""

from __future__ import annotations

import pytest
import torch

import torch_tile as tt
from torch_tile import _C, _cubin
from torch_tile.frontends.cuda import kernels as cuda_kernels

import cuda_source_ops as ops
from test_cpu_bundle import private_disk_cache


@pytest.fixture(autouse=True)
def own_cache(tmp_path):
    with private_disk_cache(tmp_path / "cache"):
        yield


def metadata_of(qualname: str, *args) -> dict:
    """The launch metadata the runtime gets for the call's (single) variant, compiled for sm_90."""
    [(kid, words)] = _C.variant_keys(qualname, args, {})
    return cuda_kernels._compile_callback(kid, list(words), 90)


def test_an_op_traces_and_exports_its_nvrtc_variants(tmp_path):
    x = torch.randn(1000)
    summary = tt.export_bundle(["cuda_test::scale", "cuda_test::row_sum"], str(tmp_path / "ops.ttb"),
                               examples={"cuda_test::scale": [(x, 2.0), (x.half(), 3.0)],
                                         "cuda_test::row_sum": [(torch.randn(8, 300),)]},
                               capabilities=[90])
    assert summary["variants"] == 3 and summary["capabilities"] == [90]
    assert [len(op["plans"]) for op in summary["ops"]] == [2, 1]
    assert all(plan["steps"]["launches"] == ["scale"] for plan in summary["ops"][0]["plans"])
    variants = tt.bundle.read_bundle(str(tmp_path / "ops.ttb"))["variants"]
    assert {v["frontend"] for v in variants} == {"cuda"}
    names = sorted(v["binary"]["name"] for v in variants)
    assert names == ["_Z5scaleI6__halfLi128EEvPT_PKS1_fi", "_Z5scaleIfLi128EEvPT_PKS0_fi", "row_sum"]


def test_the_launch_metadata_follows_the_kernels_declaration():
    meta = metadata_of("cuda_test::scale", torch.randn(300), 0.5)
    assert meta["name"] == "_Z5scaleIfLi128EEvPT_PKS0_fi"
    assert meta["block"] == [ops.BLOCK, 1, 1] and meta["shared"] == 0 and meta["num_ctas"] == 1
    assert meta["runtime_param_types"] == ["*i8", "*i8", "fp32", "i32"]
    assert meta["runtime_params"] == [0, 1, 2, 3]
    info = _cubin.kernel_info(meta["cubin"], meta["name"])
    assert info.param_sizes == [8, 8, 4, 4] and info.max_threads == (ops.BLOCK, 1, 1)
    summed = metadata_of("cuda_test::row_sum", torch.randn(4, 70))
    assert summed["runtime_param_types"] == ["*i8", "*i8", "i64"]  # long long cols: 8 bytes
    assert summed["block"] == [256, 1, 1] and summed["shared"] == 1024


TAKES_INT = tt.CudaKernel(r"""
__global__ void takes_int(float* out, int n) { if (threadIdx.x < n) out[threadIdx.x] = 1.f; }
""", "takes_int")


def _op(name: str, body):
    return tt.op(f"cuda_test::{name}")(body)


def test_a_float_where_the_kernel_declares_an_int_is_refused():
    def body(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        TAKES_INT[(1,), 32](out, 2.5)
        return out

    _op("float_for_int", body)
    with pytest.raises(TypeError, match="parameter 1 is declared integer, but the launch passes a float"):
        metadata_of("cuda_test::float_for_int", torch.randn(4))


def test_a_launch_with_the_wrong_number_of_arguments_is_refused():
    def body(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        TAKES_INT[(1,), 32](out, x.numel(), 3)
        return out

    _op("too_many", body)
    with pytest.raises(ValueError, match="takes 2 parameters, but the launch passes 3"):
        metadata_of("cuda_test::too_many", torch.randn(4))


@pytest.mark.parametrize("block, message", [
    (2048, r"a block of \(2048, 1, 1\) threads; CUDA allows x and y up to 1024, z up to 64 and 1024 threads"),
    ((64, 32), r"\(64, 32, 1\) threads"), ((1, 1, 128), r"\(1, 1, 128\)"), (0, r"\(0, 1, 1\)"),
    ((2, 2, 2, 2), "1 to 3 dimensions")])
def test_blocks_cuda_cannot_launch_are_refused_while_tracing(block, message):
    def body(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        TAKES_INT[(1,), block](out, x.numel())
        return out

    name = f"block_{abs(hash(str(block)))}"
    _op(name, body)
    with pytest.raises(tt.TraceError, match=message):
        _C.variant_keys(f"cuda_test::{name}", (torch.randn(4),), {})


def test_a_three_dimensional_block_is_launch_metadata_and_part_of_the_configuration():
    x = torch.randn(5, 9, 20)
    meta = metadata_of("cuda_test::volume_scale", x, 2.0)
    assert meta["block"] == [8, 8, 4] and meta["runtime_param_types"] == ["*i8", "*i8", "fp32", "i32", "i32", "i32"]
    [(_, words)] = _C.variant_keys("cuda_test::volume_scale", (x, 2.0), {})
    assert cuda_kernels.REGISTRY.configs[words[0]].block == (8, 8, 4)


def test_a_launch_outside_an_op_body_and_a_launch_without_a_block_are_clear_errors():
    with pytest.raises(RuntimeError, match="launched from torch_tile op bodies"):
        TAKES_INT[(1,), 32](torch.empty(4), 4)
    with pytest.raises(TypeError, match=r"takes_int\[grid, block\]"):
        TAKES_INT[(1,)]


def test_the_cpu_path_refuses_and_the_meta_path_runs():
    with pytest.raises(NotImplementedError, match="cannot run on CPU tensors"):
        ops.scale(torch.randn(10), 2.0)
    out = ops.scale(torch.empty(10, 3, device="meta", dtype=torch.float16), 2.0)
    assert out.shape == (10, 3) and out.dtype == torch.float16 and out.device.type == "meta"


def test_a_variant_of_a_configuration_this_process_never_traced_is_a_clear_error():
    from torch_tile.frontends.triton import compile as triton_compile
    from torch_tile.frontends.triton.kernels import kernel_id as triton_kernel_id

    from test_cpu_bundle import ops as bundle_ops

    kid = cuda_kernels.kernel_id(ops.scale_kernel)
    with pytest.raises(LookupError, match="CUDA kernel scale: launch configuration 12345 is not known in this "
                                          "process.*export the bundle with an example of this call"):
        cuda_kernels._compile_callback(kid, [12345, 0, 0], 90)
    with pytest.raises(LookupError, match="Triton kernel launch configuration 12345 is not known"):
        triton_compile._compile_callback(triton_kernel_id(bundle_ops.softmax_kernel), [12345, 0, 0, 0, 0], 90)


def _facts_variant(x: torch.Tensor) -> tuple[list, list, bytes]:
    """(key words, macros, cubin) of cuda_test::facts's variant for x."""
    [(kid, words)] = _C.variant_keys("cuda_test::facts", (x,), {})
    config = cuda_kernels.REGISTRY.configs[words[0]]
    return list(words), cuda_kernels.specialization_defines(config, list(words)), \
        cuda_kernels._compile_callback(kid, list(words), 90)["cubin"]


def test_a_specialised_kernel_sees_triton_specialization_bits_as_macros():
    base = torch.randn(64)
    words32, defines32, cubin32 = _facts_variant(base[:32])   # aligned, n % 16 == 0
    words33, defines33, cubin33 = _facts_variant(base[:33])   # aligned, n neither 1 nor a multiple of 16
    words_off, defines_off, _ = _facts_variant(base[1:17])    # 4 bytes past an aligned address, n == 16
    words1, defines1, _ = _facts_variant(base[:1])            # n == 1
    assert defines32 == ["TT_ALIGNED16_0=1", "TT_ALIGNED16_1=1", "TT_EQ1_2=0", "TT_DIV16_2=1"]
    assert defines33 == ["TT_ALIGNED16_0=1", "TT_ALIGNED16_1=1", "TT_EQ1_2=0", "TT_DIV16_2=0"]
    assert defines_off == ["TT_ALIGNED16_0=1", "TT_ALIGNED16_1=0", "TT_EQ1_2=0", "TT_DIV16_2=1"]
    assert defines1 == ["TT_ALIGNED16_0=1", "TT_ALIGNED16_1=1", "TT_EQ1_2=1", "TT_DIV16_2=0"]
    assert len({tuple(w) for w in (words32, words33, words_off, words1)}) == 4  # four variants
    assert cubin32 != cubin33  # each compiled with its own bits


def test_a_kernel_specialised_as_cutile_sees_each_tensor_s_layout_bits_as_macros():
    wide = torch.randn(48, 40)

    def variant(x):
        [(kid, words)] = _C.variant_keys("cuda_test::layout_facts", (x,), {})
        config = cuda_kernels.REGISTRY.configs[words[0]]
        return dict(d.split("=") for d in cuda_kernels.specialization_defines(config, list(words))), \
            cuda_kernels._compile_callback(kid, list(words), 90)["cubin"]

    # Hand-derived from cuTile's rules: rows of 40 float32 are 160 bytes (a multiple of 16); 48 rows.
    dense, dense_cubin = variant(wide)
    assert {k: dense[k] for k in ("TT_ALIGNED16_1", "TT_DISJOINT_1", "TT_STRIDE16B_1_0", "TT_STRIDE1_1_1",
                                  "TT_SIZE16_1_0", "TT_SIZE1_1_0", "TT_SIZE16_1_1")} == {
        "TT_ALIGNED16_1": "1", "TT_DISJOINT_1": "1", "TT_STRIDE16B_1_0": "1", "TT_STRIDE1_1_1": "1",
        "TT_SIZE16_1_0": "1", "TT_SIZE1_1_0": "0", "TT_SIZE16_1_1": "0"}
    assert "TT_EQ1_2" not in dense and "TT_DISJOINT_2" not in dense  # the int n is not specialised
    shifted, _ = variant(wide[:1, 1:])  # one row, 4 bytes past an aligned address
    assert (shifted["TT_ALIGNED16_1"], shifted["TT_SIZE1_1_0"], shifted["TT_SIZE16_1_0"]) == ("0", "1", "0")
    broadcast, broadcast_cubin = variant(torch.randn(1, 40).expand(48, 40))
    assert broadcast["TT_DISJOINT_1"] == "0" and broadcast["TT_STRIDE16B_1_0"] == "1"  # a stride of 0 bytes
    assert broadcast_cubin != dense_cubin  # each variant compiled with its own bits


def test_a_kernel_s_specialization_is_one_of_the_known_ones():
    with pytest.raises(ValueError, match="specialize must be False, True, 'triton' or 'cutile'; got 'yes'"):
        tt.CudaKernel("__global__ void k() {}", "k", specialize="yes")


def test_an_unspecialised_kernel_has_one_variant_per_dtype_and_no_macros():
    [(_, words32)] = _C.variant_keys("cuda_test::scale", (torch.randn(32), 2.0), {})
    [(_, words33)] = _C.variant_keys("cuda_test::scale", (torch.randn(64)[1:34], 2.0), {})
    assert list(words32) == list(words33)  # alignment and n % 16 do not enter the key
    config = cuda_kernels.REGISTRY.configs[words32[0]]
    assert cuda_kernels.specialization_defines(config, list(words32)) == []


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("cols", [7, 3000])
def test_the_cuda_softmax_example_compiles_for_each_dtype(dtype, cols):
    """tile::softmax_cuda (torch_tile/kernels/softmax.cu): one instance per dtype and block, an sm_90 cubin
    whose parameters are the launch's (results against torch: tests/test_gpu_cuda_ops.py)."""
    from torch_tile import kernels as K

    x = torch.randn(5, cols, dtype=dtype)
    meta = metadata_of("tile::softmax_cuda", x)
    assert meta["runtime_param_types"] == ["*i8", "*i8", "i64", "i64", "i32"]
    assert meta["block"] == [128 if cols <= 2048 else 256, 1, 1]
    assert _cubin.kernel_info(meta["cubin"], meta["name"]).has_symbol
    plan = K.softmax_cuda.trace(x, device=torch.device("cuda:0"))
    assert [g.text for g in plan.guards if "2048" in g.text]  # the block size is chosen by a guard
