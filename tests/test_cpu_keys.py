"""CPU tests: the C++ specialization key against Triton's own JIT specialization.

For every case the op is traced on CPU tensors, the C++ runtime computes the
key words (``_testing.specialization_keys``) and torch_tile turns them back into
(signature, constexprs, attrs, options) (``frontends.triton.compile.specialize``). The
reference is what Triton's JIT derives for the *real* launch: the body is run
on the real tensors with ``JITFunction.run`` replaced by a recorder, and each
recorded ``kernel[grid](*args, **kwargs)`` goes through the binder Triton builds
for the kernel (``create_function_from_signature``) and ``JITFunction._pack_args``,
exactly as ``JITFunction.run`` does, for an sm_90 target. Both must agree
(constexpr values including their Python type).
"""

import hashlib
import json

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile import kernels as K
from torch_tile.frontends.kernel_registry import STABLE_ID_SCHEME, stable_id
from torch_tile.frontends.triton.compile import specialize
from torch_tile import _testing

from triton_reference import CAPABILITY, capture_launches, triton_specialization

NS = "tt_cpu_keys"


# -- the two sides ----------------------------------------------------------------------------------


def torch_tile_keys(op, args):
    plan = op.trace(*args)
    return plan, _testing.specialization_keys(plan, tuple(args))


def typed(constexprs):
    return {path: (type(v), v) for path, v in constexprs.items()}


def assert_key_matches_triton(op, args):
    """Compares every launch of op(*args); returns the key words."""
    plan, keys = torch_tile_keys(op, args)
    calls = capture_launches(op, args)
    assert len(calls) == len(plan.launches) == len(keys)
    for launch, words, (kernel, kargs, kkwargs) in zip(plan.launches, keys, calls):
        assert words is not None
        got_kernel, options, signature, constexprs, attrs = specialize(launch.kernel, words, CAPABILITY)
        assert got_kernel is kernel
        ref_options, ref_signature, ref_constexprs, ref_attrs = triton_specialization(kernel, kargs, kkwargs)
        assert signature == ref_signature
        assert typed(constexprs) == typed(ref_constexprs)
        assert attrs == ref_attrs
        assert options == ref_options
    return keys


# -- probe kernels and ops --------------------------------------------------------------------------


@triton.jit
def probe_kernel(p_ptr, q_ptr, n, m, f, flag, BLOCK: tl.constexpr, C: tl.constexpr):
    pass


@tt.op(f"{NS}::probe")
def probe(p: torch.Tensor, q: torch.Tensor, n: int, f: float, flag: bool) -> None:
    """Pointers, an int argument, a size-derived int, a float, a bool, a static and a derived constexpr."""
    probe_kernel[(1,)](p, q, n, p.numel(), f, flag, BLOCK=16, C=n, num_warps=2)


@triton.jit(do_not_specialize=["n", "q_ptr"], do_not_specialize_on_alignment=["p_ptr", "m"])
def dns_kernel(p_ptr, q_ptr, r_ptr, n, m, k, BLOCK: tl.constexpr):
    pass


@tt.op(f"{NS}::dns")
def dns(p: torch.Tensor, q: torch.Tensor, r: torch.Tensor, n: int, m: int, k: int) -> None:
    dns_kernel[(1,)](p, q, r, n, m, k, BLOCK=32)


@triton.jit
def annotated_kernel(p_ptr, n: tl.int64, m: tl.int32, f: tl.float32, BLOCK: tl.constexpr):
    pass


@tt.op(f"{NS}::annotated")
def annotated(p: torch.Tensor, n: int, m: int, f: float) -> None:
    annotated_kernel[(1,)](p, n, m, f, BLOCK=8)


@triton.jit
def defaults_kernel(p_ptr, n, k=16, opt=None, SCALE: tl.constexpr = 3, DT: tl.constexpr = tl.float16):
    pass


@tt.op(f"{NS}::defaults")
def defaults(p: torch.Tensor, n: int) -> None:
    """Defaults applied, parameters by keyword, a tl.dtype constexpr, launch options."""
    defaults_kernel[(2, 3)](p, n=n, SCALE=n * 2, num_warps=8, num_stages=2)


