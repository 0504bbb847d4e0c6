"""The verifier core: settings, derivation tiers, checks and verdicts."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass

import numpy as np
import pytest
import sympy as sp

from icltheory.core import (
    BadInput,
    CheckContext,
    Choice,
    Derivation,
    Float,
    Floats,
    Int,
    Setting,
    SettingError,
    Text,
    Verdict,
    load_toml,
    parse_assignments,
    verify_identity,
)


@dataclass(frozen=True, kw_only=True)
class _S(Setting):
    D: int | None = Int(None, min=1, doc="dim")
    lam: tuple | None = Floats(None, positive=True, doc="eigs")
    eta: float = Float(0.1, positive=True, doc="step")
    kind: str = Choice("a", ("a", "b"), doc="kind")
    expr: str | None = Text(None, doc="expr")

    def _resolve(self):
        if self.D is None:
            self._set("D", len(self.lam) if self.lam else 2)
        if self.lam is None:
            self._set("lam", (1.0,) * self.D)

    def _validate(self):
        if len(self.lam) != self.D:
            raise SettingError("lam", "length differs from D")


def test_setting_parses_strings_and_natives():
    s = _S.parse({"lam": "0.5, 0.25,0.125", "eta": "1e-2", "kind": "b", "seed": "3"})
    assert s.D == 3 and s.lam == (0.5, 0.25, 0.125) and s.eta == 0.01 and s.seed == 3
    assert _S.parse({"lam": [1, 2]}).lam == (1.0, 2.0)
    assert _S().D == 2 and _S().lam == (1.0, 1.0)
    with pytest.raises(FrozenInstanceError):
        s.D = 4


@pytest.mark.parametrize(
    "raw, key",
    [({"D": "-1"}, "D"), ({"D": "2.5"}, "D"), ({"lam": "1,-2"}, "lam"), ({"lam": "1,nan"}, "lam"),
     ({"eta": "0"}, "eta"), ({"eta": "inf"}, "eta"), ({"kind": "c"}, "kind"), ({"bogus": 1}, "bogus"),
     ({"D": 3, "lam": "1,2"}, "lam"), ({"D": True}, "D"), ({"lam": "1 2"}, "lam")],
)
def test_setting_errors_name_the_key(raw, key):
    with pytest.raises(SettingError) as e:
        _S.parse(raw)
    assert e.value.key == key
    assert "\n" not in str(e.value)


def test_choice_error_lists_valid_values():
    with pytest.raises(SettingError, match="valid values: a, b"):
        _S.parse({"kind": "zzz"})


def test_assignments_and_toml(tmp_path):
    assert parse_assignments(["a=1", "b = 2,3"]) == {"a": "1", "b": "2,3"}
    for bad in (["a"], ["=1"], ["a=1", "a=2"]):
        with pytest.raises(BadInput):
            parse_assignments(bad)
    p = tmp_path / "s.toml"
    p.write_text("D = 3\nlam = [1.0, 2.0, 3.0]\n")
    assert _S.parse(load_toml(p)).lam == (1.0, 2.0, 3.0)
    p.write_text("D = [\n")
    with pytest.raises(BadInput, match="not valid TOML"):
        load_toml(p)
    with pytest.raises(BadInput, match="does not exist"):
        load_toml(tmp_path / "missing.toml")


def test_derivation_tiers():
    x, y = sp.symbols("x y", positive=True)
    assert verify_identity((x + y) ** 2, x**2 + 2 * x * y + y**2)[:2] == ("verified", "exact")
    assert verify_identity(sp.sin(x) ** 2 + sp.cos(x) ** 2, 1)[:2] == ("verified", "equals")
    st, tier, _ = verify_identity(sp.sin(x) ** 2, x)
    assert st == "refuted"
    # a closed constant identity decided by arb
    st, tier, detail = verify_identity(sp.exp(sp.pi * sp.sqrt(163)), 640320**3 + 744)
    assert st == "refuted", detail  # Ramanujan's near-integer is not an integer
    # the arb tier on its own: a ball that excludes 0 refutes, a tiny ball around 0 certifies
    from icltheory.core._derivation import _arb_tier

    assert _arb_tier([sp.exp(sp.pi * sp.sqrt(163)) - (640320**3 + 744)])[:2] == ("refuted", "arb")
    c = sp.sin(sp.pi / 7, evaluate=False) ** 2 + sp.cos(sp.pi / 7, evaluate=False) ** 2 - 1
    assert _arb_tier([c])[:2] == ("verified", "arb")
    m = sp.Matrix([[x, 1], [0, y]])
    assert verify_identity(m * m, sp.Matrix([[x**2, x + y], [0, y**2]]))[0] == "verified"
    assert verify_identity(m, sp.Matrix([[x, 1]]))[0] == "refuted"  # shape mismatch


def test_a_false_rational_identity_is_refuted_at_the_exact_tier():
    """lhs − rhs with a nonzero canonical form p/q over the rationals is refuted without the
    slower tiers; canonical forms that are not such a rational function (algebraic numbers,
    transcendental functions) still go to them, and true identities stay verified."""
    x, y = sp.symbols("x y", positive=True)
    n = sp.Symbol("n", integer=True, positive=True)
    for lhs, rhs in [((x + y) ** 2, x**2 + y**2), (1 / (x + 1), 1 / x), (sp.Integer(3), 2),
                     (n * (n + 1), n**2), (sp.Matrix([[x, 1], [y, 2]]), sp.Matrix([[x, 1], [y, 3]]))]:
        st, tier, detail = verify_identity(lhs, rhs)
        assert (st, tier) == ("refuted", "exact") and "≠ 0" in detail, detail
    st, tier, _ = verify_identity(sp.sqrt(2) * x, x)  # an irrational coefficient: not this rule
    assert st == "refuted" and tier != "exact"
    # (√3 + 1)²/4 − (2 + √3)/2 = 0 although neither side is rational: never refuted here
    assert verify_identity((sp.sqrt(3) + 1) ** 2 / 4, (2 + sp.sqrt(3)) / 2)[0] == "verified"
    assert verify_identity(sp.exp(x) * sp.exp(y), sp.exp(x + y))[0] == "verified"
    assert verify_identity((x**2 - 1) / (x - 1), x + 1)[:2] == ("verified", "exact")


def test_identity_sides_must_have_the_same_shape():
    """A transposed or reshaped side is refuted (the entries alone would agree); a vector written
    as a flat list against a column or a row matrix is the same vector."""
    x, y = sp.symbols("x y")
    A = sp.Matrix([[1, 2, 3], [4, 5, x]])
    assert verify_identity(A, A.T)[0] == "refuted"
    assert verify_identity(A, A.reshape(3, 2))[0] == "refuted"
    assert verify_identity(sp.Matrix([x, y]), sp.Matrix([[x, y]]))[0] == "refuted"
    assert verify_identity(A, [[1, 2, 3], [4, 5, x]])[0] == "verified"
    assert verify_identity([x, y], sp.Matrix([x, y]))[0] == "verified"
    assert verify_identity([x, y], sp.Matrix([[x, y]]))[0] == "verified"
    B = sp.Matrix([[x, y]])
    assert verify_identity((A, B), (A, B))[0] == "verified"  # parts of different shapes
    assert verify_identity((A, B), (A.T, B))[0] == "refuted"


def test_transcendental_constants_are_not_refuted_as_rational_functions():
    """cancel() cannot see that sin(1)² + cos(1)² − 1 is 0, so the exact tier must not read its
    canonical form as a nonzero rational function: these true identities are verified."""
    x = sp.Symbol("x")
    for lhs, rhs in ((sp.sin(1) ** 2 + sp.cos(1) ** 2, 1), (sp.log(6), sp.log(2) + sp.log(3)),
                     (x * (sp.sin(1) ** 2 + sp.cos(1) ** 2), x)):
        assert verify_identity(lhs, rhs)[0] == "verified", (lhs, rhs)


def test_the_numeric_tier_is_relative_to_the_terms_size():
    """An identity too large for Expr.equals is decided by random points at 50 digits, relative
    to the size of its terms: a right-hand side 0.1 % off is refuted even where every value is
    ~1e-870 (a fixed absolute tolerance, or a float conversion that rounds it to 0, would let it
    pass), and the true identity is verified."""
    from icltheory.core._derivation import EQUALS_MAX_OPS

    x = sp.Symbol("x", positive=True)
    lhs = sum(sp.exp(-2000 - x**2) * x**k * sp.sin(x + k) ** 2 for k in range(40))
    assert sp.count_ops(lhs) > EQUALS_MAX_OPS
    true = sum(sp.exp(-2000 - x**2) * x**k * (1 - sp.cos(x + k) ** 2) for k in range(40))
    assert verify_identity(lhs, true)[:2] == ("verified", "numeric")
    assert verify_identity(lhs, sp.Rational(1001, 1000) * lhs)[0] == "refuted"


def test_a_false_identity_is_refuted_before_the_slow_tiers():
    """A false identity is refuted at one random point (exactly where the value is rational)
    without SymPy's cancel/equals, which can run for seconds on it; a true one whose residual
    is rounding at 50 digits is not refuted there."""
    from icltheory.core._derivation import _nonzero_at_random_points

    x, y = sp.symbols("x y", positive=True)
    big = sp.expand((x + y + 1) ** 12)
    assert _nonzero_at_random_points([big - (big + x / 10**30)], points=1, seed=0)[:2] == ("refuted", "exact")
    assert _nonzero_at_random_points([sp.exp(x) * big - sp.exp(x) * (big + 1)], points=1,
                                     seed=0)[:2] == ("refuted", "numeric")
    assert _nonzero_at_random_points([sp.exp(x + y) - sp.exp(x) * sp.exp(y)], points=3, seed=0) is None
    assert _nonzero_at_random_points([sp.exp(sp.pi * sp.sqrt(163)) - (640320**3 + 744)], points=1,
                                     seed=0) is None  # 7.5e-13 against 2.6e17: for the arb tier


def test_identity_verdicts_are_kept_per_machine_and_bypassed_under_a_patched_verifier(tmp_path, monkeypatch):
    """The verdict on an identity is stored by its exact spelling and read back; while the
    verifier's own code is patched no stored verdict stands in for it."""
    from icltheory.core import _cache, _derivation

    monkeypatch.setenv("ICLTHEORY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ICLTHEORY_CACHE", raising=False)
    monkeypatch.setitem(_cache._off, "cleared", False)  # as in a process that never cleared its caches
    monkeypatch.setattr(_cache, "_IDENTITIES", {})
    x = sp.Symbol("x", positive=True)
    calls = []
    real = _derivation.verify_identity

    def counting(lhs, rhs, **kw):
        calls.append(1)
        return real(lhs, rhs, **kw)

    first = _derivation._verify_once((x + 1) ** 2, x**2 + 2 * x + 1, seed=0)
    assert first[0] == "verified" and list((tmp_path / "identities").iterdir())
    _cache._IDENTITIES.clear()  # another process: read from disk
    monkeypatch.setattr(_derivation, "verify_identity", counting)  # a patched verifier …
    assert _derivation._verify_once((x + 1) ** 2, x**2 + 2 * x + 1, seed=0) == first
    assert calls == [1]  # … is run, not replaced by the stored verdict
    monkeypatch.setattr(_derivation, "verify_identity", real)
    assert _derivation._verify_once((x + 1) ** 2, x**2 + 2 * x + 1, seed=0) == first  # stored
    assert _derivation._verify_once((x + 1) ** 2, x**2 + 2 * x + 2, seed=0)[0] == "refuted"


