"""CPU tests: kernels with tuple-typed parameters (Triton's tuple arguments), without a GPU.

* Tracing: a tuple parameter is one binding per leaf, depth first; its
  structure (tuple or namedtuple, nesting) is part of the launch configuration.
* Specialization: the C++ key turned back into arguments (``specialize``) gives
  what Triton's own binder derives from the real launch (signature, constexprs
  with their types, attributes, options), for nested tuples, namedtuples,
  ``tl.constexpr`` and None leaves, descriptors in tuples, empty tuples,
  constexpr tuples and ``do_not_specialize``; alignment, ``== 1`` and ``% 16``
  of a leaf change only that leaf's key word.
* Compiling for sm_90: the cubin is Triton's, and the launch metadata passes
  the leaves as Triton's launcher flattens them.
* The ``mutates_args`` check sees stores through tuple members; autotuning's
  timing runs store to clones of written tuple members; the CPU interpreter
  path runs the ops (against torch).

The ops are in tuple_param_ops.py (shared with the GPU tests).
"""

from collections import namedtuple

import pytest
import torch
import triton
import triton.language as tl
try:  # Triton >= 3.7: the expansion its own launcher applies to a signature, as a function of its own
    from triton.backends.driver import expand_signature
except ImportError:  # Triton 3.6 keeps it inside its CUDA launcher's make_launcher, which no test can call alone
    expand_signature = None

import torch_tile as tt
from torch_tile import _cubin, kernels
from torch_tile._errors import TraceError
from torch_tile._plan import BindingKind
from torch_tile.trace.tracer import Tracer
from torch_tile.frontends.triton import autotune
from torch_tile.frontends.triton.compile import _compile_callback, specialize
from torch_tile.frontends.triton.kernels import config_fingerprint, launch_config
from torch_tile.frontends.triton.writes import written_parameters
from torch_tile.frontends.triton.frontend import analysed_writes
from torch_tile.frontends.triton import tuning
from torch_tile import _testing

import tuple_param_ops as T
from test_cpu_keys import torch_tile_keys, typed
from triton_reference import CAPABILITY, capture_launches, triton_compile_real, triton_specialization

NS = "tt_cpu_tuple_params"
K = BindingKind


pytestmark = pytest.mark.usefixtures("fresh_triton_cache")  # both sides really compile


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# -- probe kernels and ops (nothing runs: only keys and compiles) -------------------------------------

Pair = namedtuple("Pair", ["first", "second"])


@triton.jit
def probe_kernel(t, n, BLOCK: tl.constexpr):
    pass


@triton.jit
def constexpr_tuple_kernel(p, SHAPE: tl.constexpr):
    pass


@triton.jit(do_not_specialize=["t", "n"], do_not_specialize_on_alignment=["t", "p"])
def dns_kernel(t, p, n, BLOCK: tl.constexpr):
    pass


@tt.op(f"{NS}::nested")
def nested(p: torch.Tensor, q: torch.Tensor, n: int, f: float, flag: bool) -> None:
    """Three levels, mixed leaves: tensors, sizes, op ints, floats, bools, None, constants."""
    probe_kernel[(1,)]((p, (q, (n, p.numel())), (f, 0.25, flag, None, tl.constexpr(7)), -n), n, BLOCK=16)


@tt.op(f"{NS}::named")
def named(p: torch.Tensor, q: torch.Tensor, n: int) -> None:
    """A namedtuple holding a namedtuple and a plain tuple."""
    probe_kernel[(1,)](Pair(Pair(p, n), (q, q.stride(0))), n, BLOCK=32)


@tt.op(f"{NS}::wide_ints")
def wide_ints(p: torch.Tensor, n: int) -> None:
    """Leaves that need 64 bits, and the same leaf twice."""
    probe_kernel[(1,)]((n, n * 2**33, p), n, BLOCK=8)


@tt.op(f"{NS}::empty")
def empty(p: torch.Tensor, n: int) -> None:
    """An empty tuple: no binding at all."""
    probe_kernel[(1,)]((), n, BLOCK=8)


@tt.op(f"{NS}::top_level_constant")
def top_level_constant(p: torch.Tensor, n: int) -> None:
    """A tl.constexpr passed to a parameter that is not annotated tl.constexpr (Triton folds it too)."""
    probe_kernel[(1,)](tl.constexpr(5), n, BLOCK=8)


