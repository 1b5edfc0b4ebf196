"""The package's structure: imports between torch_tile's modules form
no cycle, and none is written inside a function (where it would hide one).
Imports under ``if TYPE_CHECKING:`` (annotations only) never run and are not
counted."""

import ast
import os
import pathlib
import re
import subprocess
import sys

import torch_tile

ROOT = pathlib.Path(torch_tile.__file__).parent


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """The torch_tile modules an ``import`` statement names."""
    if node.level == 0:
        base = node.module or ""
    else:
        parts = module.split(".")
        parts = parts if is_package else parts[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    if not base.startswith("torch_tile"):
        return []
    # `from . import _C, _plan`: the names may be modules themselves.
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def _imports():
    """module -> (torch_tile modules imported at module level, ones imported inside functions)."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        top, nested = set(), set()
        # Imports for type annotations only never run: not part of the graph.
        typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and ast.unparse(block.test) == "TYPE_CHECKING" for n in ast.walk(block)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom):
                targets = _resolve(name, path.name == "__init__.py", node)
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("torch_tile")]
            else:
                continue
            targets = {t for t in targets if t in modules and t != name}
            (top if node.col_offset == 0 else nested).update(targets)
        graph[name] = (top, nested)
    return graph


def test_no_intra_package_import_inside_a_function():
    hidden = {m: sorted(nested) for m, (_, nested) in _imports().items() if nested}
    assert hidden == {}


def test_module_imports_form_no_cycle():
    graph = {m: top for m, (top, _) in _imports().items()}
    # A package's __init__ importing its own submodules is not a cycle between modules.
    edges = {m: {t for t in targets if not t.startswith(m + ".")} for m, targets in graph.items()}
    state, cycle = {}, []

    def visit(node, stack):
        state[node] = "active"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "active":
                cycle.append(stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert cycle == []


def test_the_graph_is_read():
    graph = _imports()
    assert "torch_tile._plan" in graph["torch_tile.trace.expr"][0]
    assert "torch_tile.frontends.frontend" in graph["torch_tile.trace.tracer"][0]


def _all_imported(module: str) -> set:
    """Every torch_tile module ``module`` imports, annotations-only imports included."""
    path = ROOT.parent / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = ROOT.parent / module.replace(".", "/") / "__init__.py"
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            names.update(_resolve(module, path.name == "__init__.py", node))
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return {n for n in names if n.startswith("torch_tile")}


def test_the_tracer_holds_no_op_and_the_core_names_no_frontend():
    modules = sorted(m for m in _imports() if m.startswith("torch_tile.trace"))
    assert "torch_tile.trace.tracer" in modules
    for module in modules:  # the tracer gets a TracedOp, never the TileOp (not even for annotations)
        assert "torch_tile._op" not in _all_imported(module), module
    frontends = ("torch_tile.frontends.triton", "torch_tile.frontends.cuda", "torch_tile.frontends.cutile")
    for module in [*modules, "torch_tile._op", "torch_tile._launch_mode", "torch_tile._fake", "torch_tile._fallback"]:
        named = sorted(n for n in _all_imported(module) if n.startswith(frontends))
        assert named == [], f"{module} imports {named}: it should ask the registered frontends"


def test_the_package_never_loads_the_testing_module():
    """Benchmarks and probes are torch_tile._testing, for tests and benchmarks only: importing the package, its
    kernels, bundles and demo loads no part of it."""
    code = ("import sys, torch_tile, torch_tile.kernels, torch_tile.bundle, torch_tile.demo, torch_tile.info; "
            "assert not hasattr(torch_tile._C, 'testing'); "
            "print(sorted(m for m in sys.modules if m.startswith('torch_tile._testing')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT.parent)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_native_runtime_includes_no_torch_and_no_python():
    """csrc/runtime (every folder of it) is the layer a LibTorch-free build could take: no ATen, c10, torch,
    pybind11 or Python header, and nothing of the layers above it."""
    csrc = ROOT.parent / "csrc"
    files = sorted(p for p in (csrc / "runtime").rglob("*") if p.suffix in (".h", ".cpp"))
    assert len(files) > 40 and any(p.parent.name == "plan" for p in files)
    forbidden = re.compile(r'#include [<"](ATen/|c10/|torch/|pybind11/|Python\.h|python/|testing/)')
    offenders = [f"{p.relative_to(csrc)}: {line.strip()}" for p in files for line in p.read_text().splitlines()
                 if forbidden.match(line.strip())]
    assert offenders == []