def test_derivation_records_and_renders():
    x = sp.Symbol("x", positive=True)
    d = Derivation("demo")
    d.define("f", x**2, "a square")
    d.step("ok", sp.diff(x**3, x), 3 * x**2, "power rule")
    assert d.ok
    d.step("bad", sp.diff(x**3, x), 2 * x**2, "wrong power rule")
    assert not d.ok and d.summary() == {"verified": 1, "refuted": 1, "undecided": 0}
    md = d.to_markdown()
    assert "```math" in md and "❌" in md and "power rule" in md
    assert d.as_dict()["steps"][1]["status"] == "refuted"


def test_checks_and_verdict_logic():
    ctx = CheckContext(predicted={}, profile="quick", seed=0)
    assert Verdict.decide([], [])[0] == "inconclusive"  # nothing ran: never 'holds'
    c = ctx.close("a", predicted=[1.0, 2.0], measured=[1.0, 2.0 + 1e-12], atol=1e-10, why="t")
    assert c.passed
    c = ctx.close("b", predicted=1.0, measured=1.1, rtol=0.05, why="t")
    assert c.passed is False
    # a shape mismatch or non-numbers cannot decide (a wrong count is a condition, not a close)
    assert ctx.close("shape", predicted=[1, 2], measured=[1], atol=1, why="t").passed is None
    assert ctx.close("text", predicted=1.0, measured="n/a", atol=1, why="t").passed is None
    assert ctx.close("nan", predicted=1.0, measured=float("nan"), atol=1, why="t").passed is None
    z = ctx.ztest("z", predicted=0.0, mean=0.1, stderr=0.01, n=100, alpha=1e-3, skew=0.0,
                  kurtosis=0.0)
    assert z.passed is False and z.margin < 0
    z = ctx.ztest("z2", predicted=0.0, mean=0.02, stderr=0.01, n=100, alpha=1e-3, m_tests=5,
                  skew=0.0, kurtosis=0.0)
    assert z.passed and z.tolerance["bonferroni_m"] == 5 and 0 < z.margin < 1
    # without samples or their moments the normal approximation cannot be judged: undecided
    assert ctx.ztest("z3", predicted=0.0, mean=0.5, stderr=0.01, n=100).passed is None
    assert Verdict.decide(ctx.checks, [])[0] == "fails"
    ok = [x for x in ctx.checks if x.passed]
    assert Verdict.decide(ok, [])[0] == "holds"
    assert Verdict.decide(ok, ["diverged at step 7"])[0] == "inconclusive"
    with pytest.raises(ValueError):
        ctx.close("no tol", predicted=1.0, measured=1.0, why="t")


