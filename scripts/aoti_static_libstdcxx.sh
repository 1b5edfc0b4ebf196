#!/usr/bin/env bash
# AOTInductor on the GPU machine (issue 13, item 4): the package's wrapper .so crashes in std::regex
# (parse_device_str) when loaded into torch's process; built with -static-libstdc++ (through a CXX
# wrapper, Inductor's compiler setting) it carries its own libstdc++. This compiles and loads a plain
# model and one calling torch.ops.tile.add that way, and checks both against eager.
# Usage: bash scripts/aoti_static_libstdcxx.sh OUT_DIR   (PY: the Python with torch; default python3)
set -u
OUT="${1:-/tmp/aoti_static}"
PY="${PY:-python3}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$OUT"
cat > "$OUT/gxx_static" <<'SH'
#!/usr/bin/env bash
# Links of shared objects only: Inductor also runs the compiler for precompiled headers.
case " $* " in *" -shared "*) exec g++ "$@" -static-libstdc++ -static-libgcc ;; *) exec g++ "$@" ;; esac
SH
chmod +x "$OUT/gxx_static"
for model in ${MODELS:-plain tile}; do
  CXX="$OUT/gxx_static" PYTHONPATH="$ROOT" timeout 200 "$PY" - "$OUT/$model.pt2" "$model" <<'PYEOF'
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
torch._inductor.aoti_compile_and_package(torch.export.export(m, (x,)), package_path=sys.argv[1])
torch.save({"x": x, "y": m(x)}, sys.argv[1] + ".ref")
print(sys.argv[2], "compiled")
PYEOF
  PYTHONPATH="$ROOT" PYTHONFAULTHANDLER=1 timeout 120 "$PY" - "$OUT/$model.pt2" "$model" <<'PYEOF' 2>&1 | tail -8
import sys, torch, torch._inductor
if sys.argv[2] == "tile":
    from torch_tile.kernels import add  # noqa: F401
ref = torch.load(sys.argv[1] + ".ref")
out = torch._inductor.aoti_load_package(sys.argv[1])(ref["x"])
out = out[0] if isinstance(out, (list, tuple)) else out
torch.testing.assert_close(out, ref["y"])
print(sys.argv[2], "loaded and ran: same result as eager")
PYEOF
done
