"""AOTInductor packages that load in torch's Python processes as well as in C++.

A model whose graph calls tile ops exports with ``torch.export`` (the ops stay
in the graph) and compiles with AOTInductor; the package's C++ calls them
through the dispatcher (AOTInductor's proxy executor), in a Python process or
in a LibTorch program that loaded the ops' bundle (``torch_tile::load_bundle``).

Why this module: on some images (seen with torch 2.11's wheel, g++ 13.3 and
Ubuntu 24.04's libstdc++ on the lent H200), ``aoti_load_package`` of *any*
package -- with or without tile ops -- kills the Python process with a
segmentation fault in ``std::regex`` code of the package's library, while a
LibTorch program loads the same package fine. The package's library exports
the C++ template instances it compiled (``std::regex`` internals among them),
and in torch's Python process the dynamic linker binds some of its references
to other libraries' copies instead of its own. Linking the library with
``-Wl,-Bsymbolic`` binds them to its own definitions, and the package loads in
both kinds of process (checked on that image by tests/test_gpu_aoti.py).
Packages built without it still load there when Python starts with the
system's libstdc++ preloaded: ``LD_PRELOAD=$(g++ -print-file-name=libstdc++.so.6)``.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from typing import Any, Optional, Union

import torch
import torch._inductor
from torch._inductor import config as inductor_config
from torch._inductor.cpp_builder import get_cpp_compiler
from torch._inductor.runtime.cache_dir_utils import cache_dir

# Links of shared objects get -Bsymbolic; every other compiler run (objects, precompiled headers) is unchanged.
_CXX_WRAPPER = """#!/bin/sh
# torch_tile: Inductor's C++ compiler ({compiler}), with -Wl,-Bsymbolic added to links of shared objects.
case " $* " in
  *" -shared "*) exec {compiler} "$@" -Wl,-Bsymbolic ;;
  *) exec {compiler} "$@" ;;
esac
"""


def symbolic_linking_compiler() -> str:
    """A compiler command for Inductor (``torch._inductor.config.cpp.cxx``): the
    one it would use, linking shared objects with ``-Wl,-Bsymbolic``. Written once
    per compiler in Inductor's cache directory."""
    compiler = get_cpp_compiler()
    text = _CXX_WRAPPER.format(compiler=shlex.quote(compiler))
    name = "cxx-bsymbolic-" + hashlib.sha256(text.encode()).hexdigest()[:16]
    path = os.path.join(cache_dir(), "aoti", name)
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        partial = f"{path}.{os.getpid()}.tmp"
        with open(partial, "w") as f:
            f.write(text)
        os.chmod(partial, 0o755)
        os.replace(partial, path)  # atomic: concurrent processes write the same text
    return path


def aoti_compile_and_package(exported_program: torch.export.ExportedProgram,
                             package_path: Optional[Union[str, os.PathLike]] = None,
                             **kwargs: Any) -> str:
    """``torch._inductor.aoti_compile_and_package``, with the package's library
    linked ``-Wl,-Bsymbolic`` (see the module's docstring) so that it loads in
    torch's Python processes too. Arguments and result as torch's.

    The tile ops the program calls run from the package in a Python process
    that defines them, and in a C++ program after ``torch_tile::load_bundle`` of
    their bundle: ``torch_tile.export_bundle(exported_program, path, ...)``
    writes the bundle of exactly those ops.
    """
    with inductor_config.patch({"cpp.cxx": (symbolic_linking_compiler(),)}):
        return torch._inductor.aoti_compile_and_package(exported_program, package_path=package_path, **kwargs)