def test_rng_streams_are_deterministic():
    a = CheckContext(predicted={}, profile="quick", seed=5).rng(1).standard_normal(3)
    b = CheckContext(predicted={}, profile="quick", seed=5).rng(1).standard_normal(3)
    c = CheckContext(predicted={}, profile="quick", seed=5).rng(2).standard_normal(3)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


# ------------------------------------------------------------------ the contract's runner


from icltheory.core import (Claim, Cost, PlantedError, Prediction,  # noqa: E402
                            run_check)
from icltheory.core._claim import Run, default_wrong  # noqa: E402


@dataclass(frozen=True, kw_only=True)
class _T(Setting):
    x: float = Float(1.0, positive=True, max=1e6, doc="x")
    n: int | None = Int(None, min=10, max=10**6, by_profile=(100, 1000, 10000), doc="n")


def _mk(measure, judge, constants=lambda s: {"a": 1.0}, **attrs):
    cls = type("C", (Claim,), {
        "id": "t.claim", "title": "t", "source": "s", "statement": "x", "setting_type": _T,
        "predictions": {"a": Prediction("a")},
        "planted_errors": (PlantedError("theory", "t", "math:pi", lambda o: o),
                           PlantedError("measurement", "m", "math:e", lambda o: o)),
        "constants": lambda self, s: constants(s), "measure": lambda self, s, r: measure(s, r),
        "judge": lambda self, s, p, m, ctx: judge(s, p, m, ctx), **attrs})
    return cls()


