"""Shared pieces of the softmax-regression claims: planted-error factories, judging helpers
(the certified bound path and float bound checks) and cost estimates."""

from __future__ import annotations

import math


from icltheory.core import Cost, lazy_module

theory = lazy_module("proofs.softmax_regression.theory")
bnb = lazy_module("proofs.softmax_regression.bnb")

PKG = "proofs.softmax_regression"
_SLACK = 1e-9
_SLACK_WHY = ("observed ≤ bound·(1+1e-9): the observed ratio is a float64 computation from "
              "cancellation-free differences (expm1 of ΔM = A1(X−Y)A2ᵀ), relative error ≲ 1e-11 "
              "for any R and ‖x−y‖")
ASSUMPTIONS_TEX = (r"\ \text{for }\lVert A_1\otimes A_2\rVert\le R,\ \lVert x\rVert,\lVert y\rVert"
                    r"\le R,\ \lVert b_j\rVert_2\le1")


# --------------------------------------------------------------------------- planted errors


def temperature(orig):
    """A row softmax at temperature ½ (logits doubled)."""
    return lambda M: orig(2.0 * M)


def logits_doubled(orig):
    return lambda A1, A2, X: 2.0 * orig(A1, A2, X)


def other_loss(orig):
    """The certified evaluation uses the other loss's gradient (a mixed-up loss argument)."""
    def wrong(A1, A2, B, X, Y, loss):
        return orig(A1, A2, B, X, Y, "rescaled" if loss == "normalized" else "normalized")
    return wrong


def drop_projection(orig):
    """P without its −f⟨f, c⟩ term (the softmax Jacobian's rank-one part forgotten)."""
    def wrong(F, B):
        import sympy as sp

        return sp.Matrix(F.rows, F.cols, lambda j, k: F[j, k] * (F[j, k] - B[j, k]))
    return wrong


def bound_tenth(orig):
    return lambda: orig() / 10


def bound_quarter(orig):
    return lambda: orig() / 4


# --------------------------------------------------------------------------- judging helpers


def upper_check(ctx, name: str, key: str, log_observed: float, what: str) -> float:
    """Record 'max observed ≤ predicted[key]' (float, relative slack 1e-9); returns the
    tightness observed/predicted."""
    pred = float(ctx.predicted[key])
    lp = math.log(pred) if pred > 0 else -math.inf
    lo = float(log_observed)
    tight = math.exp(min(lo - lp, 700.0)) if math.isfinite(lo) and math.isfinite(lp) else 0.0
    passed = lo <= lp + _SLACK if math.isfinite(lo) else (None if math.isnan(lo) else True)
    ctx.condition(name, passed, key=key, measured=math.exp(lo) if lo < 700 else math.inf,
                  why=f"{what}; {_SLACK_WHY}", detail=f"tightness {tight:.3g}")
    return tight


def lower_check(ctx, name: str, key: str, log_observed: float, what: str) -> None:
    pred = float(ctx.predicted[key])
    lp = math.log(pred) if pred > 0 else -math.inf
    lo = float(log_observed)
    ctx.condition(name, lo >= lp - _SLACK, key=key, measured=math.exp(lo),
                  why=f"{what}; {_SLACK_WHY}",
                  detail=f"bound/observed {math.exp(min(lp - lo, 700)):.3g}")


def witness_bound(ctx, name: str, key: str, m, proved_upper: float, what: str) -> None:
    """The certified path: the witness's arb-certified ratio against predicted[key]."""
    c = ctx.bound(name, key=key, certified_lower=float(m["witness_lower"]),
                  proved_upper=proved_upper,
                  why=(f"{what}: its ratio is certified in ball arithmetic at its exact float "
                       "inputs and it is certified to lie inside the assumptions; a value below "
                       "it is refuted, a value at or above the proved bound of the derivation "
                       "is covered by the proof"),
                  witness=None if m["witness_inside"] else "witness membership not certified")
    if c.passed is False:
        ctx.evidence[f"counterexample_{key}"] = m["witness"]


#: the branch and bound runs for n ≤ this (its lowered gradient grows fast with n)
BNB_MAX_N = 6


