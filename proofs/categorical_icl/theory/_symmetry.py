r"""The symmetry behind the stationarity theorem, and what it predicts for the gradient.

* :func:`parameter_map` — for an orthogonal :math:`U` acting on the covariates, the parameter
  change under which the model on the rotated prompt has hidden states :math:`RH`
  (:math:`R=\operatorname{diag}(U,I_{3d'})`): :math:`Q\to OQR^\top`, :math:`K\to OKR^\top`,
  :math:`V\to RVR^\top`, :math:`Q_c\to Q_cR^\top`, :math:`V_c\to RV_c` with :math:`O=U`.
* :func:`equivariance_derivation` — verifies the map exactly (SymPy, a rational orthogonal
  :math:`U` from the Cayley transform, generic symbolic parameters and tokens) and that the GD
  structure :math:`Q=bS_x,\ K=cS_x,\ V_x=0` is a fixed point of the map.
* :func:`structural_zero_mask`, :func:`components` — the gradient entries that vanish by the
  token layout alone, and the linear functionals of the gradient with their class: ``off``
  (not invariant under :math:`x\to Ux`, so zero at every point of the GD set), ``in`` (the GD
  set's own coordinates: zero at its optimum), ``tie``/``ff`` (rotation-invariant directions
  outside the GD parametrisation: the untied value :math:`V_u+V_v` and the :math:`f\to f` value),
  ``gamma-off`` (with a diagonal Γ: the off-diagonal Γ entries, in both value directions
  :math:`u\mp v` — outside the diagonal GD set, never optimised there, reported only).

Flat gradient order (a data format shared with the experiment): block by block, ``Q``
(``d × D``), ``K`` (``d × D``), ``V_f`` (``d' × D``), row-major; token columns ``x, u, v, f``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from icltheory.core import Derivation

__all__ = ["parameter_map", "cayley", "equivariance_derivation", "equivariance_residuals",
           "structural_zero_mask", "components", "Component", "raw_names"]


def cayley(d: int) -> sp.Matrix:
    """An exact rational orthogonal matrix: the Cayley transform of a fixed rational skew matrix."""
    S = sp.Matrix(d, d, lambda i, j: sp.Rational(i - j, 1 + i + j) if i != j else 0)
    S = (S - S.T) / 2
    return (sp.eye(d) - S) * (sp.eye(d) + S).inv()


def parameter_map(U, D: int, d: int):
    """(O, R) of the map for the orthogonal ``U`` (SymPy or numpy): O acts on query/key space
    (score invariant under U: dot products and distances), R = diag(U, I) on tokens."""
    if isinstance(U, sp.MatrixBase):
        R = sp.eye(D)
        R[:d, :d] = U
        return U, R
    R = np.eye(D)
    R[:d, :d] = U
    return U, R


def _sym(name: str, rows: int, cols: int) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i}{j}", real=True))



def _gd_structure(d: int, D: int) -> tuple:
    """The GD construction's structural pattern: scalars b, c, the selector S_x = [I_d 0] of
    the token's x part (Q = bS_x, K = cS_x), and a symbolic D×D value that neither reads nor
    writes x."""
    b, c = sp.symbols("b c", real=True)
    Sx = sp.zeros(d, D)
    Sx[:, :d] = sp.eye(d)
    Vs = _sym("s", D, D)
    Vs[:, :d] = sp.zeros(D, d)  # no x → anything value
    Vs[:d, :] = sp.zeros(d, D)  # nothing written into x
    return b, c, Sx, Vs

def equivariance_residuals(d: int = 2, dp: int = 1) -> dict:
    """Exact residuals of the map at symbolic parameters and tokens (each must be 0)."""
    D = d + 3 * dp
    U = cayley(d)
    O, R = parameter_map(U, D, d)
    Q, K, V = _sym("q", d, D), _sym("k", d, D), _sym("v", D, D)
    Qc, Vc = _sym("qc", dp, D), _sym("vc", D, dp)
    h, g, w = _sym("h", D, 1), _sym("g", D, 1), _sym("w", dp, 1)
    Qt, Kt, Vt, Qct, Vct = O * Q * R.T, O * K * R.T, R * V * R.T, Qc * R.T, R * Vc
    Rh, Rg = R * h, R * g
    score = ((Qt * Rh).T * (Kt * Rg))[0] - ((Q * h).T * (K * g))[0]
    dist = (Qt * Rh - Kt * Rg).T * (Qt * Rh - Kt * Rg)
    dist = dist[0] - ((Q * h - K * g).T * (Q * h - K * g))[0]
    xs = _sym("x", d, 1)
    token = sp.Matrix.vstack(xs, h[d:, :])
    rotated_token = sp.Matrix.vstack(U * xs, h[d:, :])
    tokens = rotated_token - R * token
    value = sp.Matrix.vstack(Vt * Rh - R * (V * h), tokens)
    cross_q = Qct * Rh - Qc * h
    cross_v = Vct * w - R * (Vc * w)
    b, c, Sx, Vs = _gd_structure(d, D)
    gd = sp.Matrix.vstack(O * (b * Sx) * R.T - b * Sx, O * (c * Sx) * R.T - c * Sx, R * Vs * R.T - Vs)
    return {"score (dot)": sp.expand(score), "score (distance)": sp.expand(dist),
            "value": sp.expand(value), "cross query": sp.expand(cross_q),
            "cross value": sp.expand(cross_v), "GD structure fixed": sp.expand(gd)}


def equivariance_derivation(d: int = 2, dp: int = 1) -> Derivation:
    """The map verified step by step: each side is the quantity after the map (the mapped
    parameters and rotated tokens multiplied out, unevaluated) against the quantity before it
    (explicit matrices of symbols; the products are carried out when verified)."""
    der = Derivation("equivariance of the attention model under x → Ux")
    der.say(r"Tokens $h=[x;u;v;f]$, $R=\operatorname{diag}(U,I_{3d'})$, $U$ orthogonal (here an exact "
            r"rational one from the Cayley transform, $d=2$, $d'=1$). With $Q\to UQR^\top$, "
            r"$K\to UKR^\top$, $V\to RVR^\top$, $Q_c\to Q_cR^\top$, $V_c\to RV_c$ every score "
            r"(dot product or distance of query and key) is unchanged and every value rotates by $R$, "
            r"so block by block $H\to RH$, and the query's $f$ slot (untouched by $R$), hence the loss, "
            r"is unchanged. The GD structure ($Q=bS_x$, $K=cS_x$, no value reading or writing $x$) "
            r"is a fixed point of the map: there the loss itself is invariant under $x\to Ux$. "
            r"Each step shows the mapped side as a product of the matrices below (not multiplied "
            r"out) and the original side; tokens $h$, $g$ are any two hidden states.")
    D = d + 3 * dp
    U = sp.ImmutableMatrix(cayley(d))
    O, R = (sp.ImmutableMatrix(m) for m in parameter_map(U, D, d))
    der.define("U", U, "the rotation of the covariates (Cayley transform of a rational skew matrix)")
    der.define("O", O, "the map's factor on query/key space")
    der.define("R", R, "diag(U, I): the rotation of the tokens")
    Q, K, V = (sp.ImmutableMatrix(m) for m in (_sym("q", d, D), _sym("k", d, D), _sym("v", D, D)))
    Qc, Vc = sp.ImmutableMatrix(_sym("qc", dp, D)), sp.ImmutableMatrix(_sym("vc", D, dp))
    h, g = sp.ImmutableMatrix(_sym("h", D, 1)), sp.ImmutableMatrix(_sym("g", D, 1))

    def mul(*factors):  # a product shown, not carried out (``doit`` multiplies)
        return sp.UnevaluatedExpr(sp.MatMul(*factors))

    def dot(p, q):
        return sp.MatMul(sp.Transpose(p), q)

    Qh, Kg = sp.MatMul(O, Q, R.T, R, h), sp.MatMul(O, K, R.T, R, g)  # (OQRᵀ)(Rh), (OKRᵀ)(Rg)
    why = "exact rational arithmetic: the mapped side multiplied out equals the original"
    der.step("score (dot)", mul(dot(Qh, Kg)), mul(dot(sp.MatMul(Q, h), sp.MatMul(K, g))), why)
    minus = sp.S.NegativeOne  # a MatMul's ``-`` would multiply it out
    diff = sp.MatAdd(Qh, sp.MatMul(minus, *Kg.args))
    diff0 = sp.MatAdd(sp.MatMul(Q, h), sp.MatMul(minus, K, g))
    der.step("score (distance)", mul(dot(diff, diff)), mul(dot(diff0, diff0)), why)
    der.step("value", mul(R, V, R.T, R, h), mul(R, V, h), why + " (the value rotates by R)")
    xs = sp.ImmutableMatrix(_sym("x", d, 1))
    rest = h[d:, :]
    der.step("token", sp.ImmutableMatrix.vstack(U * xs, rest),
             mul(R, sp.ImmutableMatrix.vstack(xs, rest)),
             "the token of the rotated prompt, [Ux; u; v; f], is R times the token [x; u; v; f]")
    der.step("cross query", mul(Qc, R.T, R, h), mul(Qc, h), why)
    der.define("cross value", sp.MatMul(R, Vc),
               "V_c → R V_c: the value written by the cross-attention is (R V_c) w = R (V_c w), "
               "rotated by R by this definition (nothing to verify)")
    b, c, Sx, Vs = _gd_structure(d, D)
    Sx, Vs = sp.ImmutableMatrix(Sx), sp.ImmutableMatrix(Vs)
    der.step("GD structure fixed", (mul(O, b * Sx, R.T), mul(O, c * Sx, R.T), mul(R, Vs, R.T)),
             (b * Sx, c * Sx, Vs), "the map sends Q = bS_x, K = cS_x and a value that neither reads "
             "nor writes x to themselves")
    return der


# ----------------------------------------------------------------------------- gradient structure


def _cols(d: int, dp: int) -> list[str]:
    return [f"{blk}{j}" for blk, n in (("x", d), ("u", dp), ("v", dp), ("f", dp)) for j in range(n)]


def raw_names(d: int, dp: int, K: int) -> list[str]:
    """Names of the flat gradient entries, e.g. ``Q1[2,u0]``."""
    cols = _cols(d, dp)
    out = []
    for k in range(1, K + 1):
        for label, rows in (("Q", d), ("K", d), ("V", dp)):
            out += [f"{label}{k}[{r},{c}]" for r in range(rows) for c in cols]
    return out


def _slices(d: int, dp: int) -> dict:
    return {"x": slice(0, d), "u": slice(d, d + dp), "v": slice(d + dp, d + 2 * dp),
            "f": slice(d + 2 * dp, d + 3 * dp)}


def structural_zero_mask(d: int, dp: int, K: int, N: int | None = None, kernel: str | None = None) -> np.ndarray:
    r"""Flat boolean mask of the gradient entries that vanish at every parameter value, from the
    token layout and the architecture alone.  Every free parameter multiplies one token slot, so an
    entry is 0 when that slot is 0 at every token carrying upstream gradient (and (d) below):
    (a) nothing writes the ``u`` slot, so the query's ``u`` is 0 in every block;
    (b) the embedding has ``v`` = :math:`\bar w_e` = 0 and ``f`` = 0: in block 1 the ``v`` and ``f``
    columns of ``Q``, ``K``, ``V_f`` are structurally zero;
    (c) in block :math:`K` only the query carries upstream gradient (the loss reads its ``f``;
    the ``v`` written afterwards is never read), so ``Q`` reading ``u`` is zero there;
    (d) with one context token (``N`` = 1) and the softmax kernel, whose weights are normalised
    over the context, the update head's weight is 1 whatever ``Q`` and ``K``: every entry of ``Q``
    and ``K`` is zero, in every block."""
    D = d + 3 * dp
    sl = _slices(d, dp)
    single = N == 1 and kernel == "softmax"
    out = []
    for k in range(1, K + 1):
        mQ, mK, mV = np.zeros((d, D), bool), np.zeros((d, D), bool), np.zeros((dp, D), bool)
        if single:
            mQ[:], mK[:] = True, True
        if k == 1:
            for m in (mQ, mK, mV):
                m[:, sl["v"]] = True
                m[:, sl["f"]] = True
        if k == K:
            mQ[:, sl["u"]] = True
        out += [mQ.ravel(), mK.ravel(), mV.ravel()]
    return np.concatenate(out)


@dataclass(frozen=True)
class Component:
    """A linear functional of the flat gradient: ``sum(coef * g[index])``."""

    name: str
    group: str
    kind: str  # off | in | tie | ff | gamma-off
    index: tuple
    coef: tuple
    fitted: bool = False
    #: a reflection of one covariate coordinate maps this component to its negative (the other
    #: parameters being invariant), so its per-prompt law is symmetric about 0 at any point of
    #: S whenever the covariates' law is reflection invariant (Gaussian, cube, sphere)
    reflection_odd: bool = False
    #: one coordinate's part of a traceless diagonal: a permutation of the covariate coordinates
    #: permutes the group's components among themselves (their values sum to 0), so at any point
    #: of S they are exchangeable whenever the covariates' law is permutation invariant
    exchangeable: bool = False


def components(d: int, dp: int, K: int, gamma: str) -> list[Component]:
    """The named gradient components and their class (see the module docstring); ``gamma``:
    ``full``/``diag``/``fixed`` — which Γ entries are coordinates of the GD set (and fitted)."""
    D = d + 3 * dp
    sl = _slices(d, dp)
    per_block = 2 * d * D + dp * D
    out: list[Component] = []
    for k in range(1, K + 1):
        base = (k - 1) * per_block
        for label, off in (("Q", base), ("K", base + d * D)):
            def at(i, col, off=off):
                return off + i * D + col
            diag = [at(m, m) for m in range(d)]
            for i in range(d):
                for j in range(d):
                    if i != j:
                        out.append(Component(f"{label}{k}.xx[{i},{j}]", f"block {k} {label} x-block "
                                             "off-diagonal", "off", (at(i, j),), (1.0,),
                                             reflection_odd=True))  # x_i → −x_i
            if d > 1:
                for i in range(d):
                    coef = tuple((1.0 if m == i else 0.0) - 1.0 / d for m in range(d))
                    out.append(Component(f"{label}{k}.xx[{i},{i}]-mean", f"block {k} {label} x-block "
                                         "traceless diagonal", "off", tuple(diag), coef, exchangeable=True))
            out.append(Component(f"{label}{k}.trace", f"block {k} {label} x-block trace "
                                 f"(∂/∂{'b' if label == 'Q' else 'c'})", "in", tuple(diag),
                                 (1.0,) * d, fitted=True))
            for blk in ("u", "v", "f"):
                for i in range(d):
                    for j in range(dp):
                        out.append(Component(f"{label}{k}.x{blk}[{i},{j}]", f"block {k} {label} reads "
                                             f"the {blk} slot", "off", (at(i, sl[blk].start + j),), (1.0,),
                                             reflection_odd=True))  # output row i: x_i → −x_i
        voff = base + 2 * d * D
        for i in range(dp):
            for j in range(d):
                out.append(Component(f"V{k}.fx[{i},{j}]", f"block {k} value x→f", "off",
                                     (voff + i * D + j,), (1.0,), reflection_odd=True))  # x_j → −x_j
        for i in range(dp):
            for j in range(dp):
                c = sl["f"].start + j
                out.append(Component(f"V{k}.ff[{i},{j}]", f"block {k} value f→f", "ff",
                                     (voff + i * D + c,), (1.0,)))
        for i in range(dp):
            for j in range(dp):
                uv = (voff + i * D + sl["u"].start + j, voff + i * D + sl["v"].start + j)
                if gamma == "diag" and i != j:
                    out.append(Component(f"V{k}.gamma[{i},{j}]", f"block {k} value Γ off-diagonal "
                                         "(outside diagonal S)", "gamma-off", uv, (1.0, -1.0)))
                else:
                    out.append(Component(f"V{k}.gamma[{i},{j}]", f"block {k} value Γ direction (u−v)",
                                         "in", uv, (1.0, -1.0), fitted=gamma != "fixed"))
                if gamma == "diag" and i != j:  # an off-diagonal Γ entry's tie: outside diagonal S too
                    out.append(Component(f"V{k}.tie[{i},{j}]", f"block {k} value tie direction (u+v), "
                                         "off-diagonal (outside diagonal S)", "gamma-off", uv, (1.0, 1.0)))
                else:
                    out.append(Component(f"V{k}.tie[{i},{j}]", f"block {k} value tie direction (u+v)",
                                         "tie", uv, (1.0, 1.0)))
    return out