@tt.op(f"{NS}::two_launches")
def two_launches(p: torch.Tensor, q: torch.Tensor, n: int) -> None:
    probe_kernel[(1,)](p, q, n, q.numel(), 0.5, True, BLOCK=64, C=n + 1)
    dns_kernel[(1,)](q, p, q, n * 2, n, n - 1, BLOCK=16)


def _f32(n=64, offset=0):
    return torch.zeros(n + offset)[offset:]


PROBE_INTS = [1, 16, 17, 0, -1, -16, -17, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**40, 2**40 + 3, 2**62]
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.int32, torch.int64,
          torch.uint8, torch.bool, torch.float8_e4m3fn, torch.float8_e5m2]


def _probe_cases():
    cases = []
    for n in PROBE_INTS:
        cases.append((f"int={n}", lambda n=n: (_f32(), _f32(), n, 1.5, True)))
    for dtype in DTYPES:
        name = str(dtype).removeprefix("torch.")
        for offset in (0, 1):
            make = lambda dtype=dtype, offset=offset: (torch.zeros(65, dtype=dtype)[offset:], _f32(), 3, 1.5, False)  # noqa: E731
            cases.append((f"{name}-offset{offset}", make))
    for f in (0.0, -2.5, 1e30, float("inf")):
        cases.append((f"float={f}", lambda f=f: (_f32(), _f32(), 5, f, True)))
    for size in (1, 16, 17, 0):
        cases.append((f"numel={size}", lambda size=size: (_f32(size), _f32(), 16, 1.0, False)))
    cases.append(("q-misaligned", lambda: (_f32(), _f32(64, 3), 16, 1.0, False)))
    cases.append(("p-offset-16-bytes", lambda: (_f32(64, 4), _f32(), 16, 1.0, False)))
    return cases


PROBE_CASES = _probe_cases()


@pytest.mark.parametrize("make_args", [c[1] for c in PROBE_CASES], ids=[c[0] for c in PROBE_CASES])
def test_probe_key_matches_triton(make_args):
    assert_key_matches_triton(probe, make_args())


def test_probe_equal_words_mean_equal_triton_specialization():
    """Across all probe cases: whenever two calls get the same key, Triton specializes them identically
    (a shared key may never stand for two different binaries)."""
    seen = {}
    for name, make_args in PROBE_CASES:
        args = make_args()
        _plan, (words,) = torch_tile_keys(probe, args)
        (kernel, kargs, kkwargs), = capture_launches(probe, args)
        _opts, sig, cx, attrs = triton_specialization(kernel, kargs, kkwargs)
        ref = (tuple(sig.items()), tuple(sorted(typed(cx).items(), key=str)), tuple(sorted(attrs.items())))
        key = tuple(words)
        if key in seen:
            assert seen[key][1] == ref, (name, seen[key][0])
        else:
            seen[key] = (name, ref)
    assert len(seen) > 20  # the table really covers many variants


DNS_CASES = [
    ("all-aligned", lambda: (_f32(), _f32(), _f32(), 16, 16, 16)),
    ("all-misaligned", lambda: (_f32(64, 1), _f32(64, 1), _f32(64, 1), 17, 17, 17)),
    ("ones", lambda: (_f32(), _f32(), _f32(), 1, 1, 1)),
    ("i64", lambda: (_f32(), _f32(), _f32(64, 2), 2**40, 2**40 + 16, 2**40 + 3)),
    ("mixed", lambda: (_f32(64, 2), _f32(), _f32(64, 1), 0, 1, -16)),
]


@pytest.mark.parametrize("make_args", [c[1] for c in DNS_CASES], ids=[c[0] for c in DNS_CASES])
def test_do_not_specialize_key_matches_triton(make_args):
    assert_key_matches_triton(dns, make_args())


