"""Linear attention, separate key/query (ATTN_S): machinery, independent paths that must agree,
claims, negative controls, near-ties, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hst

import _memo
from icltheory._cli import main as cli_main
from icltheory.core import get_claim, run_check
from icltheory.dynamics import Plateau, detect_plateaus, slowest_point_level, threshold_times
from proofs.linear_attention import theory
from proofs.linear_attention.experiments import _analysis as analysis
from proofs.linear_attention.experiments import _data as data
from proofs.linear_attention.experiments import _flows as flows
from proofs.linear_attention.experiments import _models as models
from proofs.linear_attention.experiments import _population as popn
from proofs.linear_attention.experiments import _softmax as sm
from proofs.linear_attention.experiments import _training as training
from proofs.linear_attention.settings import code_to_paper


def _run(cid, setting=None, predict=None, profile="quick"):
    c = get_claim(cid)
    # measured once per session and setting, judged per call (tests/_memo.py)
    return _memo.run(c, c.setting(setting or {}).with_profile(profile), predict)


def _nplus1_levels(lambdas, N):
    return ",".join(str(x) for x in theory.paper().plateau_levels(lambdas, N + 1))


# ----------------------------------------------------------------------------- plateau detector


def _staircase(levels, edges, t, width):
    """Sum of logistic steps: level[k] before edges[k], level[k+1] after (known plateaus)."""
    y = np.full_like(t, levels[0], dtype=float)
    for k, e in enumerate(edges):
        y += (levels[k + 1] - levels[k]) / (1 + np.exp(-(t - e) / width))
    return y


def test_detector_finds_known_plateaus_linear_time():
    t = np.linspace(0, 1000, 4001)
    levels = [1.0, 0.6, 0.35, 0.1]
    y = _staircase(levels, [200, 500, 800], t, 5.0)
    pl = detect_plateaus(t, y)
    assert len(pl) == 4
    assert np.allclose([p.level for p in pl], levels, atol=1e-3)
    for p, (a, b) in zip(pl, [(0, 200), (200, 500), (500, 800), (800, 1000)]):
        assert a <= p.start + 1e-9 and p.end <= b + 1e-9
    mids = [0.5 * (p.level + q.level) for p, q in zip(pl, pl[1:])]
    assert np.allclose(threshold_times(t, y, mids, increasing=False), [200, 500, 800], atol=1.0)


def test_detector_finds_known_plateaus_log_time():
    t = np.geomspace(1, 1e5, 5000)
    levels = [1.0, 0.5, 0.2]
    u = np.log(t)
    y = levels[0] + (levels[1] - levels[0]) / (1 + np.exp(-(u - np.log(100)) / 0.05)) \
        + (levels[2] - levels[1]) / (1 + np.exp(-(u - np.log(1e4)) / 0.05))
    pl = detect_plateaus(t, y, log_time=True)
    assert len(pl) == 3
    assert np.allclose([p.level for p in pl], levels, atol=1e-3)
    assert len(detect_plateaus(t, y)) < 3  # in linear time the first two are squeezed together


def test_detector_rejects_ramps_and_small_steps():
    t = np.linspace(0, 1, 2001)
    assert len(detect_plateaus(t, 1 - t)) == 0
    y = _staircase([1.0, 0.99, 0.0], [0.3, 0.7], t, 0.005)  # a 1% step is below min_drop
    assert len(detect_plateaus(t, y)) == 2


@given(hst.integers(2, 5), hst.integers(0, 2**31 - 1))
def test_detector_counts_random_staircases(n, seed):
    rng = np.random.default_rng(seed)
    levels = 1.0 - np.cumsum(np.r_[0.0, rng.uniform(0.08, 0.3, n)])
    edges = np.cumsum(np.r_[0.1, np.full(n - 1, 0.8 / n)]) + rng.uniform(-0.02, 0.02, n)
    t = np.linspace(0, 1, 3001)
    y = _staircase(levels, edges, t, 0.002) + 1e-5 * rng.standard_normal(t.size)
    pl = detect_plateaus(t, y)
    assert len(pl) == n + 1
    assert np.allclose([p.level for p in pl], levels, atol=2e-3 * (levels[0] - levels[-1]) + 1e-4)


def test_slowest_point_level():
    t = np.linspace(1, 10, 901)
    y = 1 + 0.01 * (t - 4) ** 2  # slowest (flat) at t = 4, where y = 1
    assert abs(slowest_point_level(t, y, Plateau(2.0, 8.0, float(np.median(y)))) - 1) < 1e-6
    assert slowest_point_level(t, y, Plateau(2.0, 2.005, 7.0)) == 7.0  # < 3 samples: median kept


def test_descent_phases_count_the_drops_of_a_staircase():
    t = np.geomspace(1, 1e4, 3000)
    u = np.log(t)
    y = 1 - 0.5 / (1 + np.exp(-(u - np.log(30)) / 0.1)) - 0.3 / (1 + np.exp(-(u - np.log(900)) / 0.1))
    ph = analysis.descent_phases(t, y)
    assert sum(f >= 0.1 for f in ph) == 2 and abs(sum(ph) - 1) < 1e-9


# ----------------------------------------------------------------------------- scalar ODE: three ways


def test_escape_time_reference_value():
    p = theory.paper()
    k = p.scalar_constants(0.1, 1.0, 31, 0.03)
    assert abs(k["v_star"] - 1.947022) < 1e-6
    assert abs(k["escape_time"] - 3237.37) < 0.01
    for l, v in ((0.4, 1.30967), (0.3, 1.43005), (0.2, 1.61204)):
        assert abs(p.v_star(l, p.scalar_c(l, 1.0, 31)) - v) < 1e-5


@given(hst.floats(0.05, 2.0), hst.floats(1.0, 4.0), hst.integers(2, 80), hst.floats(1e-3, 0.2))
def test_escape_time_closed_form_flow_and_quadrature_agree(lam, trace_over, N, frac0):
    """The theory's closed form G (SymPy, lowered) against the experiment's own one-head flow
    (DOP853 on the model's gradient) and quadrature — no shared code."""
    trace = lam * trace_over
    p = theory.paper()
    c = p.scalar_c(lam, trace, N)
    v0 = frac0 * p.v_star(lam, c)
    t = p.escape_time(lam, c, v0)
    spec = [lam, trace - lam] if trace > lam else [lam]
    vs = flows.balanced_fixed_point(spec, N)
    assert abs(vs / p.v_star(lam, c) - 1) < 1e-12
    assert abs(flows.one_head_flow(spec, N, v0, vs / 2, 4 * t + 10)[0] / t - 1) < 1e-8
    assert abs(flows.escape_quadrature(spec, N, v0, vs / 2)[0] / t - 1) < 1e-9


# ----------------------------------------------------------------------------- training machinery


def test_fast_population_gd_equals_the_generic_trainer():
    lam = np.array([0.5, 0.3, 0.15])
    N, H, R = 7, 3, 2
    p = training.init_separate(np.random.default_rng(1), 2, H, [1, 2], 3, 0.3)
    fast = training.separate_population_gd(lam, N, p, lr=0.2, steps=300, record_every=50)
    trace, final = training.train_quadratic(models.SeparateHeads(H, R), models.population_moments(lam, N), p,
                                            lr=0.2, steps=300, record_every=50)
    assert np.allclose(fast.loss, trace["loss"].T, rtol=1e-12, atol=1e-14)
    for k in ("r", "K", "Q"):
        assert np.allclose(fast.params[k], final[k], rtol=1e-10, atol=1e-14)


def test_rank_embedding_keeps_spare_pairs_at_zero():
    p = training.init_separate(np.random.default_rng(2), 3, 4, [1, 2, 4], 4, 0.2)
    run = training.separate_population_gd(np.array([0.4, 0.3, 0.2, 0.1]), 31, p, lr=0.4, steps=500)
    assert np.all(run.params["K"][0, :, 1:] == 0) and np.all(run.params["Q"][1, :, 2:] == 0)


def test_full_init_shares_relevant_draws():
    a = training.init_separate(np.random.default_rng(3), 2, 3, 1, 4, 0.1)
    b = training.init_separate(np.random.default_rng(3), 2, 3, 1, 4, 0.1, full=True)
    assert np.array_equal(a["r"][..., 0], b["r"][..., 4]) and np.array_equal(a["K"], b["K"][..., :4])
    assert np.all(b["r"][..., :4] == 0) and np.all(b["K"][..., 4] == 0)


def test_swap_directions_swaps_the_init_of_two_directions():
    p = training.init_separate(np.random.default_rng(4), 2, 3, 1, 4, 0.1)
    q = training.swap_directions(p, [1], [(0, 2)])
    assert np.array_equal(q["K"][0, ..., 0], p["K"][1, ..., 2]) and np.array_equal(q["Q"][0, ..., 2], p["Q"][1, ..., 0])
    assert np.array_equal(q["r"][0], p["r"][1])


def test_code_to_paper_map_is_exact():
    """Code model (no 1/N) at weights θ = paper model at N^{1/3}θ; code GD at lr η on the plain
    MSE = paper GD on L_1/2 at 2ηN^{2/3} (one step compared on the relevant block)."""
    rng = np.random.default_rng(4)
    D, N, H = 3, 9, 2
    X, y = data.sample_sequences(50, N, np.diag([0.5, 0.3, 0.2]), rng)
    WV = rng.standard_normal((H, D + 1, D + 1))
    WK, WQ = rng.standard_normal((2, H, 1, D + 1))
    code = N * models.attn_separate_predict(X, WV, WK, WQ)
    s = N ** (1 / 3)
    assert np.allclose(code, models.attn_separate_predict(X, s * WV, s * WK, s * WQ), rtol=1e-10)
    eta_code = 0.01
    eta, scale = code_to_paper(N, eta_code, 1.0, 3)
    m = models.empirical_moments(X, y)
    model = models.SeparateHeads(H, 1)
    p = {"r": WV[None, :, D, :], "K": WK[None], "Q": WQ[None, :, :, :D]}
    ps = {k: s * v for k, v in p.items()}
    g_paper = model.pullback(ps, m.grad_half(model.theta(ps)), m)
    code_step = {k: p[k] - eta_code * 2 * s * g_paper[k] for k in p}
    paper_step = {k: s * p[k] - eta * g_paper[k] for k in p}
    for k in p:
        assert np.allclose(s * code_step[k], paper_step[k], rtol=1e-12)
    assert abs(scale - s) < 1e-12


def test_softmax_gradients_match_finite_differences():
    rng = np.random.default_rng(5)
    D, N, P = 3, 6, 20
    X, y = data.sample_sequences(P, N, np.diag([0.5, 0.3, 0.2]), rng)
    for model in (sm.SoftmaxAttention(2, merged=True), sm.SoftmaxAttention(2, merged=False, R=2)):
        p = {k: 2 * v for k, v in sm.softmax_init(model, D, 0.5, rng).items()}
        loss, g = model.loss_and_grad(p, X, y)
        for name in p:
            for _ in range(4):
                idx = tuple(int(rng.integers(0, n)) for n in p[name].shape)
                eps = 1e-6
                hi = {k: v.copy() for k, v in p.items()}
                lo = {k: v.copy() for k, v in p.items()}
                hi[name][idx] += eps
                lo[name][idx] -= eps
                fd = (model.loss_and_grad(hi, X, y)[0] - model.loss_and_grad(lo, X, y)[0]) / (4 * eps)
                assert abs(fd - g[name][idx]) <= 1e-6 * max(1.0, abs(fd))


# ----------------------------------------------------------------------------- claims


def test_fixed_point_constants_done_when():
    c = get_claim("linattn.separate.fixed-points")
    k = c.constants(c.setting({"lambdas": "0.4,0.3,0.2,0.1", "N": 31}))
    assert np.allclose(k["plateau_losses"], [1, 0.640580, 0.377372, 0.209805, 0.135995], atol=5e-7)
    assert k["plateau_losses_exact"] == ["1", "221/345", "27601/73140", "567769/2706180", "85873/631442"]
    assert np.allclose(k["drop_sizes"], [0.359420, 0.263208, 0.167568, 0.073810], atol=5e-7)
    assert k["fixed_point_count"] == 16
    k2 = c.constants(c.setting({"lambdas": "0.1,0.3,0.4,0.2"}))
    assert np.allclose(k2["plateau_losses"], k["plateau_losses"], rtol=1e-14)
    assert k2["drop_order"] == [2, 1, 3, 0]


def test_fig4_levels():
    c = get_claim("linattn.separate.rank")
    k = c.constants(c.setting({}))
    assert np.allclose(k["plateau_losses"], [1, 0.811263, 0.648977, 0.513012, 0.403176, 0.319166,
                                             0.260454, 0.226009, 0.213346], atol=1e-6)
    assert k["n_plateaus"] == [8, 4, 2, 1]


def test_equivalence_and_control():
    assert _run("linattn.separate.equivalence", {"R": 2}).verdict == "holds"
    assert _run("linattn.separate.equivalence", {"R": 2}, {"beta_divisor": "32"}).verdict == "fails"


@pytest.mark.slow
def test_fixed_points_and_controls():
    assert _run("linattn.separate.fixed-points").verdict == "holds"
    lv = _nplus1_levels([0.4, 0.3, 0.2, 0.1], 31)
    assert _run("linattn.separate.fixed-points", predict={"plateau_losses": lv}).verdict == "fails"
    for key, value in (("fixed_point_count", "15"), ("minimum_count", "2"), ("drop_order", "3,2,1,0"),
                       ("c", "9,9,9,9")):
        assert _run("linattn.separate.fixed-points", predict={key: value}).verdict == "fails", key


def test_saddles_of_a_spectrum_spanning_many_decades_are_saddles():
    """The small head that must lower the loss at a saddle lowers it by ≈ 2.5e-4 λ_j/c_j: below
    float64 resolution of L itself when λ_j/tr Λ is 1e-7 — the change is read directly."""
    for lambdas in ("10,1e-6", "1e6,1e-6"):
        v = _run("linattn.separate.fixed-points", {"D": 2, "lambdas": lambdas})
        assert v.verdict == "holds", (lambdas, v.failed_checks())
        assert v.measured["minimum_count"] == 1
    # a control that can fail: the perturbation test still finds two minima where the claim says one
    assert _run("linattn.separate.fixed-points", {"D": 2, "lambdas": "10,1e-6"},
                {"minimum_count": "2"}).verdict == "fails"


def test_scalar_ode_near_half_the_fixed_point_is_not_failed_by_the_perturbation():
    """Started near v*/2 the escape is short, but the perturbation still moves it by
    ~1e-4·v0/v̇(v0): the tolerance follows the head's rate at v0, not 1e-3 of the escape time."""
    for setting in ({"v0": 0.97}, {"lambda": 0.5, "trace": 1, "N": 1, "v0": 0.39}):
        assert _run("linattn.separate.scalar-ode", setting).verdict == "holds", setting
    # within the perturbation's reach of v*/2 (0.973511) the escape cannot be timed: undecided
    assert _run("linattn.separate.scalar-ode", {"v0": 0.9735}).verdict == "inconclusive"


def test_softmax_drop_shortfall_on_few_sequences_is_undecided():
    """On P = 150 sequences the training loss fluctuates by more than the smallest drop the count
    resolves: a run with one drop (seed 4) is no refutation; at the quick profile's P = 300 the
    same seed holds."""
    v = _run("linattn.softmax.drops", {"P": 150, "seed": 4})
    assert v.verdict == "inconclusive" and any("fluctuates" in r for r in v.reasons)
    assert _run("linattn.softmax.drops", {"seed": 4}).verdict == "holds"


def test_gd_runs_pass_the_saddles_a_little_off_them_and_still_hold():
    """At a finite init a GD run's plateau can start a hair below Eq. 19's level (the next
    direction already growing): the level check's resolution is the plateau readers', not float64
    rounding (a review found false fails at the default spectrum, seed 4, integrator=gd)."""
    v = _run("linattn.separate.saddle-to-saddle", {"integrator": "gd", "seeds": 6})
    assert v.verdict == "holds", v.failed_checks()
    assert any("passes L(M_" in c.name for c in v.checks)


def test_visit_levels_are_judged_against_the_loss_the_plateau_spans():
    """judge_visits' level check (a population run): Eq. 19's level must lie in [L(end) − tol,
    L(start) + tol]; a plateau sitting off it fails, one passing through it holds; M_0 (the
    init) is the premise's; without a tolerance (finite-sample runs) a stretch far from every
    saddle is only noted."""
    from icltheory.core._verdict import CheckContext, Verdict
    from proofs.linear_attention.claims._common import judge_visits

    lam = [0.4, 0.3]
    levels = [0.7, 0.5, 0.35]
    drops = np.array([0.2, 0.15])

    def verdict(visits, tol):
        ctx = CheckContext(predicted={"plateau_losses": levels, "drop_order": [0, 1]}, profile="quick", seed=0)
        judge_visits(ctx, "run", visits, levels, [0, 1], lam, drops, level_tol=tol, level_why="test")
        return Verdict.decide(ctx.checks, ctx.inconclusive_reasons)[0], ctx

    def visit(learned, start_level, end_level, level, saddle):
        return analysis.Visit(1.0, 2.0, 1.5, level, tuple(learned), saddle, abs(level - saddle),
                              (start_level, end_level))

    through = [visit([], 0.7, 0.69, 0.7, 0.7), visit([0], 0.5001, 0.4998, 0.49995, 0.5),
               visit([0, 1], 0.3501, 0.35, 0.35, 0.35)]
    assert verdict(through, 1e-3)[0] == "holds"
    off = [through[0], visit([0], 0.531, 0.529, 0.53, 0.5), through[2]]
    assert verdict(off, 1e-3)[0] == "fails"
    assert verdict(off, 0.05)[0] == "holds"  # within the stated tolerance
    init_off = [visit([], 0.69, 0.68, 0.69, 0.7)] + through[1:]
    assert verdict(init_off, 1e-3)[0] == "holds"  # M_0: the init itself, not judged here
    far = [through[0], visit([0], 0.62, 0.61, 0.615, 0.5), through[2]]
    assert verdict(far, 1e-3)[0] == "fails"
    v, ctx = verdict(far, None)
    assert v == "holds" and any("not at a fixed point" in n for n in ctx.notes)


@pytest.mark.parametrize("key,value", [("drop_order", "0,1,2,7"), ("drop_order", "0,1,2,-1"),
                                       ("drop_order", "0.4,1,2,3"), ("drop_order", "0,0,1,2"),
                                       ("minimum_count", "1.4"), ("fixed_point_count", "16.4")])
def test_fixed_points_refuse_a_malformed_prediction(key, value, capsys):
    rc = cli_main(["--quiet", "check", "linattn.separate.fixed-points", "--profile", "quick",
                   "--predict", f"{key}={value}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and key in err[0]


@pytest.mark.slow
def test_scalar_ode_and_controls():
    assert _run("linattn.separate.scalar-ode").verdict == "holds"
    p = theory.paper()
    c_wrong = p.scalar_c(0.1, 1.0, 32)  # N+1 in c
    assert _run("linattn.separate.scalar-ode",
                predict={"escape_time": repr(p.escape_time(0.1, c_wrong, 0.03))}).verdict == "fails"
    assert _run("linattn.separate.scalar-ode", predict={"v_star": repr(p.v_star(0.1, c_wrong))}).verdict == "fails"
    for key, value in (("c", "5"), ("loss_drop", "1.0")):
        assert _run("linattn.separate.scalar-ode", predict={key: value}).verdict == "fails", key
    assert _run("linattn.separate.scalar-ode", {"lambda": 0.3, "v0": 0.05}).verdict == "holds"


@pytest.mark.slow
def test_saddle_to_saddle_and_controls():
    s = {"seeds": 2, "fs_seeds": 1, "P": 4000}
    assert _run("linattn.separate.saddle-to-saddle", s).verdict == "holds"
    assert _run("linattn.separate.saddle-to-saddle", s, {"drop_order": "3,2,1,0"}).verdict == "fails"
    lv = _nplus1_levels([0.4, 0.3, 0.2, 0.1], 31)
    assert _run("linattn.separate.saddle-to-saddle", s, {"plateau_losses": lv}).verdict == "fails"


def test_saddle_to_saddle_user_spectrum_any_order():
    v = _run("linattn.separate.saddle-to-saddle", {"lambdas": "0.12,0.25,0.5", "H": 3, "seeds": 2, "N": 20})
    assert v.verdict == "holds", v.reasons
    assert all(o == [2, 1, 0] for o in v.measured["drop_order"])


@pytest.mark.slow
def test_saddle_to_saddle_other_spectra():
    for setting in ({"lambdas": "5,2,1", "seeds": 1}, {"lambdas": "0.4,0.3", "seeds": 1},
                    {"lambdas": "0.4,0.4,0.1,0.1", "seeds": 1}):
        v = _run("linattn.separate.saddle-to-saddle", setting)
        assert v.verdict == "holds", (setting, v.reasons)
    assert _run("linattn.separate.saddle-to-saddle", {"lambdas": "5,2,1", "seeds": 1},
                {"drop_order": "2,1,0"}).verdict == "fails"


@pytest.mark.slow
def test_near_tie_is_inconclusive_naming_the_pair():
    """Eigenvalues 1e-7 apart cannot be ordered at a finite init: a seed that learns them in
    the 'wrong' order is a near-tie (the swapped-init control reverses it), not a failure."""
    v = _run("linattn.separate.saddle-to-saddle", {"lambdas": "0.3,0.2999999,0.2,0.1", "seeds": 4})
    assert v.verdict in ("holds", "inconclusive"), v.summary()
    ties = [r for r in v.reasons if "near-tie" in r]
    if v.verdict == "inconclusive":
        assert ties and all("e_0 and e_1" in r for r in ties)


def test_large_init_for_the_spectrum_is_inconclusive():
    """λ = 1e4: the default init is not small next to v* = (λc)^{-1/3}: no plateau to test (or
    GD at the step that is stable at the learned point diverges from the large init)."""
    for cid in ("linattn.separate.saddle-to-saddle", "linattn.separate.rank"):
        v = _run(cid, {"lambdas": "1e4,1e3", "seeds": 1})
        assert v.verdict == "inconclusive", v.summary()
        assert any("init not small" in r or "diverged" in r or "not complete" in r for r in v.reasons), v.reasons
    v = _run("linattn.separate.saddle-to-saddle", {"lambdas": "4,1", "w_init": 0.6, "seeds": 1})
    assert v.verdict == "inconclusive" and any("init not small" in r for r in v.reasons), v.reasons


def test_too_short_runs_are_inconclusive_not_errors():
    for cid in ("linattn.separate.saddle-to-saddle", "linattn.separate.rank"):
        v = _run(cid, {"steps": 1, "seeds": 1})
        assert v.verdict == "inconclusive", v.summary()
        assert v.internal_error is None


def test_scalar_ode_out_of_budget_is_inconclusive():
    v = _run("linattn.separate.scalar-ode", {"v0": 1e-9})  # ~1e11 τ plateau: too many GD steps
    assert v.verdict == "inconclusive" and any("GD steps" in r for r in v.reasons)
    v = _run("linattn.separate.scalar-ode", {"lambda": 1, "trace": 1000})  # 999 extra directions
    assert v.verdict == "inconclusive" and any("eigenvalues" in r for r in v.reasons)
    assert all(c.passed for c in v.checks) and len(v.checks) >= 5  # the flow checks still ran


@pytest.mark.slow
def test_rank_structure_and_control():
    v = _run("linattn.separate.rank", {"R": 4, "seeds": 2})
    assert v.verdict == "holds", v.summary()
    assert v.measured["n_plateaus"] == [[2, 2]]
    # more stages than predicted refute the count; stages split finer than predicted refute the size
    assert _run("linattn.separate.rank", {"R": 4}, {"n_plateaus": "1"}).verdict == "fails"
    assert _run("linattn.separate.rank", {"R": 4}, {"stage_size": "8"}).verdict == "fails"
    # fewer, larger stages (heads escaping together) cannot refute the claim: undecided
    assert _run("linattn.separate.rank", {"R": 4}, {"n_plateaus": "8"}).verdict == "inconclusive"
    # eigenvalues 4:2:1 in one head: its followers lag the leader visibly (a clear plateau inside
    # the stage, as long as the lag estimate says): outside the rank-R picture, not a refutation
    v = _run("linattn.separate.rank", {"lambdas": "1,0.5,0.25", "N": 12, "min_rank": 1})
    assert v.verdict == "inconclusive", v.reasons
    assert any("lag its head's leader" in r for r in v.reasons), v.reasons
    assert v.measured["n_plateaus"][0] == [3]


@pytest.mark.slow
def test_rank_one_resolves_every_plateau_of_fig4():
    """Fig. 4 at R = 1: every plateau M_0 … M_7, read at the fine resolution (no followers, the
    solver accurate enough); a count one short of 8 fails."""
    v = _run("linattn.separate.rank", {"R": 1}, profile="standard")
    assert v.verdict == "holds", v.summary()
    assert v.measured["drop_resolution"]["R=1"]["drop_resolution"] == 1e-3
    row = next(c for c in v.checks if c.name.startswith("R=1: clear plateaus at exactly"))
    assert row.measured["plateaus_seen"] == list(range(8)) and row.measured["below_resolution"] == []
    assert _run("linattn.separate.rank", {"R": 1}, {"n_plateaus": "7"}, profile="standard").verdict == "fails"


def test_rank_eight_keeps_the_figure_resolution_for_a_reason():
    """Why R = 8 is read at the figure's 3%: at the fine resolution the last follower's lag is
    a clear plateau of its own (m = 7), in every seed; the judge says which resolution it used."""
    from icltheory.core import measure_claim

    c = get_claim("linattn.separate.rank")
    m = measure_claim(c, c.setting({"R": 8, "profile": "quick"})).values["reading"]
    fine = [{p.m for p in row if p.status == "clear"} for row in m.plateaus_fine]
    coarse = [{p.m for p in row if p.status == "clear"} for row in m.plateaus]
    assert all(7 in f for f in fine) and not any(7 in c_ for c_ in coarse), (fine, coarse)
    v = _run("linattn.separate.rank", {"R": 8})
    assert v.verdict == "holds" and v.measured["drop_resolution"]["R=8"]["drop_resolution"] == 0.03


@pytest.mark.slow
def test_init_scale_and_controls():
    assert _run("linattn.init-scale").verdict == "holds"
    assert _run("linattn.init-scale", predict={"attn_s_loglog_slope": "-2"}).verdict == "fails"
    k = get_claim("linattn.init-scale").constants(get_claim("linattn.init-scale").setting({}))
    assert _run("linattn.init-scale", predict={"attn_m_slope": repr(2 * k["attn_m_slope"])}).verdict == "fails"
    assert _run("linattn.init-scale", predict={"attn_m_drops": "2"}).verdict == "fails"
    assert _run("linattn.init-scale", {"lambdas": "0.4,0.4,0.1,0.1"}).verdict == "holds"


def test_plateau_levels_use_converged_end():
    t = np.geomspace(1, 1e4, 3000)
    u = np.log(t)
    y = 1 - 0.5 / (1 + np.exp(-(u - np.log(30)) / 0.05)) - 0.3 * np.clip((u - np.log(40)) / np.log(250), 0, 1)
    assert len(detect_plateaus(t, y, log_time=True)) == 1
    assert analysis.plateau_levels(t, y, ends_converged=True) == pytest.approx([1.0, y[-1]], abs=1e-3)
    assert len(analysis.plateau_levels(t, y, ends_converged=False)) == 1


def test_softmax_qualitative_and_control():
    v = _run("linattn.softmax.drops")
    assert v.verdict == "holds", v.reasons
    assert v.measured["merged_drops"] == [1, 1] and v.measured["separate_drops"][0] >= 2
    assert _run("linattn.softmax.drops", predict={"merged_drops": "2"}).verdict == "fails"


def test_softmax_several_drops_is_undecided_with_one_learnable_direction():
    """With H·R = 1 either model can show one drop only: "several drops" was judged against a
    required count of 1 and held on a single drop."""
    v = _run("linattn.softmax.drops", {"H": 1})
    assert v.verdict == "inconclusive", v.reasons
    several = next(c for c in v.checks if c.name == "softmax ATTN_S: several drops")
    assert several.passed is None and "H·R = 1" in several.detail


def test_diverging_lr_is_inconclusive_naming_the_step():
    v = _run("linattn.separate.saddle-to-saddle", {"lr": 40, "seeds": 1, "steps": 2000, "w_init": 0.05})
    assert v.verdict == "inconclusive"
    assert any("diverged at step" in r for r in v.reasons)


@pytest.mark.parametrize("args", [
    ["--set", "D=3", "lambdas=0.4,0.3,0.2,0.1"],
    ["--set", "R=5"],
    ["--set", "H=0"],
    ["--set", "lambdas=0.4,0,0.2,0.1"],
    ["--set", "lambdas=0.4,-0.3,0.2,0.1"],
    ["--set", "steps=0"],
    ["--set", "lr=1e-300"],
])
def test_bad_input_exit_2(args, capsys):
    assert cli_main(["check", "linattn.separate.saddle-to-saddle", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "error" in err


def test_bad_predicted_indices_exit_2(capsys):
    args = ["check", "linattn.separate.saddle-to-saddle", "--profile", "quick", "--predict", "drop_order=9,8,7,6"]
    assert cli_main(args) == 2
    assert "drop_order" in capsys.readouterr().err


def test_bad_input_scalar_ode(capsys):
    assert cli_main(["constants", "linattn.separate.scalar-ode", "--set", "v0=5"]) == 2
    assert cli_main(["constants", "linattn.separate.scalar-ode", "--set", "lambda=2"]) == 2
    assert cli_main(["constants", "linattn.separate.rank", "--set", "R=9"]) == 2


@pytest.mark.thorough
def test_paper_settings_standard_profile():
    for cid in ("linattn.separate.saddle-to-saddle", "linattn.separate.scalar-ode", "linattn.separate.rank"):
        assert _run(cid, profile="standard").verdict == "holds"


def test_rank_default_lr_follows_the_same_flow():
    """The rank claim's default step (code lr 0.1 mapped) vs the figure's 0.02: same learning
    times in units of τ to within 1% (R = 8, fast)."""
    lam = np.arange(8, 0, -1) / 36
    times = []
    for lr_code in (0.02, 0.1):
        eta, w = code_to_paper(31, lr_code, 5e-3, 3)
        p = training.init_separate(np.random.default_rng(7), 1, 9, 8, 8, w)
        run = training.separate_population_gd(lam, 31, p, lr=eta, steps=int(math.ceil(8000 / eta)), record_every=5)
        times.append(training.learning_times(run.t, training.learned_fractions(run.M, lam, 31))[0])
    assert np.all(np.isfinite(times[0])) and np.allclose(times[1], times[0], rtol=1e-2)


def test_learned_fractions_in_a_tied_eigenspace():
    """Tied eigenvalues: a head learns any unit vector u of the eigenspace; the fractions there
    are M's own eigenvalues (1 for u, 0 for the rest), not the coordinates u_d² (which can each
    pass ½ for several d once two heads share the space)."""
    lam = np.array([0.4, 0.2, 0.2, 0.2])
    N = 20
    from proofs.linear_attention.experiments import _population as pop

    opt = np.diagonal(pop.population_optimum(lam, N))
    assert training.tied_eigenspaces(lam) == [[1, 2, 3]]
    rng = np.random.default_rng(0)
    U, _ = np.linalg.qr(rng.standard_normal((3, 2)))  # two heads inside the tied space
    M = np.zeros((4, 4))
    M[0, 0] = opt[0]
    M[1:, 1:] = opt[1] * U @ U.T
    frac = training.learned_fractions(M, lam, N)
    assert np.allclose(frac, [1.0, 1.0, 1.0, 0.0], atol=1e-12)
    distinct = np.array([0.4, 0.3, 0.2, 0.1])
    M2 = rng.standard_normal((4, 4))
    assert np.array_equal(training.learned_fractions(M2, distinct, N),
                          np.diagonal(M2) / np.diagonal(pop.population_optimum(distinct, N)))


@pytest.mark.parametrize("seed,spec", [
    (5000, {"D": 4, "N": 24, "H": 2, "lambdas": "0.26894717592099654," * 3 + "0.26894717592099654"}),
    (3279, {"D": 4, "N": 17, "H": 2, "lambdas": "0.20059723642650498,0.17265094861433955,0.15,0.15",
            "w_init": 0.02571281590658235}),
])
def test_fewer_heads_than_directions_tied_or_switching(seed, spec):
    """Found by the random-settings contract test: H = 2 heads, D = 4 with tied eigenvalues.  All
    tied: the learned 2-plane is any plane of the eigenspace; (0.2, 0.17, 0.15, 0.15): the second
    head first learns e_2 (the tied pair's larger initial overlap), then moves on to e_1 — a
    transient, noted, not a third learned direction."""
    c = get_claim("linattn.separate.saddle-to-saddle")
    v = run_check(c, c.setting({"profile": "quick", "seed": seed, "seeds": 1, "fs_seeds": 0, **spec}))
    assert v.verdict == "holds", v.summary()
    if seed == 3279:
        assert any("learned only for a while" in n for n in v.notes), v.notes


@pytest.mark.parametrize("claim_id,seed,spec,why", [
    ("linattn.separate.saddle-to-saddle", 33, {"D": 3, "N": 16, "H": 2,
                                               "lambdas": "0.22313016014842982,0.22871717219503424,0.22313016014842982"},
     "lies in an eigenspace of 2 tied eigenvalues"),
    ("linattn.separate.rank", 9, {"N": 9, "H": 8, "min_rank": 4},
     "learned by the same head(s)"),
    ("linattn.separate.saddle-to-saddle", 219, {"N": 8, "H": 4, "w_init": 0.02, "lr": 0.32, "steps": 15607,
                                                "lambdas": "0.4723665527410147,0.4040365236633421,"
                                                           "0.4040365236633421,0.391605626676799"},
     "was learned after e_"),
    ("linattn.separate.saddle-to-saddle", 500, {"N": 30, "w_init": 0.03140847087603306, "lr": 0.7891950690610644,
                                                "steps": 60917, "integrator": "gd",
                                                "lambdas": "0.32465246735834974,0.36787944117144233,"
                                                           "0.314663961018459,0.32465246735834974"},
     "was learned after e_2"),
])
def test_random_draws_that_were_false_fails(claim_id, seed, spec, why):
    """Settings the contract's random draws (dev profile) or the refutation search once answered
    `fails` at: a tied eigenspace escaping before a nearby larger eigenvalue (its init's
    projection on the whole space drives it); the second direction of a tied eigenspace
    (λ = 0.404, twice) learned after a distinct eigenvalue 3 % below it (λ = 0.392: which
    direction of the space is left is the init's choice); the whole of a tied plane (λ = 0.325,
    twice) learned after a distinct eigenvalue 3 % below it (λ = 0.315; the one-direction swap
    control cannot decide a direction of a tied space); and a rank-4 head's follower lagging
    its leader (N = 9: the stage's eigenvalues 4× apart).  None refutes the claim:
    inconclusive, saying why."""
    c = get_claim(claim_id)
    v = run_check(c, c.setting({"profile": "quick", "seed": seed, "seeds": 1, **spec}))
    assert v.verdict == "inconclusive", v.summary()
    assert any(why in r for r in v.reasons), v.reasons


def test_learning_time_is_the_crossing_that_lasted():
    """A fraction that crosses ½, falls back and crosses again was learned at the second
    crossing; one below ½ at the end was not learned (nan); one that crossed once keeps that
    crossing (linear interpolation between the bracketing records)."""
    t = np.arange(6.0)
    frac = np.array([[[0.0, 0.0, 0.0], [0.6, 0.6, 0.25], [0.4, 0.7, 0.75], [0.8, 0.2, 1.0],
                      [1.0, 0.1, 1.0], [1.0, 0.0, 1.0]]])  # (S=1, T=6, D=3)
    times = training.learning_times(t, frac)[0]
    assert times[0] == pytest.approx(2.25)  # 0.4 at t=2 → 0.8 at t=3
    assert np.isnan(times[1])
    assert times[2] == pytest.approx(1.5)



@pytest.mark.slow
def test_near_tie_learned_in_one_drop_is_not_a_violation():
    """Found by a random draw at the standard profile: λ = 0.15196 and 0.15073 (0.8% apart), three
    heads; in one seed the smaller is learned 1.5% earlier within the same drop and the swap
    control does not reverse it (the heads mix the two directions) — unresolved, not a refutation."""
    c = get_claim("linattn.separate.saddle-to-saddle")
    v = run_check(c, c.setting({"profile": "standard", "seed": 4096, "D": 3, "N": 26, "H": 3, "fs_seeds": 0,
                                "lambdas": "0.1519634554666161,0.5368720709212438,0.15073377329569085"}))
    assert v.verdict == "inconclusive", v.summary()
    assert any("within one drop" in r for r in v.reasons), v.reasons


def test_init_premise_is_checked_before_integrating_and_names_a_w_init_that_meets_it():
    """An init that starts the loss more than half the smallest drop below tr Λ (λ_min = 1e-4
    at the default init) is found from the drawn weights before any flow runs, and the
    w_init the verdict names meets the premise for the same draws (M_0 scales as w_init³)."""
    from icltheory.core import get_claim, judge_claim, measure_claim
    from proofs.linear_attention import experiments as ex
    from proofs.linear_attention.claims import dynamics

    keys = {"profile": "quick", "D": 5, "N": 20, "lambdas": "0.5,0.0594604,0.00707107,0.0008409,0.0001"}
    for cid, extra in (("linattn.separate.saddle-to-saddle", {}), ("linattn.separate.rank", {"w_init": 0.05})):
        c = get_claim(cid)
        s = c.setting(dict(keys, **extra))
        m = measure_claim(c, s)
        assert set(m.values) == {"premise"}, sorted(m.values)
        v = judge_claim(c, s, m)
        assert v.verdict == "inconclusive" and any("found before integrating" in r for r in v.reasons), v.reasons
    s = get_claim("linattn.separate.saddle-to-saddle").setting(keys)
    p0 = ex.training.init_separate(np.random.default_rng(3), 8, s.H, s.R, s.D, s.w_init)
    pre = dynamics._init_premise(s, p0)
    assert pre is not None and pre["deficit"] > pre["limit"]
    w = pre["w_init_suggested"]
    assert 0 < w < s.w_init
    s2 = get_claim("linattn.separate.saddle-to-saddle").setting(dict(keys, w_init=w))
    r = w / s.w_init
    assert dynamics._init_premise(s2, {k: v * r for k, v in p0.items()}) is None
    # the defaults meet it: the flow runs
    c = get_claim("linattn.separate.saddle-to-saddle")
    p_def = ex.training.init_separate(np.random.default_rng(3), 2, 5, 1, 4, c.setting({"profile": "quick"}).w_init)
    assert dynamics._init_premise(c.setting({"profile": "quick"}), p_def) is None
    # an init large against the learned scale starts the loss far *above* tr Λ (λ ~ 1e6 at the
    # default w_init: it ended in "numerical trouble: log(0)"): the premise names it too
    s = c.setting({"profile": "quick", "lambdas": "1e6,1e5,1e4"})
    p0 = ex.training.init_separate(np.random.default_rng(3), 2, s.H, s.R, s.D, s.w_init)
    pre = dynamics._init_premise(s, p0)
    assert pre is not None and -pre["deficit"] > pre["allowed"] == float(np.max(pre["drops"]))
    r = pre["w_init_suggested"] / s.w_init
    s2 = c.setting({"profile": "quick", "lambdas": "1e6,1e5,1e4", "w_init": pre["w_init_suggested"]})
    assert dynamics._init_premise(s2, {k: v * r for k, v in p0.items()}) is None


def _cross_moment_sample(lam, N, P, seed):
    """y_q·f_d = y_q β_d x_{q,d} for P sequences of the experiments' sampler (β = Σ y_n x_n / N)."""
    X, y = data.sample_sequences(P, N, np.diag(lam), np.random.default_rng(seed))
    beta, xq = data.beta_and_query(X, N)
    return y[:, None] * beta * xq


@pytest.mark.parametrize("lam,N", [((0.6, 0.3, 0.1), 2), ((1.0, 0.05), 3), ((0.4, 0.3, 0.2, 0.1), 5)])
def test_cross_moment_error_matches_the_sampler(lam, N):
    """The finite-sample premise's closed form E[y_q² f_d²] = λ_d⁴(1 + P·rse²) against 4e5 draws of
    the sequence sampler, by z-tests per direction at |z| ≤ 4.5 (two-sided ≈ 7e-6 each under the
    normal approximation of the sample mean); two planted slips in the formula (the context's
    n ≠ m pairs counted N² instead of N(N − 1) times; E[a²] with tr Λ² once instead of twice)
    reach |z| > 4.5 at N = 2, so the test can see errors of that size."""
    lam = np.asarray(lam, float)
    yf = _cross_moment_sample(lam, N, 400_000, seed=int(1000 * lam[0]) + N)
    mean, se = (yf**2).mean(0), (yf**2).std(0) / math.sqrt(yf.shape[0])
    pred = lam**4 * (1.0 + popn.cross_moment_rse(lam, N, 1) ** 2)
    assert np.all(np.abs(mean - pred) <= 4.5 * se), ((mean - pred) / se)
    assert np.all(np.abs(yf.mean(0) - lam**2) <= 4.5 * yf.std(0) / math.sqrt(yf.shape[0]))
    if N == 2:
        T, Q, inv = lam.sum(), (lam**2).sum(), 1.0 / N
        first = lam**2 * (T * T + 2 * Q) + 4 * lam**3 * (T + 2 * lam) + 12 * lam**4
        second = lam**3 * (T + 2 * lam) + 6 * lam**4
        for wrong in (inv * first + second,
                      inv * (first - lam**2 * Q) + (1 - inv) * second):
            assert np.max(np.abs(mean - wrong) / se) > 4.5


def test_finite_sample_run_is_skipped_up_front_where_its_training_set_cannot_resolve_a_direction():
    """Simulator (b) needs the training set to pin each learnable direction's driving moment
    λ_d² to better than half its value.  At λ_min = 1e-4 (D = 5, N = 20, P = 80000) the smallest
    direction's relative error is ≈ 7: (b) is left out before anything runs — of the estimate too
    — and the verdict, decided by the population flow alone, says why and which P would do.  At
    the defaults (and at a P large enough) it runs."""
    from proofs.linear_attention.claims import dynamics

    c = get_claim("linattn.separate.saddle-to-saddle")
    assert dynamics._fs_premise(c.setting({"profile": "quick", "fs_seeds": 1})) is None
    keys = {"profile": "quick", "D": 5, "N": 20, "lambdas": "0.5,0.0594604,0.00707107,0.0008409,0.0001",
            "w_init": 0.01, "seeds": 1, "fs_seeds": 1}
    s = c.setting(keys)
    why = dynamics._fs_premise(s)
    assert why is not None and "e_4" in why and "beyond the largest P" in why, why
    assert c.estimate(s).work < c.estimate(c.setting(dict(keys, fs_seeds=0))).work * 1.001
    assert dynamics._fs_premise(c.setting(dict(keys, lambdas="0.5,0.2,0.1,0.06,0.03"))) is None
    v = _run("linattn.separate.saddle-to-saddle", keys)
    assert v.verdict == "holds", (v.reasons, [ch.name for ch in v.checks if not ch.passed])
    assert any(n.startswith("simulator (b) not run") for n in v.notes), v.notes
    assert not any(ch.name.startswith("(b)") for ch in v.checks)


def test_tiny_lambda_min_is_accepted_by_the_flow_with_a_larger_time_unit():
    """λ_min = 1e-6 needs a horizon beyond 1e15 default steps: the adaptive flow (lr only its time
    unit) takes a larger unit instead of refusing; GD at its derived step, or at a step the user
    gave, is beyond reach (no run, inconclusive)."""
    from proofs.linear_attention.settings import STEPS_MAX

    keys = {"D": 5, "N": 20, "lambdas": "0.5,0.0594604,0.00707107,0.0008409,0.000001"}
    for cid in ("linattn.separate.saddle-to-saddle", "linattn.separate.rank"):
        c = get_claim(cid)
        s = c.setting(keys)
        assert s.steps <= STEPS_MAX and s.steps * s.lr >= 0.999 * s.horizon(min(getattr(s, "ranks", [s.R]))), cid
        assert s.lr > c.setting(dict(keys, lambdas="0.5,0.0594604,0.00707107,0.0008409,0.0001")).lr, cid
    c = get_claim("linattn.separate.saddle-to-saddle")
    s = c.setting(dict(keys, integrator="gd"))
    assert s.beyond_reach is not None and "default step for this spectrum" in s.beyond_reach
    # a step the user gave changes nothing (no step GD can take covers it): still beyond reach
    assert c.setting(dict(keys, integrator="gd", lr="0.295")).beyond_reach is not None


def test_a_derived_step_that_cannot_cover_the_horizon_is_beyond_reach_not_bad_input(monkeypatch):
    """λ = 1e6 and 1e-6: the stable step (set by the largest eigenvalue) would need ~1e28 steps
    to cover the slowest direction's horizon.  The values given are valid, so the verdict is
    inconclusive, before any theory is derived or any run made (even with --predict values), the
    step and steps are left unset and the record re-parses to the same refusal; the theory's
    constants and the measurement refuse such a setting rather than run; a step, a code lr or an
    init the user gave is bad input naming that key only when the defaults could be run."""
    from icltheory.core import BeyondReach, SettingError, judge_claim, measure_claim, run_check

    c = get_claim("linattn.merged.fixed-points")
    keys = {"lambdas": "1e6,1e-6"}
    s = c.setting(keys)
    assert s.beyond_reach is not None and s.lr is None and s.steps is None
    assert type(s).parse(s.as_dict()).beyond_reach == s.beyond_reach
    # the report's non-default keys are the user's; the unset derived keys are no difference
    from icltheory.core import non_default_keys

    assert set(non_default_keys(s)) == {"D", "lambdas"}, non_default_keys(s)
    given_lr = c.setting(dict(keys, lr="1e-14"))
    assert given_lr.beyond_reach is not None and non_default_keys(given_lr)["lr"] == 1e-14
    with pytest.raises(BeyondReach, match="^not run: the horizon"):
        c.constants(s)
    m = measure_claim(c, s)
    assert m.reasons and m.reasons[0].startswith("not run: the horizon")
    assert judge_claim(c, s, m).reasons == m.reasons
    called = []
    monkeypatch.setattr(type(c), "derive", lambda self, s: called.append(s))
    v = run_check(c.id, keys)
    assert v.verdict == "inconclusive" and v.reasons[0].startswith("not run: the horizon"), v.reasons
    assert "1e+15" in v.reasons[0] and "default step for this spectrum" in v.reasons[0]
    v = run_check(c.id, keys, predict={"c": "1,1"})
    assert v.verdict == "inconclusive" and not called
    refused = c.setting(dict(keys, lr="1e-14")).beyond_reach
    assert refused is not None  # no step would do, and the reason says so
    assert "no step given could do better" in refused
    assert c.setting({"lambdas": "1,1e-2"}).beyond_reach is None
    with pytest.raises(SettingError, match=r"'lr'.*\(raise lr\)"):  # the default would do
        c.setting({"lambdas": "1,1e-2", "lr": "1e-20"})
    with pytest.raises(SettingError, match="'code_lr'.*given code_lr"):
        get_claim("linattn.separate.drop-times").setting({"code_lr": "1e-20", "profile": "quick"})
    with pytest.raises(SettingError, match="'w_init'"):
        get_claim("linattn.separate.saddle-to-saddle").setting({"w_init": "1e-40", "integrator": "gd"})
    # given values that do not make the difference are not blamed: the spectrum is the cause
    assert c.setting(dict(keys, w_init="1e-2")).beyond_reach is not None
    dt = get_claim("linattn.separate.drop-times")
    s = dt.setting({"lambdas": "1e4,1e-4", "profile": "quick"})
    assert s.beyond_reach is not None and dt.cost(s) is None
    # its own (shorter) run is the one refused, and its record, every derived value written out
    # as if given, re-parses to the same refusal
    assert "8.53e+08 τ" in s.beyond_reach
    assert type(s).parse(s.as_dict()).beyond_reach == s.beyond_reach
    assert dt.setting({"lambdas": "1e4,1e-4", "code_lr": "0.02", "profile": "quick"}).beyond_reach is not None
    # --predict values are still checked as far as they can be without the constants
    from icltheory.core import BadInput

    with pytest.raises(BadInput, match="no predicted constant 'nonsense'"):
        run_check(c.id, keys, predict={"nonsense": "1"})
    with pytest.raises(BadInput, match="not a number"):
        run_check(c.id, keys, predict={"c": "abc"})


def test_beyond_reach_on_the_command_line_answers_at_once(tmp_path):
    """check --predict and constants at a setting beyond reach: one line, exit 3, in a second
    (they computed the theory at 1e15 steps and never returned)."""
    import subprocess
    import sys

    base = [sys.executable, "-m", "icltheory"]
    for args in (["check", "linattn.separate.drop-times", "--set", "lambdas=1e4,1e-4",
                  "--predict", "first_drop_times=1,2", "--profile", "quick"],
                 ["constants", "linattn.separate.drop-times", "--set", "lambdas=1e4,1e-4"]):
        p = subprocess.run(base + args, capture_output=True, text=True, timeout=60)
        assert p.returncode == 3, (args, p.stdout, p.stderr)
        assert "not run: the horizon" in p.stdout + p.stderr and "Traceback" not in p.stderr
    # a parallel report orders its jobs by their work estimates (none here), and a search whose
    # every draw is refused stops at its budget, undecided
    p = subprocess.run(base + ["report", "linattn.separate.drop-times", "linattn.softmax.drops", "--set",
                               "lambdas=1e4,1e-4", "--profile", "quick", "-j", "2", "--quiet",
                               "--out", str(tmp_path / "r")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.count("inconclusive") == 2 and "Traceback" not in p.stderr, \
        (p.stdout, p.stderr)
    p = subprocess.run(base + ["refute", "linattn.separate.drop-times", "--set", "lambdas=1e4,1e-4",
                               "--budget", "3", "--quiet", "--out", str(tmp_path / "x")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 3 and "no draw could be run" in p.stdout and "Traceback" not in p.stderr, \
        (p.stdout, p.stderr)

def test_a_flow_measured_short_of_the_resolution_is_solved_again_at_the_rtol_that_would_do(monkeypatch):
    """At rtol 1e-3 the adaptive flow's re-solve measures an error above the judges' resolution
    ÷ 10; the run is solved again at the rtol the error calls for (1e-5 here: two decades) and
    the verdict reads that run and says so.  Without the second solve the same setting is
    inconclusive, suggesting that rtol."""
    from proofs.linear_attention.claims import dynamics

    v = _run("linattn.separate.saddle-to-saddle", {"rtol": "1e-3"})
    assert v.verdict == "holds", v.summary()
    sim = v.measured["simulator_a"]
    assert sim["rtol"] == 1e-5 and sim["tightened"]["from_rtol"] == 1e-3
    assert any("solved again at rtol 1.0e-05" in n for n in v.notes)
    monkeypatch.setattr(dynamics, "_tighter_rtol", lambda *a: None)
    c = get_claim("linattn.separate.saddle-to-saddle")
    w = run_check(c, c.setting({"rtol": "1e-3"}).with_profile("quick"))  # measured afresh
    assert w.verdict == "inconclusive" and "--set rtol=1e-05" in w.summary(), w.summary()
    assert "tightened" not in w.measured.get("simulator_a", {})


@pytest.mark.parametrize("P, N, D, chunk", [(9000, 6, 3, 4096), (4097, 2, 5, 4096), (50, 4, 2, 7), (1, 1, 1, 4096)])
def test_chunked_sampling_gives_the_one_piece_draws_and_moments(P, N, D, chunk):
    """The sequences drawn chunk by chunk are the one-piece draw's, byte for byte, and so are the
    moments and the growth-rate spread read from them (simulator (b) and the drop-time claim
    never hold every sequence at once); a different generator seed changes them (the comparison
    can fail)."""
    from proofs.linear_attention.experiments import _drop_times as dt

    Lam = np.diag(np.linspace(0.6, 0.1, D))
    X, y = data.sample_sequences(P, N, Lam, np.random.default_rng(3))
    k = 0
    for Xk, yk in data.sequence_chunks(P, N, Lam, np.random.default_rng(3), chunk):
        assert np.array_equal(Xk, X[k:k + len(yk)]) and np.array_equal(yk, y[k:k + len(yk)])
        k += len(yk)
    assert k == P
    a = models.empirical_moments(X, y, chunk=chunk)
    b = models.sampled_moments(P, N, Lam, np.random.default_rng(3), chunk=chunk)
    assert a.C.tobytes() == b.C.tobytes() and a.g.tobytes() == b.g.tobytes() and a.s == b.s
    assert (a.A, a.B, a.D) == (b.A, b.B, b.D)
    other = models.sampled_moments(P, N, Lam, np.random.default_rng(4), chunk=chunk)
    assert other.g.tobytes() != b.g.tobytes()
    if P > 1:
        m, spread = dt._moments_and_spread(np.diag(Lam), N, P, np.random.default_rng(3))
        assert m.C.tobytes() == models.empirical_moments(X, y).C.tobytes()
        assert spread.tobytes() == dt.growth_rate_spread(X, y).tobytes()


def test_mse_change_is_the_difference_of_the_two_losses():
    """The moments' loss change 2Δ·(CΘ − g) + ΔᵀCΔ equals mse(Θ₂) − mse(Θ) where float64 resolves
    the difference (a control: a wrong sign on the linear term would be off by O(1))."""
    mom = models.population_moments([0.4, 0.3, 0.2], 7)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 9)), rng.standard_normal((2, 9))
    direct = mom.mse(b) - mom.mse(a)
    assert np.allclose(mom.mse_change(a, b), direct, rtol=1e-12, atol=1e-14)
    d = b - a
    flipped = -2.0 * np.einsum("si,si->s", d, mom.grad_half(a)) + np.einsum("si,ij,sj->s", d, mom.C, d)
    assert not np.allclose(flipped, direct, rtol=1e-3)


def test_escape_time_is_judged_to_its_measured_solver_error():
    """The escape time's closed form G against the flow and the quadrature: 1e-10 of G (the two
    solvers' measured errors are ≲ 1e-12 of it), so a theory off by 1e-9 fails, where the former
    fixed 1e-8 passed it."""
    import icltheory.testing as itest
    from icltheory.core import PlantedError

    def slightly_late(orig):
        return lambda self, *a, **k: orig(self, *a, **k) * (1.0 + 1e-9)

    claim = get_claim("linattn.separate.scalar-ode")
    v = run_check(claim, {"profile": "quick"})
    assert v.verdict == "holds" and v.measured["escape_time_flow_error"] < 1e-11 * v.predicted["escape_time"]
    err = PlantedError("theory", "the escape time 1e-9 late", "proofs.linear_attention.theory._paper:Paper.escape_time",
                       slightly_late)
    assert itest.run_planted(claim, err).verdict == "fails"


def test_a_plateau_not_expected_clear_that_shows_is_no_refutation():
    """λ = 0.4, 0.37: the first two escapes are too close for M_1 to be expected clear; a seed
    that shows it anyway shows a plateau where the claim puts one (a stage boundary), which
    agrees with the claim (it used to fail the count)."""
    v = run_check("linattn.separate.rank", {"profile": "quick", "seed": 5, "D": 4, "lambdas": "0.4,0.37,0.2,0.1",
                                            "seeds": 4, "R": 1})
    row = next(c for c in v.checks if c.name.startswith("R=1: clear plateaus at exactly"))
    assert row.measured["below_resolution"] == [1] and row.measured["plateaus_seen"] == [0, 1, 2, 3]
    assert row.passed is True and v.verdict == "holds", v.summary()


def test_a_drop_count_that_does_not_reproduce_is_no_refutation():
    """Seed 34 (quick): separate heads show one drop in the first run (two heads escape
    together), but not in the independent repetitions: undecided, not fails."""
    v = run_check("linattn.softmax.drops", {"profile": "quick", "seed": 34})
    row = next(c for c in v.checks if c.name == "softmax ATTN_S: several drops")
    assert row.passed is None and "not in every independent repetition" in row.detail, v.summary()
    assert v.verdict == "inconclusive"
