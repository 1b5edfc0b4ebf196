"""Why does AOTInductor's package loader crash on the GPU machine? (issue 13, item 4)

    python scripts/aoti_probe.py OUT_DIR [ATTEMPT ...]   (default: every attempt)

Prints, for the record: the compiler, torch's build compiler, the libstdc++
files the Python process maps after `import torch`, then compiles a plain model
(no tile op) with aoti_compile_and_package under several configurations and
loads and runs each in a fresh process with faulthandler, so that a crash is
reported with its stack instead of killing the probe. Each attempt's outcome
is one line: OK (same result as eager) or the signal and the Python frames.
The "bindings" attempt loads under LD_DEBUG=bindings and lists the C++
symbols the package's library binds to definitions in other libraries (the
suspects when one template is compiled from two libstdc++ header versions).
"""

from __future__ import annotations

import collections
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import textwrap

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/aoti_probe"
os.makedirs(OUT, exist_ok=True)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": ROOT, "PYTHONFAULTHANDLER": "1"}


def sh(cmd: str) -> str:
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()


def glibcxx_max(path: str) -> str:
    versions = re.findall(r"GLIBCXX_(\d+\.\d+(?:\.\d+)?)", sh(f"strings -a {path} 2>/dev/null | grep ^GLIBCXX_"))
    return max(versions, key=lambda v: tuple(map(int, v.split("."))), default="?")


def cxx_wrapper(name: str, link_flags: str) -> str:
    """A $CXX that adds ``link_flags`` to links of shared objects (Inductor compiles with $CXX; it also runs
    the compiler for precompiled headers, which must not get them)."""
    path = os.path.join(OUT, name)
    with open(path, "w") as f:
        f.write('#!/usr/bin/env bash\ncase " $* " in *" -shared "*) exec g++ "$@" ' + link_flags +
                ' ;; *) exec g++ "$@" ;; esac\n')
    os.chmod(path, 0o755)
    return path


print("g++:", sh("g++ --version | head -1"))
print("torch built with:", sh(f"{sys.executable} -c \"import torch; print(torch.__config__.show())\" | "
                              "grep -E 'GCC|clang|CXX_FLAGS' | head -3"))
print("system libstdc++:", sh("g++ -print-file-name=libstdc++.so.6"),
      glibcxx_max(sh("readlink -f $(g++ -print-file-name=libstdc++.so.6)")))
maps = sh(f"{sys.executable} -c \"import torch; print(open('/proc/self/maps').read())\" "
          "| grep -o '/[^ ]*libstdc++[^ ]*' | sort -u")
for path in maps.splitlines():
    print("python+torch maps:", path, glibcxx_max(path))

COMPILE = textwrap.dedent("""
    import os, sys, torch, torch._inductor
    tile = sys.argv[2] == "tile"
    if os.environ.get("PROBE_NO_PCH"):
        torch._inductor.config.aot_inductor.precompile_headers = False
    if tile:
        from torch_tile.kernels import add  # noqa: F401  (defines tile::add)
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(64, 64)
        def forward(self, x):
            y = self.lin(x)
            return torch.ops.tile.add(y, y) if tile else y + y
    m = M().cuda().eval()
    x = torch.randn(8, 64, device="cuda")
    ep = torch.export.export(m, (x,))
    path = torch._inductor.aoti_compile_and_package(ep, package_path=sys.argv[1])
    torch.save({"x": x, "y": m(x), "state": m.state_dict()}, sys.argv[1] + ".ref")
    print("compiled", path)
""")
LOAD = textwrap.dedent("""
    import sys, torch, torch._inductor
    if sys.argv[2] == "tile":
        from torch_tile.kernels import add  # noqa: F401  (defines tile::add)
    ref = torch.load(sys.argv[1] + ".ref")
    runner = torch._inductor.aoti_load_package(sys.argv[1])
    out = runner(ref["x"])
    out = out[0] if isinstance(out, (list, tuple)) else out
    torch.testing.assert_close(out, ref["y"])
    print("OK: same result as eager")
""")


def bindings(log_prefix: str) -> dict[str, str]:
    """symbol -> the object the package's library bound it to (``self``: its own definition)."""
    bound: dict[str, str] = {}
    for log in glob.glob(log_prefix + ".*"):
        for line in open(log, errors="replace"):
            m = re.search(r"binding file (\S+wrapper\.so) \[\d+\] to (\S+) \[\d+\]: normal symbol `([^']+)'", line)
            if m:
                bound[m.group(3)] = "self" if m.group(2) == m.group(1) else m.group(2)
    return bound


