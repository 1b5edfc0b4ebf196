"""Build torch_tile and its native extension torch_tile._C.

The extension is plain C++ built with the host compiler against LibTorch: no
nvcc, GPU or CUDA toolkit is needed to build or import it (libcuda is opened
with dlopen on the first launch).
"""

import glob
import os

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = os.path.dirname(os.path.abspath(__file__))


# Opt-in sanitizer build (scripts/sanitize.sh sets it): AddressSanitizer and
# UndefinedBehaviorSanitizer, aborting on the first report; -O1 after -O3 keeps
# stack traces accurate; -fno-wrapv undoes the -fwrapv that Python's CFLAGS bring, which would
# otherwise turn UBSan's signed-overflow check off. Unset, the build is unchanged.
SANITIZE = os.environ.get("TORCH_TILE_SANITIZE") == "1"
SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g"]


def sources():
    files = []
    for layer in ("runtime", "torch", "python", "testing"):
        files += sorted(glob.glob(os.path.join("csrc", layer, "*.cpp")))
    return files


setup(
    name="torch_tile",
    version="0.2.0",
    description="Tile kernels (Triton) as native PyTorch operators with a C++ launch path",
    license="Apache-2.0",
    packages=find_packages(include=["torch_tile", "torch_tile.*"]),
    python_requires=">=3.10",
    install_requires=["torch>=2.4", "triton>=3.2", "numpy"],
    ext_modules=[
        CppExtension(
            name="torch_tile._C",
            sources=sources(),
            include_dirs=[os.path.join(ROOT, "csrc")],
            extra_compile_args=["-O3", "-Wall", "-Wextra", "-Wno-unused-parameter"]
            + (["-O1", "-fno-wrapv", *SANITIZE_FLAGS] if SANITIZE else []),
            extra_link_args=SANITIZE_FLAGS if SANITIZE else [],
            libraries=["dl"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