@tt.op(f"{NS}::constexpr_tuple")
def constexpr_tuple(p: torch.Tensor) -> None:
    """A tl.constexpr parameter receiving a tuple with a size in it: the size is specialised (a guard)."""
    constexpr_tuple_kernel[(1,)](p, SHAPE=(p.shape[0], 4))


@tt.op(f"{NS}::dns")
def dns(p: torch.Tensor, q: torch.Tensor, n: int) -> None:
    """do_not_specialize / do_not_specialize_on_alignment naming a tuple parameter and plain ones."""
    dns_kernel[(1,)]((p, n, 1), q, n, BLOCK=16)


@tt.op(f"{NS}::structure_a")
def structure_a(p: torch.Tensor, q: torch.Tensor, n: int) -> None:
    probe_kernel[(1,)](((p, q), n), n, BLOCK=8)


@tt.op(f"{NS}::structure_b")
def structure_b(p: torch.Tensor, q: torch.Tensor, n: int) -> None:
    """The leaves of structure_a, nested otherwise."""
    probe_kernel[(1,)]((p, (q, n)), n, BLOCK=8)


@tt.op(f"{NS}::structure_named")
def structure_named(p: torch.Tensor, q: torch.Tensor, n: int) -> None:
    """The leaves of structure_a in namedtuples."""
    probe_kernel[(1,)](Pair(Pair(p, q), n), n, BLOCK=8)


@tt.op(f"{NS}::list_argument")
def list_argument(p: torch.Tensor, n: int) -> None:
    probe_kernel[(1,)]([p, n], n, BLOCK=8)


# -- helpers ------------------------------------------------------------------------------------------


def _f32(n=64, offset=0, dtype=torch.float32):
    return torch.zeros(n + offset, dtype=dtype)[offset:]


def assert_key_matches_triton(op, args):
    """Every launch of op(*args): the variant torch_tile derives from the C++ key is the one
    Triton's binder derives from the real arguments. Returns (plan, key words)."""
    plan, keys = torch_tile_keys(op, args)
    calls = capture_launches(op, args)
    assert len(calls) == len(plan.launches) == len(keys)
    for launch, words, (kernel, kargs, kkwargs) in zip(plan.launches, keys, calls):
        got_kernel, options, signature, constexprs, attrs = specialize(launch.kernel, words, CAPABILITY)
        assert got_kernel is kernel
        ref_options, ref_signature, ref_constexprs, ref_attrs = triton_specialization(kernel, kargs, kkwargs)
        assert signature == ref_signature
        assert [type(v) for v in signature.values()] == [type(v) for v in ref_signature.values()]  # namedtuples
        assert typed(constexprs) == typed(ref_constexprs)
        assert attrs == ref_attrs
        assert options == ref_options
    return plan, keys


def _leaf_types(signature_values, tensordesc_meta=None) -> list:
    """The types Triton's own launcher passes (tuples flattened, descriptors expanded, constexprs dropped)."""
    flat = []

    def visit(ty):
        if isinstance(ty, tuple):
            for item in ty:
                visit(item)
        elif ty != "constexpr":
            flat.append(ty)

    for ty in expand_signature(list(signature_values), tensordesc_meta, "nvTmaDesc"):
        visit(ty)
    return flat


# Kinds a runtime parameter of each type can come from.
_TYPE_KINDS = {"u1": K.BOOL, "i32": K.INT, "i64": K.INT, "fp32": K.FLOAT, "nvTmaDesc": K.TENSORDESC}


def _check_runtime_params(entry, launch):
    """Every runtime parameter names a leaf binding of the right kind, in binding order."""
    kinds = [b.kind for b in launch.bindings]
    for index, ty, part in zip(entry["runtime_params"], entry["runtime_param_types"], entry["runtime_param_parts"]):
        if ty.startswith("*"):
            assert kinds[index] == K.TENSOR
        elif part >= 0:  # a descriptor's shape or stride
            assert kinds[index] == K.TENSORDESC
        else:
            assert kinds[index] == _TYPE_KINDS[ty], (index, ty)
    assert entry["runtime_params"] == sorted(entry["runtime_params"])


# -- tracing: one binding per leaf --------------------------------------------------------------------