def demangled(symbols: list[str]) -> list[str]:
    return ["        " + s[:220] for s in sh("echo '" + "\n".join(symbols) + "' | c++filt").splitlines()]


def report_bindings(log_prefix: str) -> str:
    """The C++ symbols the package's library binds in other objects, counted per object."""
    per_object: dict[str, list[str]] = collections.defaultdict(list)
    for symbol, target in bindings(log_prefix).items():
        if target != "self" and symbol.startswith("_Z"):
            per_object[target].append(symbol)
    lines = []
    for obj, symbols in sorted(per_object.items()):
        lines.append(f"    binds {len(symbols)} C++ symbols to {obj}, e.g.:")
        lines += demangled(sorted(symbols)[:12])
    return "\n".join(lines) or "    binds no C++ symbol to another object"


def attempt(name: str, tile: bool, compile_env: dict, load_env: dict) -> str:
    """Compiles and loads one package; returns the report (attempts run in parallel)."""
    package = os.path.join(OUT, f"{name}.pt2")
    compiled = subprocess.run([sys.executable, "-c", COMPILE, package, "tile" if tile else "plain"],
                              capture_output=True, text=True, env={**ENV, **compile_env}, timeout=500)
    if compiled.returncode != 0:
        return f"[{name}] compile failed rc={compiled.returncode}: {compiled.stderr[-1500:]}"
    loaded = subprocess.run([sys.executable, "-c", LOAD, package, "tile" if tile else "plain"],
                            capture_output=True, text=True, env={**ENV, **load_env}, timeout=200)
    tail = (loaded.stdout + loaded.stderr).strip().splitlines()[-25:]
    report = f"[{name}] load rc={loaded.returncode}\n    " + "\n    ".join(tail)
    if "LD_DEBUG_OUTPUT" in load_env:
        report += "\n" + report_bindings(load_env["LD_DEBUG_OUTPUT"])
    return report


system_libstdcxx = sh("readlink -f $(g++ -print-file-name=libstdc++.so.6)")
ATTEMPTS = {  # name: (a tile op in the model, compile environment, load environment)
    "plain": (False, {}, {}),
    "plain_bindings": (False, {}, {"LD_DEBUG": "bindings", "LD_DEBUG_OUTPUT": os.path.join(OUT, "ld")}),
    "plain_bindings_preload": (False, {}, {"LD_DEBUG": "bindings", "LD_DEBUG_OUTPUT": os.path.join(OUT, "ldp"),
                                          "LD_PRELOAD": sh("readlink -f $(g++ -print-file-name=libstdc++.so.6)")}),
    "plain_bsymbolic": (False, {"CXX": cxx_wrapper("gxx_bsymbolic", "-Wl,-Bsymbolic")}, {}),
    "plain_no_pch": (False, {"PROBE_NO_PCH": "1"}, {}),
    "plain_debug_compile": (False, {"TORCHINDUCTOR_DEBUG_COMPILE": "1"}, {}),
    "plain_preload_system_libstdcxx": (False, {}, {"LD_PRELOAD": system_libstdcxx}),
    "tile": (True, {}, {}),
}
with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
    for report in pool.map(lambda name: attempt(name, *ATTEMPTS[name]), sys.argv[2:] or ATTEMPTS):
        print(report, flush=True)
crashing, working = bindings(os.path.join(OUT, "ld")), bindings(os.path.join(OUT, "ldp"))
if crashing and working:  # what preloading libstdc++ (which works) changes in the crashing load's bindings
    moved: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    for symbol, target in crashing.items():
        if symbol in working and os.path.realpath(target) != os.path.realpath(working[symbol]):
            moved[(target, working[symbol])].append(symbol)
    print("bindings that differ with libstdc++ preloaded (crashing -> working):")
    for (before, after), symbols in sorted(moved.items(), key=lambda item: -len(item[1])):
        print(f"    {len(symbols)} symbols: {before} -> {after}, e.g.:")
        print("\n".join(demangled(symbols[:8] if before == "self" else symbols[:40])))
    only = [s for s in crashing if s not in working]  # in the order they were bound
    print(f"bound only in the crashing load (last before the crash first): {len(only)}")
    print("\n".join(demangled(only[-20:])))