def test_do_not_specialize_ignores_what_triton_ignores():
    """n and q_ptr are not specialized at all; p_ptr's alignment is not: those changes keep the key."""
    base = (_f32(), _f32(), _f32(), 16, 16, 16)
    (words,) = torch_tile_keys(dns, base)[1]
    for changed in [
        (_f32(), _f32(), _f32(), 17, 16, 16),  # n: do_not_specialize
        (_f32(), _f32(), _f32(), 1, 16, 16),  # n == 1 does not become a constexpr
        (_f32(), _f32(64, 1), _f32(), 16, 16, 16),  # q_ptr alignment
        (_f32(64, 1), _f32(), _f32(), 16, 16, 16),  # p_ptr alignment
    ]:
        assert torch_tile_keys(dns, changed)[1] == [words]
    # r_ptr alignment and k do matter
    assert torch_tile_keys(dns, (_f32(), _f32(), _f32(64, 1), 16, 16, 16))[1] != [words]
    assert torch_tile_keys(dns, (_f32(), _f32(), _f32(), 16, 16, 17))[1] != [words]


@pytest.mark.parametrize("n, m", [(1, 1), (16, 16), (17, 3), (2**40, 2**31 - 1), (-5, -(2**31))])
@pytest.mark.parametrize("f", [0.5, -3.0])
def test_annotated_key_matches_triton(n, m, f):
    assert_key_matches_triton(annotated, (_f32(), n, m, f))


@pytest.mark.parametrize("n", [1, 7, 16, 2**33])
def test_defaults_kwargs_and_options_match_triton(n):
    assert_key_matches_triton(defaults, (_f32(), n))


@pytest.mark.parametrize("n", [1, 2, 16, 17])
def test_two_launches_match_triton(n):
    keys = assert_key_matches_triton(two_launches, (_f32(), _f32(64, 1), n))
    assert len(keys) == 2 and keys[0][0] != keys[1][0]


# -- the example ops ----------------------------------------------------------------------------------

EXAMPLE_CASES = [
    ("add-f32", K.add, lambda: (torch.randn(1000), torch.randn(1000))),
    ("add-f32-misaligned", K.add, lambda: (torch.randn(1001)[1:], torch.randn(1000))),
    ("add-f16", K.add, lambda: (torch.randn(48, dtype=torch.float16), torch.randn(48, dtype=torch.float16))),
    ("add-bf16", K.add, lambda: (torch.randn(3, 5, dtype=torch.bfloat16), torch.randn(3, 5, dtype=torch.bfloat16))),
    ("add-i32", K.add, lambda: (torch.ones(17, dtype=torch.int32), torch.ones(17, dtype=torch.int32))),
    ("add-i64", K.add, lambda: (torch.ones(32, dtype=torch.int64), torch.ones(32, dtype=torch.int64))),
    ("add-u8", K.add, lambda: (torch.ones(33, dtype=torch.uint8), torch.ones(33, dtype=torch.uint8))),
    ("add-one-element", K.add, lambda: (torch.randn(1), torch.randn(1))),
    ("add_-f32", K.add_, lambda: (torch.randn(100), torch.randn(100))),
    ("softmax-16", K.softmax, lambda: (torch.randn(4, 16),)),
    ("softmax-17", K.softmax, lambda: (torch.randn(4, 17),)),
    ("softmax-1x1", K.softmax, lambda: (torch.randn(1, 1),)),
    ("softmax-3000", K.softmax, lambda: (torch.randn(2, 3000),)),
    ("softmax-f16", K.softmax, lambda: (torch.randn(3, 40, dtype=torch.float16),)),
    ("softmax-bf16", K.softmax, lambda: (torch.randn(3, 40, dtype=torch.bfloat16),)),
    ("softmax-strided", K.softmax, lambda: (torch.randn(4, 32)[:, 3:20],)),
    ("layer_norm", K.layer_norm, lambda: (torch.randn(3, 48), torch.randn(48), torch.randn(48), 1e-5)),
    ("layer_norm-eps", K.layer_norm, lambda: (torch.randn(2, 5), torch.randn(5), torch.randn(5), 0.25)),
    ("layer_norm-f16", K.layer_norm,
     lambda: (torch.randn(3, 64, dtype=torch.float16), torch.randn(64, dtype=torch.float16),
              torch.randn(64, dtype=torch.float16), 1e-6)),
    ("layer_norm-1x1", K.layer_norm, lambda: (torch.randn(1, 1), torch.randn(1), torch.randn(1), 1e-5)),
    ("matmul-f32", K.matmul, lambda: (torch.randn(16, 32), torch.randn(32, 16))),
    ("matmul-bf16", K.matmul,
     lambda: (torch.randn(33, 17, dtype=torch.bfloat16), torch.randn(17, 5, dtype=torch.bfloat16))),
    ("matmul-transposed", K.matmul, lambda: (torch.randn(32, 16).t(), torch.randn(48, 32).t())),
    ("matmul-misaligned", K.matmul, lambda: (torch.randn(8 * 8 + 1)[1:].view(8, 8), torch.randn(8, 24))),
]


