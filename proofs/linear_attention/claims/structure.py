"""Separate key/query structure (ATTN_S): the 2^D fixed points."""

from __future__ import annotations

from itertools import combinations

import numpy as np

from icltheory.core import Claim, Cost, PlantedError, Prediction, lazy_module
from icltheory.core import sample_moments

from ..settings import FixedPointSetting
from ._common import ARXIV, same_eigenvalues
from ._planted import (C_N_PLUS_1, C_SLIGHTLY_LARGE, EIGEN_ORDER_REVERSED, EXPERIMENTS, MOMENTS_N_PLUS_1,
                       MOMENTS_SLIGHTLY_LARGE)

theory = lazy_module("proofs.linear_attention.theory")
ex = lazy_module("proofs.linear_attention.experiments")

__all__ = ["SeparateFixedPoints"]

_ALPHA = 9.99e-4  # family-wise significance of the mean tests (under 1e-3 also after rounding)


#: what linattn.separate.fixed-points runs (the report's "What was run")
_SEPARATE_FIXED_POINTS_RUN = (
    "No training: the fixed points are built and probed on the exact population loss of ATTN_S's relevant block (the "
    "experiment's own moments, no theory). Each of the $2^D$ subsets $S$ is realised by $\\max(H,D)$ rank-1 heads, "
    "one per direction $d\\in S$ with a random unbalanced split of $v\\,k\\,q=m^\\star_d$ (the learned value, from a "
    "numerical solve of the normal equations); read from it: its largest gradient entry (stationary or not), its "
    "loss, and whether a small head along an unlearned direction lowers the loss (at the full set: whether any of 20 "
    "random perturbations does); per direction, the distinct non-negative roots of its balanced one-head flow (a "
    "degree-5 polynomial fitted to the model's gradient) count the fixed points. Compared with the theory: $2^D$ "
    "fixed points and one minimum, the lowest loss and its set at each size $m$ against Eq. 19 and the predicted "
    "top-$m$ sets, and the drops $\\lambda_d/c_d$ and $c_d$; and, sampled apart, `mc_samples` contexts per top-$m$ "
    "fixed point with $\\Lambda$ in a Haar-random eigenbasis (each context's loss averaged exactly over its query), "
    "their means tested against Eq. 19.")