def test_a_tuple_parameter_is_one_binding_per_leaf_depth_first():
    x = torch.randn(1000)
    plan = T.affine.trace(x, 2.0, 0.5, 3)
    (launch,) = plan.launches
    bindings = launch.bindings
    # io = (x, (out, None)), sizes = (n, step), coef = (a, (b, SHIFT)), BLOCK
    assert [b.kind for b in bindings] == [K.TENSOR, K.TENSOR, K.STATIC, K.INT, K.INT, K.FLOAT, K.FLOAT,
                                          K.STATIC, K.STATIC]
    assert (bindings[0].slot, bindings[1].slot) == (0, 4)  # x, then the allocation after the 4 arguments
    assert [bindings[3].expr.text, bindings[4].expr.text] == ["x.numel()", "step"]
    assert (bindings[5].slot, bindings[6].slot) == (1, 2)  # a and b are read from the call
    config = launch_config(launch.config)
    assert config.kinds == tuple(int(b.kind) for b in bindings)
    assert config.statics == {"io[1][1]": None, "coef[1][1]": tl.constexpr(T.SHIFT), "BLOCK": T.BLOCK}
    assert isinstance(config.statics["coef[1][1]"], tl.constexpr)
    assert sorted(config.tuples) == ["coef", "io", "sizes"]
    assert [item is None for item in config.tuples["io"].items] == [True, False]
    assert plan.guards == []  # nothing in the tuples is branched on


def test_the_structure_is_part_of_the_launch_configuration():
    p, q = _f32(), _f32()
    configs = [torch_tile_keys(op, (p, q, 5))[0].launches[0].config
               for op in (structure_a, structure_b, structure_named)]
    kinds = {launch_config(c).kinds for c in configs}
    assert len(kinds) == 1  # the same leaves...
    assert len(set(configs)) == 3  # ...in three structures: three configurations
    fingerprint = config_fingerprint(launch_config(configs[2]))
    assert [f"{__name__}.Pair", ["first", "second"]] == fingerprint[-1][0][1][:2]
    # Configurations without tuples keep their fingerprint (and so their ids and disk-cache entries).
    add = kernels.add.trace(_f32(), _f32()).launches[0].config
    assert len(config_fingerprint(launch_config(add))) == 5


def test_a_list_is_refused_naming_the_parameter():
    with pytest.raises(TraceError, match=r"parameter 't' of probe_kernel receives a list .*Triton takes tuples"):
        list_argument.trace(_f32(), 3)


# -- specialization against Triton's binder -----------------------------------------------------------


def _affine_args(n=1000, offset=0, step=3, dtype=torch.float32):
    return (_f32(n, offset, dtype), 2.0, 0.5, step)


KEY_CASES = [
    ("affine", T.affine, lambda: _affine_args()),
    ("affine-unaligned", T.affine, lambda: _affine_args(offset=1)),
    ("affine-step1", T.affine, lambda: _affine_args(step=1)),
    ("affine-div16", T.affine, lambda: _affine_args(n=1024, step=16)),
    ("affine-f16", T.affine, lambda: _affine_args(dtype=torch.float16)),
    ("affine-bf16", T.affine, lambda: _affine_args(dtype=torch.bfloat16)),
    ("copy_rows", T.copy_rows, lambda: (torch.zeros(5, 64)[:, :40],)),
    ("copy_rows-stride40", T.copy_rows, lambda: (torch.zeros(5, 40),)),
    ("copy_rows-one-row-f16", T.copy_rows, lambda: (torch.zeros(1, 17, dtype=torch.float16),)),
    ("scale_into", T.scale_into, lambda: (_f32(100), _f32(100, 1))),
    ("add_desc", T.add_desc, lambda: (torch.zeros(64, 96), torch.zeros(64, 96))),
    ("add_desc-f16", T.add_desc, lambda: (torch.zeros(64, 64, dtype=torch.float16),
                                          torch.zeros(64, 64, dtype=torch.float16))),
    ("nested", nested, lambda: (_f32(), _f32(64, 2), 16, 1.5, True)),
    ("nested-one", nested, lambda: (_f32(1), _f32(), 1, -0.0, False)),
    ("nested-negative", nested, lambda: (_f32(17), _f32(), -16, 1e30, True)),
    ("named", named, lambda: (_f32(), _f32(64, 1), 7)),
    ("named-one", named, lambda: (_f32(), torch.zeros(1, 1), 1)),
    ("wide_ints", wide_ints, lambda: (_f32(), 3)),
    ("wide_ints-16", wide_ints, lambda: (_f32(), 16)),
    ("empty", empty, lambda: (_f32(), 3)),
    ("top_level_constant", top_level_constant, lambda: (_f32(), 3)),
    ("constexpr_tuple", constexpr_tuple, lambda: (_f32(12),)),
    ("dns-16", dns, lambda: (_f32(), _f32(), 16)),
    ("dns-1-unaligned", dns, lambda: (_f32(64, 1), _f32(64, 1), 1)),
    ("dns-17", dns, lambda: (_f32(), _f32(64, 3), 17)),
]


