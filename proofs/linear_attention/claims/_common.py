"""What the linear-attention claims share: the citation, tolerances' reasons, work estimates,
and the judgements of a learning order and of the saddles a run visits."""

from __future__ import annotations

import numpy as np

from icltheory.core import Plot, Series

__all__ = ["ARXIV", "IDENTITY_WHY", "beta_divisor", "ROW_STEP_WORK", "SOLVER_MARGIN", "STEP_WORK", "max_rel_error", "plot_indices", "same_eigenvalues",
           "judge_order", "judge_visits", "judge_path_levels", "loss_plot", "steps_work"]

ARXIV = "arXiv 2501.16265 (Zhang, Singh, Latham, Saxe, ICML 2025)"

#: why an exact algebraic identity evaluated in float64 is judged at 1e-10 relative
IDENTITY_WHY = ("exact algebraic identity evaluated in float64: rounding error of sums of O(N·D²) "
                "terms is ~1e-14 relative; 1e-10 leaves four orders of margin")

#: a solver's measured error (the difference to its re-solve at 10× tighter tolerances) must be at
#: least this many times below the resolution the judges read its result at: the difference
#: estimates the error only to within a factor of a few (it assumes the error shrinks with the
#: tolerance; measured on Figs. 3 and 4 it falls 8–10× per decade of rtol)
SOLVER_MARGIN = 10.0

#: flop-equivalents of one Python-level GD step (interpreter and numpy call overhead ≈ 20 µs at
#: the ≈ 1e9 flop-equivalents per second the profiles' budgets assume)
STEP_WORK = 2e4
#: flop-equivalents per seed row and step of the batched population GD loops that record their
#: loss (ATTN_M on population moments, ATTN_S's population GD): ≈ 45 µs per row-step measured at
#: D = 4 (``benchmarks/bench_estimates.py``); their flop counts take over at large D
ROW_STEP_WORK = 4.5e4


def steps_work(steps: float, per_step_flops: float) -> float:
    """Work of a GD loop: each step costs its flops or the per-step overhead, whichever is more."""
    return float(steps) * max(float(per_step_flops), STEP_WORK)


def beta_divisor(N: int) -> float:
    """The d of β = Σ_n y_n x_n / d, read off the theory's in-context statistic at this N: the
    statistic of N unit pairs, exactly, is N / d (taken as it is, not rounded to a simple
    fraction, so a normalisation off by a few parts in 10¹⁰ reaches the 1e-10 checks)."""
    import sympy as sp
    from importlib import import_module

    stat = import_module("proofs.linear_attention.theory._equivalence").context_statistic(
        sp.ones(1, N), sp.ones(N, 1), N)[0]
    return float(sp.Integer(N) / stat)


