"""Why does AOTInductor's package loader crash on the GPU machine? (issue 13, item 4)

    python scripts/aoti_probe.py OUT_DIR [ATTEMPT ...]   (default: every attempt)

Prints, for the record: the compiler, the libstdc++ files the Python process
maps after `import torch` (and their newest GLIBCXX version), then compiles a
plain model (no tile op) with aoti_compile_and_package, and loads and runs it
in fresh processes under several configurations, each with faulthandler, so
that a crash is reported with its stack instead of killing the probe:
as is; with the system libstdc++ preloaded; and with a tile op in the model
(torch_tile is imported only then). Each attempt's outcome is one line: OK (same result as eager) or the
signal and the Python frames.
"""

from __future__ import annotations

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


print("g++:", sh("g++ --version | head -1"))
print("system libstdc++:", sh("g++ -print-file-name=libstdc++.so.6"),
      glibcxx_max(sh("readlink -f $(g++ -print-file-name=libstdc++.so.6)")))
maps = sh(f"{sys.executable} -c \"import torch; print(open('/proc/self/maps').read())\" "
          "| grep -o '/[^ ]*libstdc++[^ ]*' | sort -u")
for path in maps.splitlines():
    print("python+torch maps:", path, glibcxx_max(path))

COMPILE = textwrap.dedent("""
    import sys, torch, torch._inductor
    tile = sys.argv[2] == "tile"
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


def attempt(name: str, tile: bool, env_extra: dict) -> None:
    package = os.path.join(OUT, f"{name}.pt2")
    env = {**ENV, **env_extra}
    compiled = subprocess.run([sys.executable, "-c", COMPILE, package, "tile" if tile else "plain"],
                              capture_output=True, text=True, env=env, timeout=400)
    if compiled.returncode != 0:
        print(f"[{name}] compile failed rc={compiled.returncode}: {compiled.stderr[-1500:]}")
        return
    loaded = subprocess.run([sys.executable, "-c", LOAD, package, "tile" if tile else "plain"],
                            capture_output=True, text=True, env=env, timeout=200)
    tail = (loaded.stdout + loaded.stderr).strip().splitlines()[-25:]
    print(f"[{name}] load rc={loaded.returncode}")
    print("    " + "\n    ".join(tail))
    so = sh(f"cd {OUT} && rm -rf x_{name} && mkdir x_{name} && cd x_{name} && unzip -q ../{name}.pt2 && "
            "find . -name '*.so' | head -1")
    if so:
        print("    package .so needs:", sh(f"cd {OUT}/x_{name} && ldd {so} | grep -E 'stdc|not found'"))


system_libstdcxx = sh("readlink -f $(g++ -print-file-name=libstdc++.so.6)")
ATTEMPTS = {  # name: (a tile op in the model, environment)
    "plain": (False, {}),
    "plain_preload_system_libstdcxx": (False, {"LD_PRELOAD": system_libstdcxx}),
    "tile": (True, {}),
    "tile_preload_system_libstdcxx": (True, {"LD_PRELOAD": system_libstdcxx}),
}
for name in sys.argv[2:] or ATTEMPTS:
    attempt(name, *ATTEMPTS[name])