@pytest.mark.parametrize("op, make_args", [c[1:] for c in KEY_CASES], ids=[c[0] for c in KEY_CASES])
def test_key_matches_triton(op, make_args):
    assert_key_matches_triton(op, make_args())


def test_leaf_specializations_change_only_that_leafs_word():
    """Alignment of a tensor leaf, an int leaf == 1, an int leaf % 16 == 0: distinct keys of one configuration."""
    _, (base,) = assert_key_matches_triton(T.affine, _affine_args(n=1000, step=3))
    cases = {"x unaligned": (_affine_args(n=1000, offset=1, step=3), 1),  # word of io[0]
             "step == 1": (_affine_args(n=1000, step=1), 5),  # word of sizes[1]
             "step % 16 == 0": (_affine_args(n=1000, step=32), 5),
             "n % 16 == 0": (_affine_args(n=1024, step=3), 4)}  # word of sizes[0]
    words = {}
    for name, (args, word) in cases.items():
        _, (key,) = assert_key_matches_triton(T.affine, args)
        assert key[0] == base[0], name  # one configuration...
        assert [i for i, (a, b) in enumerate(zip(base, key)) if a != b] == [word], name  # ...one word differs
        words[name] = key
    assert words["step == 1"] != words["step % 16 == 0"]
    # What Triton makes of them: the leaf becomes a constant 1, or is known divisible by 16.
    _, _, signature, constexprs, attrs = specialize(T.affine.trace(*cases["step == 1"][0]).launches[0].kernel,
                                                    words["step == 1"], CAPABILITY)
    assert signature["sizes"] == ("i32", "constexpr") and constexprs[(1, 1)] == 1
    _, _, signature, _, attrs = specialize(T.affine.trace(*cases["x unaligned"][0]).launches[0].kernel,
                                           words["x unaligned"], CAPABILITY)
    assert attrs[(0, 0)] == [] and attrs[(0, 1, 0)] == [["tt.divisibility", 16]]


def test_do_not_specialize_applies_to_plain_parameters_and_tuple_leaves_as_triton():
    plan, _ = assert_key_matches_triton(dns, (_f32(), _f32(), 16))
    t_p, t_n, t_one, q, n = plan.launches[0].bindings[:5]
    # Triton's binder ignores the flags inside tuples; a plain parameter keeps them.
    assert (t_p.specialize, t_p.specialize_alignment, t_n.specialize) == (True, True, True)
    assert (q.specialize_alignment, n.specialize) == (False, False)
    assert t_one.kind == K.INT
    _, _, signature, constexprs, attrs = specialize(plan.launches[0].kernel,
                                                    _testing.specialization_keys(plan, (_f32(), _f32(), 16))[0],
                                                    CAPABILITY)
    assert signature["n"] == "i32" and (2,) not in attrs  # not specialised on % 16
    assert signature["t"] == ("*fp32", "i32", "constexpr") and attrs[(0, 1)] == [["tt.divisibility", 16]]


def test_a_constexpr_tuple_is_specialised_with_a_guard():
    plan, _ = assert_key_matches_triton(constexpr_tuple, (_f32(12),))
    assert launch_config(plan.launches[0].config).statics["SHAPE"] == (12, 4)
    assert [g.text for g in plan.guards] == ["p.size(0) == 12"]


def test_an_empty_tuple_has_no_binding():
    plan, _ = assert_key_matches_triton(empty, (_f32(), 3))
    assert [b.kind for b in plan.launches[0].bindings] == [K.INT, K.STATIC]


# -- compiling for sm_90 --------------------------------------------------------------------------------

COMPILE_CASES = ["affine", "affine-step1", "copy_rows", "add_desc", "nested", "named", "wide_ints", "dns-16",
                 "empty"]


