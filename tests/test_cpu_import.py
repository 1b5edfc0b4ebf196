"""CPU tests: importing torch_tile without a GPU and registering ops.

Covers: a fresh import on a machine with no usable GPU; the example ops'
schemas (checked against schemas parsed independently by torch); schema
inference from type hints and explicit schemas; the argument and return types
``tt.op`` refuses at registration; ``mutates_args`` becoming a write alias in
the schema; the dispatch keys every op registers (CUDA included, with no GPU).
"""

import os
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile import kernels as K

NS = "tt_cpu_import"


def _schema(text: str):
    return torch._C.parse_schema(text)


def _registered(qualname: str) -> str:
    ns, name = qualname.split("::")
    return str(getattr(getattr(torch.ops, ns), name).default._schema)


@triton.jit
def _fill_kernel(out_ptr, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full((BLOCK,), value, tl.float32), mask=offs < n)


# -- import -----------------------------------------------------------------------------------------


def test_fresh_import_without_gpu():
    """A new interpreter with every GPU hidden imports the package and registers the example ops."""
    code = (
        "import torch, torch_tile as tt\n"
        "from torch_tile import kernels\n"
        "assert not torch.cuda.is_available()\n"
        "assert hasattr(torch.ops.tile, 'add') and hasattr(torch.ops.tile, 'matmul')\n"
        "print(tt.__version__, sorted(tt.runtime_counters()))\n"
    )
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=240,
                            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert result.returncode == 0, result.stderr
    assert ("['compiles', 'fallback_calls', 'host_entries', 'map_lookups', 'plan_scans', 'tensor_map_encodes', "
            "'traces']") in result.stdout


def test_public_api():
    for name in tt.__all__:
        assert hasattr(tt, name), name
    assert issubclass(tt.TraceError, RuntimeError)
    assert isinstance(tt.__version__, str)
    counters = tt.runtime_counters()
    assert set(counters) == {"traces", "compiles", "host_entries", "map_lookups", "plan_scans", "tensor_map_encodes",
                             "fallback_calls"}
    assert all(isinstance(v, int) for v in counters.values())


# -- the example ops --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "qualname, expected",
    [
        ("tile::add", "tile::add(Tensor x, Tensor y) -> Tensor"),
        ("tile::add_", "tile::add_(Tensor(a0!) x, Tensor y) -> ()"),
        ("tile::softmax", "tile::softmax(Tensor x) -> Tensor"),
        ("tile::layer_norm",
         "tile::layer_norm(Tensor x, Tensor weight, Tensor bias, float eps=1e-05) -> (Tensor, Tensor, Tensor)"),
        ("tile::matmul", "tile::matmul(Tensor a, Tensor b) -> Tensor"),
    ],
)
def test_example_op_schemas(qualname, expected):
    ns, name = qualname.split("::")
    overload = getattr(getattr(torch.ops, ns), name).default
    assert overload._schema == _schema(expected)


def test_add_schema_string():
    assert _registered("tile::add") == "tile::add(Tensor x, Tensor y) -> Tensor"
    assert K.add.schema == "(Tensor x, Tensor y) -> Tensor"


def test_add_inplace_marks_x_written():
    args = torch.ops.tile.add_.default._schema.arguments
    assert args[0].alias_info is not None and args[0].alias_info.is_write
    assert args[1].alias_info is None
    assert torch.ops.tile.add_.default._schema.returns == []


@pytest.mark.parametrize("qualname", ["tile::add", "tile::add_", "tile::softmax", "tile::layer_norm", "tile::matmul"])
@pytest.mark.parametrize("key", ["CPU", "CUDA", "Meta"])
def test_dispatch_keys_registered(qualname, key):
    """CPU (interpreter), CUDA (native, registered even with no GPU) and Meta (fake) implementations."""
    assert torch._C._dispatch_has_kernel_for_dispatch_key(qualname, key)


def test_tile_op_object():
    assert isinstance(K.add, tt.TileOp)
    assert K.add.qualname == "tile::add" and K.add.namespace == "tile" and K.add.name == "add"
    assert K.add.__name__ == "add"
    assert K.add.__doc__ == K.add.fn.__doc__ and "x + y" in K.add.__doc__
    assert repr(K.add) == "<torch_tile op tile::add(Tensor x, Tensor y) -> Tensor>"
    assert K.add.num_returns == 1 and K.layer_norm.num_returns == 3 and K.add_.num_returns == 0
    assert K.layer_norm.arg_names == ["x", "weight", "bias", "eps"]
    assert isinstance(K.add.plan_count, int) and K.add.plan_count >= 0
    assert tt._C.plan_count("tt_cpu_import::never_registered") == -1


def test_tile_op_call_is_the_registered_op():
    x, y = torch.randn(33), torch.randn(33)
    torch.testing.assert_close(K.add(x, y), torch.ops.tile.add(x, y), rtol=0, atol=0)


# -- registration: inference, explicit schemas, refusals ---------------------------------------------


