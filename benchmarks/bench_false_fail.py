"""False-fail rates of the statistical checks on their claims' own nulls.

For every check whose verdict rests on a statistical test, this runs the measurement that feeds
the check — not the whole claim — at the quick profile over many seeds, at the claim's
defaults and at two extreme settings of its schema, judges it with the claim's own code, and
prints per check: the seeds run, how many said ``fails`` and how many were undecided, the
observed false-fail rate, its one-sided 95 % Clopper–Pearson upper bound, and the rate the
check states.  Every setting below is a true instance of its claim, so every ``fails`` counted
is a false fail.

What runs per seed (everything else of the claim is deterministic or judged elsewhere):

* ``linattn.merged.fixed-points`` — the Monte Carlo samples (``monte_carlo``: losses at M = 0,
  e_dᵀββᵀe_d, losses of the trained M, which population GD brings within 1e-14 of the
  optimum; here the experiment's own optimum), judged by ``judge_monte_carlo``;
* ``linattn.separate.fixed-points`` — the Monte Carlo of the top-m fixed points
  (``monte_carlo`` from the experiment's optimum and drops), ``judge_monte_carlo``;
* ``linattn.merged.sigmoid`` — the finite-sample losses (``finite_sample_losses``) of the
  aligned init on P training and the held-out sequences, and of the population optimum on the
  held-out ones (the trained model's held-out loss is ≥ L* with equality at the optimum: the
  test's worst case), with L(σ₀) from the experiment's population loss; ``judge_finite_sample``;
* ``catgd.stationarity`` — the per-pair gradients at θ0 ∈ S on a fresh evaluation batch, and at
  a θ* fitted once per setting (seed 0) on fresh evaluation batches; ``judge_gradient_tests``
  (at θ* only the symmetry-breaking components: the fitted coordinates' null needs a fresh fit
  per seed);
* ``catgd.training`` / ``catgd.depth`` / ``catgd.data-thresholds`` — the models trained once (seed 0), re-evaluated on
  fresh test prompts per seed: a false fail is a refuting confidence bound on the wrong side of
  the models' true mean difference (from 50 × as many prompts), the event the claim's
  false-fail probability bounds;
* ``nonlinear.final-attention`` — the model trained once (seed 0), fresh held-out prompts per
  seed, the exact binomial judgement.

Not covered: ``linattn.separate.drop-times``'s finite-sample tolerance (its false-fail comes
from a modelled sampling spread of full-batch training on P = 80000 sequences, a training run
per seed).

Usage: ``python benchmarks/bench_false_fail.py [--seeds 1000] [--only CLAIM ...] [--setting TEXT]
[--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from icltheory.core import CheckContext, get_claim, mean_bounds  # noqa: E402
from icltheory.core._claim import Run  # noqa: E402

__all__ = ["CASES", "run_case", "clopper_pearson_upper"]


def clopper_pearson_upper(k: int, n: int, level: float = 0.95) -> float:
    """One-sided upper confidence bound on a binomial rate from k of n."""
    return 1.0 if k >= n else float(stats.beta.ppf(level, k + 1, n - k))


def _setting(cid: str, over: dict, seed: int):
    return get_claim(cid).setting({**over, "profile": "quick", "seed": seed})


_CONSTANTS: dict = {}


def _ctx(claim, s) -> CheckContext:
    """A context with the claim's predictions (they do not depend on the seed: computed once per
    setting)."""
    key = (claim.id, repr({k: v for k, v in s.as_dict().items() if k != "seed"}))
    if key not in _CONSTANTS:
        _CONSTANTS[key] = claim.constants(s)
    return CheckContext(predicted=dict(_CONSTANTS[key]), profile="quick", seed=s.seed)


# --------------------------------------------------------------------------- per claim


def _merged_fixed_points(over, seeds):
    from proofs.linear_attention.experiments import _population as pop

    c = get_claim("linattn.merged.fixed-points")
    for seed in seeds:
        s = _setting(c.id, over, seed)
        m = c.monte_carlo(s, Run(s), pop.population_optimum(s.lam, s.N))
        ctx = _ctx(c, s)
        c.judge_monte_carlo(s, ctx.predicted, m, ctx)
        yield ctx.checks


def _separate_fixed_points(over, seeds):
    from proofs.linear_attention.experiments import _population as pop

    c = get_claim("linattn.separate.fixed-points")
    for seed in seeds:
        s = _setting(c.id, over, seed)
        opt = np.diagonal(pop.population_optimum(s.lam, s.N))
        m = c.monte_carlo(s, Run(s), opt, pop.direction_drops(s.lam, s.N))
        ctx = _ctx(c, s)
        c.judge_monte_carlo(s, ctx.predicted, m, ctx)
        yield ctx.checks


def _sigmoid(over, seeds):
    from proofs.linear_attention.experiments import _data as data
    from proofs.linear_attention.experiments import _models as models
    from proofs.linear_attention.experiments import _population as pop

    c = get_claim("linattn.merged.sigmoid")
    for seed in seeds:
        s = _setting(c.id, over, seed)
        run = Run(s)
        D, H = s.D, s.H
        X, _, w = data.sample_sequences_and_tasks(s.P, s.N, np.diag(s.lam), run.rng(8))
        init = c.initial_weights(s, run)
        r_full = np.zeros((1, H, D + 1))
        r_full[0, :, D] = s.w_init * init["rvec"]
        U_full = np.zeros((1, H, D + 1, D))
        U_full[0, :, :D, :] = init["U"][0]
        theta0 = models.MergedHeads(H).theta({"r": r_full, "U": U_full})[0]
        opt = np.zeros((D + 1, D + 1, D))
        opt[D, :D, :] = pop.population_optimum(s.lam, s.N)
        m = c.finite_sample_losses(s, run, X, w, theta0, opt.ravel())
        M0 = models.label_block(theta0, D)
        m["flow_loss"] = pop.population_mse(M0[None], s.lam, s.N)
        ctx = _ctx(c, s)
        c.judge_finite_sample(s, ctx.predicted, m, ctx)
        yield ctx.checks


def _stationarity(over, seeds):
    from proofs.categorical_icl import experiments as ex

    c = get_claim("catgd.stationarity")
    s0 = _setting(c.id, over, 0)
    st = ex.stationarity
    lay = ex.model.layout(s0.d, s0.dprime)
    run0 = Run(s0)
    W = ex.data.embeddings(run0.rng(1), s0.dprime, s0.C, centred=True)
    draw = dict(d=s0.d, dp=s0.dprime, N=s0.N, W_e=W, x_dist=s0.x_dist, task_scale=s0.task_scale)
    theta0 = st.StructuredPoint(np.ones(s0.K), np.ones(s0.K), [np.eye(s0.dprime)] * s0.K)
    fit_batch = ex.data.draw_linear_task_prompts(run0.rng(2), s0.prompts, **draw)
    theta_star, _ = st.fit_structured(lay, W, s0.kernel, fit_batch, theta0, s0.gamma)
    points = [st.FreeParams.from_point(lay, theta0), st.FreeParams.from_point(lay, theta_star)]
    for seed in seeds:
        s = _setting(c.id, over, seed)
        batch = ex.data.draw_linear_task_prompts(Run(s).rng(3), s.prompts, **draw)
        g0, gs = (st.flatten_gradients(st.pair_gradients(lay, W, s.kernel, p, batch)[1]) for p in points)
        ctx = _ctx(c, s)
        c.judge_gradient_tests(s, ctx.predicted, g0, gs, ctx, star_kinds=("off",))
        yield [x for x in ctx.checks if "zero-spread" not in x.name]


def _refuting_bounds(c, over, seeds, pairs, score=None):
    """Models trained once; per seed fresh test prompts; for each (name, statistic, side) the
    refuting bound's miscoverage of the statistic's true mean.  ``score(learner, prompts, xp)``:
    the per-prompt scores the statistics read (default: the exact-label NLL)."""
    from icltheory.backends import get_backend
    from proofs.categorical_icl import experiments as ex
    from proofs.categorical_icl.claims.training import _A

    s0 = _setting(c.id, over, 0)
    m = c.measure(s0, Run(s0))
    xp = get_backend(s0.backend)

    if score is None:
        def score(learner, test, xp):
            return ex.training.evaluate(learner, test, xp=xp)[2]

    def diffs(test):
        nll = {k: score(v, test, xp) for k, v in m["learners"].items()}
        return {name: f(nll) for name, f, _ in pairs}

    big = ex.data.synthetic_dataset(np.random.default_rng(10**9), 50 * s0.prompts, **m["generator"])
    truth = {k: float(np.mean(v)) for k, v in diffs(big).items()}
    for seed in seeds:
        s = _setting(c.id, over, seed)
        test = ex.data.synthetic_dataset(Run(s).rng(3), s.prompts, **m["generator"])
        out = []
        for (name, _, side), (k, d) in zip(pairs, diffs(test).items()):
            b = mean_bounds(d, a_lower=_A, a_upper=_A)
            bad = (b.upper < truth[k]) if side == "upper" else (b.lower > truth[k])
            out.append(_Fake(name, None if not b.ok else not bad, _A))
        yield out


class _Fake:
    """A check record for statistics judged outside a CheckContext."""

    def __init__(self, name, passed, false_fail):
        self.name, self.passed, self.false_fail = name, passed, false_fail


def _training(over, seeds):
    c = get_claim("catgd.training")
    s0 = _setting(c.id, over, 0)
    small, big = (int(v) for v in (s0.train_sizes[0], s0.train_sizes[-1]))
    ratio = float(c.constants(s0)["max_gap_ratio"])
    pairs = [("GD NLL below trained TF at the smallest L (refuting upper bound)",
              lambda n: n[f"TF L={small}"] - n[f"GD L={small}"], "upper"),
             ("gap shrinks (refuting lower bound)",
              lambda n: (n[f"TF L={big}"] - n[f"GD L={big}"]) - ratio * (n[f"TF L={small}"] - n[f"GD L={small}"]),
              "lower")]
    yield from _refuting_bounds(c, over, seeds, pairs)


def _depth(over, seeds):
    c = get_claim("catgd.depth")
    s0 = _setting(c.id, over, 0)
    from proofs.categorical_icl import experiments as ex

    depths = range(s0.K, s0.K_deep + 1)
    # NLL and expected accuracy (ex.training.test_scores, what the claim reads) per added block
    pairs = [p for k in depths[:-1] for p in (
        (f"NLL: {k + 1} blocks below {k} (refuting upper bound)",
         lambda n, k=k: n[f"K={k}"][0] - n[f"K={k + 1}"][0], "upper"),
        (f"accuracy: {k + 1} blocks above {k} (refuting upper bound)",
         lambda n, k=k: n[f"K={k + 1}"][1] - n[f"K={k}"][1], "upper"))]
    yield from _refuting_bounds(c, over, seeds, pairs,
                                score=lambda learner, test, xp: ex.training.test_scores(learner, test, xp=xp))


def _data_thresholds(over, seeds):
    c = get_claim("catgd.data-thresholds")
    s0 = _setting(c.id, over, 0)
    consts = c.constants(s0)
    G, T = consts["gd_converged_by"], consts["tf_matches_from"]
    sizes = [int(v) for v in s0.train_sizes]
    big = sizes[-1]
    pairs = []
    below = [L for L in sizes if L < G]
    if below and big >= G:
        La = below[-1]
        pairs.append((f"GD converged by L={La} (refuting lower bound)",
                      lambda n, La=La: n[f"GD L={La}"] - n[f"GD L={big}"], "lower"))
    for L in sizes:
        if L != T:
            pairs.append((f"TF {'matching' if L > T else 'not matching'} GD at L={L} "
                          f"(refuting {'lower' if L > T else 'upper'} bound)",
                          lambda n, L=L: n[f"TF L={L}"] - n[f"GD L={L}"], "lower" if L > T else "upper"))
    yield from _refuting_bounds(c, over, seeds, pairs)


def _final_attention(over, seeds):
    from scipy import stats

    from icltheory.core import binomial_judge
    from proofs.nonlinear_regression.claims.finite import _ALPHA
    from proofs.nonlinear_regression.experiments import prompts as pr
    from proofs.nonlinear_regression.experiments import runs

    c = get_claim("nonlinear.final-attention")
    s0 = _setting(c.id, over, 0)
    m = c.measure(s0, Run(s0))
    dl = float(c.constants(s0)["delta"])
    for seed in seeds:
        s = _setting(c.id, over, seed)
        test = runs.held_out(m["features"], s.test_prompts, s.N, s.noise, s.task, Run(s).rng(14))
        alpha = pr.per_prompt_attention(test, m["Q"])
        # the claim's premise, as its judge applies it: when too few prompts hold a token of the
        # query's feature for any model to reach the rate, the seed is undecided (inconclusive)
        covered = int(np.sum(test.same.sum(axis=1) > 0))
        if (1 - (1 - 1 / s.K) ** s.N < 1 - dl or s.N < s.K * np.log(s.K / dl)
                or stats.binom.cdf(covered, len(alpha), 1 - dl) <= _ALPHA):
            yield [_Fake("Pr[α ≥ 1 − δ] ≥ 1 − δ (exact binomial)", None, _ALPHA)]
            continue
        j = binomial_judge(int(np.sum(alpha >= 1 - dl)), len(alpha), 1 - dl, _ALPHA)
        yield [_Fake("Pr[α ≥ 1 − δ] ≥ 1 − δ (exact binomial)", j.passed, _ALPHA)]


#: (claim, label, setting overrides, runner)
CASES = [
    ("linattn.merged.fixed-points", "defaults", {}, _merged_fixed_points),
    ("linattn.merged.fixed-points", "D=1, N=1", {"lambdas": "1.0", "N": 1}, _merged_fixed_points),
    ("linattn.merged.fixed-points", "D=2, N=2, 1000 contexts", {"lambdas": "1.0,0.1", "N": 2, "mc_samples": 1000},
     _merged_fixed_points),
    ("linattn.separate.fixed-points", "defaults", {}, _separate_fixed_points),
    ("linattn.separate.fixed-points", "D=1, N=1", {"lambdas": "1.0", "N": 1}, _separate_fixed_points),
    ("linattn.separate.fixed-points", "D=2, N=2, 1000 contexts", {"lambdas": "1.0,0.1", "N": 2, "mc_samples": 1000},
     _separate_fixed_points),
    ("linattn.merged.sigmoid", "defaults", {}, _sigmoid),
    ("linattn.merged.sigmoid", "D=1, N=56, H=1, w=0.0183 (the reported false fail)",
     {"D": 1, "N": 56, "H": 1, "lambdas": "1.0", "w_init": 0.01831563888873418}, _sigmoid),
    ("linattn.merged.sigmoid", "D=1, N=1, H=1, P=100, 100 held out",
     {"D": 1, "N": 1, "H": 1, "lambdas": "1.0", "P": 100, "held_out": 100}, _sigmoid),
    ("catgd.stationarity", "defaults", {}, _stationarity),
    ("catgd.stationarity", "d=2, 100 pairs", {"d": 2, "prompts": 100}, _stationarity),
    ("catgd.stationarity", "cube, rbf, N=1, 100 pairs",
     {"x_dist": "cube", "kernel": "rbf", "N": 1, "prompts": 100}, _stationarity),
    ("catgd.training", "defaults", {}, _training),
    ("catgd.training", "64 test prompts", {"prompts": 64}, _training),
    ("catgd.training", "N=1, 64 test prompts", {"N": 1, "prompts": 64}, _training),
    ("catgd.depth", "defaults", {}, _depth),
    ("catgd.depth", "64 test prompts", {"prompts": 64}, _depth),
    ("catgd.depth", "N=1, 64 test prompts", {"N": 1, "prompts": 64}, _depth),
    ("catgd.data-thresholds", "defaults", {}, _data_thresholds),
    ("nonlinear.final-attention", "defaults", {}, _final_attention),
    ("nonlinear.final-attention", "200 held-out prompts", {"test_prompts": 200}, _final_attention),
    ("nonlinear.final-attention", "N=41 (shortest in the premise), 500 held out", {"N": 41, "test_prompts": 500},
     _final_attention),
    ("nonlinear.final-attention", "N=16 (short prompts, outside the premise)", {"N": 16, "test_prompts": 500},
     _final_attention),
]


ALL = "every statistical check of the seed (union)"


def _family(name: str) -> str:
    """A check's name without the part that varies from seed to seed (its worst component)."""
    return re.sub(r" \(worst: [^)]*\)", "", name)