@pytest.mark.parametrize("name", COMPILE_CASES)
def test_compiled_variant_is_tritons_and_takes_leaves_as_its_launcher(name):
    _, op, make_args = next(c for c in KEY_CASES if c[0] == name)
    args = make_args()
    plan, (words,) = torch_tile_keys(op, args)
    (launch,) = plan.launches
    ours, our_src = tt.compile_variant(launch.kernel, words, CAPABILITY)
    ((kernel, kargs, kkwargs),) = capture_launches(op, args)
    ref, ref_src = triton_compile_real(kernel, kargs, kkwargs)
    assert our_src.signature == ref_src.signature
    assert ours.hash == ref.hash
    assert ours.asm["cubin"] == ref.asm["cubin"]
    entry = _compile_callback(launch.kernel, words, CAPABILITY)
    if expand_signature is not None:
        assert entry["runtime_param_types"] == _leaf_types(ref_src.signature.values(),
                                                           getattr(ref.metadata, "tensordesc_meta", None))
    _check_runtime_params(entry, launch)
    assert _cubin.launch_metadata_problem(entry, entry["cubin"], num_bindings=len(words) - 1) is None


def test_runtime_params_index_leaf_bindings():
    plan, (words,) = torch_tile_keys(T.affine, _affine_args(step=3))
    entry = _compile_callback(plan.launches[0].kernel, words, CAPABILITY)
    # x, out, n, step, a, b (io[1][1], coef[1][1] and BLOCK are folded into the code)
    assert entry["runtime_params"] == [0, 1, 3, 4, 5, 6]
    assert entry["runtime_param_types"] == ["*fp32", "*fp32", "i32", "i32", "fp32", "fp32"]
    plan, (words,) = torch_tile_keys(T.affine, _affine_args(step=1))
    entry = _compile_callback(plan.launches[0].kernel, words, CAPABILITY)
    assert entry["runtime_params"] == [0, 1, 3, 5, 6]  # step == 1 is a constant


def test_descriptors_in_a_tuple_expand_in_place():
    plan, (words,) = torch_tile_keys(T.add_desc, (torch.zeros(64, 96), torch.zeros(64, 96)))
    entry = _compile_callback(plan.launches[0].kernel, words, CAPABILITY)
    assert [b.kind for b in plan.launches[0].bindings] == [K.TENSORDESC] * 3 + [K.STATIC] * 2
    assert [b.desc.name for b in plan.launches[0].bindings[:3]] == ["descs[0]", "descs[1][0]", "descs[1][1]"]
    assert entry["runtime_params"] == [0] * 5 + [1] * 5 + [2] * 5
    assert entry["runtime_param_parts"] == [-1, 0, 1, 2, 3] * 3
    assert [m["block_size"] for m in entry["tensor_maps"]] == [[T.DESC_BLOCK, T.DESC_BLOCK]] * 3


def test_the_disk_cache_check_counts_leaves():
    """Disk entries are validated against the launch's leaf bindings, not its parameters."""
    plan, (words,) = torch_tile_keys(T.affine, _affine_args(step=3))
    entry = _compile_callback(plan.launches[0].kernel, words, CAPABILITY)
    assert len(words) - 1 == 9 and len(T.affine_kernel.params) == 4
    assert _cubin.launch_metadata_problem(entry, entry["cubin"], num_bindings=9) is None
    problem = _cubin.launch_metadata_problem(entry, entry["cubin"], num_bindings=len(T.affine_kernel.params))
    assert problem is not None and "runtime_params" in problem


# -- the mutates_args check --------------------------------------------------------------------------------


def test_an_undeclared_write_through_a_tuple_member_is_refused():
    x, y = torch.randn(100), torch.zeros(100)
    with pytest.raises(TraceError, match=r"kernel scale_pair_kernel\(pair\[1\]\) writes argument 'y', which the op "
                                         r"does not declare"):
        T.scale_into_undeclared.trace(x, y)
    analysed_writes(T.scale_into_undeclared.qualname).clear()  # again from the analysis in the disk cache
    with pytest.raises(TraceError, match=r"scale_pair_kernel\(pair\[1\]\) writes argument 'y'"):
        T.scale_into_undeclared.trace(x, y)


def test_a_declared_write_through_a_tuple_member_is_accepted():
    x, y = torch.randn(100), torch.zeros(100)
    T.scale_into.trace(x, y)
    T.scale_into(x, y)
    torch.testing.assert_close(y, 2 * x, rtol=0, atol=0)


