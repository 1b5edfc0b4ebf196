"""Compiles tile::softmax_cutile's variants for the GPU tests' calls and the
frontends benchmark's shapes (tests/cutile_cases.py) into a bundle, on a machine where cuTile's compiler
runs (no GPU needed): the lent H200's image cannot run tileiras, but runs the
cubins. tests/test_gpu_cutile.py loads the bundle named by
$TORCH_TILE_CUTILE_BUNDLE before compiling anything.

    python dev/cutile_bundle.py OUT.ttb [--capability 90] [--tileir-bytecode 13.1]

--tileir-bytecode makes cuTile emit that Tile IR bytecode version instead of
the newest its tileiras accepts. cuTile picks the version by running tileiras
on a probe; on the lent H200 every probe fails and cuTile falls back to 13.1,
so ct.launch there asks its disk cache for 13.1 bytecode's cubins
(dev/cutile_device.sh writes that cache with this option).
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import torch  # noqa: E402

import torch_tile as tt  # noqa: E402
from torch_tile.kernels import softmax_cutile  # noqa: E402,F401  (registers tile::softmax_cutile)

import cutile_cases  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--capability", type=int, default=90)
    parser.add_argument("--tileir-bytecode", help="Tile IR bytecode version to emit, e.g. 13.1")
    args = parser.parse_args()
    if args.tileir_bytecode:
        from cuda.tile import _compile
        from cuda.tile._bytecode.version import BytecodeVersion

        version = BytecodeVersion["V_" + args.tileir_bytecode.replace(".", "_")]
        _compile._get_max_supported_bytecode_version = lambda *_, **__: version
    examples = [(x,) for x in cutile_cases.inputs("cpu")]
    examples += [(torch.empty(shape),) for shape in cutile_cases.BENCHMARK_SHAPES]
    summary = tt.export_bundle(["tile::softmax_cutile"], args.out, capabilities=[args.capability],
                               examples={"tile::softmax_cutile": examples})
    print(f"{args.out}: {summary['variants']} variants, {len(summary['ops'][0]['plans'])} plans")
    return 0


if __name__ == "__main__":
    sys.exit(main())