@pytest.mark.parametrize("op, make_args", [c[1:] for c in EXAMPLE_CASES], ids=[c[0] for c in EXAMPLE_CASES])
def test_example_op_key_matches_triton(op, make_args):
    assert_key_matches_triton(op, make_args())


# -- properties of the words ----------------------------------------------------------------------------


def test_same_inputs_same_words():
    args = (_f32(), _f32(), 17, 1.5, True)
    assert torch_tile_keys(probe, args)[1] == torch_tile_keys(probe, args)[1]
    # other tensors with the same metadata and alignment class
    assert torch_tile_keys(probe, args)[1] == torch_tile_keys(probe, (_f32(), _f32(), 17, 1.5, True))[1]


def test_alignment_changes_only_the_pointer_word():
    (aligned,) = torch_tile_keys(probe, (_f32(), _f32(), 17, 1.5, True))[1]
    (misaligned,) = torch_tile_keys(probe, (_f32(64, 1), _f32(), 17, 1.5, True))[1]
    assert _f32(64, 1).data_ptr() % 16 != 0
    assert aligned != misaligned
    diff = [i for i, (a, b) in enumerate(zip(aligned, misaligned)) if a != b]
    assert diff == [1]  # word 0 is the launch config, word 1 is p_ptr


def test_float_and_bool_values_do_not_enter_the_key():
    """Triton never specializes on float or (non-constexpr) bool values."""
    (a,) = torch_tile_keys(probe, (_f32(), _f32(), 17, 1.5, True))[1]
    (b,) = torch_tile_keys(probe, (_f32(), _f32(), 17, -1e10, False))[1]
    assert a == b


def test_add_alignment_changes_words():
    x, y = torch.randn(1000), torch.randn(1000)
    (aligned,) = torch_tile_keys(K.add, (x, y))[1]
    (misaligned,) = torch_tile_keys(K.add, (torch.randn(1001)[1:], y))[1]
    assert aligned != misaligned and aligned[0] == misaligned[0]


def test_empty_grid_has_no_key():
    x = torch.empty(0)
    plan, keys = torch_tile_keys(K.add, (x, x))
    assert keys == [None]


def test_scalar_int_classes():
    """An int argument is specialized by value class, as Triton does: ==1 (constexpr), %16, other; i32 vs i64."""
    def words(n):
        (w,) = torch_tile_keys(probe, (_f32(), _f32(), n, 1.5, True))[1]
        return w[3]  # word of `n`

    assert words(32) == words(16) == words(0) == words(-16) != words(17)
    assert words(17) == words(3) == words(-1) == words(2**31 - 1)
    assert words(1) not in (words(16), words(17))
    assert words(2**31) == words(2**40) != words(16)
    assert words(2**40 + 3) == words(-(2**31) - 1) != words(17)


# -- known divergences (product bugs) -------------------------------------------------------------------


@triton.jit
def flag_kernel(p_ptr, FLAG: tl.constexpr):
    pass


@tt.op(f"{NS}::flag_constexpr")
def flag_constexpr(p: torch.Tensor, flag: bool) -> None:
    flag_kernel[(1,)](p, FLAG=flag)


