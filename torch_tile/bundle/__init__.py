"""Bundles: tile ops shipped to a process with no Python.

A bundle is one file (format in docs/ARCHITECTURE.md, "Bundles") holding, for
each op, its schema and launch plans (autotuned launches keep the
configuration the trace chose), and the compiled variants its launches need:
cubins with their launch metadata, by kernel, specialization key and GPU
architecture. It is versioned and checksummed, and C++ reads it without Python:
``torch_tile::load_bundle(path)`` (csrc/include/torch_tile/torch_tile.h)
registers the ops with the dispatcher in a LibTorch program.

What goes in:

* the plans the ops traced in this process, and the variants they compiled;
* ``examples``: calls to prepare ahead of time, on any device (CPU tensors
  stand for CUDA ones: their dtypes, ranks, sizes and alignment choose the
  plan and the keys); each is traced if new and its variants compiled;
* ``capabilities``: the GPU architectures (``90`` for sm_90) to compile every
  variant for, besides those compiled already.

From the command line::

    python -m torch_tile.bundle export OUT.ttb --module my_ops [--examples my_ops:examples] [--capability 90]
    python -m torch_tile.bundle inspect FILE.ttb
    python -m torch_tile.bundle verify FILE.ttb

(the command line is ``torch_tile/bundle/__main__.py``).
"""

from __future__ import annotations

import os
from typing import Iterable, Mapping, Optional, Sequence, Union

import torch
import triton

from .. import _C
from .._op import TileOp, registered_ops
from .._version import __version__

OpsLike = Union[str, TileOp, Iterable[Union[str, TileOp]], torch.export.ExportedProgram]


def _resolve_ops(ops: OpsLike) -> list[str]:
    """Qualnames from ops, qualnames (of TileOps, or of ops defined in C++ with torch_tile::define_op), a
    namespace (every TileOp defined in it in this process), or an exported program (the tile ops its graph
    calls)."""
    registry = registered_ops()
    if isinstance(ops, torch.export.ExportedProgram):
        return _ops_called_by(ops, registry)
    items = [ops] if isinstance(ops, (str, TileOp)) else list(ops)
    out: list[str] = []
    for item in items:
        if isinstance(item, TileOp):
            out.append(item.qualname)
        elif "::" in item:
            if item not in registry and _C.plan_count(item) < 0:
                raise ValueError(f"export_bundle: no tile op named {item!r} in this process")
            out.append(item)
        else:
            found = [name for name in registry if name.split("::")[0] == item]
            if not found:
                raise ValueError(f"export_bundle: no tile op in namespace {item!r} in this process")
            out.extend(found)
    return list(dict.fromkeys(out))


def _ops_called_by(program: torch.export.ExportedProgram, registry: dict) -> list[str]:
    """The tile ops an exported program's graphs call (its submodules' too), in order of first call."""
    found: dict[str, None] = {}
    for module in program.graph_module.modules():
        for node in module.graph.nodes if isinstance(module, torch.fx.GraphModule) else ():
            if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
                name = node.target._schema.name
                if name in registry:
                    found.setdefault(name, None)
    if not found:
        raise ValueError("export_bundle: the exported program calls no tile op defined in this process")
    return list(found)


def producer() -> str:
    """The versions written into a bundle."""
    return f"torch_tile {__version__}; triton {triton.__version__}; torch {torch.__version__}"


def _current_capabilities() -> list[int]:
    """This machine's GPU architecture ([] without a GPU)."""
    if not torch.cuda.is_available():
        return []
    major, minor = torch.cuda.get_device_capability()
    return [major * 10 + minor]