def test_contract_is_enforced_at_definition():
    with pytest.raises(TypeError, match="planted_errors"):
        type("C", (Claim,), {"id": "t.x", "title": "t", "source": "s", "statement": "x",
                             "setting_type": _T, "predictions": {"a": Prediction("a")},
                             "constants": lambda self, s: {}})
    with pytest.raises(TypeError, match="expected_default"):
        _mk(None, None, expected_default="bogus")
    with pytest.raises(TypeError, match="expecting holds"):
        _mk(None, None, planted_errors=(
            PlantedError("theory", "t", "math:pi", lambda o: o, expect="holds"),
            PlantedError("measurement", "m", "math:e", lambda o: o)))
    with pytest.raises(ValueError):
        Prediction("a", kind="nonsense")


def test_work_calibration_divides_the_estimate_where_budgets_read_it():
    from icltheory.core import BUDGETS, over_budget

    budget = BUDGETS["standard"][0]
    est = lambda self, s: Cost(1.5 * budget, 8.0, "w")  # noqa: E731
    plain = _mk(None, None, estimate=est)
    calibrated = _mk(None, None, estimate=est, work_calibration=2.0)
    assert plain.cost(_T()).work == 1.5 * budget and calibrated.cost(_T()).work == 0.75 * budget
    assert calibrated.cost(_T()).memory == 8.0  # memory is not a rate: left as estimated
    assert "not run" in over_budget(plain, _T()) and over_budget(calibrated, _T()) is None
    for bad in (0.0, 100.0):
        with pytest.raises(TypeError, match="work_calibration"):
            _mk(None, None, work_calibration=bad)


