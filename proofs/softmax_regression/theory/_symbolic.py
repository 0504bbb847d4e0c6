r"""SymPy helpers of the softmax-regression theory (tensor trick, gradients, Hessians).

Two routes to $\nabla_xL$, $x=\operatorname{vec}_{\rm row}(X)$, $A=A_1\otimes A_2$:

* **structured** (fast, any $d$): the chain rule through the blocks,
  $\nabla_xL=\sum_jA_j^\top\nabla_{z_j}\ell_j$ with $A_j=A_1[j,:]\otimes A_2$, the softmax rule
  $\partial f/\partial z=\operatorname{diag}f-ff^\top$ (verified on its own with explicit
  exponentials), and the collapse $\sum_jA_j^\top g_j=\operatorname{vec}(A_1^\top PA_2)$ — a
  *polynomial* identity in the entries of $A_1,A_2$ and free symbols $f_{jk},b_{jk}$ (or
  $u_{jk}$ for the rescaled loss), so it is decided exactly by expansion;
* **brute force** (small $d$): write $L(X)$ with explicit exponentials, differentiate entry by
  entry with ``diff``, replace each atom $\exp(z_{jk})$ by a positive symbol $w_{jk}$ and
  compare with the structured form as rational functions (exact).

Pitfall avoided: SymPy returns a *silent zero* when an indexed ``MatrixSymbol`` expression is
differentiated with respect to the whole ``MatrixSymbol`` (SymPy issue #17229), and entrywise
``exp`` of a matrix expression is not differentiable at all (#21062).  Everything here uses
explicit ``Matrix`` objects of ``Symbol`` entries in row-major order; ``MatrixSymbol`` and
``KroneckerProduct`` only appear for display.  :func:`matrixsymbol_silent_zero` reproduces the
pitfall so the report can show why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import sympy as sp

__all__ = [
    "SymbolicInstance",
    "instance",
    "vec_row",
    "vec_col",
    "kron",
    "block",
    "normalized_P",
    "rescaled_P",
    "structured_collapse_residual",
    "softmax",
    "softmax_jacobian_residual",
    "softmax_jacobian_unevaluated",
    "logit_gradient_residual",
    "NORMALIZED_HESSIAN_TERMS",
    "normalized_logit_hessian_terms",
    "brute_force_gradient_check",
    "matrixsymbol_silent_zero",
    "is_zero_matrix",
]


@dataclass(frozen=True)
class SymbolicInstance:
    n: int
    d: int
    A1: sp.Matrix
    A2: sp.Matrix
    X: sp.Matrix
    B: sp.Matrix
    F: sp.Matrix  # free "probability" symbols f_jk (structured route)
    U: sp.Matrix  # free positive symbols u_jk = exp(z_jk) (rescaled structured route)


def instance(n: int, d: int) -> SymbolicInstance:
    """Explicit real symbols, indices 0-based in the names (a1_j_p = (A_1)_{jp})."""
    def mat(name, r, c, **kw):
        return sp.Matrix(r, c, lambda i, j: sp.Symbol(f"{name}_{i}_{j}", **kw))

    return SymbolicInstance(
        n, d, mat("a1", n, d, real=True), mat("a2", n, d, real=True), mat("x", d, d, real=True),
        mat("b", n, n, real=True), mat("f", n, n, positive=True), mat("u", n, n, positive=True))


def vec_row(M: sp.MatrixBase) -> sp.Matrix:
    """Row-major vec (the tensor-trick convention; NumPy ``ravel``)."""
    return sp.Matrix(list(M))


def vec_col(M: sp.MatrixBase) -> sp.Matrix:
    """Column-major vec (SymPy's ``Matrix.vec()``)."""
    return M.vec()


def kron(P: sp.MatrixBase, Q: sp.MatrixBase) -> sp.Matrix:
    from sympy.physics.quantum import TensorProduct

    return sp.Matrix(TensorProduct(P, Q))


def block(A1: sp.MatrixBase, A2: sp.MatrixBase, j: int) -> sp.Matrix:
    """$A_j=A_1[j,:]\\otimes A_2$ (an $n\\times d^2$ matrix)."""
    return kron(A1[j, :], A2)


def is_zero_matrix(M: sp.MatrixBase) -> bool:
    """Exact test: every entry cancels to 0 (expand + cancel; polynomial/rational entries)."""
    for e in M:
        ex = sp.expand(e)
        if ex != 0 and sp.cancel(sp.together(ex)) != 0:
            return False
    return True


def normalized_P(F: sp.MatrixBase, B: sp.MatrixBase) -> sp.Matrix:
    """Row $j$: $f_j\\circ c_j-f_j\\langle f_j,c_j\\rangle$, $c=f-b$."""
    C = F - B
    rows, n = F.rows, F.cols
    return sp.Matrix(rows, n, lambda j, k: F[j, k] * C[j, k]
                     - F[j, k] * sum(F[j, l] * C[j, l] for l in range(n)))


def rescaled_P(U: sp.MatrixBase, B: sp.MatrixBase) -> sp.Matrix:
    """Row $j$: $u_j\\circ r_j-u_j\\langle b_j,r_j\\rangle$, $r_j=u_j-\\alpha_jb_j$."""
    rows, n = U.rows, U.cols
    alpha = [sum(U[j, :]) for j in range(rows)]
    Rr = sp.Matrix(rows, n, lambda j, k: U[j, k] - alpha[j] * B[j, k])
    return sp.Matrix(rows, n, lambda j, k: U[j, k] * Rr[j, k]
                     - U[j, k] * sum(B[j, l] * Rr[j, l] for l in range(n)))


def structured_collapse_residual(si: SymbolicInstance, loss: str) -> sp.Matrix:
    """$\\sum_jA_j^\\top g_j-\\operatorname{vec}_{\\rm row}(A_1^\\top PA_2)$ with $P$ built
    from the free symbols (identically zero iff the collapse is right)."""
    P = normalized_P(si.F, si.B) if loss == "normalized" else rescaled_P(si.U, si.B)
    lhs = sp.zeros(si.d * si.d, 1)
    for j in range(si.n):
        lhs += block(si.A1, si.A2, j).T * P[j, :].T
    return lhs - vec_row(si.A1.T * P * si.A2)


def softmax(z: sp.MatrixBase) -> sp.Matrix:
    s = sum(sp.exp(v) for v in z)
    return sp.Matrix([sp.exp(v) / s for v in z])


def _z(n: int) -> sp.Matrix:
    return sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"z_{i}", real=True))


