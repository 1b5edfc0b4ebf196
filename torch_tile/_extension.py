"""Loads the compiled extension, ``torch_tile._C``, or says why it cannot be loaded (imported first by the
package).

The extension is C++ built against one torch (its headers and libraries): it runs only with that torch's
major.minor version. setup.py records the version in ``_built_with.py`` beside the package when it builds.
"""

from __future__ import annotations

import importlib

import torch


def built_with() -> "str | None":
    """The torch version this build is for (None: no build recorded it)."""
    try:
        return importlib.import_module(f"{__package__}._built_with").TORCH_VERSION
    except ImportError:  # a source tree never built
        return None


def _release(version: str) -> tuple:
    return tuple(version.split("+")[0].split(".")[:2])


def load():
    """``torch_tile._C``; an ImportError that says what to do where it was built for another torch or not built."""
    built = built_with()
    if built is not None and _release(built) != _release(torch.__version__):
        raise ImportError(
            f"torch_tile was built against torch {built}, this process has torch {torch.__version__}: rebuild it "
            "with this torch (`pip install --no-build-isolation .`, or `python setup.py build_ext --inplace` in a "
            "source tree)")
    try:
        return importlib.import_module(f"{__package__}._C")
    except ImportError as e:
        hint = ("it has not been built: `pip install --no-build-isolation .`, or `python setup.py build_ext "
                "--inplace` in a source tree" if built is None else f"built against torch {built}")
        raise ImportError(f"torch_tile's extension (torch_tile._C) cannot be loaded ({hint}): {e}") from e


load()