class SeparateFixedPoints(Claim):
    id = "linattn.separate.fixed-points"
    title = "ATTN_S has 2^D fixed points in function space, one per learned subset; only the full set is a minimum"
    source = f"{ARXIV}, §5 (fixed points of ATTN_S; Eq. 19 for the plateau losses)"
    provenance = "third-party summary of the paper"
    statement = (
        r"\tau\dot v_i=\langle E,K_i^\top Q_i\rangle,\ \tau\dot K_i=v_iQ_iE^\top,\ \tau\dot Q_i=v_iK_iE,"
        r"\ E=\Lambda^2-\mathbb E[\beta\beta^\top]M\Lambda,\ M=\sum_iv_iK_i^\top Q_i;\ "
        r"\text{fixed points }M_S=\sum_{d\in S}\frac{e_de_d^\top}{\lambda_dc_d},\ S\subseteq\{1..D\},"
        r"\ L(M_S)=\operatorname{tr}\Lambda-\sum_{d\in S}\frac{\lambda_d}{c_d};\ "
        r"L(\mathcal M_m)=\operatorname{tr}\Lambda-\sum_{d=1}^m\frac{\lambda_d}{1+(1+\operatorname{tr}\Lambda/\lambda_d)/N}"
        r"\ (\text{Eq. 19});\ S=\{1..D\}\text{ the only minimum, all others saddles}"
    )
    setting_type = FixedPointSetting
    predictions = {
        "plateau_losses": Prediction("Eq. 19: L(M_m) for m = 0..D (top m directions learned)"),
        "plateau_losses_exact": Prediction("Eq. 19 in exact rationals", informational=True),
        "drop_sizes": Prediction("λ_d/c_d along the drop order"),
        "fixed_point_count": Prediction("number of fixed points in function space: 2^D", kind="count"),
        "minimum_count": Prediction("how many of them are minima: 1", kind="count"),
        "c": Prediction("c_d = 1 + (1 + tr Λ/λ_d)/N"),
        "drop_order": Prediction("eigen-indices by decreasing eigenvalue (the top-m sets of Eq. 19)", kind="order"),
    }
    planted_errors = (
        EIGEN_ORDER_REVERSED, C_N_PLUS_1, MOMENTS_N_PLUS_1, C_SLIGHTLY_LARGE, MOMENTS_SLIGHTLY_LARGE,
        PlantedError("measurement", "the experiment's eigen-order (for the Monte Carlo top-m sets) reversed",
                     f"{EXPERIMENTS}._population:decreasing",
                     lambda orig: (lambda values: orig(values)[::-1])),
    )

    def constants(self, s) -> dict:
        p = theory.paper()
        levels = p.plateau_levels(s.lambdas, s.N)
        return {"plateau_losses": levels, "plateau_losses_exact": p.plateau_levels_exact(s.lambdas, s.N),
                "drop_sizes": [levels[m] - levels[m + 1] for m in range(s.D)],
                "fixed_point_count": 2**s.D, "minimum_count": 1,
                "c": p.c(s.lambdas, s.N).tolist(), "drop_order": p.order(s.lambdas)}

    def derive(self, s):
        p = theory.paper()
        return p.view("ATTN_S population loss, flow equations and the 2^D fixed points",
                      p.population.derivation, p.separate.derivation)

    def estimate(self, s) -> Cost:
        D = s.D
        n = s.mc_samples
        # the Monte Carlo: per context N·D Gaussian draws (≈ 40 flop-equivalents each) and their
        # product with Λ^{1/2}
        return Cost(work=2.0**D * (D**4 * 40 + 2e4) + (D + 1) * n * (s.N * D * (40 + 2 * D) + D * D),
                    memory=8.0 * 20_000 * s.N * D * 3 + 8.0 * 2**D * 4,
                    what=f"2^{D} subsets, {D + 1} × {n} Monte Carlo contexts")

    def measure(self, s, run) -> dict:
        D, N, lam = s.D, s.N, s.lam
        opt = np.diagonal(ex.population.population_optimum(lam, N))
        drops = ex.population.direction_drops(lam, N)
        out = {"opt": opt, "drops": drops, "roots": [self._roots(lam, N, d, opt[d]) for d in range(D)]}
        mom = ex.models.population_moments(lam, N)
        H = max(s.H, D)
        model = ex.models.SeparateHeads(H, 1)
        rng = run.rng(1)
        losses, stationary, minima, worst = {}, 0, 0, 0.0
        subsets = [S for m in range(D + 1) for S in combinations(range(D), m)]
        for k, S in enumerate(subsets):
            p = {"r": np.zeros((1, H, 1)), "K": np.zeros((1, H, 1, D)), "Q": np.zeros((1, H, 1, D))}
            for h, i in enumerate(S):
                # a random *unbalanced* realisation v·k·q = m*_i: stationarity must not need balance
                a, b = np.exp(rng.uniform(-0.5, 0.5, 2))
                p["r"][0, h, 0], p["K"][0, h, 0, i], p["Q"][0, h, 0, i] = opt[i] / (a * b), a, b
            th = model.theta(p)
            g = model.pullback(p, mom.grad_half(th), mom)
            gn = max(float(np.max(np.abs(x))) for x in g.values())
            pmax = max(float(np.max(np.abs(x))) for x in p.values())
            scale = float(lam.max()) ** 2 * max(1.0, pmax) ** 2
            worst = max(worst, gn / scale)
            stationary += gn < 1e-13 * scale
            losses[S] = float(mom.mse(th)[0])
            free = [j for j in range(D) if j not in S]
            if free:  # a small head along an unlearned direction must lower the loss
                j, h = free[0], len(S)
                q = {n: v.copy() for n, v in p.items()}
                e = 0.05 * opt[j] ** (1 / 3)
                q["r"][0, h, 0], q["K"][0, h, 0, j], q["Q"][0, h, 0, j] = e, e, e
                minima += float(mom.mse_change(th, model.theta(q))[0]) >= 0.0  # the change, not two losses
            else:  # all learned: no random perturbation may lower the loss
                ok = True
                for _ in range(20):
                    q = {n: v * (1 + 1e-3 * rng.standard_normal(v.shape)) + 1e-3 * rng.standard_normal(v.shape)
                         for n, v in p.items()}
                    ok &= float(mom.mse(model.theta(q))[0]) >= losses[S] - 1e-14 * float(lam.sum())
                minima += ok
            if k % 64 == 0:
                run.tick(0.5 * k / len(subsets), "fixed points of every subset")
        out.update(losses=losses, stationary=stationary, minima=minima, worst_gradient=worst)
        out.update(self.monte_carlo(s, run, opt, drops))
        return out

    @staticmethod
    def monte_carlo(s, run, opt, drops) -> dict:
        """The moments of the per-context losses (each averaged exactly over its query) of the
        top-m fixed points M_m, m = 0..D, in a Haar-rotated eigenbasis (``opt``: the learned
        value of each direction, ``drops``: its loss drop, from the experiment)."""
        D, N, n = s.D, s.N, s.mc_samples
        rot = ex.data.haar_rotation(D, run.rng(2))
        Lam = ex.data.covariance(s.lam, rot)
        top = ex.population.decreasing(drops)
        mc = []
        for m in range(D + 1):
            Md = np.zeros(D)
            Md[top[:m]] = opt[top[:m]]
            l = ex.data.bilinear_predictor_losses((rot * Md) @ rot.T, Lam, N, n, run.rng(3, m))
            mc.append(sample_moments(l))  # n, mean, s.e., skewness, kurtosis (not the n samples)
            run.tick(0.5 + 0.5 * (m + 1) / (D + 1), "Monte Carlo of the top-m fixed points")
        return {"mc": mc, "mc_n": n}

    @staticmethod
    def judge_monte_carlo(s, pred, m, ctx) -> None:
        """Mean tests of the top-m fixed points' Monte Carlo losses against Eq. 19 (family-wise
        level 9.99e-4, Bonferroni over D + 1)."""
        D = s.D
        for k, mo in enumerate(m["mc"]):
            ctx.ztest(f"Monte Carlo L(M_{k}) (rotated Λ, n={m['mc_n']})", judges=("plateau_losses",),
                      predicted=pred["plateau_losses"][k], mean=mo.mean, stderr=mo.stderr, n=mo.n,
                      skew=mo.skewness, kurtosis=mo.kurtosis, alpha=_ALPHA, m_tests=D + 1,
                      why=f"{mo.n} i.i.d. contexts (each context's loss averaged exactly over its query): "
                          f"two-sided test at family-wise significance {_ALPHA:g} (Bonferroni over {D + 1})")

    @staticmethod
    def _roots(lam, N: int, d: int, opt_d: float) -> int:
        """Distinct non-negative real roots of the experiment's balanced flow of direction d
        (a degree-5 polynomial in v, fitted exactly through 8 points on v ∈ (0, 2 m*^{1/3}])."""
        rate = ex.flows.balanced_rate(lam, N, d)
        vs = opt_d ** (1 / 3)
        u = np.linspace(0.25, 2.0, 8)
        y = np.array([rate(x * vs) for x in u])
        coef = np.polyfit(u, y / np.max(np.abs(y)), 5)
        roots = np.roots(coef)
        real = sorted(float(r.real) for r in roots if abs(r.imag) < 1e-6 and r.real > -1e-6)
        return len([r for k, r in enumerate(real) if k == 0 or r - real[k - 1] > 1e-6])

    def judge(self, s, pred, m, ctx) -> None:
        ctx.note(_SEPARATE_FIXED_POINTS_RUN)
        D, lam = s.D, s.lam
        bad = [x for x in pred["drop_order"] if not (float(x).is_integer() and 0 <= x < D)]
        if bad or sorted(int(x) for x in pred["drop_order"]) != list(range(D)):
            from icltheory.core import BadInput

            raise BadInput(f"--predict drop_order: a permutation of the eigen-indices 0..{D - 1}, "
                           f"got {list(pred['drop_order'])}")
        for key in ("fixed_point_count", "minimum_count"):
            if not float(pred[key]).is_integer():
                from icltheory.core import BadInput

                raise BadInput(f"--predict {key}: a count is a whole number, got {pred[key]}")
        scale = float(lam.sum())
        count = int(np.prod(m["roots"]))
        ctx.close("fixed points in function space: Π_d (roots of direction d's balanced flow)",
                  key="fixed_point_count", measured=count, atol=0.5,
                  why="distinct non-negative real roots (to 1e-6) of each direction's flow polynomial, "
                      "fitted from the model's gradient; directions are independent")
        ctx.close("every subset's realisation is stationary", key="fixed_point_count", measured=m["stationary"],
                  atol=0.5, why="the largest gradient entry of a random unbalanced realisation of each M_S is "
                                "< 1e-13 × its scale λ_max²·max(1, |θ|)² (float64 rounding is ~1e-16 of it)")
        ctx.close("local minima among them (perturbation test)", key="minimum_count", measured=m["minima"],
                  atol=0.5, why="at every M_S ≠ M_all a head of 0.05·v* along an unlearned direction lowers "
                                "the loss; at M_all 20 random relative perturbations of 1e-3 must not")
        losses = m["losses"]
        po = [int(round(x)) for x in pred["drop_order"]]
        best, sets, ok_order = [], [], True
        for k in range(D + 1):
            size_k = {S: v for S, v in losses.items() if len(S) == k}
            S = min(size_k, key=size_k.get)
            best.append(size_k[S])
            sets.append(list(S))
            want = tuple(sorted(po[:k]))
            if not same_eigenvalues(lam, S, want) and not (
                    want in size_k and abs(size_k[want] - size_k[S]) <= 1e-12 * scale):
                ok_order = False
        ctx.close("Eq. 19: the lowest fixed point with m directions learned", key="plateau_losses",
                  measured=best, rtol=1e-10, atol=1e-12 * scale,
                  why="population loss of every realised M_S (the experiment's moments) against the float64 "
                      "value of the exact expression: rounding ~1e-15")
        ctx.condition("the lowest fixed points learn the predicted top-m sets", ok_order, key="drop_order",
                      measured=sets, why="Eq. 19's M_m learns the first m directions of the predicted order "
                                         "(sets of equal eigenvalues, or of equal loss to 1e-12, are interchangeable)")
        ctx.close("drop sizes λ_d/c_d along the predicted order", judges=("drop_sizes", "drop_order"),
                  predicted=pred["drop_sizes"], measured=[float(m["drops"][d]) for d in po], rtol=1e-10,
                  atol=1e-12 * scale, why="each direction's drop from the experiment's moments, float64")
        ctx.close("c_d = 1/(λ_d m*_d) from the experiment's minimiser", key="c", measured=1.0 / (lam * m["opt"]),
                  rtol=1e-10, why="numerical solve of the normal equations: relative error ~1e-15 × condition")
        self.judge_monte_carlo(s, pred, m, ctx)
        ctx.measure("plateau_losses", best)
        ctx.measure("mc_plateau_losses", [mo.mean for mo in m["mc"]])
        ctx.measure("fixed_point_count", count)
        ctx.measure("minimum_count", m["minima"])
        ctx.measure("max_relative_gradient_at_fixed_points", m["worst_gradient"])
