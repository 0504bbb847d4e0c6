r"""Reading a training run: learning times, plateaus and the saddles they visit (no theory).

* **Learning time** of eigen-direction $d$: the first time its learned fraction
  $M_{dd}/m^\star_d$ reaches ½ ($m^\star$: the minimiser of the experiment's population loss).
* **Visits.**  Plateaus are found blind (:func:`icltheory.dynamics.detect_plateaus`, log time)
  on the run's population-loss curve.  At each plateau's slowest point (closest approach to a
  fixed point) the *learned set* $S$ is the set of directions with fraction ≥ ½; the visited
  saddle is $M_S=\sum_{d\in S}m^\star_de_de_d^\top$, its loss $L(M_S)$ is computed from the
  experiment's moments, and the *deviation* $|L(M(t^\ast))-L(M_S)|$ says how close the
  trajectory came to it; the loss at the plateau's start and end is recorded too.
* **Plateaus between learning times**: the stretch between the m-th and (m+1)-th learning
  time is a clear plateau, absent or unresolved by the descent rate in log time
  (:func:`icltheory.dynamics.plateaus_between_events`: flat for ≥ 2 × the drops' width and ≥ 0.1 in ln t, drops
  ≥ 3% of the loss range).
* **Order violations**: pairs $\lambda_i>\lambda_j$ where $j$ was learned first.
* **Head ownership** (rank-$R$ heads): each learned direction belongs to the head with the
  largest $|v_i\sum_rK_{ird}Q_{ird}|$.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icltheory.dynamics import detect_plateaus, plateaus_between_events, slowest_point, threshold_times

from . import _population as pop
from . import _training as training
from ._training import Run

__all__ = ["Visit", "RunReading", "read_run", "order_violations", "head_groups", "plateau_levels",
           "local_maxima", "descent_phases", "settled", "order_controls"]


@dataclass
class Visit:
    """A detected plateau: its span, the loss at its slowest point, the learned set there, the
    loss of that saddle and the trajectory's distance from it (in loss)."""

    start: float
    end: float
    time: float
    level: float
    learned: tuple[int, ...]
    saddle_loss: float
    deviation: float
    #: the loss at the plateau's start and end (the record curve interpolated in ln t)
    span_levels: tuple[float, float] = (float("nan"), float("nan"))

    def as_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "time": self.time, "level": self.level,
                "learned": list(self.learned), "saddle_loss": self.saddle_loss,
                "deviation": self.deviation, "span_levels": list(self.span_levels)}


@dataclass
class RunReading:
    times: np.ndarray  # (S, D) learning times (nan: not learned)
    order: list[list[int]]  # per row, directions by learning time
    visits: list[list[Visit]]  # per row
    initial_loss: np.ndarray  # (S,)
    drops: np.ndarray  # (D,) the loss drop of each direction (experiment's moments)
    path: list[list[float]]  # per row, the saddle losses after 0, 1, … directions learned
    #: per row, the stretch between consecutive learning times m and m+1 (m = 1 … n−1): clear,
    #: absent or unresolved plateau (:func:`icltheory.dynamics.plateaus_between_events`)
    plateaus: list[list] | None = None
    #: per row, (direction, time) of crossings of ½ that did not last (the fraction fell back
    #: below ½: a head moved on to another direction); ``times`` holds the crossings that did
    transient: list[list[tuple[int, float]]] | None = None
    #: ``plateaus`` read again at a finer drop resolution (``read_run``'s ``fine_drop``), or None
    plateaus_fine: list[list] | None = None


