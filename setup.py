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
            extra_compile_args=["-O3", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            libraries=["dl"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
