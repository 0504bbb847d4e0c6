r"""The gradient's Lipschitz constant reduced to the logits (derived once in SymPy).

For $L(x)=\sum_j\ell(A_jx;b_j)$ the Hessian is $H=\sum_jA_j^\top J_jA_j$ with $J_j$ the logit
Hessian at $z_j=A_jx$.  All $z_j$ and $A_jv$ lie in $V=\operatorname{range}(A_2)$, $\dim V\le d$,
and $\|z_j\|\le\|Ax\|\le aR$, so

$$|v^\top Hv|\le\sum_j|(A_jv)^\top J_j(A_jv)|\le a^2\,g(aR)\,\|v\|^2,\qquad
g(\rho)=\sup_{\|z\|\le\rho,\ \|b\|\le1,\ v\ne0}\frac{|v^\top J(z,b)v|}{\|v\|^2},$$

and $g$ grows with $\rho$, hence $\operatorname{Lip}(\nabla L)\le R^2g(R^2)$.  For $d\ge2$ one block
($A_1=\sqrt a\,e_1w^\top$, $A_2=\sqrt a\,[Q\ 0]$ with $Q$ orthonormal and $\operatorname{span}Q\supseteq
\{z,v\}$) attains it, so the bound is the constant itself (for $d=1$ it is an upper bound).
(Normalized loss: $J$ ignores shifts of $z$ and of $v$ along $\mathbf 1$, so $z$ is taken
modulo $\mathbf 1$ with the centred norm and $v\perp\mathbf 1$.)

The supremum over $b$ is closed-form (derived below), leaving a function $\psi$ of the logits
(through $f=\operatorname{softmax}(z)$ or $u=e^z$) and the direction $v$:

* normalized: with $\bar v=\langle f,v\rangle$, $w=v-\bar v$, $\sigma^2=\langle f,w^2\rangle$,
  $q=f\circ(w^2-\sigma^2)$ (the second directional derivative of softmax),
  $v^\top Jv=\|f\circ w\|^2+\langle f-b,q\rangle$, so
  $\sup_b|v^\top Jv|=\big|\sum f^2w^2+\langle f,q\rangle\big|+\|q\|$;
* rescaled: with $p=u\circ v$, $s=\sum p$, $q=u\circ v^2$, $m=\sum q$, $\alpha=\sum u$,
  $v^\top Jv=2\sum u^2v^2+(s^2+\alpha m)\|b\|^2-\langle b,2sp+mu+\alpha q\rangle$, so
  $\sup_b|v^\top Jv|=2\sum u^2v^2+s^2+\alpha m+\|2sp+mu+\alpha q\|$.

For the normalized loss :func:`reduced_matrix` also gives the form as a matrix,
$J=T^\top\operatorname{diag}(\delta)T$ with $T=I-\mathbf 1f^\top$ and
$\delta_k=f_k(2f_k-\|f\|^2-b_k+\langle f,b\rangle)$, so that the sup over the direction is an
eigenvalue (the branch and bound's default bound).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from icltheory.core import Derivation, derived, verify_identity

__all__ = ["ReducedHessian", "reduced_hessian", "normalized_form", "rescaled_form"]


def normalized_form(f, v, b):
    """(v^T J v as derived, sup over ‖b‖ ≤ 1 of |v^T J v|) for the normalized loss, in terms of
    f = softmax(z) (entries), the direction v and the target b."""
    n = len(f)
    vbar = sum(f[k] * v[k] for k in range(n))
    w = [v[k] - vbar for k in range(n)]
    sig = sum(f[k] * w[k] ** 2 for k in range(n))
    q = [f[k] * (w[k] ** 2 - sig) for k in range(n)]
    base = sum(f[k] ** 2 * w[k] ** 2 for k in range(n)) + sum(f[k] * q[k] for k in range(n))
    form = base - sum(b[k] * q[k] for k in range(n))
    sup = sp.Abs(base) + sp.sqrt(sum(qk ** 2 for qk in q))
    return form, sup


def rescaled_form(u, v, b):
    """(v^T J v, sup over ‖b‖ ≤ 1 of |v^T J v|) for the rescaled loss, u = e^z."""
    n = len(u)
    p = [u[k] * v[k] for k in range(n)]
    s = sum(p)
    q = [u[k] * v[k] ** 2 for k in range(n)]
    m = sum(q)
    al = sum(u)
    c0 = 2 * sum(u[k] ** 2 * v[k] ** 2 for k in range(n))
    cb = s ** 2 + al * m
    w = [2 * s * p[k] + m * u[k] + al * q[k] for k in range(n)]
    form = c0 + cb * sum(bk ** 2 for bk in b) - sum(b[k] * w[k] for k in range(n))
    sup = c0 + cb + sp.sqrt(sum(wk ** 2 for wk in w))
    return form, sup


@dataclass(frozen=True)
class ReducedHessian:
    """ψ(·, v) = sup_b |vᵀJv| / ‖v‖² (normalized: ‖v − mean v‖²) as SymPy expressions in the
    symbols ``x`` (f or u) and ``v``, per loss and n; and the derivation."""

    n: int
    loss: str
    x: tuple
    v: tuple
    psi: sp.Expr
    derivation: Derivation


@derived
def _form_verified(loss: str, m: int) -> tuple:
    """(status, tier, detail) of the quadratic-form identity at m logits (once per loss)."""
    z = sp.symbols(f"z0:{m}", real=True)
    v = sp.symbols(f"v0:{m}", real=True)
    b = sp.symbols(f"b0:{m}", real=True)
    w = sp.symbols(f"w0:{m}", positive=True)
    ez = [sp.exp(zk) for zk in z]
    if loss == "normalized":
        f = [e / sum(ez) for e in ez]
        ell = sp.Rational(1, 2) * sum((f[k] - b[k]) ** 2 for k in range(m))
    else:
        al = sum(ez)
        ell = sp.Rational(1, 2) * sum((ez[k] - al * b[k]) ** 2 for k in range(m))
    H = sp.hessian(ell, z)
    lhs = (sp.Matrix([v]) * H * sp.Matrix(v))[0, 0].xreplace(
        {zk: sp.log(wk) for zk, wk in zip(z, w)})
    if loss == "normalized":
        fw = [wk / sum(w) for wk in w]
        rhs = normalized_form(fw, v, b)[0]
    else:
        rhs = rescaled_form(list(w), v, b)[0]
    num = sp.numer(sp.together(lhs - rhs))
    if sp.expand(num) == 0:
        return "verified", "exact", "the numerator of together(lhs − rhs) expands to 0"
    return verify_identity(lhs, rhs)


def _verify_form(d: Derivation, loss: str, m: int) -> None:
    st, tier, det = _form_verified(loss, m)
    d.fact(f"vᵀ∇²ℓ v in closed form, {loss} (n={m})", st == "verified",
           "the Hessian's quadratic form by diff equals the derived form (z_k = log w_k)",
           det, tier=tier or "exact")


@derived
def reduced_hessian(loss: str, n: int) -> ReducedHessian:
    """ψ for ``loss`` at n logits, with its derivation (the form verified at n = 3)."""
    d = Derivation(f"the gradient's Lipschitz constant reduced to the logits ({loss} loss)")
    d.say(__doc__.split("The supremum over")[0].strip())
    _verify_form(d, loss, 3)
    x = sp.symbols(f"x0:{n}", positive=True)
    v = sp.symbols(f"v0:{n}", real=True)
    b = sp.symbols(f"b0:{n}", real=True)
    form_fn = normalized_form if loss == "normalized" else rescaled_form
    _, sup = form_fn(list(x), list(v), list(b))
    d.say("sup over ‖b‖ ≤ 1: normalized, vᵀJv is affine in b with slope −q, so the sup of its "
          "absolute value is |vᵀJv|_{b=0}| + ‖q‖ (Cauchy–Schwarz, attained at b = ∓q/‖q‖); "
          "rescaled, vᵀJv = C0 + Cb‖b‖² − ⟨b, w⟩ with C0, Cb ≥ 0, whose sup is C0 + Cb + ‖w‖ at "
          "b = −w/‖w‖ and whose inf is ≥ −‖w‖.")
    c0, cb = sp.symbols("C0 C_b", nonnegative=True)
    g = sp.symbols("g0:3", real=True)
    norm = sp.sqrt(sum(gk ** 2 for gk in g))
    bstar = [-gk / norm for gk in g]
    d.step("the sup over b is attained at b* = −g/‖g‖ (unit)",
           c0 + cb * sum(bk ** 2 for bk in bstar) - sum(bk * gk for bk, gk in zip(bstar, g)),
           c0 + cb + norm, "‖b*‖ = 1 and −⟨b*, g⟩ = ‖g‖ (g = q, C_b = 0 for the normalized loss)")
    if loss == "normalized":  # n‖v − mean v‖² as a sum of squares (positive on every box)
        pairs = sum((v[i] - v[j]) ** 2 for i in range(n) for j in range(i + 1, n))
        d.step("n‖v − mean v‖² = Σ_{i<j}(v_i − v_j)²", n * sum((vk - sum(v) / n) ** 2 for vk in v),
               pairs, "expand both sides")
        return ReducedHessian(n, loss, tuple(x), tuple(v), n * sup / pairs, d)
    return ReducedHessian(n, loss, tuple(x), tuple(v), sup / sum(vk ** 2 for vk in v), d)


@dataclass(frozen=True)
class ReducedMatrix:
    r"""The normalized loss's logit Hessian as a matrix pencil, so that the sup over the
    direction is an eigenvalue: with $E=[e_i-e_{n-1}]_{i<n-1}$ (a basis of $\mathbf 1^\perp$,
    Gram matrix $G=E^\top E=I+\mathbf 1\mathbf 1^\top\succeq I$), $b=Ec'$ written through
    ``c`` ($b_i=c_i$ for $i<n-1$, $b_{n-1}=-\sum c$) and $v=Ey$:
    $v^\top J v=y^\top K(f,c)\,y$, so $\psi=\sup_{\|b\|\le1}\max_{s=\pm1}\lambda_{\max}(sK,G)$.
    ``K`` is a tuple of rows of SymPy expressions in ``x`` (f) and ``c``; ``delta`` the
    diagonal δ_k(f, c) of J = Tᵀdiag(δ)T (T = I − 𝟏fᵀ), from which K = (TE)ᵀdiag(δ)(TE)."""

    n: int
    x: tuple
    c: tuple
    K: tuple
    delta: tuple
    derivation: Derivation


@derived
def reduced_matrix(n: int) -> ReducedMatrix:
    """The pencil (K, G) of the normalized loss at n ≥ 2 logits, with its derivation (the
    diagonal form verified against :func:`normalized_form`, exactly, at this n)."""
    d = Derivation("the normalized logit Hessian as a matrix pencil (branch-and-bound objective)")
    d.say("With T = I − 𝟏fᵀ (so Tv = w = v − ⟨f, v⟩𝟏) the quadratic form is diagonal in w: "
          "vᵀJv = Σ_k f_k(2f_k − ‖f‖² − b_k + ⟨f, b⟩) w_k², i.e. J = Tᵀ diag(δ) T. It depends on "
          "b only through b − ⟨f, b⟩𝟏, which ignores b's component along 𝟏 when Σf = 1, so the "
          "sup over ‖b‖ ≤ 1 may take b ⟂ 𝟏; J is affine in b, so λ_max(±J) is convex in b and "
          "its sup over the ball is attained on the sphere ‖b‖ = 1. v ⟂ 𝟏 (J ignores shifts of "
          "v) is written v = Ey with ‖v‖² = yᵀGy, G = I + 𝟏𝟏ᵀ.")
    _verify_form(d, "normalized", 3)
    x = sp.symbols(f"x0:{n}", positive=True)
    c = sp.symbols(f"c0:{n - 1}", real=True)
    y = sp.symbols(f"y0:{n - 1}", real=True)
    b = list(c) + [-sum(c)]
    f2 = sum(xk ** 2 for xk in x)
    fb = sum(xk * bk for xk, bk in zip(x, b))
    delta = [x[k] * (2 * x[k] - f2 - b[k] + fb) for k in range(n)]
    h = [x[i] - x[n - 1] for i in range(n - 1)]  # fᵀE
    TE = [[(1 if k == i else 0) - (1 if k == n - 1 else 0) - h[i] for i in range(n - 1)]
          for k in range(n)]
    K = tuple(tuple(sum(delta[k] * TE[k][i] * TE[k][j] for k in range(n)) for j in range(n - 1))
              for i in range(n - 1))
    v = [y[i] if i < n - 1 else -sum(y) for i in range(n)]
    quad = sum(y[i] * K[i][j] * y[j] for i in range(n - 1) for j in range(n - 1))
    form = normalized_form(list(x), v, b)[0]
    d.step(f"vᵀJv = yᵀK(f, c)y at n = {n} (v = Ey, b = Ec)", quad, form,
           "both sides are polynomials in f, y, c: expand")
    d.step("‖v‖² = yᵀGy, G = I + 𝟏𝟏ᵀ", sum(vk ** 2 for vk in v),
           sum(yi ** 2 for yi in y) + sum(y) ** 2, "expand")
    return ReducedMatrix(n, tuple(x), tuple(c), K, tuple(delta), d)