def read_run(run: Run, lam, N: int, fine_drop: float | None = None) -> RunReading:
    """The run read blind: learning times and order, plateau visits and their saddles, and
    between consecutive learning times whether the loss shows a plateau — with the plateau
    reader's drop resolution of 3% of the loss range, and again at ``fine_drop`` (a fraction of
    the range; None: not read) for a curve whose accuracy supports it."""
    lam = np.asarray(lam, float)
    D = lam.size
    frac = training.learned_fractions(run.M, lam, N)
    times = training.learning_times(run.t, frac)
    if run.solver is not None and "events" in run.solver:  # adaptive flow: located on the dense output
        times = np.asarray(run.solver["events"], float)
        transient = [[(int(d), float(x)) for d, x in u] for u in run.solver.get("undone", [[]] * times.shape[0])]
    else:  # records: crossings of ½ that did not last
        first = threshold_times(run.t, np.swapaxes(frac, 1, 2), [0.5])[..., 0]
        transient = [[(d, float(first[k, d])) for d in range(D)
                      if np.isfinite(first[k, d]) and not first[k, d] == times[k, d]]
                     for k in range(times.shape[0])]
    opt = np.diagonal(pop.population_optimum(lam, N))
    keep = run.t > 0
    t = run.t[keep]
    orders, visits = [], []
    for k in range(run.loss.shape[0]):
        tk = times[k]
        orders.append([int(i) for i in np.argsort(np.where(np.isfinite(tk), tk, np.inf), kind="stable")
                       if np.isfinite(tk[i])])
        y = run.loss[k, keep]
        row = []
        for p in (detect_plateaus(t, y, log_time=True) if t.size >= 5 else []):
            i = slowest_point(t, y, p, log_time=True)
            i = int(np.argmin(np.abs(t - 0.5 * (p.start + p.end)))) if i is None else i
            S = tuple(int(d) for d in np.flatnonzero(frac[k, keep][i] >= 0.5))
            MS = np.zeros((D, D))
            MS[list(S), list(S)] = opt[list(S)]
            saddle = float(pop.population_mse(MS, lam, N))
            ends = tuple(float(x) for x in np.interp(np.log([p.start, p.end]), np.log(t), y))
            row.append(Visit(p.start, p.end, float(t[i]), float(y[i]), S, saddle, abs(float(y[i]) - saddle), ends))
        visits.append(row)
    drops = pop.direction_drops(lam, N)
    base = float(pop.population_mse(np.zeros((D, D)), lam, N))
    path = [list(base - np.concatenate([[0.0], np.cumsum(drops[o])])) for o in orders]
    plateaus = [plateaus_between_events(run.t, run.loss[k], times[k]) for k in range(run.loss.shape[0])]
    fine = (None if fine_drop is None else
            [plateaus_between_events(run.t, run.loss[k], times[k], min_drop=fine_drop)
             for k in range(run.loss.shape[0])])
    return RunReading(times, orders, visits, run.loss[:, 0].copy(), drops, path, plateaus, transient, fine)


def order_violations(times: np.ndarray, lam) -> list[tuple[int, int]]:
    """Pairs (i, j) with λ_i > λ_j where j was learned first (or only j was learned)."""
    lam = np.asarray(lam, float)
    out = []
    for i in range(lam.size):
        for j in range(lam.size):
            if lam[i] > lam[j] and np.isfinite(times[j]) and not (times[i] <= times[j]):
                out.append((i, j))
    return out


def head_groups(run: Run, row: int, times, *, share: float) -> list[list[int]]:
    """For one row: the learning stages — the learned directions grouped by the heads that
    learned them.  At each direction's learning time every head carrying ≥ ``share`` of
    Σ_i |v_i Σ_r K_ird Q_ird| took part; heads that took part in the same direction escaped
    together, so directions linked through such heads form one stage.  Stages come in order of
    their first learned direction, directions in learning order."""
    times = np.asarray(times, float)
    learned = [int(d) for d in np.argsort(np.where(np.isfinite(times), times, np.inf), kind="stable")
               if np.isfinite(times[d])]
    parent: dict = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for d in learned:
        i = min(int(np.searchsorted(run.t, times[d])), len(run.t) - 1)
        contrib = np.abs(run.heads[row, i, :, d])
        for h in np.flatnonzero(contrib >= share * max(float(contrib.sum()), 1e-300)):
            parent[find(("h", int(h)))] = find(("d", d))
    groups: dict = {}
    for d in learned:
        groups.setdefault(find(("d", d)), []).append(d)
    return list(groups.values())


def plateau_levels(t, y, *, ends_converged: bool) -> list[float]:
    """The levels of the detected plateaus (log time), in order; when the run is known to end
    converged, its final value is the last level (added unless the last plateau already sits
    there, within the detector's min_drop of 3% of the range)."""
    levels = [float(p.level) for p in detect_plateaus(t, y, log_time=True)]
    if ends_converged and (not levels or abs(levels[-1] - y[-1]) > 0.03 * float(np.ptp(y))):
        levels.append(float(y[-1]))
    return levels