def run_case(claim: str, over: dict, runner, seeds) -> dict:
    """Per check (family) name: seeds, fails, undecided, the stated false-fail rate; and the
    union over a seed's checks (fails if any failed; stated: the sum of their rates)."""
    rows: dict = defaultdict(lambda: {"seeds": 0, "fails": 0, "undecided": 0, "stated": 0.0})
    for checks in runner(over, seeds):
        seen: dict = {}
        for ch in checks:
            fam = _family(ch.name)
            seen.setdefault(fam, []).append(ch)
        for fam, chs in seen.items():
            r = rows[fam]
            r["seeds"] += 1
            r["fails"] += any(c.passed is False for c in chs)
            r["undecided"] += any(c.passed is None for c in chs) and not any(c.passed is False for c in chs)
            r["stated"] = max(r["stated"], float(sum(c.false_fail for c in chs)))
        u = rows[ALL]
        u["seeds"] += 1
        u["fails"] += any(c.passed is False for c in checks)
        u["undecided"] += any(c.passed is None for c in checks) and not any(c.passed is False for c in checks)
        u["stated"] = max(u["stated"], float(sum(c.false_fail for c in checks)))
    return dict(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--only", nargs="*", default=None, help="claim ids to run")
    ap.add_argument("--setting", default=None,
                    help="run only the settings whose label contains this text")
    ap.add_argument("--json", default=None, help="write the table as JSON here")
    a = ap.parse_args(argv)
    out = []
    print(f"{'claim':<30} {'setting':<44} {'check':<58} {'seeds':>5} {'fails':>5} {'undec.':>6} "
          f"{'rate':>8} {'CP95 up':>8} {'stated':>8}")
    for claim, label, over, runner in CASES:
        if (a.only and claim not in a.only) or (a.setting and a.setting not in label):
            continue
        t0 = time.perf_counter()
        rows = run_case(claim, over, runner, range(a.seeds))
        for name, r in rows.items():
            rate = r["fails"] / r["seeds"]
            up = clopper_pearson_upper(r["fails"], r["seeds"])
            print(f"{claim:<30} {label[:44]:<44} {name[:58]:<58} {r['seeds']:>5} {r['fails']:>5} "
                  f"{r['undecided']:>6} {rate:>8.2g} {up:>8.2g} {r['stated']:>8.2g}", flush=True)
            out.append({"claim": claim, "setting": label, "overrides": over, "check": name, **r,
                        "rate": rate, "cp95_upper": up})
        print(f"# {claim} [{label}]: {time.perf_counter() - t0:.0f} s", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
