"""Launch metadata of kernels that are not Triton's (CUDA C++, cuTile, TileLang), in the fields the runtime reads
from Triton's."""


def plain_launch_metadata(name: str, cubin: bytes, block: tuple[int, int, int], shared: int,
                          param_types: list[str]) -> dict:
    """Launch metadata (the fields ``binary_from_python`` reads) of a kernel launched with ``block`` threads
    (x, y, z) that takes one parameter per binding, in order, and uses no cluster, PDL, cooperative launch,
    scratch memory or tensor map."""
    n = len(param_types)
    return {
        "name": name, "cubin": cubin, "block": list(block), "num_ctas": 1, "shared": shared,
        "launch_pdl": False, "launch_cooperative_grid": False,
        "global_scratch_size": 0, "global_scratch_align": 1, "profile_scratch_size": 0, "profile_scratch_align": 1,
        "runtime_params": list(range(n)), "runtime_param_types": list(param_types), "runtime_param_parts": [-1] * n,
        "tensor_maps": [],
    }
