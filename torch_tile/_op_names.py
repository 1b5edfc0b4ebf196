"""The names a tile op can take, checked before anything is registered.

A name is ``namespace::name`` or ``namespace::name.overload``, as torch.library defines ops: the op is then
``torch.ops.namespace.name`` (its ``default`` overload) or ``torch.ops.namespace.name.overload``. Each part
is an ASCII identifier (torch's schema parser reads bytes: other characters fail deep inside torch) that
torch's parser takes. Refused, each with the reason: torch's own namespaces (torch.library's reserved ones
and those its custom-op API keeps for PyTorch: an op defined there changes torch's operators for the whole
process), and names that ``torch.ops`` cannot reach because an attribute of its namespace or packet
objects already has them (``torch.ops.ns.name`` is the namespace's name, not an op).
"""

from __future__ import annotations

import inspect
from typing import NamedTuple

import torch
import torch._custom_op.impl
import torch.library
from torch._ops import OpOverload, OpOverloadPacket, _OpNamespace

RESERVED_NAMESPACES = frozenset(torch.library._reserved_namespaces) | frozenset(torch._custom_op.impl.RESERVED_NS)

# What an op packet holds besides its overloads: attributes torch sets on every packet (read from one).
_PACKET_ATTRIBUTES = frozenset(k for k, v in vars(torch.ops.aten.add).items() if not isinstance(v, OpOverload))


class OpName(NamedTuple):
    namespace: str
    name: str
    overload: str  # "" for the default overload


def parse(qualname: str) -> OpName:
    """The parts of an op's name; ValueError naming the name and what is wrong with it."""
    def refuse(reason: str) -> ValueError:
        return ValueError(f"torch_tile.op: {qualname!r} is not a valid op name: {reason}")

    if not isinstance(qualname, str) or qualname.count("::") != 1:
        raise refuse("expected 'namespace::name' or 'namespace::name.overload'")
    if not qualname.isascii():
        raise refuse("names are ASCII identifiers (torch's schema parser reads bytes)")
    namespace, _, full_name = qualname.partition("::")
    name, _, overload = full_name.partition(".")
    if not namespace or not name:
        raise refuse("expected 'namespace::name' or 'namespace::name.overload'")
    for part in (namespace, name, overload) if "." in full_name else (namespace, name):
        if not part.isidentifier():
            raise refuse(f"{part!r} is not an identifier")
        if part.startswith("__"):
            raise refuse(f"{part!r}: an attribute name Python keeps (names starting with '__')")
    if overload == "default":
        raise refuse("'default' is the overload without a name: define it as 'namespace::name'")
    if namespace in RESERVED_NAMESPACES:
        raise refuse(f"the namespace '{namespace}' is reserved for PyTorch's own operators "
                     f"(reserved: {', '.join(sorted(RESERVED_NAMESPACES))})")
    try:
        parsed = torch._C.parse_schema(f"{qualname}() -> ()")
    except RuntimeError as e:
        raise refuse(str(e).splitlines()[0]) from None
    if (parsed.name, parsed.overload_name) != (f"{namespace}::{name}", overload):
        raise refuse("torch reads it as another name")
    _check_reachable(namespace, name, overload, refuse)
    return OpName(namespace, name, overload)


def _check_reachable(namespace: str, name: str, overload: str, refuse) -> None:
    """Refuses a name that ``torch.ops.namespace.name.overload`` would not reach: an attribute already there."""
    space = inspect.getattr_static(torch.ops, namespace, None)
    if space is not None and type(space) is not _OpNamespace:
        raise refuse(f"torch.ops.{namespace} is an attribute of torch.ops ({type(space).__name__}), not a "
                     "namespace of operators")
    packet = inspect.getattr_static(getattr(torch.ops, namespace), name, None)
    if packet is not None and not isinstance(packet, OpOverloadPacket):
        raise refuse(f"torch.ops.{namespace}.{name} is an attribute of the namespace object "
                     f"({type(packet).__name__}), so it would not be the op")
    if overload and (overload in _PACKET_ATTRIBUTES or inspect.getattr_static(OpOverloadPacket, overload, None)):
        raise refuse(f"torch.ops.{namespace}.{name}.{overload} is an attribute of every op packet, so it would "
                     "not be the overload")