def bnb_upper(s, loss: str, stop: float | None = None) -> float:
    """The branch-and-bound certified upper bound; inf (no certificate: the closed forms
    decide) when the setting allows no boxes, n > BNB_MAX_N, or its cost is over the
    profile's budget.  ``stop``: a candidate constant — the search ends as soon as the bound is
    ≤ it (or a point value shows it cannot be)."""
    if not bnb_runs(s, loss):
        return math.inf
    return bnb.certified_upper(loss, s.n, float(s.R), int(s.bnb_boxes), stop).upper


def bnb_runs(s, loss: str) -> bool:
    """Whether the setting runs the branch and bound (boxes allowed, n ≤ BNB_MAX_N, its cost
    within the profile's budget)."""
    from icltheory.core import BUDGETS

    return bool(s.bnb_boxes) and s.n <= BNB_MAX_N and bnb_cost(s, loss) <= BUDGETS[s.profile][0]


def bnb_derivation_check(ctx, s, loss: str, key: str) -> None:
    """When the branch and bound runs, its reduction (theory_hessian) must be verified."""
    if bnb_runs(s, loss):
        th = bnb.theory_hessian
        derivations = [th.reduced_hessian(loss, s.n).derivation]
        if loss == "normalized" and s.n >= 2:  # the eigenvalue (pencil) form bounds it
            derivations.append(th.reduced_matrix(s.n).derivation)
        ok = all(d.ok for d in derivations)
        ctx.condition("reduction to the logits verified (branch-and-bound objective)", ok,
                      predicted="all steps verified",
                      measured={k: sum(d.summary()[k] for d in derivations)
                                for k in ("verified", "refuted", "undecided")}, judges=(key,),
                      why="the certified upper bound is the sup over the logits of this "
                          "derivation's form (for the normalized loss: the largest |eigenvalue| "
                          "of its pencil), lowered to interval arithmetic")


def best_proved(s, loss: str, terms, stop: float | None = None) -> float:
    """The best proved upper bound on the gradient's Lipschitz constant at the setting: the
    derivation's closed forms and the branch-and-bound certificate (aimed at ``stop``, a
    candidate constant, when given)."""
    th = theory.theory()
    return min([th.upper(t, s.n, s.R) for t in terms] + [bnb_upper(s, loss, stop)])


def bnb_cost(s, loss: str) -> float:
    """≈ flop-equivalents of the branch and bound: its box budget × one box's work for the
    loss (:func:`.settings.bnb_box_work`); 0 when it does not run."""
    from .settings import bnb_box_work

    if not s.bnb_boxes or s.n > BNB_MAX_N:
        return 0.0
    return float(s.bnb_boxes) * bnb_box_work(s.n, loss)


def bnb_memory(s) -> float:
    """≈ bytes of the branch and bound: the frontier (two corners and a bound per box, at most
    one box per box evaluated, ×3 for the copies made when it is split) and the
    second-order forms of one chunk (≈ 350 MB at most: the chunk shrinks as n grows; measured
    peak resident size 180 MB at n = 4, 350 MB at n = 6, the process included)."""
    if not s.bnb_boxes or s.n > BNB_MAX_N:
        return 0.0
    return 3.5e8 + 3 * 8.0 * (4 * max(s.n, 2)) * float(s.bnb_boxes)


def witness_cost(s) -> float:
    """≈ flop-equivalents of the explicit-witness maximisation (BFGS with finite differences
    on the numeric logit Hessian: ~3n evaluations per iteration, each ~5e4)."""
    n = max(s.n, 2)
    return float(s.witness_starts) * max(40, 1600 // n) * (3 * n + 1) * (5e4 + 40 * n ** 3)


def search_cost(n: int, d: int, samples: int, refine: int, maxiter: int, what: str) -> Cost:
    dim = 2 * n * d + 1 + 2 * d * d + n * n
    per = 40.0 * (n * n * d + n * d * d + d ** 3) + 10.0 * n ** 3
    evals = samples * 3 + refine * maxiter * (dim + 1) * 3
    return Cost(work=evals * per + samples * (n * n * d ** 4 + d ** 6),
                memory=8.0 * samples * (dim + n ** 3 + d ** 4) * 12,
                what=what)


