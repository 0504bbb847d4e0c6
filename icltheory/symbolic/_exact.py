"""Exact rational conversion of user numbers (so that derivations stay exact)."""

from __future__ import annotations

import sympy as sp

__all__ = ["exact", "exact_list"]


def exact(v) -> sp.Rational:
    """The shortest decimal rational of a float (0.4 → 2/5); ints stay ints."""
    if isinstance(v, int):
        return sp.Integer(v)
    return sp.Rational(repr(float(v)))


def exact_list(vs) -> list:
    return [exact(v) for v in vs]
