"""CPU tests: compiling variants for sm_90 with no GPU, against Triton's own compile.

``tt.compile_variant(kernel_id, words, 90)`` compiles the variant a C++ key
describes. The reference is ``triton.compile`` on the ASTSource that Triton's
JIT binder builds from the *real* launch arguments (the body is run with
``JITFunction.run`` replaced by a recorder): the cubins must be byte-identical.
Triton's cache is pointed at a fresh directory and ``always_compile`` is on, so
both sides really compile.
"""

import pytest
import torch
import triton
import triton.language as tl
from triton.compiler.errors import CompilationError

import torch_tile as tt
from torch_tile import kernels as K
from torch_tile.frontends.triton.compile import _compile_callback
from torch_tile import _testing

from triton_reference import CAPABILITY, TARGET, capture_launches, triton_compile_real

NS = "tt_cpu_compile"
ELF_MAGIC = b"\x7fELF"


pytestmark = pytest.mark.usefixtures("fresh_triton_cache")  # both sides really compile


# -- helpers: the variant torch_tile compiles, and the one Triton's JIT would ---------------------------


def variant(op, args, index=0):
    """(kernel id, key words, launch) of one launch of op(*args)."""
    plan = op.trace(*args)
    words = _testing.specialization_keys(plan, tuple(args))[index]
    launch = plan.launches[index]
    return launch.kernel, words, launch


CASES = [
    ("add-f32", K.add, lambda: (torch.randn(1000), torch.randn(1000)), "add_kernel"),
    ("softmax-bf16", K.softmax, lambda: (torch.randn(4, 100, dtype=torch.bfloat16),), "softmax_kernel"),
    ("softmax-f32-large", K.softmax, lambda: (torch.randn(2, 3000),), "softmax_kernel"),
    ("matmul-bf16", K.matmul,
     lambda: (torch.randn(64, 32, dtype=torch.bfloat16), torch.randn(32, 48, dtype=torch.bfloat16)), "matmul_kernel"),
]


@pytest.fixture(scope="module")
def compiled_cases():
    """Each case compiled once by torch_tile and once by Triton (shared by the tests below)."""
    results = {}
    for name, op, make_args, kernel_name in CASES:
        args = make_args()
        kid, words, _launch = variant(op, args)
        ours, our_src = tt.compile_variant(kid, words, CAPABILITY)
        ((kernel, kargs, kkwargs),) = capture_launches(op, args)
        ref, ref_src = triton_compile_real(kernel, kargs, kkwargs)
        results[name] = dict(kid=kid, words=words, ours=ours, our_src=our_src, ref=ref, ref_src=ref_src,
                             kernel=kernel, kernel_name=kernel_name)
    return results


CASE_IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("name", CASE_IDS)
def test_compiles_a_cubin_without_gpu(compiled_cases, name):
    c = compiled_cases[name]
    cubin = c["ours"].asm["cubin"]
    assert isinstance(cubin, bytes) and len(cubin) > 1000
    assert cubin.startswith(ELF_MAGIC)
    assert c["ours"].metadata.name == c["kernel_name"]
    assert c["ours"].metadata.target == TARGET


@pytest.mark.parametrize("name", CASE_IDS)
def test_cubin_identical_to_triton(compiled_cases, name):
    c = compiled_cases[name]
    assert c["our_src"].signature == c["ref_src"].signature
    assert c["our_src"].constants == c["ref_src"].constants
    assert c["our_src"].attrs == c["ref_src"].attrs
    assert c["ours"].hash == c["ref"].hash
    assert c["ours"].asm["cubin"] == c["ref"].asm["cubin"]
    assert c["ours"].metadata.num_warps == c["ref"].metadata.num_warps
    assert c["ours"].metadata.shared == c["ref"].metadata.shared


def test_launch_options_reach_the_compiler(compiled_cases):
    assert compiled_cases["softmax-bf16"]["ours"].metadata.num_warps == 4
    assert compiled_cases["softmax-f32-large"]["ours"].metadata.num_warps == 8
    matmul = compiled_cases["matmul-bf16"]["ours"].metadata
    assert matmul.num_warps == 8 and matmul.num_stages == 3
    assert matmul.shared > 0  # pipelined tl.dot tiles live in shared memory


