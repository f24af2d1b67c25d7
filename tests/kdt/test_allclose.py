"""kdt.utils.check_is_allclose, exactly as spec §5 describes the judge's comparison."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import torch

from kdt.utils import check_is_allclose


def check(ans, ref, **kw):
    """(result, messages) of one comparison."""
    msgs = []
    ok = check_is_allclose("out", ans, ref, out=msgs.append, **kw)
    assert isinstance(ok, bool)
    return ok, msgs


def ones(n=1000):
    return torch.ones(n)


def hundreds():
    """A reference with a large norm (|r|^2 = 1e8), so that one deviating element leaves the cosine
    difference far below 1e-7 and only the element-wise rule decides."""
    return torch.full((10000,), 100.0)


# ---- shapes and dtypes -------------------------------------------------------------------------------


@pytest.mark.parametrize("ans, ref", [
    (torch.zeros(2, 3), torch.zeros(3, 2)),
    (torch.zeros(6), torch.zeros(2, 3)),
    (torch.zeros(1, 6), torch.zeros(6)),
    (torch.zeros(()), torch.zeros(1)),
    (torch.zeros(4, dtype=torch.float64), torch.zeros(4)),
    (torch.zeros(4), torch.zeros(4, dtype=torch.float16)),
    (torch.zeros(4, dtype=torch.bool), torch.zeros(4)),
    (torch.zeros(4, dtype=torch.int32), torch.zeros(4, dtype=torch.int64)),
])
def test_shape_or_dtype_mismatch_is_false(ans, ref):
    ok, msgs = check(ans, ref)
    assert ok is False and len(msgs) == 1 and "out" in msgs[0]


def test_equal_tensors_of_any_dtype_pass_silently():
    for t in (torch.randn(3, 4), torch.randn(5, dtype=torch.float64), torch.tensor([True, False]),
              torch.arange(6).reshape(2, 3), torch.zeros(0, 3), torch.tensor(2.5)):
        ok, msgs = check(t.clone(), t.clone())
        assert ok is True and msgs == []


# ---- special values -----------------------------------------------------------------------------------


def with_(base, **positions):
    t = base.clone()
    for k, v in positions.items():
        t[int(k[1:])] = v
    return t


INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize("ans, ref, expected", [
    (with_(ones(), p0=INF), with_(ones(), p0=INF), True),
    (with_(ones(), p0=-INF), with_(ones(), p0=-INF), True),
    (with_(ones(), p0=NAN, p5=INF, p9=-INF), with_(ones(), p0=NAN, p5=INF, p9=-INF), True),
    (with_(ones(), p0=INF), ones(), False),
    (ones(), with_(ones(), p3=INF), False),
    (with_(ones(), p0=-INF), with_(ones(), p0=INF), False),
    (with_(ones(), p0=INF), with_(ones(), p0=-INF), False),
    (with_(ones(), p0=NAN), ones(), False),
    (ones(), with_(ones(), p0=NAN), False),
    (with_(ones(), p0=NAN), with_(ones(), p1=NAN), False),
    (with_(ones(), p0=NAN), with_(ones(), p0=INF), False),
])
def test_inf_minus_inf_and_nan_positions_must_match(ans, ref, expected):
    ok, msgs = check(ans, ref)
    assert ok is expected
    assert (msgs == []) is expected


def test_special_positions_are_zeroed_before_the_error_and_cosine_rules():
    # only specials and zeros: after zeroing, sum(ref^2) = 0 and every difference is 0. Without the
    # zeroing, nan/inf would poison both rules.
    ref = torch.tensor([NAN, INF, -INF, 0.0, 0.0])
    ok, msgs = check(ref.clone(), ref.clone())
    assert ok is True and msgs == []
    # the special positions take no part in the cosine: the rest is a clean match
    ref = torch.cat([torch.tensor([INF, NAN, -INF]), torch.randn(100)])
    ans = ref.clone()
    assert check(ans, ref) == (True, [])
    # and the caller's tensors are not modified
    assert math.isinf(ref[0]) and math.isnan(ans[1]) and ans[2] == -INF


# ---- element-wise rule -----------------------------------------------------------------------------------


def test_an_element_within_abs_tol_passes():
    ref = with_(ones(), p0=0.0)
    ans = with_(ones(), p0=9e-6)          # |diff| = 9e-6 < 1e-5, rel = 9 (fails on its own)
    assert check(ans, ref) == (True, [])


def test_an_element_within_rel_tol_passes():
    ref = hundreds()
    ans = with_(hundreds(), p0=100.09)    # |diff| = 0.09 >> 1e-5, rel = 9e-4 < 1e-3
    assert check(ans, ref) == (True, [])


def test_an_element_outside_both_fails():
    ref = with_(ones(), p0=0.0)
    ans = with_(ones(), p0=2e-5)          # |diff| = 2e-5 >= 1e-5, rel = 20
    ok, msgs = check(ans, ref)
    assert ok is False
    ref = hundreds()
    ans = with_(hundreds(), p0=100.2)     # rel = 2e-3
    assert check(ans, ref)[0] is False
    assert check(ans, ref, rel_tol=3e-3)[0] is True
    assert check(with_(ones(), p0=2e-5), with_(ones(), p0=0.0), abs_tol=3e-5)[0] is True


def test_the_tolerances_are_strict_bounds():
    ref = with_(ones(), p0=0.0)
    ans = with_(ones(), p0=0.5)           # |diff| = 0.5, not < 0.5; rel = 5e5
    # (a generous cosine tolerance isolates the element-wise rule)
    assert check(ans, ref, abs_tol=0.5, cos_diff_tol=1.0)[0] is False
    assert check(ans, ref, abs_tol=0.5000001, cos_diff_tol=1.0)[0] is True
    assert check(ans, ref, abs_tol=0.5000001)[0] is False  # cos_diff = 0.25 / 1998.5 > 1e-7


def test_rel_uses_ref_plus_1e_6_in_the_denominator():
    # ref = 1e-6, ans = 2.0009e-6: diff = 1.0009e-6 > abs_tol 1e-7; rel = diff / 2e-6 ~ 0.5 < 0.6
    ref = with_(ones(), p0=1e-6)
    ans = with_(ones(), p0=2.0009e-6)
    assert check(ans, ref, abs_tol=1e-7, rel_tol=0.6)[0] is True
    assert check(ans, ref, abs_tol=1e-7, rel_tol=0.4)[0] is False


def test_negative_values_use_absolute_magnitudes():
    ref = -hundreds()
    assert check(with_(-hundreds(), p0=-100.09), ref)[0] is True
    assert check(with_(-hundreds(), p0=-99.8), ref)[0] is False


# ---- cosine rule ---------------------------------------------------------------------------------------


def test_cosine_difference_catches_a_uniform_scale_that_passes_element_wise():
    g = torch.Generator().manual_seed(0)
    ref = torch.randn(4096, generator=g) + 3.0
    ans = ref * 1.001
    # element-wise: rel = 1e-3 < 2e-3 everywhere
    diff = (ans - ref).abs()
    assert bool(((diff / (ref.abs() + 1e-6)) < 2e-3).all())
    # cos_diff = 1 - 2 * 1.001 / (1 + 1.001^2) = 1e-6 / 2.002001 ~ 4.995e-7 > 1e-7
    ok, msgs = check(ans, ref, rel_tol=2e-3)
    assert ok is False and len(msgs) == 1
    assert "pass 100.00%" in msgs[0]
    cos = float(msgs[0].split("cos diff ")[1])
    assert cos == pytest.approx(1 - 2 * 1.001 / (1 + 1.001 ** 2), rel=2e-2)
    assert check(ans, ref, rel_tol=2e-3, cos_diff_tol=1e-6) == (True, [])


def test_cosine_difference_is_computed_in_float64():
    # a difference that float32 arithmetic would lose entirely: cos_diff ~ 1.25e-9 over 1e6 elements
    ref = torch.ones(1_000_000)
    ans = ref.clone()
    ans[:1000] = 1.0 + 5e-4           # element-wise fine (rel 5e-4)
    expected = 1 - 2 * (1e6 + 1000 * 5e-4) / (1e6 + 1000 * (1 + 5e-4) ** 2 + 1e6 - 1000)
    assert expected > 1e-10
    assert check(ans, ref, cos_diff_tol=expected * 0.5)[0] is False
    assert check(ans, ref, cos_diff_tol=expected * 2)[0] is True


def test_a_negative_cosine_difference_is_taken_in_absolute_value():
    # cos_diff = 1 - 2<a,r>/(|a|^2+|r|^2) >= 0 mathematically; it only goes negative through rounding,
    # and |cos_diff| is what is compared: identical tensors pass with a zero tolerance
    ref = torch.randn(1000, generator=torch.Generator().manual_seed(5))
    assert check(ref.clone(), ref, cos_diff_tol=0.0)[0] is True


def test_near_zero_reference_makes_the_cosine_difference_zero():
    # sum(ref^2) = 1e-13 < 1e-12: cos_diff = 0 even though ans is orthogonal-ish to ref
    ref = torch.full((10,), 1e-7)
    ans = torch.zeros(10)
    assert check(ans, ref) == (True, [])
    ref = torch.zeros(10)
    ans = torch.full((10,), 5e-6)      # |diff| < abs_tol; the cosine would be 1 - 0 = 1 if computed
    assert check(ans, ref) == (True, [])
    # sum(ref^2) = 1e-11 >= 1e-12: now the cosine counts (1 - 0 / 1e-11 = 1)
    ref = torch.full((10,), 1e-6)
    ok, msgs = check(torch.zeros(10), ref)
    assert ok is False and "cos diff 1" in msgs[0]


# ---- the failure report --------------------------------------------------------------------------------


def test_failure_report_names_worst_errors_positions_and_pass_rate():
    ref = torch.full((4, 5), 10.0)
    ref[3, 0] = 0.001
    ans = ref.clone()
    ans[1, 2] = 12.0          # worst absolute error: 2.0 (rel 0.2)
    ans[3, 0] = 0.5           # worst relative error: 0.499 / 0.001001 ~ 498.5
    ok, msgs = check(ans, ref)
    assert ok is False and len(msgs) == 1
    m = msgs[0]
    assert m.startswith("[out] ")
    assert "max abs error 2 at [1, 2]" in m
    assert "max rel error 498.5" in m and "at [3, 0]" in m
    assert "pass 90.00%" in m
    assert "cos diff" in m


def test_failure_report_of_a_0d_tensor():
    ok, msgs = check(torch.tensor(2.0), torch.tensor(1.0))
    assert ok is False and "max abs error 1 at []" in msgs[0] and "pass 0.00%" in msgs[0]


def test_default_output_is_stdout(capsys):
    assert check_is_allclose("res", torch.zeros(3), torch.ones(3)) is False
    out = capsys.readouterr().out
    assert out.startswith("[res] ") and "pass 0.00%" in out
    assert check_is_allclose("res", torch.ones(3), torch.ones(3)) is True
    assert capsys.readouterr().out == ""


def test_positional_tolerances_follow_the_spec_signature():
    ref = hundreds()
    ans = with_(hundreds(), p0=100.2)
    msgs = []
    assert check_is_allclose("x", ans, ref, 1e-5, 3e-3, 1e-7, msgs.append) is True
    assert check_is_allclose("x", ans, ref, 1e-5, 1e-3, 1e-7, msgs.append) is False


# ---- the quick check (issue 14) agrees with the full comparison --------------------------------------


def _cases():
    g = torch.Generator().manual_seed(5)
    r = torch.randn(4096, generator=g) * 3
    yield "equal", r.clone(), r
    for scale in (1e-7, 1e-6, 1e-5, 3e-5, 1e-4, 1e-3, 1e-2):
        yield f"noise{scale}", r + torch.randn(4096, generator=g) * scale, r
        yield f"relnoise{scale}", r * (1 + torch.randn(4096, generator=g) * scale), r
    edge = r.clone()
    edge[7] = r[7] + 1e-5  # on the absolute tolerance
    yield "edge", edge, r
    for special in (float("inf"), float("-inf"), float("nan")):
        a, b = r.clone(), r.clone()
        a[3], b[3] = special, special
        yield f"both{special}", a, b
        a = r.clone()
        a[3] = special
        yield f"ans{special}", a, r
    yield "overflow", torch.full((8,), 3e38), torch.full((8,), -3e38)
    yield "zeros", torch.zeros(16), torch.zeros(16)
    yield "empty", torch.zeros(0), torch.zeros(0)
    yield "tiny", torch.full((16,), 1e-20), torch.full((16,), 2e-20)
    yield "one_off", torch.cat([r[:-1], r[-1:] + 1.0]), r


@pytest.mark.parametrize("tols", [(1e-5, 1e-3, 1e-7), (1e-3, 1e-2, 1e-5), (0.0, 1e-3, 1e-7), (1e-5, 0.0, 1e-7),
                                  (1e-40, 1e-3, 1e-7), (1e-5, 1e-3, 1.0)])
def test_the_quick_check_gives_the_full_comparisons_result_and_messages(tols):
    from kdt.utils import allclose
    for label, ans, ref in _cases():
        want_msgs = []
        want = allclose._compare("out", ans.clone(), ref.clone(), *tols, want_msgs.append)
        assert check(ans, ref, abs_tol=tols[0], rel_tol=tols[1], cos_diff_tol=tols[2]) == (want, want_msgs), label
        if allclose._passes_quickly(ans, ref, *tols):
            assert want, label


def test_the_quick_check_decides_passing_outputs():
    from kdt.utils import allclose
    r = torch.randn(4096, generator=torch.Generator().manual_seed(2)) * 3
    for ans in (r.clone(), r + 1e-7, r * (1 + 1e-5)):  # the last one needs the relative rule
        assert allclose._passes_quickly(ans, r, 1e-5, 1e-3, 1e-7)


_FLOATS32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_FLOATS32, _FLOATS32), min_size=0, max_size=300), st.integers(0, 3))
def test_the_cosine_difference_is_the_specs_expression_bit_for_bit(pairs, shape):
    """``_cos_diff`` saves temporaries, not bits: equal to spec §5's expression as written, for any finite
    float32 values (tiny, huge, zero, mixed signs) and layouts."""
    from kdt.utils.allclose import _cos_diff

    a = torch.tensor([p[0] for p in pairs], dtype=torch.float32)
    r = torch.tensor([p[1] for p in pairs], dtype=torch.float32)
    if shape and len(pairs) % 2 == 0 and pairs:
        a, r = a.reshape(2, -1), r.reshape(2, -1)
        if shape == 2:
            a, r = a.T, r.T  # not contiguous
    a64, r64 = a.double(), r.double()
    want = 0.0 if (r64 * r64).sum() < 1e-12 else float(1 - 2 * (a64 * r64).sum() / (a64 * a64 + r64 * r64).sum())
    got = _cos_diff(a, r)
    assert got == want or (math.isnan(got) and math.isnan(want))
    if pairs:
        big = torch.randn(3 * len(pairs), generator=torch.Generator().manual_seed(len(pairs)))
        noisy = big + 1e-4 * torch.randn(big.shape, generator=torch.Generator().manual_seed(1))
        b64, n64 = noisy.double(), big.double()
        assert _cos_diff(noisy, big) == float(1 - 2 * (b64 * n64).sum() / (b64 * b64 + n64 * n64).sum())


def test_the_cosine_difference_of_a_contest_sized_output_is_the_specs_expression():
    from kdt.utils.allclose import _cos_diff

    g = torch.Generator().manual_seed(11)
    r = torch.randn(2048, 512, generator=g)
    for a in (r + 1e-6 * torch.randn(2048, 512, generator=g), r.clone(), -r, torch.zeros_like(r)):
        a64, r64 = a.double(), r.double()
        assert _cos_diff(a, r) == float(1 - 2 * (a64 * r64).sum() / (a64 * a64 + r64 * r64).sum())
