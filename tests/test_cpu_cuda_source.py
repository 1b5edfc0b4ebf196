"""CUDA C++ kernels compiled with NVRTC from the torch wheel (torch_tile/frontends/cuda, its compile
stage): sm_90 cubins on a machine without a GPU or CUDA toolkit, checked with torch_tile's own cubin reader
(entry point, parameter sizes, launch bounds); templates; the wheel's CUDA headers; compile errors with
NVRTC's log; and the disk cache (hits without NVRTC, keys that change with the source, options and target,
and entries whose cubin lacks the entry point rebuilt, never returned)."""

from __future__ import annotations

import os

import pytest

from torch_tile import _C, _disk_cache
from torch_tile.frontends.cuda import CudaKernel, cuda_include_dirs

from test_cpu_bundle import private_disk_cache

SCALE = r"""
#include <cuda_fp16.h>

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) scale(T* out, const T* x, float s, int n) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) out[i] = T(float(x[i]) * s);
}

extern "C" __global__ void fill(float* out, float value, long long n) {
  __shared__ float staged[256];
  staged[threadIdx.x] = value;
  __syncthreads();
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = staged[threadIdx.x];
}
"""


@pytest.fixture
def cache(tmp_path):
    with private_disk_cache(tmp_path / "cache"):
        yield _disk_cache.active()


@pytest.fixture
def nvrtc_calls(monkeypatch):
    """Counts NVRTC compiles (the binding the frontend calls)."""
    calls = []
    real = _C.compile_cuda_source

    def counting(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(_C, "compile_cuda_source", counting)
    return calls


def test_nvrtc_from_the_torch_wheel_and_its_cuda_headers():
    major, minor = map(int, _C.nvrtc_version().split("."))
    assert major >= 12
    assert any(d.endswith("include") for d in cuda_include_dirs())


@pytest.mark.parametrize("dtype, param_sizes", [("float", [8, 8, 4, 4]), ("__half", [8, 8, 4, 4]),
                                                ("double", [8, 8, 4, 4])])
def test_a_template_instance_compiles_to_an_sm90_cubin_with_its_entry_point(cache, dtype, param_sizes):
    compiled = CudaKernel(SCALE, "scale").compile([dtype, 128], capability=90)
    assert compiled.name_expression == f"scale<{dtype}, 128>"
    assert compiled.lowered_name.startswith("_Z5scaleI") and compiled.capability == 90
    info = compiled.info()
    assert info.has_symbol
    assert info.param_sizes == param_sizes
    assert info.max_threads == (128, 1, 1)  # __launch_bounds__(BLOCK)


def test_an_extern_c_kernel_keeps_its_name_and_its_shared_memory(cache):
    compiled = CudaKernel(SCALE, "fill").compile(capability=90)
    assert compiled.lowered_name == "fill"
    info = compiled.info()
    assert info.has_symbol and info.param_sizes == [8, 4, 8]
    assert info.shared_section >= 256 * 4  # the __shared__ array (after the block's reserved bytes)


def test_other_template_arguments_and_targets_are_other_cubins(cache):
    kernel = CudaKernel(SCALE, "scale")
    a = kernel.compile(["float", 128], capability=90)
    b = kernel.compile(["float", 256], capability=90)
    c = kernel.compile(["float", 128], capability=80)
    assert a.lowered_name != b.lowered_name and b.info().max_threads == (256, 1, 1)
    assert a.cubin != c.cubin


def test_a_source_file_and_options(cache, tmp_path):
    path = tmp_path / "k.cu"
    path.write_text("__global__ void k(int* out) { out[threadIdx.x] = VALUE; }\n")
    kernel = CudaKernel(str(path), "k", options=["-DVALUE=7"])
    assert kernel.path == str(path)
    assert kernel.compile(capability=90).info().param_sizes == [8]
    with pytest.raises(ValueError, match="VALUE"):  # without the macro it does not compile
        CudaKernel(str(path), "k").compile(capability=90)


def test_a_compile_error_carries_nvrtc_log_kernel_and_label(cache):
    kernel = CudaKernel("__global__ void broken(int* p) { p[0] = undefined_thing; }\n", "broken")
    with pytest.raises(ValueError) as error:
        kernel.compile(capability=90, label="op 'demo::broken'")
    message = str(error.value)
    assert 'identifier "undefined_thing" is undefined' in message
    assert "op 'demo::broken', kernel broken" in message and "sm_90" in message


def test_bad_kernel_names_and_template_arguments_are_refused():
    with pytest.raises(ValueError, match="C\\+\\+ identifier"):
        CudaKernel(SCALE, "scale<float>")
    with pytest.raises(TypeError, match="template argument"):
        CudaKernel(SCALE, "scale").name_expression([1.5])
    assert CudaKernel(SCALE, "scale").name_expression(["float", 64, True]) == "scale<float, 64, true>"


def test_the_disk_cache_serves_a_second_compile_and_keys_follow_source_options_and_target(cache, nvrtc_calls):
    kernel = CudaKernel(SCALE, "scale")
    first = kernel.compile(["float", 128], capability=90)
    again = CudaKernel(SCALE, "scale").compile(["float", 128], capability=90)
    assert again == first and nvrtc_calls == ["scale<float, 128>"]
    CudaKernel(SCALE, "scale", options=["-DUNUSED=1"]).compile(["float", 128], capability=90)
    CudaKernel(SCALE + "\n// edited\n", "scale").compile(["float", 128], capability=90)
    kernel.compile(["float", 128], capability=80)
    assert len(nvrtc_calls) == 4


def test_an_entry_whose_cubin_lacks_the_entry_point_is_rebuilt_not_returned(cache, nvrtc_calls):
    kernel = CudaKernel(SCALE, "scale")
    good = kernel.compile(["float", 128], capability=90)
    [(path, _, _)] = cache.entries()
    key = os.path.basename(path)[:-len(_disk_cache.ENTRY_SUFFIX)]
    cache.store(key, {"lowered_name": "not_in_this_cubin", "log": ""}, good.cubin)
    with pytest.warns(RuntimeWarning):
        rebuilt = kernel.compile(["float", 128], capability=90)
    assert rebuilt == good and len(nvrtc_calls) == 2
