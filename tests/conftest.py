"""Shared pytest configuration: GPU tests skip on machines without CUDA; the
whole session uses a fresh torch_tile disk cache (never the user's)."""

import atexit
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

import pytest
import torch
import triton

# Test subprocesses that import test modules (and so this file) keep the cache
# directory their test gave them.
if not os.environ.get("TORCH_TILE_TEST_SUBPROCESS"):
    os.environ["TORCH_TILE_CACHE_DIR"] = tempfile.mkdtemp(prefix="torch_tile_test_cache_")
    atexit.register(shutil.rmtree, os.environ["TORCH_TILE_CACHE_DIR"], ignore_errors=True)

@pytest.fixture(scope="module")
def fresh_triton_cache(tmp_path_factory):
    """Triton's own cache out of the way, so that both torch_tile and Triton really compile (tests comparing
    their binaries): use with ``pytestmark = pytest.mark.usefixtures("fresh_triton_cache")``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(triton.knobs.cache, "dir", str(tmp_path_factory.mktemp("triton_cache")))
        mp.setattr(triton.knobs.compilation, "always_compile", True)
        yield


def pytest_configure(config):
    # Every trace in the suite must hold for the call that traced it: where one does not, the op falls back with
    # a warning saying so (a user's call still runs), which fails the test here.
    config.addinivalue_line("filterwarnings", "error:.*does not hold for the call that traced it")


requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def requires_sm90(what: str):
    """Skips where ``what`` cannot run: no CUDA GPU (said so), or one older than sm_90 (named)."""
    if not torch.cuda.is_available():
        return requires_cuda
    major, minor = torch.cuda.get_device_capability()
    return pytest.mark.skipif((major, minor) < (9, 0), reason=f"{what} need sm_90+ (this GPU is sm_{major}{minor})")


requires_two_gpus = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs two CUDA GPUs"
)


def _interpreter_handles_scalar_loops() -> bool:
    """Triton 3.6's interpreter passes scalar kernel arguments as 1-element
    arrays, which numpy >= 2.4 refuses to turn into a loop bound
    (`range(tl.cdiv(K, BLOCK))` fails). Newer Triton handles it."""
    import triton
    import triton.language as tl

    from torch_tile._launch_mode import launch_mode
    from torch_tile.frontends.triton.interpret import InterpretLaunches

    @triton.jit
    def _loop_kernel(out_ptr, n):
        acc = 0
        for _ in range(0, tl.cdiv(n, 2)):
            acc += 1
        tl.store(out_ptr, acc)

    out = torch.zeros(1, dtype=torch.int32)
    try:
        with launch_mode(InterpretLaunches()):
            _loop_kernel[(1,)](out, 4)
    except Exception:  # noqa: BLE001 - any failure means the loop cannot be interpreted
        return False
    return int(out) == 2


requires_interpreter_scalar_loops = pytest.mark.skipif(
    not _interpreter_handles_scalar_loops(),
    reason="this Triton's interpreter cannot loop to a scalar-argument bound with this numpy "
    "(Triton 3.6 + numpy >= 2.4); the CPU debug path of tile::matmul needs it",
)


@pytest.fixture(scope="session")
def cpp_examples(tmp_path_factory) -> str:
    """examples/cpp built once with CMake (tile_example, tile_aoti): the build directory. Skips without cmake."""
    if shutil.which("cmake") is None:
        pytest.skip("needs cmake")
    build_py = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "cpp", "build.py")
    spec = importlib.util.spec_from_file_location("torch_tile_cpp_example_build", build_py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return os.path.dirname(module.build(str(tmp_path_factory.mktemp("cpp_examples"))))


@pytest.fixture(scope="session")
def tile_model_package(tmp_path_factory) -> str:
    """examples/cpp/aoti_model.py's AOTInductor package, bundle, input and eager output (on the GPU if there is
    one), made in a fresh process (it defines the example's ops): the directory."""
    out = str(tmp_path_factory.mktemp("aoti_model"))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, os.path.join(root, "examples", "cpp", "aoti_model.py"), out],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": root})
    assert done.returncode == 0, done.stdout + done.stderr
    return out