def test_schema_inferred_from_type_hints():
    @tt.op(f"{NS}::inferred")
    def inferred(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    assert inferred.schema == "(Tensor x, Tensor y) -> Tensor"
    assert _registered(f"{NS}::inferred") == f"{NS}::inferred(Tensor x, Tensor y) -> Tensor"


def test_schema_inferred_for_scalars_and_defaults():
    @tt.op(f"{NS}::scalars")
    def scalars(x: torch.Tensor, n: int, scale: float = 2.0, flag: bool = False) -> torch.Tensor:
        return torch.empty_like(x)

    expected = torch.library.infer_schema(scalars.fn, mutates_args=())
    assert scalars.schema == expected == "(Tensor x, SymInt n, float scale=2.0, bool flag=False) -> Tensor"
    assert torch.ops.tt_cpu_import.scalars.default._schema == _schema(f"{NS}::scalars{expected}")


def test_schema_inferred_multiple_returns():
    @tt.op(f"{NS}::pair")
    def pair(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.empty_like(x), torch.empty_like(x)

    assert pair.schema == "(Tensor x) -> (Tensor, Tensor)"
    assert pair.num_returns == 2


def test_explicit_schema():
    @tt.op(f"{NS}::explicit", schema="(Tensor x, int n, float v) -> Tensor")
    def explicit(x, n, v):
        out = torch.empty((n,), dtype=torch.float32, device=x.device)
        _fill_kernel[(triton.cdiv(n, 16),)](out, n, v, BLOCK=16)
        return out

    assert explicit.schema == "(Tensor x, int n, float v) -> Tensor"
    assert _registered(f"{NS}::explicit") == f"{NS}::explicit(Tensor x, int n, float v) -> Tensor"
    assert explicit.arg_names == ["x", "n", "v"]
    # And the op works (CPU path, Triton interpreter).
    out = torch.ops.tt_cpu_import.explicit(torch.empty(1), 37, 0.25)
    torch.testing.assert_close(out, torch.full((37,), 0.25))


def test_decorator_and_direct_call_forms():
    def body(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    direct = tt.op(f"{NS}::direct", body)
    assert isinstance(direct, tt.TileOp) and direct.fn is body
    assert direct.schema == "(Tensor x) -> Tensor"


def test_mutates_args_in_inferred_schema():
    @tt.op(f"{NS}::fill_", mutates_args=("out",))
    def fill_(out: torch.Tensor, v: float) -> None:
        n = out.numel()
        _fill_kernel[(triton.cdiv(n, 16),)](out, n, v, BLOCK=16)

    assert fill_.schema == "(Tensor(a0!) out, float v) -> ()"
    arg = torch.ops.tt_cpu_import.fill_.default._schema.arguments[0]
    assert arg.alias_info is not None and arg.alias_info.is_write
    out = torch.zeros(20)
    assert torch.ops.tt_cpu_import.fill_(out, 3.0) is None
    torch.testing.assert_close(out, torch.full((20,), 3.0))


@pytest.mark.parametrize(
    "arg_type",
    ["float[]", "Scalar", "Device", "Generator?", "Layout", "MemoryFormat", "Tensor?[]"],
)
def test_unsupported_argument_types_refused(arg_type):
    name = "t_" + "".join(c if c.isalnum() else "_" for c in arg_type)
    with pytest.raises(TypeError, match=r"argument 'a' has type .*supported: Tensor, int, float, bool, str, "
                                        r"torch.dtype, Optional of each, list\[int\] and list\[Tensor\]"):
        tt.op(f"{NS}::{name}", lambda x, a: None, schema=f"(Tensor x, {arg_type} a) -> Tensor")


@pytest.mark.parametrize("returns", ["int", "Tensor?", "(Tensor, float)", "(Tensor, Tensor[])"])
def test_non_tensor_returns_refused(returns):
    with pytest.raises(TypeError, match="returns must be a Tensor, a tuple of Tensors, a list\\[Tensor\\] or None"):
        tt.op(f"{NS}::ret_{abs(hash(returns))}", lambda x: None, schema=f"(Tensor x) -> {returns}")


def test_name_without_namespace_refused():
    with pytest.raises(ValueError, match="namespace::name"):
        tt.op("no_namespace", lambda x: None, schema="(Tensor x) -> Tensor")


def test_failed_registration_leaves_name_free():
    """A refused registration must not leave a half-defined op behind: the name can be registered again."""
    with pytest.raises(TypeError):
        tt.op(f"{NS}::retry", lambda x, s: None, schema="(Tensor x, float[] s) -> Tensor")

    @tt.op(f"{NS}::retry")
    def retry(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    assert _registered(f"{NS}::retry") == f"{NS}::retry(Tensor x) -> Tensor"


def test_python_dispatch_mode_sees_and_reenters_the_op():
    """The fast Python entry keeps dispatcher semantics: a TorchDispatchMode sees the
    op, and calling the op again from inside the mode (same thread) works."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Passthrough(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(func)
            return func(*args, **(kwargs or {}))

    x, y = torch.randn(100), torch.randn(100)
    with Passthrough() as mode:
        out = torch.ops.tile.add(x, y)
        out2 = torch.ops.tile.softmax(out.reshape(10, 10))
    assert torch.ops.tile.add.default in mode.seen
    assert torch.ops.tile.softmax.default in mode.seen
    torch.testing.assert_close(out, x + y)
    torch.testing.assert_close(out2, torch.softmax((x + y).reshape(10, 10), -1))
