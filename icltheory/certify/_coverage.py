"""Exact coverage: the certificate's boxes partition the domain's regions.

Two exact checks, with no arithmetic on coordinates (floats compared exactly, volumes of the few
initial boxes as Fractions):

* the initial boxes cover every region: clipped to a region they are pairwise disjoint up to
  their boundaries and their volumes add up to the region's;
* the splits form a binary partition tree over the initial boxes — every split cuts a box that
  already exists (and is cut once) at a value inside its range, the halves being that box with
  one end replaced by the cut — and its leaves are exactly the certificate's leaves, with the
  same corners.  A union of two halves is their parent exactly, so the leaves tile the initial
  boxes.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = ["CoverageResult", "check_partition"]


@dataclass(frozen=True)
class CoverageResult:
    ok: bool
    detail: str
    bad_leaf: int | None = None  # index into the certificate's leaves


def _volume(lo: np.ndarray, hi: np.ndarray, dims: np.ndarray) -> Fraction:
    v = Fraction(1)
    for k in dims:
        v *= Fraction(float(hi[k])) - Fraction(float(lo[k]))
    return v


def _roots_cover(regions: list[tuple[np.ndarray, np.ndarray]], rlo: np.ndarray,
                 rhi: np.ndarray) -> str | None:
    """None if the initial boxes cover every region exactly, else what is wrong."""
    for ri, (glo, ghi) in enumerate(regions):
        glo, ghi = np.asarray(glo, dtype=float), np.asarray(ghi, dtype=float)
        free = np.flatnonzero(glo < ghi)
        flat = np.flatnonzero(glo == ghi)
        # initial boxes meeting the region with positive volume in its free coordinates
        meet = np.all(rlo[:, flat] <= glo[flat], axis=1) & np.all(rhi[:, flat] >= ghi[flat], axis=1)
        meet &= np.all(np.minimum(rhi[:, free], ghi[free]) > np.maximum(rlo[:, free], glo[free]),
                       axis=1)
        idx = np.flatnonzero(meet)
        clo = np.maximum(rlo[idx][:, free], glo[free])
        chi = np.minimum(rhi[idx][:, free], ghi[free])
        for a in range(len(idx)):  # pairwise disjoint interiors
            over = np.all(np.maximum(clo[a], clo[a + 1:]) < np.minimum(chi[a], chi[a + 1:]), axis=1)
            if np.any(over):
                b = a + 1 + int(np.flatnonzero(over)[0])
                return f"initial boxes {int(idx[a])} and {int(idx[b])} overlap in region {ri}"
        total = sum((_volume(clo[a], chi[a], np.arange(len(free))) for a in range(len(idx))),
                    Fraction(0))
        need = _volume(glo, ghi, free)
        if total != need:
            return (f"region {ri} is not covered by the initial boxes (volume {float(total):.6g} "
                    f"of {float(need):.6g})")
    return None


def check_partition(regions: list[tuple[np.ndarray, np.ndarray]], cert) -> CoverageResult:
    """Whether the certificate's leaves partition its initial boxes and those cover
    ``regions`` (each a (lo, hi) pair; coordinates with lo = hi are fixed in that region)."""
    rlo, rhi = np.asarray(cert.roots_lo, dtype=float), np.asarray(cert.roots_hi, dtype=float)
    if rlo.ndim != 2 or rlo.shape != rhi.shape or np.any(~(rlo <= rhi)):
        return CoverageResult(False, "malformed initial boxes")
    why = _roots_cover(regions, rlo, rhi)
    if why:
        return CoverageResult(False, why)
    n0, D = rlo.shape
    parent = np.asarray(cert.split_parent, dtype=np.int64)
    dim = np.asarray(cert.split_dim, dtype=np.int64)
    cut = np.asarray(cert.split_cut, dtype=float)
    S = len(parent)
    total = n0 + 2 * S
    s_idx = np.arange(S)
    if np.any((parent < 0) | (parent >= n0 + 2 * s_idx)) or np.any((dim < 0) | (dim >= D)):
        return CoverageResult(False, "a split names a box that does not exist yet")
    if len(np.unique(parent)) != S:
        return CoverageResult(False, "a box is split twice")
    if np.any(np.isnan(cut)):
        return CoverageResult(False, "a split has no cut value")
    node_lo = np.empty((total, D))
    node_hi = np.empty((total, D))
    node_lo[:n0], node_hi[:n0] = rlo, rhi
    known = np.zeros(total, bool)
    known[:n0] = True
    todo = np.ones(S, bool)
    while np.any(todo):  # one wave per depth of the tree
        ready = todo & known[parent]
        if not np.any(ready):
            return CoverageResult(False, "the splits do not form a tree over the initial boxes")
        s = np.flatnonzero(ready)
        p, k, m = parent[s], dim[s], cut[s]
        plo, phi = node_lo[p], node_hi[p]
        r = np.arange(len(s))
        if np.any(~((plo[r, k] <= m) & (m <= phi[r, k]))):
            bad = int(s[np.flatnonzero(~((plo[r, k] <= m) & (m <= phi[r, k])))[0]])
            return CoverageResult(False, f"split {bad} cuts box #{int(parent[bad])} outside its range")
        a, b = n0 + 2 * s, n0 + 2 * s + 1
        alo, ahi = plo.copy(), phi.copy()
        ahi[r, k] = m
        blo, bhi = plo.copy(), phi.copy()
        blo[r, k] = m
        node_lo[a], node_hi[a] = alo, ahi
        node_lo[b], node_hi[b] = blo, bhi
        known[a] = known[b] = True
        todo[s] = False
    is_leaf = np.ones(total, bool)
    is_leaf[parent] = False
    leaf_ids = np.asarray(cert.leaf_id, dtype=np.int64)
    if np.any((leaf_ids < 0) | (leaf_ids >= total)):
        return CoverageResult(False, "a leaf names a box that does not exist",
                              int(np.flatnonzero((leaf_ids < 0) | (leaf_ids >= total))[0]))
    seen = np.zeros(total, np.int64)
    np.add.at(seen, leaf_ids, 1)
    if np.any(seen > 1):
        i = int(np.flatnonzero(seen[leaf_ids] > 1)[0])
        return CoverageResult(False, f"box #{int(leaf_ids[i])} is listed twice", i)
    if np.any(~is_leaf[leaf_ids]):
        i = int(np.flatnonzero(~is_leaf[leaf_ids])[0])
        return CoverageResult(False, f"box #{int(leaf_ids[i])} is listed as a leaf but was split", i)
    missing = np.flatnonzero(is_leaf & (seen == 0))
    if len(missing):
        j = int(missing[0])
        corners = ", ".join(f"[{a:.6g}, {b:.6g}]" for a, b in zip(node_lo[j], node_hi[j]))
        return CoverageResult(False, f"gap: box #{j} ({corners}) is neither split nor listed: "
                                     "that part of the domain is unexamined")
    llo, lhi = np.asarray(cert.leaf_lo, dtype=float), np.asarray(cert.leaf_hi, dtype=float)
    same = np.all(llo == node_lo[leaf_ids], axis=1) & np.all(lhi == node_hi[leaf_ids], axis=1)
    if not np.all(same):
        i = int(np.flatnonzero(~same)[0])
        j = int(leaf_ids[i])
        corners = ", ".join(f"[{a:.6g}, {b:.6g}]" for a, b in zip(node_lo[j], node_hi[j]))
        return CoverageResult(False, f"box #{j} is not the part of the partition it stands for "
                                     f"({corners}): a gap or an overlap", i)
    return CoverageResult(True, f"exact: {len(leaf_ids)} boxes partition {n0} initial boxes "
                                f"covering {len(regions)} regions")