@tt.op(f"{NS}::flag_and")
def flag_and(p: torch.Tensor, q: torch.Tensor, a: bool, b: bool) -> None:
    probe_kernel[(1,)](p, q, 3, 5, 1.0, a & b, BLOCK=16, C=0)


@tt.op(f"{NS}::pow2_block")
def pow2_block(p: torch.Tensor) -> None:
    flag_kernel[(1,)](p, FLAG=triton.next_power_of_2(p.numel()))


@pytest.mark.parametrize("flag", [True, False])
def test_bool_constexpr_matches_triton(flag):
    assert_key_matches_triton(flag_constexpr, (_f32(), flag))


@pytest.mark.parametrize("a, b", [(True, True), (True, False)])
def test_bool_and_bool_stays_bool(a, b):
    assert_key_matches_triton(flag_and, (_f32(), _f32(), a, b))


def test_bool_constexpr_value_is_equal():
    """What does agree for the bool constexpr: the value compares equal (only its type differs)."""
    plan, (words,) = torch_tile_keys(flag_constexpr, (_f32(), True))
    _k, _o, _s, constexprs, _a = specialize(plan.launches[0].kernel, words, CAPABILITY)
    assert constexprs == {(1,): True}


@pytest.mark.parametrize("n", [1, 2, 3, 17, 64])
def test_next_power_of_2_constexpr_matches_triton(n):
    assert_key_matches_triton(pow2_block, (_f32(n),))


def test_next_power_of_2_of_zero_matches_triton():
    assert_key_matches_triton(pow2_block, (_f32(0),))


@tt.op(f"{NS}::like_stride")
def like_stride(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    flag_kernel[(1,)](out, FLAG=out.stride(0))
    return out


@pytest.mark.parametrize("make_x", [
    lambda: torch.randn(4, 5),
    lambda: torch.randn(5, 4).t(),  # dense, permuted: empty_like keeps the strides
], ids=["contiguous", "transposed"])
def test_empty_like_strides_dense(make_x):
    assert_key_matches_triton(like_stride, (make_x(),))


@pytest.mark.parametrize("make_x", [
    lambda: torch.randn(4, 10)[:, :5],
    lambda: torch.randn(1, 5).expand(4, 5),
], ids=["sliced", "expanded"])
def test_empty_like_strides_non_dense(make_x):
    assert_key_matches_triton(like_stride, (make_x(),))


def test_a_registered_kernel_object_stays_alive_so_its_id_is_never_reused():
    """The registry maps id(JITFunction) to a kernel id: an object that died could hand its id() to
    another kernel, which would then launch the wrong binary. Every registered object is held."""
    import gc
    import weakref

    from torch_tile.frontends.triton.kernels import kernel_id

    first = kernel_id(probe_kernel)
    twin = triton.jit(probe_kernel.fn)  # same name and source: the same kernel id, registered second
    alive = weakref.ref(twin)
    assert kernel_id(twin) == first
    replacement = triton.jit(probe_kernel.fn)  # Triton 3.8 keeps the newest JITFunction of a name alive, not twin
    del twin
    gc.collect()
    assert alive() is not None and replacement is not None


def test_stable_ids_follow_their_documented_scheme():
    """Ids persist in plans and bundles: scheme 1 is pinned (a change must come with new format versions)."""
    parts = ("cuda kernel", "__global__ void k() {}", "k", ["-O3"], False)
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert STABLE_ID_SCHEME == 1
    assert stable_id(*parts) == int(digest[:16], 16) >> 1 == 730401020564476083
    assert 0 <= stable_id("x") < 2**63


def test_variant_keys_are_the_keys_the_runtime_computes_for_the_call():
    x, y = torch.randn(1000), torch.randn(1000)
    plan = K.add.trace(x, y)
    keys = K.add.variant_keys(x, y)
    assert [kid for kid, _ in keys] == [launch.kernel for launch in plan.launches]
    assert [words for _, words in keys] == [list(w) for w in _testing.specialization_keys(plan, (x, y))]
    unaligned = torch.randn(1001)[1:]  # another alignment bit: another key word
    assert K.add.variant_keys(unaligned, unaligned) != keys