def export_bundle(ops: OpsLike, path: Union[str, os.PathLike], *,
                  examples: Optional[Mapping[Union[str, TileOp], Sequence[tuple]]] = None,
                  capabilities: Optional[Sequence[int]] = None) -> dict:
    """Writes a bundle of ``ops`` (TileOps, qualnames, a namespace, or an
    ``ExportedProgram``: the tile ops its graph calls) to ``path``.

    Args:
        examples: per op, argument tuples (a trailing dict is taken as keyword
            arguments) of calls to prepare: each is traced if no plan covers
            it, and the variants its launches need are compiled.
        capabilities: GPU architectures (e.g. ``[90]``) to compile every
            variant for. Default: those compiled already, or this machine's
            GPU's; on a machine without a GPU with examples, it must be given.

    Returns:
        :func:`inspect_bundle`'s summary of what was written.
    """
    names = _resolve_ops(ops)
    wanted: list[tuple[int, list[int]]] = []  # (kernel id, key words) the examples need
    for key, calls in (examples or {}).items():
        qualname = key.qualname if isinstance(key, TileOp) else key
        if qualname not in names:
            raise ValueError(f"export_bundle: examples for {key!r}, which is not among the exported ops")
        for call in calls:
            call = tuple(call)
            has_kwargs = bool(call) and isinstance(call[-1], dict)
            args, kwargs = (call[:-1], call[-1]) if has_kwargs else (call, {})
            wanted += [(kid, list(words)) for kid, words in _C.variant_keys(qualname, args, kwargs)]
    seen = _C.compiled_variants(names)  # (kernel id, key words, capability)
    caps = sorted(set(capabilities or {cap for _, _, cap in seen})) or _current_capabilities()
    if wanted and not caps:
        raise ValueError("export_bundle: no GPU here and no variant compiled yet: say which architectures to compile "
                         "for, e.g. capabilities=[90] for an H100/H200")
    keys = {(kid, tuple(words)) for kid, words, _ in seen} | {(kid, tuple(words)) for kid, words in wanted}
    precompile = [(kid, list(words), cap) for kid, words in sorted(keys) for cap in caps]
    data = _C.export_bundle(names, precompile, producer())
    with open(path, "wb") as f:
        f.write(data)
    return inspect_bundle(path)


def load_bundle(path: Union[str, os.PathLike]) -> dict:
    """Loads a bundle into this process (as ``torch_tile::load_bundle`` does
    in C++): its ops are registered (ops already defined here get its plans)
    and its variants are used before compiling. Returns what was loaded."""
    return dict(_C.load_bundle(os.fspath(path)))


def read_bundle(path: Union[str, os.PathLike]) -> dict:
    """A bundle's contents, checked (magic, version, checksum, plans and
    variant metadata), registering nothing."""
    with open(path, "rb") as f:
        return dict(_C.read_bundle(f.read()))


def inspect_bundle(path: Union[str, os.PathLike]) -> dict:
    """A summary a person reads: per op, its schema, plans (guards, steps) and
    the variants its kernels have, per architecture."""
    contents = read_bundle(path)
    variants_by_kernel: dict[str, list[dict]] = {}
    for v in contents["variants"]:
        variants_by_kernel.setdefault(v["kernel"], []).append(v)
    ops = []
    for op in contents["ops"]:
        kernels = sorted({launch.kernel_name for plan in op["plans"] for launch in plan.launches})
        ops.append({
            "qualname": op["qualname"],
            "schema": op["schema"],
            "plans": [{"guards": [g.text for g in plan.guards],
                       "tensors": [f"slot {g.arg}: {str(g.dtype).replace('torch.', '')}, rank {g.ndim}"
                                   for g in plan.tensor_guards],
                       "steps": {"allocs": len(plan.allocs), "views": len(plan.views),
                                 "aten": [a.name for a in plan.aten_steps],
                                 "launches": [launch.kernel_name for launch in plan.launches]}}
                      for plan in op["plans"]],
            "kernels": {k: sorted({v["capability"] for v in variants_by_kernel.get(k, [])}) for k in kernels},
        })
    return {"path": os.fspath(path), "bytes": os.path.getsize(path), "producer": contents["producer"],
            "ops": ops, "variants": len(contents["variants"]),
            "capabilities": sorted({v["capability"] for v in contents["variants"]}),
            "cubin_bytes": sum(v["binary"]["cubin_bytes"] for v in contents["variants"])}


def verify_bundle(path: Union[str, os.PathLike]) -> list[str]:
    """Problems a process loading the bundle would meet; empty if none: the
    file is read and checked, and every launch of every plan must have at
    least one variant, with a key of the launch's length, for some architecture."""
    contents = read_bundle(path)
    problems = []
    keys_by_kernel: dict[int, set[int]] = {}
    for v in contents["variants"]:
        keys_by_kernel.setdefault(v["kernel_id"], set()).add(len(v["key"]))
    for op in contents["ops"]:
        if not op["plans"]:
            problems.append(f"{op['qualname']}: no plans (every call would fail)")
        for i, plan in enumerate(op["plans"]):
            for launch in plan.launches:
                lengths = keys_by_kernel.get(launch.kernel, set())
                if not lengths:
                    problems.append(f"{op['qualname']}: plan {i} launches {launch.kernel_name}, which has no variant")
                elif len(launch.bindings) + 1 not in lengths:
                    problems.append(f"{op['qualname']}: plan {i} launches {launch.kernel_name} with "
                                    f"{len(launch.bindings)} parameters; its variants have keys of lengths "
                                    f"{sorted(lengths)}")
    return problems


__all__ = ["export_bundle", "load_bundle", "read_bundle", "inspect_bundle", "verify_bundle", "producer"]