def softmax_jacobian_residual(n: int) -> tuple[sp.Matrix, sp.Matrix]:
    """(Jacobian of softmax by ``diff``, $\\operatorname{diag}f-ff^\\top$)."""
    z = _z(n)
    f = softmax(z)
    return f.jacobian(z), sp.diag(*f) - f * f.T


def softmax_jacobian_unevaluated(n: int) -> tuple[sp.Matrix, sp.Matrix]:
    """(the Jacobian of softmax as unevaluated derivatives ∂f_i/∂z_j, $\\operatorname{diag}f-ff^\\top$)."""
    z = _z(n)
    f = softmax(z)
    return (sp.ImmutableMatrix(n, n, lambda i, j: sp.Derivative(f[i], z[j])),
            sp.diag(*f) - f * f.T)


def logit_gradient_residual(n: int, loss: str) -> tuple[sp.Matrix, sp.Matrix]:
    """(∇_z of the single-block loss by ``diff``, the structured $g$)."""
    z = _z(n)
    b = sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"b_{i}", real=True))
    if loss == "normalized":
        f = softmax(z)
        c = f - b
        ell = sp.Rational(1, 2) * (c.T * c)[0, 0]
        g = sp.Matrix([f[k] * c[k] - f[k] * (f.T * c)[0, 0] for k in range(n)])
    else:
        u = z.applyfunc(sp.exp)
        alpha = sum(u)
        r = u - alpha * b
        ell = sp.Rational(1, 2) * (r.T * r)[0, 0]
        g = sp.Matrix([u[k] * r[k] - u[k] * (b.T * r)[0, 0] for k in range(n)])
    return sp.Matrix([sp.diff(ell, v) for v in z]), g


