"""What a CUDA cubin says about one of its kernels (read with ``struct`` alone),
and whether a compiled variant's launch metadata agrees with it.

A cubin is an ELF64 file. For a kernel ``k`` it holds a global FUNC symbol
``k`` (the entry point; weak for a C++ template instance), a section ``.nv.info.k`` of EIATTR records (what
ptxas fixed about the launch) and, when the kernel uses shared memory, a
NOBITS section ``.nv.shared.k``. What Triton's sm_90 cubins carry (Triton 3.6
with ptxas 12.8 and Triton 3.8 with ptxas 12.9, read with ``cuobjdump -elf``
and checked against the driver's ``cuFuncGetAttribute``/``cuFuncGetParamInfo``
on an H200):

* EIATTR_REQNTID = (32 * num_warps, 1, 1), always (the PTX's ``.reqntid``;
  ``__launch_bounds__`` in CUDA C++ gives EIATTR_MAX_THREADS instead);
* one EIATTR_KPARAM_INFO per parameter: the kernel's runtime parameters, then
  Triton's two trailing scratch pointers (8 bytes each); pointers take 8 bytes,
  i1/i8 1, i32/fp32 4, i64/fp64 8, a TMA descriptor (nvTmaDesc) 128;
* EIATTR_CTA_PER_CLUSTER = (num_ctas, 1, 1) and EIATTR_EXPLICIT_CLUSTER when
  num_ctas > 1 (the driver then reports the cluster as required);
* ``.nv.shared.k`` only when the kernel uses shared memory: 1024 bytes, the
  block's reserved shared memory, which ptxas places first (Triton allocates
  all of its own dynamically, as ``shared``); the driver's static size is the
  section less those 1024 bytes (CUDA C++ kernels: 1024 + their ``__shared__``);
* bookkeeping not checked here: EIATTR_CBANK_PARAM_SIZE, PARAM_CBANK,
  MAXREG_COUNT, EXIT_INSTR_OFFSETS, CUDA_API_VERSION, SW_WAR, SPARSE_MMA_MASK,
  mbarrier and coop-group offsets.

``launch_metadata_problem`` checks a compiled variant's launch metadata (what
the C++ runtime launches the cubin with) against the cubin and checks the
metadata's own types, so that a disk-cache entry that does not belong to its
cubin is rebuilt instead of being launched with the wrong block size,
parameters, cluster or shared memory, which can fail, corrupt memory or hang.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional

from . import _C

ELF_MAGIC = b"\x7fELF"
EM_CUDA = 190
SHT_SYMTAB = 2
STB_GLOBAL = 1
STB_WEAK = 2  # C++ template instances (CUDA C++ kernels compiled by NVRTC)
STT_FUNC = 2

# EIATTR record formats and the attributes read here (values as cuobjdump names them).
EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 1, 2, 3, 4
EIATTR_MAX_THREADS = 0x05  # .maxntid
EIATTR_REQNTID = 0x10  # .reqntid
EIATTR_KPARAM_INFO = 0x17
EIATTR_CTA_PER_CLUSTER = 0x3D  # .reqnctapercluster

# The most shared memory (static + dynamic) one block may use on any NVIDIA GPU
# so far: sm_90 and sm_100's opt-in limit. The C++ loader checks the device's own.
MAX_SHARED_BYTES = 232448
RESERVED_SHARED_BYTES = 1024  # per block, at the start of .nv.shared.<kernel> on sm_90
MAX_THREADS_PER_BLOCK = 1024
MAX_CLUSTER_CTAS = 16  # with the non-portable cluster size attribute

TRITON_SCRATCH_POINTERS = 2  # global and profile scratch, appended by Triton to every kernel

# Bytes of one kernel parameter of a Triton signature type, as the C++ launcher
# packs it (its table: csrc/python/binary_from_python.cpp).
PARAM_BYTES = _C.param_type_bytes()
POINTER_BYTES = PARAM_BYTES.pop("*")


class _Section(NamedTuple):
    """An ELF64 section header (Elf64_Shdr)."""

    name_at: int
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    addralign: int
    entsize: int


class CubinError(ValueError):
    """The bytes are not a cubin this reader understands (truncated, not ELF64, not CUDA...)."""


@dataclass(frozen=True)
class KernelInfo:
    """What a cubin says about one kernel; None where it says nothing."""

    name: str
    has_symbol: bool  # a global FUNC symbol of that name: the entry point cuModuleGetFunction finds
    required_threads: Optional[tuple[int, int, int]]  # EIATTR_REQNTID
    max_threads: Optional[tuple[int, int, int]]  # EIATTR_MAX_THREADS
    param_sizes: Optional[list[int]]  # EIATTR_KPARAM_INFO by ordinal; None without .nv.info.<name>
    cluster: Optional[tuple[int, int, int]]  # EIATTR_CTA_PER_CLUSTER
    shared_section: int  # size of .nv.shared.<name> (0: none), the reserved bytes included

    @property
    def static_shared(self) -> int:
        """Static shared memory as the driver counts it (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)."""
        return max(0, self.shared_section - RESERVED_SHARED_BYTES)


def _unpack(fmt: str, data: bytes, offset: int) -> tuple:
    try:
        return struct.unpack_from(fmt, data, offset)
    except (struct.error, OverflowError):  # past the end; an offset beyond any index
        raise CubinError(f"truncated at byte {offset}") from None


def _string(data: bytes, offset: int) -> str:
    end = data.find(b"\0", offset) if offset < len(data) else -1
    if end < 0:
        raise CubinError(f"string table entry at byte {offset} is out of range")
    return data[offset:end].decode("latin-1")


def _section_data(data: bytes, offset: int, size: int) -> bytes:
    if offset + size > len(data):
        raise CubinError("a section lies past the end of the file")
    return data[offset:offset + size]


def _eiattrs(section: bytes) -> list[tuple[int, bytes]]:
    """(attribute, payload) of each record of a .nv.info section."""
    records, pos = [], 0
    while pos + 4 <= len(section):
        fmt, attr = section[pos], section[pos + 1]
        if fmt == EIFMT_SVAL:
            (size,) = struct.unpack_from("<H", section, pos + 2)
            payload, pos = section[pos + 4:pos + 4 + size], pos + 4 + size
            if len(payload) != size:
                raise CubinError("an EIATTR record runs past its section")
        elif fmt in (EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL):
            payload, pos = section[pos + 2:pos + 4], pos + 4
        else:
            raise CubinError(f"unknown EIATTR format {fmt}")
        records.append((attr, payload))
    return records


def _dims(payload: bytes) -> tuple[int, int, int]:
    if len(payload) != 12:
        raise CubinError("a 3-D EIATTR value is not 12 bytes")
    return struct.unpack("<III", payload)


def _param_sizes(records: list[tuple[int, bytes]]) -> list[int]:
    """Parameter sizes by ordinal from EIATTR_KPARAM_INFO (index u32, ordinal u16,
    offset u16, then flags: size in bits 18..31)."""
    sizes: dict[int, int] = {}
    for attr, payload in records:
        if attr != EIATTR_KPARAM_INFO:
            continue
        if len(payload) != 12:
            raise CubinError("an EIATTR_KPARAM_INFO record is not 12 bytes")
        _, ordinal, _, flags = struct.unpack("<IHHI", payload)
        sizes[ordinal] = (flags >> 18) & 0x3FFF
    if sorted(sizes) != list(range(len(sizes))):
        raise CubinError("kernel parameter ordinals are not 0..n-1")
    return [sizes[i] for i in range(len(sizes))]


def kernel_info(cubin: bytes, name: str) -> KernelInfo:
    """Reads what ``cubin`` says about kernel ``name``; raises CubinError on a malformed file."""
    if cubin[:4] != ELF_MAGIC or len(cubin) < 64 or cubin[4] != 2 or cubin[5] != 1:
        raise CubinError("not a little-endian ELF64 file")
    header = _unpack("<16sHHIQQQIHHHHHH", cubin, 0)
    machine, shoff, shentsize, shnum, shstrndx = header[2], header[6], header[11], header[12], header[13]
    if machine != EM_CUDA:
        raise CubinError(f"ELF machine {machine} is not CUDA ({EM_CUDA})")
    if shentsize != 64 or shstrndx >= shnum:
        raise CubinError("bad section header table")
    sections = [_Section(*_unpack("<IIQQQQIIQQ", cubin, shoff + i * shentsize)) for i in range(shnum)]
    names_at = sections[shstrndx].offset
    by_name = {_string(cubin, names_at + s.name_at): s for s in sections}

    has_symbol = False
    for sh in sections:
        if sh.type != SHT_SYMTAB:
            continue
        if sh.link >= shnum:
            raise CubinError("symbol table without a string table")
        symtab = _section_data(cubin, sh.offset, sh.size)
        strings_at = sections[sh.link].offset
        for pos in range(0, len(symtab) - 23, 24):  # Elf64_Sym: name u32, info u8, other u8, shndx u16, ...
            st_name, st_info = _unpack("<IB", symtab, pos)
            if (st_info >> 4 in (STB_GLOBAL, STB_WEAK) and st_info & 0xF == STT_FUNC
                    and _string(cubin, strings_at + st_name) == name):
                has_symbol = True

    info_section = by_name.get(f".nv.info.{name}")
    records = _eiattrs(_section_data(cubin, info_section.offset, info_section.size)) if info_section else []
    attrs = {attr: payload for attr, payload in records}
    shared_section = by_name.get(f".nv.shared.{name}")
    return KernelInfo(
        name=name,
        has_symbol=has_symbol,
        required_threads=_dims(attrs[EIATTR_REQNTID]) if EIATTR_REQNTID in attrs else None,
        max_threads=_dims(attrs[EIATTR_MAX_THREADS]) if EIATTR_MAX_THREADS in attrs else None,
        param_sizes=_param_sizes(records) if info_section else None,
        cluster=_dims(attrs[EIATTR_CTA_PER_CLUSTER]) if EIATTR_CTA_PER_CLUSTER in attrs else None,
        shared_section=shared_section.size if shared_section else 0,
    )


# -- a variant's launch metadata --------------------------------------------------------------------

# Integer fields of a variant's metadata and their ranges (the C++ reader casts them to int32/int64).
_INT_FIELDS = {
    "num_warps": (1, MAX_THREADS_PER_BLOCK // 32),
    "num_ctas": (1, MAX_CLUSTER_CTAS),
    "shared": (0, MAX_SHARED_BYTES),
    "global_scratch_size": (0, 2**40),
    "global_scratch_align": (1, 2**20),
    "profile_scratch_size": (0, 2**40),
    "profile_scratch_align": (1, 2**20),
}
_BOOL_FIELDS = ("launch_pdl", "launch_cooperative_grid")
_TENSOR_MAP_INT_FIELDS = ("elem_type", "elem_size", "swizzle")
MAX_TENSOR_MAP_RANK = 5


def _is_int(value: Any) -> bool:
    return type(value) is int  # not bool


def _int_list(value: Any, low: int, high: int) -> bool:
    return isinstance(value, list) and all(_is_int(v) and low <= v <= high for v in value)


def param_bytes(param_type: str) -> Optional[int]:
    """Bytes of a kernel parameter of a Triton signature type; None for a type torch_tile cannot pass."""
    return POINTER_BYTES if param_type.startswith("*") else PARAM_BYTES.get(param_type)


def _field_problem(meta: dict, num_bindings: int) -> Optional[str]:
    """Why the metadata's fields cannot be what the compile path writes (types and ranges)."""
    if not isinstance(meta.get("name"), str) or not meta["name"]:
        return "'name' is not a kernel name"
    for field, (low, high) in _INT_FIELDS.items():
        if not _is_int(meta.get(field)) or not low <= meta[field] <= high:
            return f"{field!r} = {meta.get(field)!r} is not an integer in [{low}, {high}]"
    for field in ("global_scratch_align", "profile_scratch_align"):
        if meta[field] & (meta[field] - 1):
            return f"{field!r} = {meta[field]} is not a power of two"
    for field in _BOOL_FIELDS:
        if not isinstance(meta.get(field), bool):
            return f"{field!r} = {meta.get(field)!r} is not a bool"
    types = meta.get("runtime_param_types")
    if not isinstance(types, list) or not all(isinstance(t, str) and param_bytes(t) for t in types):
        return f"'runtime_param_types' = {types!r} is not a list of parameter types torch_tile can pass"
    if not _int_list(meta.get("runtime_params"), 0, num_bindings - 1):
        return f"'runtime_params' is not a list of binding indices below {num_bindings}"
    if not _int_list(meta.get("runtime_param_parts"), -1, 2 * MAX_TENSOR_MAP_RANK - 1):
        return "'runtime_param_parts' is not a list of descriptor parts"
    if not len(types) == len(meta["runtime_params"]) == len(meta["runtime_param_parts"]):
        return "'runtime_params', 'runtime_param_types' and 'runtime_param_parts' differ in length"
    maps = meta.get("tensor_maps")
    if not isinstance(maps, list) or len(maps) != types.count("nvTmaDesc"):
        return "'tensor_maps' is not a list of one entry per nvTmaDesc parameter"
    for m in maps:
        if not isinstance(m, dict) or not all(_is_int(m.get(f)) and m[f] >= 0 for f in _TENSOR_MAP_INT_FIELDS) \
                or not _int_list(m.get("block_size"), 1, 256) or not 1 <= len(m["block_size"]) <= MAX_TENSOR_MAP_RANK:
            return f"tensor map {m!r} is malformed"
    return None


