"""CPU tests: an op's name is checked before anything is registered. Overload names (``ns::f.overload``) work
as with torch.library; names torch's namespace objects already use for attributes, names that are not ASCII
identifiers, and torch's own namespaces are refused with a ValueError naming the name and the reason."""

import itertools
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import triton

import torch_tile as tt
from torch_tile._op import registered_ops
from shared_kernels import scale_kernel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUDA = torch.device("cuda:0")  # the device traced plans are for (CPU tensors stand for CUDA ones)
_fresh = itertools.count()


def scaling_body(factor: float):
    def body(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        scale_kernel[(triton.cdiv(x.numel(), 128),)](out, x, factor, x.numel(), BLOCK=128)
        return out

    return body


def defined(qualname: str) -> bool:
    name, _, overload = qualname.partition(".")
    try:
        torch._C._dispatch_find_schema_or_throw(name, overload)
    except RuntimeError:
        return False
    return True


# -- overload names -------------------------------------------------------------------------------------


def test_an_overload_name_makes_that_overload():
    ns = f"names_{next(_fresh)}"
    op = tt.op(f"{ns}::f.doubled")(scaling_body(2.0))
    x = torch.randn(300)
    assert op.qualname == f"{ns}::f.doubled"
    assert getattr(torch.ops, ns).f.doubled is op.overload
    torch.testing.assert_close(getattr(torch.ops, ns).f.doubled(x), 2 * x)
    torch.testing.assert_close(op(x), 2 * x)
    assert op(torch.empty(7, device="meta")).shape == (7,)


def test_overloads_of_one_name_are_separate_ops():
    ns = f"names_{next(_fresh)}"
    plain = tt.op(f"{ns}::g")(scaling_body(1.0))
    tripled = tt.op(f"{ns}::g.tripled")(scaling_body(3.0))
    x = torch.randn(300)
    packet = getattr(torch.ops, ns).g
    assert sorted(packet.overloads()) == ["default", "tripled"]
    torch.testing.assert_close(packet.default(x), x)
    torch.testing.assert_close(packet.tripled(x), 3 * x)
    torch.testing.assert_close(plain(x), x)
    torch.testing.assert_close(tripled(x), 3 * x)
    assert plain.plans() == [] and tripled.plans() == []  # CPU calls: no native plans, for either


def test_an_overloads_gradient_op_is_named_after_it():
    ns = f"names_{next(_fresh)}"
    op = tt.op(f"{ns}::h.halved")(scaling_body(0.5))
    op.register_autograd(lambda ctx, grad: grad * 0.5)
    plan = op.trace(torch.randn(16), device=CUDA)
    assert plan.backward.gradient_op == f"{ns}_grad::h.halved"
    gradient = registered_ops()[plan.backward.gradient_op]
    assert defined(gradient.qualname)
    x = torch.randn(16, requires_grad=True)
    op(x).sum().backward()  # the CPU path differentiates with the registered backward
    torch.testing.assert_close(x.grad, torch.full_like(x, 0.5))


# -- refused names --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, reason", [
    ("name", "attribute"), ("__init__", "attribute"), ("_dir", "attribute"), ("__doc__", "attribute"),
    ("__class__", "attribute"), ("__getattr__", "attribute"), ("name.x", "attribute"),
    ("f\u00e9", "ASCII"), ("f.\u00e9", "ASCII"),
    ("", "namespace::name"), ("1f", "identifier"), ("f-g", "identifier"), ("f.", "identifier"),
    ("f.a.b", "identifier"), ("a::b", "namespace::name"), ("f.default", "default"),
])
def test_bad_op_names_are_refused_before_anything_is_registered(name, reason):
    ns = f"names_{next(_fresh)}"
    qualname = f"{ns}::{name}"
    with pytest.raises(ValueError, match=rf"torch_tile\.op: {qualname!r}.*{reason}"):
        tt.op(qualname)(scaling_body(1.0))
    assert qualname not in registered_ops()
    assert not any(n.startswith(f"{ns}::") for n in torch._C._dispatch_get_all_op_names())
    ok = tt.op(f"{ns}::fine")(scaling_body(1.0))  # the namespace is still usable
    x = torch.randn(10)
    torch.testing.assert_close(ok(x), x)


@pytest.mark.parametrize("qualname, reason", [
    ("n\u00e9::f", "ASCII"), ("::f", "namespace::name"), (" spaced::f", "identifier"),
    ("load_library::f", "attribute"), ("higher_order::f", "attribute"), ("_dir::f", "attribute"),
    ("loaded_libraries::f", "attribute"), ("no_separator", "namespace::name"),
])
def test_bad_namespaces_are_refused(qualname, reason):
    with pytest.raises(ValueError, match=rf"torch_tile\.op: {qualname!r}.*{reason}"):
        tt.op(qualname)(scaling_body(1.0))
    assert qualname not in registered_ops()


# In a fresh process: an op defined as aten::add would change torch's own op for the whole process.
RESERVED = textwrap.dedent("""
    import json, torch
    import torch_tile as tt

    def body(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    add_overloads = sorted(torch.ops.aten.add.overloads())
    results = {}
    for qualname in ["aten::add", "aten::brand_new", "prim::f", "prims::f", "at::f", "torch::f", "pytorch::f"]:
        try:
            tt.op(qualname)(body)
            results[qualname] = "accepted"
        except ValueError as e:
            results[qualname] = str(e)
    names = torch._C._dispatch_get_all_op_names()
    print(json.dumps({"results": results, "add_unchanged": sorted(torch.ops.aten.add.overloads()) == add_overloads,
                      "left": [n for n in ["aten::add", "aten::brand_new", "prim::f", "prims::f", "at::f",
                                           "torch::f", "pytorch::f"] if n in names]}))
""")


def test_torchs_own_namespaces_are_refused():
    env = {**os.environ, "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-c", RESERVED], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for qualname, result in report["results"].items():
        ns = qualname.split("::")[0]
        assert result.startswith(f"torch_tile.op: {qualname!r}") and f"'{ns}' is reserved" in result, (qualname,
                                                                                                        result)
    assert report["add_unchanged"] and report["left"] == []  # names hold overloads: aten::add.Tensor is torch's