def test_profile_fields_and_given():
    assert _T().n == 1000 and _T(profile="quick").n == 100
    s = _T.parse({"x": "2", "profile": "quick"})
    assert s.given() == {"x": 2.0, "profile": "quick"}
    assert s.with_profile("thorough").n == 10000 and s.replace(x=3).x == 3.0
    assert _T.parse(s.as_dict()) == s  # the record reproduces the setting
    with pytest.raises(TypeError):
        Int(5, doc="d", by_profile=(1, 2, 3))
    with pytest.raises(TypeError):
        Int(None, doc="d", max=10, by_profile=(1, 2, 30))
    for bad in ({"n": "1e30"}, {"n": "٣"}, {"x": "1_0"}, {"x": "inf"}):
        with pytest.raises(SettingError):
            _T.parse(bad)


def test_wrong_values_perturb_list_positions():
    ws = default_wrong("value", [1.0, 2.0, 3.0])
    assert [1.0, 2.0, 6.0] in ws and [2.0, 2.0, 3.0] in ws and len(ws) == 6
    assert default_wrong("order", [0, 1, 2]) == [[1, 0, 2], [0, 2, 1]]
    assert default_wrong("lower_bound", -2.0) == [0.0]  # stronger, not weaker
    assert default_wrong("upper_bound", 4.0) == [1.0]


def test_runner_boundaries():
    def judge(s, p, m, ctx):
        ctx.close("a", key="a", measured=m["a"], rtol=1e-9, why="t")

    ok = _mk(lambda s, r: {"a": 1.0}, judge)
    assert run_check(ok, ok.setting()).verdict == "holds"
    assert run_check(ok, ok.setting(), predict={"a": "2"}).verdict == "fails"
    # the theory raising: inconclusive (numerical trouble: float overflow and numpy's
    # invalid operations) or an internal error (a Python division by zero is a programming
    # error), never an exception
    v = run_check(_mk(lambda s, r: {"a": 1.0}, judge, constants=lambda s: {"a": 1e308 * 10 ** 309}),
                  _T())
    assert v.verdict == "inconclusive" and "numerical trouble" in v.reasons[0]
    v = run_check(_mk(lambda s, r: {"a": 1.0}, judge,
                      constants=lambda s: {"a": float(np.log(np.float64(0.0)))}), _T())
    assert v.verdict == "inconclusive" and "numerical trouble" in v.reasons[0]
    v = run_check(_mk(lambda s, r: {"a": 1.0}, judge, constants=lambda s: {"a": 1 / 0}), _T())
    assert v.verdict == "inconclusive" and v.internal_error and "ZeroDivisionError" in v.reasons[0]
    v = run_check(_mk(lambda s, r: {"a": 1.0}, judge, constants=lambda s: {"a": [].pop()}), _T())
    assert v.verdict == "inconclusive" and v.internal_error
    # a measurement that says it cannot decide is not judged (no fails from partial data)

    def undecided(s, r):
        r.inconclusive("too few samples")
        return {"a": 5.0}

    v = run_check(_mk(undecided, judge), _T())
    assert v.verdict == "inconclusive" and "too few samples" in v.reasons
    # over budget: refused before running
    c = _mk(lambda s, r: 1 / 0, judge, estimate=lambda self, s: Cost(1e99, 1.0, "huge"))
    v = run_check(c, _T())
    assert v.verdict == "inconclusive" and "not run" in v.reasons[0]
    # a fails whose false-fail probabilities total more than 1e-3 cannot decide

    def loose(s, p, m, ctx):
        ctx.close("a", key="a", measured=5.0, rtol=1e-9, why="t", false_fail=0.01)

    assert run_check(_mk(lambda s, r: {"a": 1.0}, loose), _T()).verdict == "inconclusive"

    # … unless a failed check cannot fail by chance (an exact one, false-fail 0, as the
    # derivation's): that decides, whatever the statistical checks' total
    def loose_and_exact(s, p, m, ctx):
        ctx.close("a", key="a", measured=1.0, rtol=1e-9, why="t", false_fail=0.01)
        ctx.condition("an exact step", False, predicted=True, measured=False, why="t")

    assert run_check(_mk(lambda s, r: {"a": 1.0}, loose_and_exact), _T()).verdict == "fails"