#: ∇²_z ½‖softmax(z) − b‖² as a signed sum of products of named factors (c = f − b,
#: S = diag f − ffᵀ): SS + (diag c)S − ⟨f, c⟩S − f cᵀS.  The identity and the closed form's
#: norm bound are both built from this one list.
NORMALIZED_HESSIAN_TERMS = ((1, ("S", "S")), (1, ("diag c", "S")), (-1, ("<f,c> I", "S")),
                            (-1, ("f c^T", "S")))


def normalized_logit_hessian_terms(n: int) -> tuple[sp.Matrix, sp.Matrix, dict]:
    """(the Hessian by ``diff``, the sum of :data:`NORMALIZED_HESSIAN_TERMS`, the factors as
    matrices) at n logits."""
    z = _z(n)
    b = sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"b_{i}", real=True))
    f = softmax(z)
    c = f - b
    ell = sp.Rational(1, 2) * (c.T * c)[0, 0]
    H = sp.hessian(ell, list(z))
    factors = {"S": sp.diag(*f) - f * f.T, "diag c": sp.diag(*c),
               "<f,c> I": (f.T * c)[0, 0] * sp.eye(n), "f c^T": f * c.T}
    total = sp.zeros(n, n)
    for sign, names in NORMALIZED_HESSIAN_TERMS:
        prod = sp.eye(n)
        for name in names:
            prod = prod * factors[name]
        total += sign * prod
    return H, total, factors


def brute_force_gradient_check(n: int, d: int, loss: str) -> dict:
    """Differentiate the explicit loss $L(X)$ entry by entry and compare exactly with the
    structured closed form.  Returns ``{"ok", "seconds", "entries", "ops"}``."""
    t0 = time.perf_counter()
    si = instance(n, d)
    M = si.A1 * si.X * si.A2.T
    w = sp.Matrix(n, n, lambda j, k: sp.Symbol(f"w_{j}_{k}", positive=True))
    E = M.applyfunc(sp.exp)
    back = {E[j, k]: w[j, k] for j in range(n) for k in range(n)}
    alpha = [sum(E[j, :]) for j in range(n)]
    if loss == "normalized":
        resid = sp.Matrix(n, n, lambda j, k: E[j, k] / alpha[j] - si.B[j, k])
        Fw = sp.Matrix(n, n, lambda j, k: w[j, k] / sum(w[j, :]))
        P = normalized_P(Fw, si.B)
    else:
        resid = sp.Matrix(n, n, lambda j, k: E[j, k] - alpha[j] * si.B[j, k])
        P = rescaled_P(w, si.B)
    L = sp.Rational(1, 2) * sum(e ** 2 for e in resid)
    brute = sp.Matrix(d, d, lambda p, q: sp.diff(L, si.X[p, q])).xreplace(back)
    structured = si.A1.T * P * si.A2
    ops = int(sum(sp.count_ops(e) for e in brute))
    ok = is_zero_matrix(brute - structured) and not brute.has(sp.exp)
    return {"ok": bool(ok), "seconds": time.perf_counter() - t0, "entries": d * d, "ops": ops,
            "n": n, "d": d, "loss": loss}


def matrixsymbol_silent_zero(d: int = 2) -> tuple[sp.Expr, sp.Expr]:
    """SymPy #17229: (d/dX of the indexed ``(A X)[0,0]`` via ``MatrixSymbol`` — SymPy returns
    0 —, the correct derivative of the same scalar with explicit symbols, entry (0,0))."""
    A, X = sp.MatrixSymbol("A", d, d), sp.MatrixSymbol("X", d, d)
    naive = sp.diff((A * X)[0, 0], X)
    Ae = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"A_{i}{j}"))
    Xe = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"X_{i}{j}"))
    explicit = sp.diff((Ae * Xe)[0, 0], Xe[0, 0])
    return naive, explicit
