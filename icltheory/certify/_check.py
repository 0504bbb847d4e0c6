"""The independent check of a box certificate.

:func:`check_certificate` verifies, with code that shares nothing with the branch and bound
that made the certificate:

(a) coverage — the domain's parameters hold the set to be covered (exact), the boxes partition
    it (:mod:`._coverage`), and every box marked ``outside`` misses the domain (exact);
(b) every other box's bound is at least the quantity's supremum on it — the domain's own
    enclosure (:mod:`._softmax`); where that enclosure is too loose on a box the checker cuts the
    box into pieces itself and checks each (a bounded number of cuts: a piece still undecided
    leaves the certificate undecided, never verified); for a box that stays undecided it looks
    for a point whose certified (arb) value exceeds the box's bound, which refutes it;
(c) the reported bound is at least every box's bound, and the number the caller uses is at
    least ``factor`` × that bound (exact rationals).

The status is ``verified``, ``refuted`` (the certificate is wrong: ``bad`` names the first bad
box and why) or ``undecided`` (the check ran out of its budget: the certificate is unconfirmed).
A certificate whose reported bound is infinite claims nothing: status ``empty``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ._certificate import KINDS, BoxCertificate
from ._coverage import check_partition

__all__ = ["CheckReport", "check_certificate"]

_OUTSIDE = KINDS.index("outside")


@dataclass(frozen=True)
class CheckReport:
    """``status``: verified | refuted | undecided | empty; ``boxes``: leaves checked;
    ``counts`` per kind; ``coverage``: what the coverage check found; ``max_bound``: the
    largest box bound; ``upper``/``reported``: the certificate's claims; ``pieces``: boxes
    the checker enclosed (its own cuts included); ``bad``: the first bad box and why;
    ``seconds``: CPU time of the check; ``factor``: the scale from the certificate's bounds to
    the number used (``reported`` ≥ ``factor`` × ``upper``)."""

    status: str
    boxes: int
    counts: dict
    coverage: str
    max_bound: float
    upper: float
    reported: float
    pieces: int
    seconds: float
    bad: str = ""
    bad_index: int | None = None
    notes: list = field(default_factory=list)
    factor: float = 1.0

    @property
    def ok(self) -> bool:
        return self.status in ("verified", "empty")

    def summary(self, with_time: bool = True) -> str:
        """One line; ``with_time=False`` leaves out the CPU time (for records that must be the
        same bytes at every run)."""
        c = ", ".join(f"{v} {k}" for k, v in self.counts.items() if v)
        if self.status == "empty":
            return "no finite bound certified (nothing to check)"
        head = {"verified": "certificate checked independently",
                "refuted": "certificate REFUTED by the independent check",
                "undecided": "certificate not confirmed by the independent check"}[self.status]
        rel = "≤" if self.max_bound <= self.upper else ">"
        out = (f"{head}: {self.boxes} boxes ({c}), coverage {self.coverage}, max bound "
               f"{self.max_bound:.9g} {rel} reported {self.upper:.9g}; {self.pieces} boxes "
               f"enclosed" + (f" in {self.seconds:.2f} s" if with_time else ""))
        if self.factor != 1.0:  # the bounds are on the certificate's own scale
            out += (f"; the number used, {self.reported:.9g}, is at least {self.factor:.9g} × "
                    f"the reported bound")
        if self.bad:
            out += f"; {self.bad}"
        return out


def check_certificate(cert: BoxCertificate, *, max_pieces: int | None = None,
                      max_depth: int = 8, refute_tries: int = 24, batch: int = 20_000) -> CheckReport:
    """Check ``cert`` (see the module docstring).  ``max_pieces``: the most boxes the checker
    may enclose in all (its own cuts included; default 4 × the leaves + 64); ``max_depth``:
    the most times one leaf may be halved; ``refute_tries``: leaves searched for a refuting
    point when undecided; ``batch``: boxes enclosed per vectorised call."""
    t0 = time.process_time()
    dom = cert.domain
    N = cert.boxes
    counts = cert.counts()
    kind = np.asarray(cert.leaf_kind)
    bounds = np.asarray(cert.leaf_bound, dtype=float)
    lo, hi = np.asarray(cert.leaf_lo, dtype=float), np.asarray(cert.leaf_hi, dtype=float)
    inside = kind != _OUTSIDE
    max_bound = float(np.max(bounds[inside])) if np.any(inside) else -math.inf
    if max_bound != max_bound:
        max_bound = math.inf

    def report(status: str, coverage: str, pieces: int = 0, bad: str = "",
               bad_index: int | None = None, notes: list | None = None) -> CheckReport:
        return CheckReport(status, N, counts, coverage, max_bound, cert.upper, cert.reported,
                           pieces, time.process_time() - t0, bad, bad_index, notes or [],
                           float(cert.factor))

    if not math.isfinite(cert.upper) or not math.isfinite(cert.reported):
        return report("empty", "not checked")
    unknown = (kind < 0) | (kind >= len(KINDS))
    if np.any(unknown):
        i = int(np.flatnonzero(unknown)[0])
        return report("refuted", "not checked", bad=f"leaf {i} has the unknown kind code {int(kind[i])}",
                      bad_index=i)
    # (c) the reported bound against every box bound, and the number used, exactly
    if np.any(np.isnan(bounds[inside])):
        i = int(np.flatnonzero(inside & np.isnan(bounds))[0])
        return report("refuted", "not checked", bad=f"{cert.describe_box(i)} has no bound",
                      bad_index=i)
    over = inside & (bounds > cert.upper)
    if np.any(over):
        i = int(np.flatnonzero(over)[np.argmax(bounds[over])])
        return report("refuted", "not checked",
                      bad=f"the reported bound {cert.upper:.9g} is below the bound of "
                          f"{cert.describe_box(i)}", bad_index=i)
    if Fraction(cert.reported) < cert.factor * Fraction(cert.upper):
        return report("refuted", "not checked",
                      bad=f"the number used, {cert.reported:.9g}, is below {cert.factor} × "
                          f"{cert.upper:.9g}")
    # (a) the domain and the partition
    why = dom.parameters_ok()
    if why:
        return report("refuted", "not checked", bad=f"the domain's parameters: {why}")
    cov = check_partition(dom.regions(), cert)
    if not cov.ok:
        return report("refuted", "FAILED", bad=cov.detail, bad_index=cov.bad_leaf)
    idx_out = np.flatnonzero(~inside)
    if len(idx_out):
        out = dom.outside(lo[idx_out], hi[idx_out])
        if not np.all(out):
            i = int(idx_out[np.flatnonzero(~out)[0]])
            if getattr(dom, "outside_iff", False):
                return report("refuted", "exact", bad=f"{cert.describe_box(i)} is marked "
                                                      "outside but meets the domain", bad_index=i)
            return report("undecided", "exact", bad=f"{cert.describe_box(i)} is marked outside "
                                                    "and the checker cannot confirm it", bad_index=i)
    # (b) every box's bound against the checker's own enclosure, cutting boxes where needed
    cap = max_pieces if max_pieces is not None else 4 * N + 64
    todo = np.flatnonzero(inside)
    pieces, unresolved, first_bad = _bounds_check(dom, lo, hi, bounds, todo, cap, max_depth,
                                                  batch)
    if len(unresolved):
        # look for a refutation: float values at a few points of every undecided box pick the
        # boxes to try; the best points are then certified in arb
        cand = _screen(dom, lo[unresolved], hi[unresolved], bounds[unresolved])
        for j, x in cand[:refute_tries]:
            i = int(unresolved[j])
            val = dom.value_lower(x)
            if val > bounds[i]:
                return report("refuted", "exact", pieces,
                              bad=(f"{cert.describe_box(i)}: the quantity is ≥ {val:.12g} "
                                   f"(certified in arb) at {np.array2string(x, precision=6)}"),
                              bad_index=i)
        i = int(first_bad)
        return report("undecided", "exact", pieces,
                      bad=(f"{len(unresolved)} boxes not confirmed within the checker's budget "
                           f"({cap} enclosures), first {cert.describe_box(i)}"),
                      bad_index=i)
    return report("verified", "exact", pieces)


def _bounds_check(dom: Any, lo: np.ndarray, hi: np.ndarray, bounds: np.ndarray,
                  todo: np.ndarray, cap: int, max_depth: int, batch: int):
    """Enclose every listed box; cut the ones whose enclosure exceeds their bound (halving the
    widest coordinate, scaled) until they are confirmed, the depth limit, or the budget.
    Returns (boxes enclosed, unresolved leaf indices, the first of them)."""
    scale = dom.widths()
    plo, phi, owner = lo[todo], hi[todo], todo.copy()
    depth = np.zeros(len(todo), np.int64)
    pieces = 0
    failed: set[int] = set()
    while len(owner):
        if pieces + len(owner) > cap:
            failed.update(int(i) for i in owner)
            break
        scored = hasattr(dom, "enclose_scored")
        parts = [dom.enclose_scored(plo[s:s + batch], phi[s:s + batch]) if scored else
                 (dom.enclose(plo[s:s + batch], phi[s:s + batch]), None)
                 for s in range(0, len(owner), batch)]
        ub = np.concatenate([p[0] for p in parts])
        score = np.concatenate([p[1] for p in parts]) if scored else None
        pieces += len(owner)
        bad = ~(ub <= bounds[owner])
        if not np.any(bad):
            break
        deep = bad & (depth >= max_depth)
        failed.update(int(i) for i in owner[deep])
        cut = bad & ~deep
        clo, chi, cown, cdep = plo[cut], phi[cut], owner[cut], depth[cut]
        csc = score[cut] if score is not None else None
        keep = ~np.isin(cown, np.fromiter(failed, dtype=np.int64, count=len(failed)))
        clo, chi, cown, cdep = clo[keep], chi[keep], cown[keep], cdep[keep]
        w = (chi - clo) / scale
        if csc is not None:  # cut where the quantity changes most (never a flat side)
            w = np.where(chi > clo, csc[keep] + 1e-300 * w, -1.0)
        k = np.argmax(w, axis=1)
        r = np.arange(len(k))
        m = np.clip(0.5 * (clo[r, k] + chi[r, k]), clo[r, k], chi[r, k])
        ahi, blo = chi.copy(), clo.copy()
        ahi[r, k] = m
        blo[r, k] = m
        plo = np.concatenate([clo, blo])
        phi = np.concatenate([ahi, chi])
        owner = np.concatenate([cown, cown])
        depth = np.concatenate([cdep + 1, cdep + 1])
    unresolved = np.array(sorted(failed), dtype=np.int64)
    return pieces, unresolved, (unresolved[0] if len(unresolved) else None)


def _screen(dom: Any, lo: np.ndarray, hi: np.ndarray, bounds: np.ndarray, k: int = 64):
    """(box index, point) pairs where the quantity's float value exceeds the box's bound,
    largest relative excess first: each box's centre, two corners and ``k`` seeded random
    points."""
    rng = np.random.default_rng(0)
    N, D = lo.shape
    pts = [0.5 * (lo + hi), lo, hi] + [lo + (hi - lo) * rng.random((N, D)) for _ in range(k)]
    P = np.stack(pts, axis=1)  # (N, k + 3, D)
    with np.errstate(all="ignore"):
        vals = dom.value_float(P.reshape(-1, D)).reshape(N, -1)
    vals = np.where(np.isfinite(vals), vals, -np.inf)
    j = np.argmax(vals, axis=1)
    best = vals[np.arange(N), j]
    with np.errstate(invalid="ignore"):
        # a box bounded by −inf (the quantity nowhere defined on it) is refuted by any finite value
        excess = np.where(np.isneginf(bounds), np.where(np.isfinite(best), np.inf, -np.inf),
                          (best - bounds) / np.maximum(np.abs(bounds), 1e-300))
    order = [int(i) for i in np.argsort(-excess, kind="stable") if excess[i] > 0]
    return [(i, P[i, j[i]]) for i in order]