def launch_metadata_problem(meta: dict, cubin: bytes, num_bindings: int) -> Optional[str]:
    """Why a variant's launch metadata cannot launch ``cubin`` (None: it can).

    ``meta`` is the compile result the C++ runtime reads (name, num_warps,
    num_ctas, shared, runtime_param_types...); ``num_bindings`` is the number of
    the launch's bindings (kernel parameters, a tuple parameter's leaves each)
    that ``runtime_params`` indexes.
    Checked: the fields' types and ranges; the kernel symbol; the block size the
    cubin requires (32 * num_warps); its parameters' count and sizes (the
    runtime parameters plus Triton's two scratch pointers); its cluster shape
    (num_ctas); static plus dynamic shared memory within MAX_SHARED_BYTES."""
    if not isinstance(meta, dict):
        return "the metadata is not a JSON object"
    problem = _field_problem(meta, num_bindings)
    if problem is not None:
        return problem
    name = meta["name"]
    try:
        info = kernel_info(cubin, name)
    except CubinError as e:
        return f"the cubin cannot be read ({e})"
    if not info.has_symbol:
        return f"the cubin has no kernel {name!r}"
    if info.param_sizes is None:
        return f"the cubin has no .nv.info.{name} section"
    threads = info.required_threads or info.max_threads
    if threads is None:
        return "the cubin's kernel does not fix its block size (no .reqntid), as every Triton kernel does"
    if threads != (32 * meta["num_warps"], 1, 1):
        return f"num_warps = {meta['num_warps']}, but the cubin's kernel takes blocks of {threads} threads"
    expected = [param_bytes(t) for t in meta["runtime_param_types"]] + [POINTER_BYTES] * TRITON_SCRATCH_POINTERS
    if info.param_sizes != expected:
        return (f"runtime_param_types {meta['runtime_param_types']} (+ {TRITON_SCRATCH_POINTERS} scratch pointers) "
                f"take parameters of {expected} bytes, but the cubin's kernel takes {info.param_sizes}")
    cluster = info.cluster or (1, 1, 1)
    if cluster != (meta["num_ctas"], 1, 1):
        return f"num_ctas = {meta['num_ctas']}, but the cubin's kernel runs in clusters of {cluster}"
    if info.static_shared + meta["shared"] > MAX_SHARED_BYTES:
        return (f"{info.static_shared} bytes of static and {meta['shared']} of dynamic shared memory exceed "
                f"{MAX_SHARED_BYTES}")
    return None