def test_run_streams_are_distinct():
    """Stream ids that differ only by trailing zeros give different streams, in a run and in a
    judge's context, and the judge's streams are never the measurement's."""
    r = Run(_T(seed=3))
    ctx = CheckContext(predicted={}, profile="quick", seed=3)
    keys = ((), (0,), (0, 0), (1,), (1, 0))
    draws = [tuple(g.rng(*k).integers(0, 2**62, 2)) for g in (r, ctx) for k in keys]
    assert len(set(draws)) == len(draws)


def test_ztest_small_and_skewed_samples():
    ctx = CheckContext(predicted={"m": 1.0}, profile="quick", seed=0)
    assert ctx.ztest("few", samples=np.ones(10) + 1e-3 * np.arange(10), key="m").passed is None
    rng = np.random.default_rng(0)
    x = rng.exponential(size=100_000)  # skewness 2: a shifted acceptance interval
    c = ctx.ztest("exp", samples=x, key="m", alpha=1e-3)
    lo, hi = c.tolerance["critical"]
    # a right-skewed sample's studentized mean is left-skewed (a low mean comes with a low s)
    assert c.passed and hi + lo < 0
    y = rng.lognormal(sigma=3.0, size=200)  # hopelessly skewed for n = 200
    assert ctx.ztest("ln", samples=y, predicted=float(np.exp(4.5))).passed is None


def test_a_verdicts_runtime_counts_the_theorys_constants():
    """The runtime a verdict reports (and ``check`` prints) includes the theory's constants,
    which run before the measurement: a claim whose constants take 0.3 s reports at least that."""
    import time

    import _fake_claims

    class SlowTheory(_fake_claims.SquareMean):
        id = "testonly.square.slow-theory"

        def constants(self, s):
            time.sleep(0.3)
            return super().constants(s)

    from icltheory.core import run_check

    v = run_check(SlowTheory(), {"profile": "quick"})
    assert v.verdict == "holds" and v.runtime_s >= 0.3


def test_a_typed_value_says_in_its_check_line_that_it_is_judged_to_its_digits():
    """A constant the user types is judged to the digits typed (± half a unit in the last), and
    the check's one-line detail says so, so '--predict x=0.1' holding against a measured 0.13 is
    not read as a tight agreement.  (Here 2.3 stands for 2.25…2.35.)"""
    import _fake_claims

    from icltheory.core import run_check

    v = run_check(_fake_claims.SquareMean(), {"profile": "quick"}, predict={"second_moment": "2.3"})
    line = next(c.detail for c in v.checks if "second_moment" in c.judges)  # E[x²] = 2.25
    assert v.verdict == "holds" and "your value judged to the 2 significant digits typed (± 0.05)" in line, line
    v = run_check(_fake_claims.SquareMean(), {"profile": "quick"})
    assert all("typed" not in c.detail for c in v.checks)


