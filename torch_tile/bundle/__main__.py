"""``python -m torch_tile.bundle export|inspect|verify``: see torch_tile.bundle."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Callable, Optional, Sequence

from .._op import registered_ops
from . import __doc__ as DOC
from . import export_bundle, inspect_bundle, verify_bundle


def _format(summary: dict) -> str:
    lines = [f"{summary['path']}: {summary['bytes']} bytes, written by {summary['producer']}",
             f"{len(summary['ops'])} ops, {summary['variants']} variants ({summary['cubin_bytes']} bytes of cubins) "
             f"for {', '.join(f'sm_{c}' for c in summary['capabilities']) or 'no architecture'}"]
    for op in summary["ops"]:
        lines.append(f"\n{op['qualname']}{op['schema']}")
        for i, plan in enumerate(op["plans"]):
            steps = plan["steps"]
            lines.append(f"  plan {i}: {steps['allocs']} allocations, {steps['views']} views, "
                         f"ATen {steps['aten'] or 'none'}, launches {steps['launches']}")
            lines.append(f"    tensors {'; '.join(plan['tensors'])}")
            for g in plan["guards"]:
                lines.append(f"    guard {g}")
        for kernel, caps in op["kernels"].items():
            lines.append(f"  kernel {kernel}: variants for {', '.join(f'sm_{c}' for c in caps) or 'NO architecture'}")
    return "\n".join(lines)


def _import_attribute(spec: str) -> Callable:
    module, colon, attr = spec.partition(":")
    if not colon or not module or not attr:
        raise SystemExit(f"--examples must be module:function, got {spec!r}")
    return getattr(importlib.import_module(module), attr)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torch_tile.bundle", description=DOC.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    export = sub.add_parser("export", help="write a bundle of the ops a module defines")
    export.add_argument("out")
    export.add_argument("--module", action="append", required=True,
                        help="module that defines the ops (imported; repeatable)")
    export.add_argument("--ops", action="append",
                        help="op qualname or namespace to export (default: every op the modules define)")
    export.add_argument("--examples", help="module:function returning {op or qualname: [argument tuples]}")
    export.add_argument("--capability", type=int, action="append", help="GPU architecture, e.g. 90 (repeatable)")
    for name in ("inspect", "verify"):
        sub.add_parser(name, help=f"{name} a bundle").add_argument("path")
    args = parser.parse_args(argv)
    if args.command == "export":
        before = set(registered_ops())
        for module in args.module:
            importlib.import_module(module)
        # The ops the modules (and their submodules) define, also when imported before.
        ops = args.ops or sorted(q for q, op in registered_ops().items() if q not in before or any(
            op.fn.__module__ == m or op.fn.__module__.startswith(m + ".") for m in args.module))
        if not ops:
            parser.error(f"no tile op is defined in {', '.join(args.module)}")
        examples = _import_attribute(args.examples)() if args.examples else None
        print(_format(export_bundle(ops, args.out, examples=examples, capabilities=args.capability)))
        return 0
    if args.command == "inspect":
        print(_format(inspect_bundle(args.path)))
        return 0
    problems = verify_bundle(args.path)
    for p in problems:
        print(p)
    print(f"{args.path}: {'OK' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
