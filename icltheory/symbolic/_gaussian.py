r"""Gaussian moments by Isserlis' (Wick's) theorem, with explicit-symbol matrices.

For $x\sim\mathcal N(0,\Sigma)$: $\mathbb E[x_ix_jx_kx_l]=\Sigma_{ij}\Sigma_{kl}+\Sigma_{ik}\Sigma_{jl}
+\Sigma_{il}\Sigma_{jk}$, and in general the sum over perfect matchings.  Used to derive the
in-context moments $\mathbb E[\beta w^\top]$ and $\mathbb E[\beta\beta^\top]$ of linear-attention ICL.
"""

from __future__ import annotations

from ..core import cached

import sympy as sp

__all__ = ["symmetric_matrix", "isserlis", "fourth_moment_contracted", "beta_moments_symbolic"]


def symmetric_matrix(name: str, D: int) -> sp.Matrix:
    """A D×D symmetric matrix of real symbols ``name_ij`` (i ≤ j)."""
    syms = {}
    for i in range(D):
        for j in range(i, D):
            syms[(i, j)] = sp.Symbol(f"{name}_{i}{j}", real=True)
    return sp.Matrix(D, D, lambda i, j: syms[(min(i, j), max(i, j))])


@cached(maxsize=None)
def _matchings(n: int) -> tuple:
    if n == 0:
        return ((),)
    out = []
    for k in range(1, n):
        rest = [i for i in range(1, n) if i != k]
        for m in _matchings(n - 2):
            out.append(((0, k),) + tuple((rest[a], rest[b]) for a, b in m))
    return tuple(out)


def isserlis(Sigma: sp.Matrix, idx: tuple[int, ...]) -> sp.Expr:
    """$\\mathbb E[x_{i_1}\\cdots x_{i_k}]$ for $x\\sim\\mathcal N(0,\\Sigma)$."""
    if len(idx) % 2:
        return sp.Integer(0)
    total = sp.Integer(0)
    for m in _matchings(len(idx)):
        term = sp.Integer(1)
        for a, b in m:
            term *= Sigma[idx[a], idx[b]]
        total += term
    return total


def fourth_moment_contracted(Sigma: sp.Matrix) -> sp.Matrix:
    """$\\mathbb E[(x^\\top x)\\,xx^\\top]$ entry by entry from Isserlis (no closed form assumed)."""
    D = Sigma.shape[0]
    return sp.Matrix(D, D, lambda a, b: sum(isserlis(Sigma, (a, c, c, b)) for c in range(D)))


def beta_moments_symbolic(Sigma: sp.Matrix, N: sp.Symbol):
    r"""$\mathbb E[\beta w^\top]$ and $\mathbb E[\beta\beta^\top]$ for $\beta=\frac1N\sum_n x_nx_n^\top w$,
    $w\sim\mathcal N(0,I)$ independent of the i.i.d. $x_n\sim\mathcal N(0,\Sigma)$.

    $\mathbb E[\beta\beta^\top]=\frac1{N^2}\big[N(N-1)\,\Sigma\,\mathbb E[ww^\top]\,\Sigma
    +N\,\mathbb E[(x^\top x)xx^\top]\big]$ (pairs $n\ne m$ factorise; $n=m$ needs the fourth
    moment), with $\mathbb E[ww^\top]=I$.
    """
    E_bw = Sigma  # E[x xᵀ] E[w wᵀ] = Σ I
    E_bb = (N * (N - 1) * Sigma * Sigma + N * fourth_moment_contracted(Sigma)) / N**2
    return E_bw, E_bb.applyfunc(sp.expand)