def test_a_judgement_stopped_by_the_time_limit_keeps_the_measurements_time():
    """Where the time limit has passed by the judgement (a run off the main thread, which no
    alarm interrupts, stops at its next tick instead), the verdict's runtime still counts the
    measurement's seconds rather than 0."""
    import time

    import _fake_claims

    from icltheory.core import Measurement, judge_claim
    from icltheory.core._deadline import clear_time_limit, set_time_limit

    claim = _fake_claims.SquareMean()
    set_time_limit(0.001)
    try:
        time.sleep(0.01)
        v = judge_claim(claim, {"profile": "quick"}, Measurement({}, runtime_s=2.0))
    finally:
        clear_time_limit()
    assert v.verdict == "inconclusive" and "before the judgement" in v.reasons[0]
    assert v.runtime_s >= 2.0


@pytest.mark.parametrize("claim_id, paper", [("catgd.training", "categorical_icl"),
                                              ("softmaxreg.vectorization", "softmax_regression")])
def test_one_claim_is_found_without_importing_the_other_papers(claim_id, paper):
    """A command about one claim imports one paper: in a fresh process, looking up a claim
    imports the built-in paper its id names (the last in the registry's order as well as the
    first) and no other."""
    import subprocess
    import sys

    code = (f"import sys; from icltheory.core import get_claim; get_claim({claim_id!r}); "
            "print(sorted(m for m in ('proofs.linear_attention', 'proofs.nonlinear_regression', "
            "'proofs.softmax_regression', 'proofs.categorical_icl') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"['proofs.{paper}']"


def test_each_built_in_paper_declares_only_ids_under_its_entry_points_name():
    """What lets a lookup import only the paper an id names: every claim of a built-in entry
    point has an id whose first component is the entry point's name."""
    from icltheory.core import _registry

    built_in = [ep for ep in _registry._entry_points() if _registry._builtin(ep)]
    assert len(built_in) == 4
    for ep in built_in:
        claims = _registry._registered(ep, [])
        assert claims and all(c.id.split(".", 1)[0] == ep.name for c in claims), ep.name


def test_the_lazy_lookup_finds_what_a_full_load_registers(monkeypatch):
    """Every id resolves, lazily, to the object the full load registers; a plug-in declaring a
    built-in's id does not replace it on either path, and a claim registered from Python is
    found only where no entry point declares its id."""
    from importlib import metadata

    from icltheory.core import _registry

    full = _registry._load()
    for cid, claim in full.items():
        assert _registry._first_declaring(cid) is claim
    # only the first lookup is lazy: a second one loads the registry once
    monkeypatch.setitem(_registry._LAZY, "used", False)
    _registry._load.cache_clear()
    calls = []
    real_find = _registry._first_declaring

    def counted(cid):
        calls.append(cid)
        return real_find(cid)

    monkeypatch.setattr(_registry, "_first_declaring", counted)
    assert _registry.get_claim("catgd.training") is full["catgd.training"]
    assert not _registry._load.cache_info().currsize
    assert _registry.get_claim("linattn.merged.sigmoid") is full["linattn.merged.sigmoid"]
    assert calls == ["catgd.training"] and _registry._load.cache_info().currsize
    monkeypatch.undo()
    import sys
    import types

    from _fake_claims import SquareMean

    class Imposter(SquareMean):
        id = "linattn.merged.sigmoid"

    class Newcomer(SquareMean):
        id = "imposter.newcomer"

    mod = types.ModuleType("_imposter_claims")
    mod.CLAIMS = (Imposter(), Newcomer(), Newcomer())  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "_imposter_claims", mod)
    ep = metadata.EntryPoint("imposter", "_imposter_claims:CLAIMS", _registry.GROUP)
    real = metadata.entry_points

    def eps(**kw):  # a plug-in (no distribution: not built in)
        found = list(real(**kw))
        return found + [ep] if kw.get("group") == _registry.GROUP else found

    monkeypatch.setattr(metadata, "entry_points", eps)
    _registry._load.cache_clear()
    try:
        assert _registry._first_declaring("linattn.merged.sigmoid") is full["linattn.merged.sigmoid"]
        assert _registry._load()["linattn.merged.sigmoid"] is full["linattn.merged.sigmoid"]
        assert _registry._first_declaring("imposter.newcomer") is mod.CLAIMS[1]
        assert _registry._load()["imposter.newcomer"] is mod.CLAIMS[1]
    finally:
        _registry._load.cache_clear()
    assert _registry._first_declaring("no.such.claim") is None