def max_rel_error(a, b) -> float:
    """max |a − b| / max |a| (0 when both vanish)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = float(np.max(np.abs(a))) if a.size else 0.0
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    return 0.0 if err == 0.0 else err / max(scale, 1e-300)


def plot_indices(n: int, k: int = 1500, *, log: bool = False) -> np.ndarray:
    """At most ~k indices into a curve of n points (half geometric with ``log``)."""
    if n <= k:
        return np.arange(n)
    lin = np.linspace(0, n - 1, k if not log else k // 2).astype(int)
    if not log:
        return np.unique(lin)
    return np.unique(np.concatenate([np.geomspace(1, n - 1, k // 2).astype(int), lin, [0]]))


def same_eigenvalues(lam, A, B) -> bool:
    """Do the direction sets A and B hold the same eigenvalues (exact ties are interchangeable)?"""
    lam = np.asarray(lam, float)
    return sorted(lam[list(A)]) == sorted(lam[list(B)])


#: a direction of a tied eigenspace is not ordered against a distinct eigenvalue within this
#: relative gap below it: their escape times (∝ 1/λ²) then differ by at most 23 %, less than the
#: spread of a random init's overlaps with the directions, which decides such an order
TIED_NEAR_GAP = 0.1


def _tied_near(a: int, b: int, lam) -> bool:
    """Whether e_a lies in an eigenspace of tied eigenvalues and λ_b is within
    :data:`TIED_NEAR_GAP` below λ_a: learned after e_b, its order is the init's choice (the space
    escapes with the init's projection on all of it, and which of its directions comes first or
    is left for later is the init's choice too), and the one-direction swap control cannot
    decide it."""
    tied = [d for d in range(len(lam)) if d != a and abs(lam[d] - lam[a]) <= 1e-12 * abs(lam[a])]
    return bool(tied) and (1.0 - TIED_NEAR_GAP) * lam[a] <= lam[b] <= lam[a]


def judge_order(ctx, label: str, times, predicted_order, lam, controls: dict, *,
                pairs=None, plateaus=None, sim: str = "") -> None:
    """Judge a learning order against ``predicted_order`` (key ``drop_order``).

    A pair (a before b predicted) is violated when b was learned first.  Exactly tied
    eigenvalues are not ordered by the claim; b inside an eigenspace of tied eigenvalues learned
    before a is inconclusive (the init's projection on that whole space drives its escape), and
    so is a inside one when λ_b is within :data:`TIED_NEAR_GAP` below λ_a (:func:`_tied_near`); so
    is a violated pair learned within one drop (``plateaus``, the run's
    :func:`~icltheory.dynamics.plateaus_between_events`: every stretch between their learning
    times absent — the two directions escaped together, their order is not resolved).  For a violated pair with λ_a > λ_b the
    experiment re-ran the seed with the init of the two directions swapped (``controls[(a, b)]``
    = the direction learned first then): if a then comes first, the init — not the eigenvalue
    gap — decided the order (a near-tie at this init scale): inconclusive, naming the pair.
    ``pairs`` restricts the judged pairs (rank-R heads: pairs in different stages)."""
    lam = np.asarray(lam, float)
    po = [int(round(x)) for x in predicted_order]
    mult = [int(np.sum(np.abs(lam - x) <= 1e-12 * abs(x))) for x in lam]
    rank = {int(d): i for i, d in enumerate(np.argsort(np.where(np.isfinite(times), times, np.inf), kind="stable"))
            if np.isfinite(times[d])}
    status = {p.m: p.status for p in plateaus} if plateaus else {}

    def one_drop(a: int, b: int) -> bool:  # b learned first, a later: no stretch between them is a plateau
        i, j = rank.get(b), rank.get(a)
        return (i is not None and j is not None and bool(status)
                and all(status.get(m) == "absent" for m in range(i + 1, j + 1)))

    bad, ties, spaces, together = [], [], [], []
    for ia in range(len(po)):
        for ib in range(ia + 1, len(po)):
            a, b = po[ia], po[ib]
            if abs(lam[a] - lam[b]) <= 1e-12 * abs(lam[b]) or (pairs is not None and (a, b) not in pairs):
                continue
            ta, tb = times[a], times[b]
            if not np.isfinite(tb) or (np.isfinite(ta) and ta <= tb):
                continue
            ctl = controls.get((a, b))
            if mult[b] > 1 or (mult[a] > 1 and _tied_near(a, b, lam)):
                spaces.append((a, b))
            elif ctl == a:
                ties.append((a, b))
            elif one_drop(a, b):
                together.append((a, b))
            elif ctl is None and (a, b) in controls:
                ties.append((a, b))
            else:
                bad.append((a, b))
    for a, b in ties:
        ctx.inconclusive(f"{label}: e_{a} and e_{b} (λ = {lam[a]:.7g}, {lam[b]:.7g}) are a near-tie at this "
                         f"init: e_{b} was learned first, and with their init swapped e_{a} is — the init, "
                         "not the eigenvalue gap, decided their order")
    for a, b in spaces:
        if mult[b] > 1:
            ctx.inconclusive(f"{label}: e_{b} (λ = {lam[b]:.7g}) lies in an eigenspace of {mult[b]} tied eigenvalues and "
                             f"was learned before e_{a} (λ = {lam[a]:.7g}): a head escapes into that space with its "
                             "init's projection on the whole space (larger than on one direction), so the order against "
                             "a nearby larger eigenvalue can follow the init; the one-direction swap control does not "
                             "apply (the paper's spectra are distinct)")
        else:
            ctx.inconclusive(f"{label}: e_{a} (λ = {lam[a]:.7g}) lies in an eigenspace of {mult[a]} tied eigenvalues and "
                             f"was learned after e_{b} (λ = {lam[b]:.7g}, within {TIED_NEAR_GAP:.0%} below): the space "
                             "escapes with its init's projection on all of it, and within it any basis is an "
                             "eigenbasis, so which of its directions comes first or is left for later is the init's "
                             "choice; against an eigenvalue this close the order follows the init, and the "
                             "one-direction swap control does not apply (the paper's spectra are distinct)")
    for a, b in together:
        ctx.inconclusive(f"{label}: e_{b} (λ = {lam[b]:.7g}) was learned just before e_{a} (λ = {lam[a]:.7g}) within one "
                         f"drop (t = {times[b]:.5g} and {times[a]:.5g}, no plateau between them): the two escaped "
                         "together, so their order is not resolved (and the swap control did not reverse it)")
    ties += spaces + together
    learned = [int(i) for i in np.argsort(np.where(np.isfinite(times), times, np.inf), kind="stable")
               if np.isfinite(times[i])]
    ctx.condition(f"{label}: drop order", False if bad else (None if ties else True), key="drop_order",
                  measured=learned,
                  why="a direction predicted later must not be learned first (learned: fraction of its "
                      "learned value ≥ ½); a violation whose order follows the init when the two "
                      "directions' init is swapped is a near-tie, not a violation" + sim,
                  detail=(f"violations (predicted earlier, learned later): {bad}" if bad else
                          f"near-ties decided by the init: {ties}" if ties else ""))


def judge_visits(ctx, label: str, visits, predicted_levels, predicted_order, lam, drops, *, sim: str = "",
                 level_tol: float | None = None, level_why: str = "") -> None:
    """Judge the saddles a run visited (plateaus at L(M_m), key ``plateau_losses``).

    A visit is attributable when the trajectory came within half the smallest drop of its
    saddle M_S (closer to it than to any neighbouring fixed point).  For an attributable visit
    whose learned set S holds the top |S| eigenvalues of the predicted order, the saddle's loss
    (experiment's moments) must equal L(M_|S|) to float64 rounding.  The sizes |S| must not
    decrease along the run.

    With ``level_tol`` (a run of the population loss itself, whose loss curve is accurate to
    it; ``level_why`` says why) the trajectory is judged too: on every plateau after the first
    (M_0 is the initialisation, the premise's) whose learned set is the predicted top |S|, L(M_|S|)
    must lie within the loss the run spans over the plateau, [L(end) − tol, L(start) + tol] — a
    flow passing a saddle comes down to its level while flat and leaves below it.  A flat stretch
    far from every saddle is then judged as well, not merely noted."""
    lam = np.asarray(lam, float)
    gap = 0.5 * float(np.min(drops))
    scale = float(np.sum(lam))
    po = [int(round(x)) for x in predicted_order]
    if level_tol is not None:
        for v in visits:
            m = len(v.learned)
            if m == 0 or not same_eigenvalues(lam, v.learned, po[:m]):
                continue
            hi, lo = v.span_levels
            target = float(predicted_levels[m])
            ok = bool(lo - level_tol <= target <= hi + level_tol)
            miss = max(lo - target, target - hi, 0.0)
            ctx.condition(f"{label}: the plateau at t = {v.time:.4g} τ passes L(M_{m})", ok,
                          judges=("plateau_losses",), predicted=target,
                          measured={"loss at the plateau's start": hi, "at its end": lo,
                                    "at its slowest point": v.level},
                          why=f"Eq. 19's level within the loss the run spans over the plateau, ± {level_tol:.2g}: "
                              + level_why, tolerance=level_tol,
                          margin=(-miss / level_tol + 1.0 if level_tol > 0 else None))
    near = [v for v in visits if v.deviation < gap]
    far = [v for v in visits if v.deviation >= gap]
    if far and level_tol is None:
        ctx.note(f"{label}: {len(far)} flat stretch(es) not at a fixed point (loss {[round(v.level, 5) for v in far]} "
                 f"more than half the smallest drop from the nearest saddle) — not judged")
    if not near:
        ctx.inconclusive(f"{label}: no plateau came within half the smallest drop of a fixed point")
        return
    sizes = [len(v.learned) for v in near]
    for v in near:
        m = len(v.learned)
        if not same_eigenvalues(lam, v.learned, po[:m]):
            continue  # a different set: the order check decides
        ctx.close(f"{label}: plateau at t = {v.time:.4g} τ is L(M_{m})", judges=("plateau_losses",),
                  predicted=float(predicted_levels[m]), measured=v.saddle_loss, rtol=1e-10,
                  atol=1e-12 * scale,
                  why="the saddle M_S visited (S: the directions learned at the plateau's slowest point, "
                      f"the trajectory {v.deviation:.2g} from it in loss) has the loss of Eq. 19; both "
                      "sides are float64 evaluations of exact expressions (rounding ~1e-15)")
    ctx.condition(f"{label}: plateaus visited in order M_0 → M_1 → …", all(b >= a for a, b in zip(sizes, sizes[1:])),
                  predicted="non-decreasing m", measured=sizes,
                  why="saddle-to-saddle: a later plateau never sits at an earlier fixed point" + sim)


def judge_path_levels(ctx, label: str, times, saddle_losses, predicted_levels, predicted_order, lam) -> None:
    """Eq. 19 along the run's learning path: after its first k learned directions (measured
    order) the run is at the saddle whose loss ``saddle_losses[k]`` the experiment computed;
    where those k directions hold the top k eigenvalues of the predicted order, that loss must
    be L(M_k) (key ``plateau_losses``, every k the run reached)."""
    lam = np.asarray(lam, float)
    order = [int(d) for d in np.argsort(np.where(np.isfinite(times), times, np.inf), kind="stable")
             if np.isfinite(times[d])]
    po = [int(round(x)) for x in predicted_order]
    ks = [k for k in range(len(order) + 1) if same_eigenvalues(lam, order[:k], po[:k])]
    scale = float(np.sum(lam))
    ctx.close(f"{label}: the saddles on the learning path are L(M_k), k = {ks}", judges=("plateau_losses",),
              predicted=[float(predicted_levels[k]) for k in ks], measured=[float(saddle_losses[k]) for k in ks],
              rtol=1e-10, atol=1e-12 * scale,
              why="the loss of M_S for S the first k directions learned (the experiment's moments) against the "
                  "float64 value of Eq. 19 (rounding ~1e-15); paths that leave the predicted order are the "
                  "order check's to judge")


def loss_plot(title: str, t, loss, levels, labels, caption: str, annotations=(), max_series: int = 6) -> Plot:
    idx = plot_indices(len(t), log=True)
    keep = idx[np.asarray(t)[idx] > 0]
    series = [Series(np.asarray(t)[keep], np.asarray(loss)[k, keep], labels[k], alpha=0.85)
              for k in range(min(len(labels), max_series))]
    return Plot(title=title, xlabel="t / τ", ylabel="loss (plain MSE)", series=series,
                hlines=[(float(v), f"L(M_{m})") for m, v in enumerate(levels)],
                annotations=list(annotations), logx=True, caption=caption)