def local_maxima(x) -> list[int]:
    """Indices of the interior local maxima of x: samples above the sample before and the first
    different sample after; a flat top (equal samples) counts once, at its middle (rounded
    down)."""
    x = np.asarray(x, float)
    out, i, n = [], 1, x.size
    while i < n - 1:
        if x[i - 1] < x[i]:
            j = i + 1
            while j < n - 1 and x[j] == x[i]:
                j += 1
            if x[j] < x[i]:
                out.append((i + j - 1) // 2)
                i = j
                continue
        i += 1
    return out


def descent_phases(t, y, *, grid: int = 600, smooth: int = 7, valley: float = 0.5) -> list[float]:
    """The loss's descent in log time, split into phases.  The curve is first replaced by its
    running minimum (training progress: a transient spike of GD is not a drop); on a uniform grid
    of ln t its descent rate −dy/d ln t (moving average over ``smooth`` points) is split at the
    minima between its peaks, keeping only minima where the rate falls below ``valley`` × the
    lower of the two neighbouring peaks (a real slowdown between two drops, not a wobble in one
    broad descent).  Returns the fraction of the total descent y(t₀) − min y lost in each phase."""
    u = np.log(np.asarray(t, float))
    y = np.minimum.accumulate(np.asarray(y, float))
    uu = np.linspace(u[0], u[-1], grid)
    yy = np.interp(uu, u, y)
    rate = np.convolve(-np.gradient(yy, uu), np.ones(smooth) / smooth, mode="same")
    peaks = local_maxima(rate)
    cuts = [0]
    while len(peaks) > 1:  # merge the pair of neighbouring peaks with the shallowest valley between
        dips = [(float(rate[a:b].min()) / max(min(rate[a], rate[b]), 1e-300), i) for i, (a, b) in enumerate(zip(peaks, peaks[1:]))]
        depth, i = min(dips, key=lambda x: -x[0])
        if depth < valley:
            break
        peaks.pop(i if rate[peaks[i]] < rate[peaks[i + 1]] else i + 1)
    cuts += [int(a + np.argmin(rate[a:b])) for a, b in zip(peaks, peaks[1:])] + [grid - 1]
    span = max(float(yy.max() - yy.min()), 1e-300)
    return [float(yy[a] - yy[b]) / span for a, b in zip(cuts, cuts[1:])]


def settled(lam, N: int, n_learn, settle: float):
    """A stop rule: every row has learned its ``n_learn`` directions (an int, or one per row) and
    the run has gone on ``settle`` × the last learning time since."""
    def stop(run: Run) -> bool:
        times = training.learning_times(run.t, training.learned_fractions(run.M, lam, N))
        n = np.sum(np.isfinite(times), axis=1)
        if np.any(n < np.broadcast_to(n_learn, n.shape)):
            return False
        last = np.nanmax(times, axis=1)
        return bool(np.all(run.t[-1] >= (1.0 + settle) * last))

    return stop


def order_controls(lam, N: int, params: dict, times: np.ndarray, *, lr: float, steps: int, n_learn,
                   settle: float, check_every: int, tick=None, flow: dict | None = None,
                   margin: float = 10.0) -> list[dict]:
    """For every row and every pair λ_i > λ_j learned in the wrong order, re-run the row with the
    init of directions i and j swapped; returns, per row, {(i, j): the direction learned first in
    the control (None: neither, or not resolved)}.  With ``flow`` (keyword arguments of
    :func:`~._flows.separate_population_flow`) the controls integrate the gradient flow instead
    of running GD; a control whose two learning times differ by no more than ``margin`` × its
    measured event-time error (ln t, from the flow's accuracy re-solve) is not resolved (None)."""
    out: list[dict] = [{} for _ in range(times.shape[0])]
    jobs = [(k, i, j) for k in range(times.shape[0]) for i, j in order_violations(times[k], lam)]
    if not jobs:
        return out
    rows = [k for k, _, _ in jobs]
    pc = training.swap_directions(params, rows, [(i, j) for _, i, j in jobs])
    stop = settled(lam, N, np.broadcast_to(n_learn, (times.shape[0],))[rows], settle)
    if flow is not None:
        from . import _flows as flows

        nl = np.broadcast_to(n_learn, (times.shape[0],))[rows]
        rc = flows.separate_population_flow(lam, N, pc, n_learn=nl, settle=settle, tick=tick, **flow)
    else:
        rc = training.separate_population_gd(lam, N, pc, lr=lr, steps=steps, stop=stop, check_every=check_every,
                                             tick=tick)
    tc = training.learning_times(rc.t, training.learned_fractions(rc.M, lam, N))
    acc = rc.solver.get("accuracy") if rc.solver is not None else None
    for r, (k, i, j) in enumerate(jobs):
        ti, tj = tc[r, i], tc[r, j]
        first = i if np.isfinite(ti) and not ti > tj else j if np.isfinite(tj) else None
        if acc is not None and first is not None:
            gap = abs(float(np.log(ti / tj))) if np.isfinite(ti) and np.isfinite(tj) else np.inf
            if not gap > margin * acc["event_error"][r]:
                first = None
        out[k][(i, j)] = first
    return out