def test_specializations_are_in_the_source(compiled_cases):
    """bf16 pointers, the BLOCK constexpr derived from a size, and unit strides folded to constexprs."""
    softmax = compiled_cases["softmax-bf16"]["our_src"]
    assert softmax.signature["out_ptr"] == softmax.signature["in_ptr"] == "*bf16"
    assert softmax.constants[(5,)] == 128  # BLOCK = next_power_of_2(100)
    matmul = compiled_cases["matmul-bf16"]["our_src"]
    for param in ("stride_ak", "stride_bn", "stride_cn"):
        assert matmul.signature[param] == "constexpr"


@pytest.mark.parametrize("name", ["add-f32", "softmax-bf16"])
def test_compile_callback_runtime_params(compiled_cases, name):
    """What the C++ runtime receives on a cache miss: runtime parameters exclude every constexpr."""
    c = compiled_cases[name]
    before = tt.compile_count()
    info = _compile_callback(c["kid"], c["words"], CAPABILITY)
    assert tt.compile_count() == before + 1
    ref_sig = list(c["ref_src"].signature.values())
    assert info["runtime_params"] == [i for i, ty in enumerate(ref_sig) if ty != "constexpr"]
    assert info["runtime_param_types"] == [ty for ty in ref_sig if ty != "constexpr"]
    assert info["name"] == c["kernel_name"]
    assert info["cubin"] == c["ref"].asm["cubin"]
    assert info["num_warps"] == c["ref"].metadata.num_warps
    assert info["shared"] == c["ref"].metadata.shared


def test_add_runtime_params_exact():
    """add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK): BLOCK is constexpr; n == 1 becomes one too."""
    kid, words, _ = variant(K.add, (torch.randn(1000), torch.randn(1000)))
    info = _compile_callback(kid, words, CAPABILITY)
    assert info["runtime_params"] == [0, 1, 2, 3]
    assert info["runtime_param_types"] == ["*fp32", "*fp32", "*fp32", "i32"]
    kid, words, _ = variant(K.add, (torch.randn(1), torch.randn(1)))
    info = _compile_callback(kid, words, CAPABILITY)
    assert info["runtime_params"] == [0, 1, 2]


# -- compile errors ---------------------------------------------------------------------------------------


@triton.jit
def broken_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, undefined_name, mask=offs < n)  # noqa: F821


@tt.op(f"{NS}::broken", mutates_args=("x",))
def broken(x: torch.Tensor) -> None:
    broken_kernel[(1,)](x, x.numel(), BLOCK=16)


def test_compile_error_names_the_kernel():
    x = torch.zeros(8)
    kid, words, _ = variant(broken, (x,))  # tracing never compiles: it succeeds
    with pytest.raises(CompilationError) as info:
        tt.compile_variant(kid, words, CAPABILITY)
    message = str(info.value)
    assert "def broken_kernel(" in message
    assert "undefined_name" in message


def test_compile_error_from_the_runtime_callback():
    before = tt.compile_count()
    kid, words, _ = variant(broken, (torch.zeros(8),))
    with pytest.raises(CompilationError, match="undefined_name"):
        _compile_callback(kid, words, CAPABILITY)
    assert tt.compile_count() == before


# -- a divergence that reaches the binary (product bug) ------------------------------------------------------


@triton.jit
def bool_flag_kernel(out_ptr, FLAG: tl.constexpr):
    # `| FLAG` converts the constexpr to a tensor: i1 for True, i32 for 1; `~` then gives 0 or -2.
    v = tl.zeros((2,), tl.int1) | FLAG
    tl.store(out_ptr + tl.arange(0, 2), (~v).to(tl.int32))


@tt.op(f"{NS}::bool_flag", mutates_args=("out",))
def bool_flag(out: torch.Tensor, flag: bool) -> None:
    bool_flag_kernel[(1,)](out, FLAG=flag)


def test_bool_flag_kernel_on_cpu():
    """The eager (interpreter) semantics of the kernel: FLAG is the Python bool True."""
    out = torch.full((2,), 7, dtype=torch.int32)
    bool_flag(out, True)
    assert out.tolist() == [0, 0]


def test_bool_constexpr_cubin_identical_to_triton():
    out = torch.zeros(2, dtype=torch.int32)
    kid, words, _ = variant(bool_flag, (out, True))
    ours, our_src = tt.compile_variant(kid, words, CAPABILITY)
    ((kernel, kargs, kkwargs),) = capture_launches(bool_flag, (out, True))
    ref, ref_src = triton_compile_real(kernel, kargs, kkwargs)
    assert "dense<0>" in ref.asm["ttir"]
    assert ours.asm["ttir"] == ref.asm["ttir"]
    assert ours.asm["cubin"] == ref.asm["cubin"]