def test_a_declared_tuple_member_only_read_is_not_a_write_and_the_call_stays_native():
    x, y = torch.randn(100), torch.zeros(100)
    before = x.clone()
    assert not T.scale_into_read_declared.trace(x, y).fallback
    assert set(analysed_writes(T.scale_into_read_declared.qualname).values()) == {frozenset({("pair", 1)})}
    T.scale_into_read_declared(x, y)
    torch.testing.assert_close(y, 2 * before, rtol=0, atol=0)
    assert torch.equal(x, before)  # declared, read only: eager leaves it as it was, and so does the plan


def test_written_parameters_are_leaf_paths():
    x, y = _f32(100), _f32(100)
    ((kernel, _, arguments),) = _recorded_launches(T.scale_into, (x, y))
    assert written_parameters(kernel, arguments) == frozenset({("pair", 1)})
    x, b = torch.zeros(64, 64), torch.zeros(64, 64)
    ((kernel, _, arguments),) = _recorded_launches(T.add_desc, (x, b))
    assert written_parameters(kernel, arguments) == frozenset({("descs", 1, 1)})  # a store through c_desc


def _recorded_launches(op, args):
    """(kernel, step, bound stand-in arguments) of each launch a trace records."""
    tracer = Tracer(op.traced_op(), args)
    tracer.run()
    return [(kernel, step, arguments) for _, step, (kernel, arguments) in tracer._writes]


# -- the CPU interpreter path ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("n, offset, step", [(1, 0, 1), (1000, 0, 3), (1024, 1, 1), (300, 3, 16), (0, 0, 2)])
def test_affine_matches_torch(dtype, n, offset, step):
    x = (torch.randn(n + offset) * 4).to(dtype)[offset:]
    out = T.affine(x, 1.5, -0.25, step)
    assert out.dtype == dtype and out.shape == (n * step,)
    tol = {torch.float32: 1e-5, torch.float16: 1e-2}[dtype]
    torch.testing.assert_close(out.double(), T.affine_reference(x, 1.5, -0.25, step), atol=tol, rtol=tol)


@pytest.mark.parametrize("shape, columns", [((5, 64), 40), ((3, 17), 17), ((1, 1), 1)])
def test_copy_rows_matches_torch(shape, columns):
    x = torch.randn(shape)[:, :columns]
    out = T.copy_rows(x)
    assert out.is_contiguous()
    torch.testing.assert_close(out, x, rtol=0, atol=0)


def test_add_desc_matches_torch():
    a, b = torch.randn(64, 96), torch.randn(64, 96)
    torch.testing.assert_close(T.add_desc(a, b), a + b, rtol=0, atol=0)


def test_accumulate_matches_torch():
    x, y = torch.randn(1000), torch.randn(1000)
    expected = y + x
    T.accumulate(x, y)
    torch.testing.assert_close(y, expected, rtol=0, atol=0)


def test_bfloat16_in_a_tuple_is_refused_by_the_interpreter_path():
    with pytest.raises(NotImplementedError, match="bfloat16"):
        T.affine(torch.randn(8, dtype=torch.bfloat16), 1.0, 0.0, 1)


def test_autotune_tuning_runs_store_to_clones_of_tuple_members(monkeypatch, tmp_path):
    """Tuning runs the autotuner on the call's arguments, inputs cloned (inside tuples too): the caller's y is
    written once, by the op itself, though every config's benchmark writes. The launches are interpreted here."""
    from torch_tile import _disk_cache

    tuner = T.accumulate_kernel
    benchmarked = []

    def do_bench(kernel_call, quantiles=None):
        kernel_call()  # as Triton's benchmark: the kernel runs, and writes
        benchmarked.append(1)
        return [1.0] * 3

    monkeypatch.setitem(vars(tuner), "do_bench", do_bench)  # over its cached property, which needs a GPU
    monkeypatch.setattr(tuner, "cache", {})
    monkeypatch.setattr(tuning, "can_tune", lambda tracer: True)
    monkeypatch.setattr(autotune, "device_name", lambda device: "test device")
    _disk_cache.configure(str(tmp_path / "cache"))
    try:
        x, y = torch.randn(100), torch.randn(100)
        expected = y + x
        T.accumulate(x, y)
    finally:
        _disk_cache.configure(None)
        autotune._chosen.clear()
    assert len(benchmarked) == len(tuner.configs)
    torch.testing.assert_close(y, expected)
