"""What a branch-and-bound certificate says, as plain data.

A :class:`BoxCertificate` claims: *the quantity of its domain is at most ``upper`` on the
domain*, and, scaled, *the reported number ``reported`` is at least ``factor`` × ``upper``*.
Its evidence is a partition of the domain's regions into boxes — the initial boxes
(``roots``), the splits that cut them (box ``n₀ + 2s`` is the lower half of split ``s``, box
``n₀ + 2s + 1`` its upper half) and the leaves, each with its kind and the bound it was given:

* ``bounded``: the quantity is at most ``bound`` on the box;
* ``pruned``: the same, the box having been dropped because its bound is below a value found;
* ``frontier``: left unprocessed, with the bound of the box it was cut from;
* ``outside``: the box does not meet the domain (no bound).

Coordinates are float64, i.e. exact dyadic rationals (:meth:`BoxCertificate.box` gives them as
:class:`fractions.Fraction`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["BoxCertificate", "KINDS"]

#: leaf kinds, in the order of their integer codes
KINDS = ("bounded", "pruned", "frontier", "outside")


@dataclass(frozen=True)
class BoxCertificate:
    """``domain``: the set and the quantity (an object of :mod:`icltheory.certify`, e.g.
    :class:`~icltheory.certify.SoftmaxPencil`); ``roots_lo``/``roots_hi`` (n₀, D);
    ``split_parent``, ``split_dim``, ``split_cut`` (S,); ``leaf_id`` (N,), ``leaf_kind`` (N,)
    codes into :data:`KINDS`, ``leaf_lo``/``leaf_hi`` (N, D), ``leaf_bound`` (N,) (NaN for
    ``outside``); ``upper``: the claimed bound on the quantity's supremum; ``reported`` and
    ``factor``: the number the caller uses, claimed ≥ ``factor × upper``."""

    domain: Any
    roots_lo: np.ndarray
    roots_hi: np.ndarray
    split_parent: np.ndarray
    split_dim: np.ndarray
    split_cut: np.ndarray
    leaf_id: np.ndarray
    leaf_kind: np.ndarray
    leaf_lo: np.ndarray
    leaf_hi: np.ndarray
    leaf_bound: np.ndarray
    upper: float
    reported: float
    factor: Fraction

    @property
    def boxes(self) -> int:
        return int(len(self.leaf_id))

    def counts(self) -> dict[str, int]:
        return {k: int(np.sum(self.leaf_kind == i)) for i, k in enumerate(KINDS)}

    def describe(self) -> str:
        """What the certificate claims, in words."""
        counts = ", ".join(f"{v} {k}" for k, v in self.counts().items() if v)
        describe = getattr(self.domain, "describe", None)
        what = describe() if describe else repr(self.domain)
        return (f"{what} is at most {self.upper!r}, and the number used, {self.reported!r}, is "
                f"at least {self.factor} × that; by {self.boxes} boxes ({counts})")

    def box(self, i: int) -> dict[str, Any]:
        """Leaf ``i`` exactly: its id, kind, corners as Fractions and its bound."""
        return {"id": int(self.leaf_id[i]), "kind": KINDS[int(self.leaf_kind[i])],
                "lo": [Fraction(float(x)) for x in self.leaf_lo[i]],
                "hi": [Fraction(float(x)) for x in self.leaf_hi[i]],
                "bound": float(self.leaf_bound[i])}

    def describe_box(self, i: int, digits: int = 6) -> str:
        lo, hi = self.leaf_lo[i], self.leaf_hi[i]
        corners = ", ".join(f"[{a:.{digits}g}, {b:.{digits}g}]" if a != b else f"{a:.{digits}g}"
                            for a, b in zip(lo, hi))
        return (f"box #{int(self.leaf_id[i])} ({KINDS[int(self.leaf_kind[i])]}, "
                f"bound {float(self.leaf_bound[i]):.9g}): {corners}")

    @classmethod
    def from_record(cls, domain: Any, record: dict, upper: float, reported: float,
                    factor: Fraction) -> "BoxCertificate":
        """From a branch-and-bound record: ``roots`` (lo, hi), ``splits`` [(parent ids, dims,
        cuts)], ``leaves`` [(kind, ids, lo, hi, bound)]."""
        rlo, rhi = (np.asarray(a, dtype=float) for a in record["roots"])
        D = rlo.shape[1]
        sp = record["splits"]
        parent = np.concatenate([np.asarray(p, dtype=np.int64) for p, _, _ in sp]) if sp else \
            np.zeros(0, np.int64)
        dim = np.concatenate([np.asarray(k, dtype=np.int64) for _, k, _ in sp]) if sp else \
            np.zeros(0, np.int64)
        cut = np.concatenate([np.asarray(m, dtype=float) for _, _, m in sp]) if sp else \
            np.zeros(0)
        lv = record["leaves"]
        code = {k: i for i, k in enumerate(KINDS)}
        if lv:
            ids = np.concatenate([np.asarray(i, dtype=np.int64) for _, i, _, _, _ in lv])
            kind = np.concatenate([np.full(len(i), code[k], dtype=np.int8)
                                   for k, i, _, _, _ in lv])
            lo = np.concatenate([np.asarray(x[2], dtype=float).reshape(-1, D) for x in lv])
            hi = np.concatenate([np.asarray(x[3], dtype=float).reshape(-1, D) for x in lv])
            bound = np.concatenate([np.asarray(x[4], dtype=float).ravel() for x in lv])
        else:
            ids = np.zeros(0, np.int64)
            kind = np.zeros(0, np.int8)
            lo = hi = np.zeros((0, D))
            bound = np.zeros(0)
        return cls(domain, rlo, rhi, parent, dim, cut, ids, kind, lo, hi, bound,
                   float(upper), float(reported), Fraction(factor))
