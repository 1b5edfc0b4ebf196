"""Build torch_tile: the C++ library libtorch_tile.so and the Python extensions torch_tile._C and _testing.

* ``torch_tile/lib/libtorch_tile.so``: the runtime (csrc/runtime) and the torch
  binding (csrc/torch), linked against LibTorch only, never Python: what a
  LibTorch program links (csrc/include/torch_tile/torch_tile.h, CMake package
  in torch_tile/share/cmake, generated here from cmake/torch_tileConfig.cmake.in).
* ``torch_tile._C``: the pybind11 layer (csrc/python), linked against that
  library, so that Python and C++ callers share one runtime.
* ``torch_tile._testing``: benchmarks and probes (csrc/testing) for the tests and
  benchmarks, linked the same way; the package never imports it.

Plain C++ built with the host compiler against LibTorch: no nvcc, GPU or CUDA
toolkit is needed to build or import it (libcuda is opened with dlopen on the
first launch).
"""

import glob
import os
import re
import shutil

import torch
from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = os.path.dirname(os.path.abspath(__file__))
LIBRARY = "torch_tile.lib.libtorch_tile"
with open(os.path.join(ROOT, "torch_tile", "_version.py")) as f:
    VERSION = re.search(r'__version__ = "([^"]+)"', f.read()).group(1)


# Opt-in sanitizer build (dev/sanitize.sh sets it): AddressSanitizer and
# UndefinedBehaviorSanitizer, aborting on the first report; -O1 after -O3 keeps
# stack traces accurate; -fno-wrapv undoes the -fwrapv that Python's CFLAGS bring, which would
# otherwise turn UBSan's signed-overflow check off. Unset, the build is unchanged.
SANITIZE = os.environ.get("TORCH_TILE_SANITIZE") == "1"
SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g"]
COMPILE_ARGS = ["-O3", "-Wall", "-Wextra", "-Wno-unused-parameter"] + (
    ["-O1", "-fno-wrapv", *SANITIZE_FLAGS] if SANITIZE else [])
INCLUDE_DIRS = [os.path.join(ROOT, "csrc"), os.path.join(ROOT, "csrc", "include")]


def sources(*layers):
    """The layers' C++ files, their subfolders' too (csrc/runtime is grouped by concern)."""
    return [f for layer in layers for f in sorted(glob.glob(os.path.join("csrc", layer, "**", "*.cpp"),
                                                            recursive=True))]


def library() -> CppExtension:
    ext = CppExtension(
        name=LIBRARY,
        sources=sources("runtime", "torch"),
        include_dirs=list(INCLUDE_DIRS),
        define_macros=[("TORCH_TILE_VERSION", f'"{VERSION}"')],
        extra_compile_args=COMPILE_ARGS,
        extra_link_args=SANITIZE_FLAGS if SANITIZE else [],
        libraries=["dl"],
    )
    ext.libraries.remove("torch_python")  # LibTorch only: loadable in a process with no Python
    return ext


def python_extension(name: str, sources_: list) -> CppExtension:
    return CppExtension(
        name=name,
        sources=sources_,
        include_dirs=list(INCLUDE_DIRS),
        extra_compile_args=COMPILE_ARGS,
        extra_link_args=["-Wl,-rpath,$ORIGIN/lib"] + (SANITIZE_FLAGS if SANITIZE else []),
        libraries=["torch_tile"],
    )


class Build(BuildExtension.with_options(use_ninja=True)):
    """Builds the library first, under its plain name, then the extension
    linked to it; then writes the CMake package beside the library."""

    def get_ext_filename(self, fullname):
        # setuptools asks with the full dotted name and with its last part alone.
        *package, name = fullname.split(".")
        if name == LIBRARY.split(".")[-1]:
            return os.path.join(*package, name + ".so")
        return super().get_ext_filename(fullname)

    def build_extension(self, ext):
        if ext.name != LIBRARY:
            ext.library_dirs.append(os.path.dirname(self.get_ext_fullpath(LIBRARY)))
        super().build_extension(ext)

    def run(self):
        if self.inplace:  # setuptools copies the library there but does not make the folder
            os.makedirs(os.path.join(ROOT, *LIBRARY.split(".")[:-1]), exist_ok=True)
        super().run()  # builds in build_lib; with --inplace, then copies the libraries into the source tree
        package_dir = os.path.join(ROOT, "torch_tile") if self.inplace else os.path.join(self.build_lib, "torch_tile")
        self._write_cmake_config(package_dir)
        with open(os.path.join(package_dir, "_built_with.py"), "w") as f:  # checked at import (_extension.py)
            f.write("# Written by setup.py: the torch this build of torch_tile is for.\n"
                    f'TORCH_VERSION = "{torch.__version__}"\n')

    def _write_cmake_config(self, package_dir):
        """torch_tile's CMake package, naming the LibTorch this library was built
        against, and the public header beside it."""
        include = os.path.join(package_dir, "include", "torch_tile")
        os.makedirs(include, exist_ok=True)
        for header in glob.glob(os.path.join(ROOT, "csrc", "include", "torch_tile", "*.h")):
            shutil.copy(header, include)
        torch_root = os.path.dirname(torch.__file__)
        with open(os.path.join(ROOT, "cmake", "torch_tileConfig.cmake.in")) as f:
            text = f.read()
        values = {"VERSION": VERSION, "TORCH_ROOT": torch_root,
                  "CXX11_ABI": str(int(torch._C._GLIBCXX_USE_CXX11_ABI))}
        for key, value in values.items():
            text = text.replace(f"@{key}@", value)
        out = os.path.join(package_dir, "share", "cmake", "torch_tile")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "torch_tileConfig.cmake"), "w") as f:
            f.write(text)


setup(
    name="torch_tile",
    version=VERSION,
    description="Tile kernels (Triton, CUDA C++, cuTile) as native PyTorch operators with a C++ launch path",
    license="Apache-2.0",
    packages=find_packages(include=["torch_tile", "torch_tile.*"]),
    python_requires=">=3.10",
    # Tested: torch 2.11 with Triton 3.6, torch 2.14.1 with Triton 3.8. The extension runs with the torch it was
    # built against (its major.minor).
    install_requires=["torch>=2.11", "triton>=3.6", "numpy"],
    extras_require={"cutile": ["cuda-tile[tileiras]>=1.7,<1.8"],  # cuTile kernels in op bodies (frontends.cutile)
                    "tilelang": ["tilelang==0.1.15"]},  # TileLang's JITKernels in op bodies (frontends.tilelang)
    package_data={"torch_tile": ["lib/*.so", "include/torch_tile/*.h", "share/cmake/torch_tile/*.cmake",
                                 "kernels/*.cu"]},
    ext_modules=[library(), python_extension("torch_tile._C", sources("python")),
                 # Tests' and benchmarks' probes; the package never imports it. It reads launch metadata as _C does.
                 python_extension("torch_tile._testing",
                                  sources("testing") + [os.path.join("csrc", "python", "binary_from_python.cpp")])],
    cmdclass={"build_ext": Build},
)
