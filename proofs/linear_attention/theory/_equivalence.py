r"""The reduced predictors, as exact symbolic identities.

With generic symbolic tokens $X\in\mathbb R^{(D+1)\times(N+1)}$ (query label 0) and generic
weights, the bottom-right entry of one head's output $\frac1NW^VXX^\top W^{KQ}X$ equals
$v\,\beta^\top Ux_q$ plus *irrelevant terms* that vanish when the value's $x\to y$ entries $a$ and
the key-query's label row $b$ are zero; for separate heads $W^{KQ}=K^\top Q$ and the reduction is
a stride-$D$ convolution of $z=\operatorname{vec}(\beta x_q^\top)$ with the query kernel, then the
key, then the value.  The identity is entrywise polynomial, so $D=2$, $N=3$ and rank 2 exercise
every kind of term; the sum over heads is linear.

**Training** (``training``): at $a=b=0$ the gradients of the squared error with respect to $a$
and $b$ are odd under $y\to-y$ (every label and the target negated), so on a training set
closed under that flip they sum to zero and GD keeps $a=b=0$; there the gradients with respect
to $v$ and $U$ are the two-layer network's with respect to $w_2$ and $W_1$, so GD on ATTN_M and
GD on the network from corresponding weights produce the same iterates and the same loss at
every step.
"""

from __future__ import annotations

import sympy as sp

from icltheory.core import Derivation

__all__ = ["Equivalence", "context_statistic", "label_flip", "D_SYM", "N_SYM", "R_SYM"]

D_SYM, N_SYM, R_SYM = 2, 3, 2


def context_statistic(x: sp.Matrix, y: sp.Matrix, n: int) -> sp.Matrix:
    r"""$\beta=\frac1N\sum_{n\le N}y_nx_n$ (the in-context statistic)."""
    return sum((y[k] * x[:, k] for k in range(n)), sp.zeros(x.rows, 1)) / sp.Integer(n)


def label_flip(expr, labels) -> sp.Expr:
    """``expr`` with every symbol of ``labels`` negated (the task w → −w)."""
    return expr.xreplace({y: -y for y in labels})


class Equivalence:
    """Both reductions (merged: two-layer network; separate: three-layer convolutional network)."""

    def __init__(self) -> None:
        D, N, R = D_SYM, N_SYM, R_SYM
        X = sp.Matrix(D + 1, N + 1, lambda a, n: sp.Symbol(f"X_{a}{n}", real=True))
        X[D, N] = 0
        WV = sp.Matrix(D + 1, D + 1, lambda a, b: sp.Symbol(f"V_{a}{b}", real=True))
        x, y = X[:D, :], X[D, :]
        beta = context_statistic(x, y, N)
        xq = x[:, N]
        v, a = WV[D, D], WV[D, :D].T
        Sxx = x * x.T
        Syy = sum(y[k] ** 2 for k in range(N))

        def output(WKQ):
            return (WV * X * X.T * WKQ * X / sp.Integer(N))[D, N]

        def irrelevant(U, b):
            return ((a.T * Sxx * U * xq)[0] / N + (a.T * beta)[0] * (b.T * xq)[0]
                    + v * Syy * (b.T * xq)[0] / N)

        self.merged = Derivation("ATTN_M prediction = two-layer network on vec(β x_qᵀ) (+ irrelevant terms)")
        d = self.merged
        d.say(f"Symbolic tokens and one head with generic weights at D={D}, N={N}.")
        WKQ = sp.Matrix(D + 1, D + 1, lambda i, j: sp.Symbol(f"K_{i}{j}", real=True))
        U, b = WKQ[:D, :D], WKQ[D, :D].T
        out = output(WKQ)
        d.define("β", beta, "(1/N) Σ_{n≤N} y_n x_n")
        d.define("z", (beta * xq.T).reshape(D * D, 1).T, "the cubic feature vec(β x_qᵀ), row-major")
        d.step("full decomposition", out, v * (beta.T * U * xq)[0] + irrelevant(U, b),
               "bottom-right entry = v βᵀU x_q + aᵀS_xxUx_q/N + (aᵀβ)(bᵀx_q) + v S_yy (bᵀx_q)/N")
        zero = {s: 0 for s in list(a) + list(b)}
        d.step("irrelevant blocks zero ⇒ w₂ᵀW₁z", out.xreplace(zero), v * (beta.T * U * xq)[0],
               "with a = (W^V)_{D+1,1:D} = 0 and b = (W^KQ)_{D+1,1:D} = 0 only v βᵀ U x_q remains: "
               "w₂ = v, the row of W₁ = vec(U)")

        self.separate = Derivation("ATTN_S prediction = three-layer convolutional network (+ irrelevant terms)")
        d = self.separate
        d.say(f"Symbolic tokens and one head with generic weights at D={D}, N={N}, rank R={R}.")
        WK = sp.Matrix(R, D + 1, lambda r, i: sp.Symbol(f"K_{r}{i}", real=True))
        WQ = sp.Matrix(R, D + 1, lambda r, i: sp.Symbol(f"Q_{r}{i}", real=True))
        out = output(WK.T * WQ)
        Z = beta * xq.T
        conv = sum((WK[r, :D] * (Z * WQ[r, :D].T))[0] for r in range(R))
        U, b = WK[:, :D].T * WQ[:, :D], (WK[:, D].T * WQ[:, :D]).T
        d.define("mat(z)", Z, "β x_qᵀ: the D×D arrangement of the cubic feature")
        d.step("full decomposition", out, v * conv + irrelevant(U, b),
               "bottom-right entry = v Σ_r k_rᵀ mat(z) q_r + irrelevant terms (value x→y entries a, key "
               "label column through b = Q_{:,1:D}ᵀ K_{:,D+1})")
        zero = {s: 0 for s in list(a) + list(WK[:, D])}
        d.step("irrelevant entries zero ⇒ three-layer network", out.xreplace(zero), v * conv,
               "only v Σ_r k_rᵀ mat(z) q_r remains: query kernel q_r (stride D), then key k_r, then value v")

        self.training = Derivation("GD on ATTN_M = GD on the two-layer network (irrelevant blocks at zero, "
                                   "training set closed under w → −w)")
        d = self.training
        d.say(f"The same symbolic tokens and one merged head at D={D}, N={N}; y_q is the target. The loss of one "
              "sequence is ½(ŷ_q − y_q)²; a training set's gradient is the average of the sequences' gradients, "
              "and the sum over heads is linear.")
        WKQ = sp.Matrix(D + 1, D + 1, lambda i, j: sp.Symbol(f"K_{i}{j}", real=True))
        U, b = WKQ[:D, :D], WKQ[D, :D].T
        yq = sp.Symbol("y_q", real=True)
        err = sp.Rational(1, 2) * (output(WKQ) - yq) ** 2
        zero = {s: 0 for s in list(a) + list(b)}
        labels = [y[k] for k in range(N)] + [yq]
        # the gradient of ½(ŷ_q − y_q)² in s is (ŷ_q − y_q)·∂ŷ_q/∂s (chain rule): at a = b = 0 the
        # residual is a common factor, shown once in front of the vector of ∂ŷ_q/∂s
        I = sp.ImmutableMatrix
        res = (output(WKQ) - yq).xreplace(zero)
        douts = [sp.diff(output(WKQ), s).xreplace(zero) for s in list(a) + list(b)]

        def gradient(flip):
            return sp.MatMul(flip(res), I([flip(g) for g in douts]), evaluate=False)

        d.step("∂ℓ/∂a, ∂ℓ/∂b at a = b = 0 are odd in the labels",
               sp.MatAdd(gradient(lambda e: e), gradient(lambda e: label_flip(e, labels)), evaluate=False),
               sp.zeros(len(douts), 1),
               "each gradient (ŷ_q − y_q)·∂ŷ_q/∂s at a = b = 0 plus itself with every label y_n and the "
               "target y_q negated vanishes: the residual ŷ_q − y_q is odd in the labels and "
               "∂ŷ_q/∂a = S_xx U x_q/N, ∂ŷ_q/∂b = v S_yy x_q/N (at a = b = 0) are even; on a training set "
               "closed under w → −w these gradients sum to zero, so GD never moves a and b from 0")
        net = v * (beta.T * U * xq)[0]
        d.step("∂ℓ/∂v = the network's ∂ℓ/∂w₂ at a = b = 0", sp.diff(err, v).xreplace(zero),
               (net - yq) * sp.Derivative(net, v),
               "ATTN_M's gradient (ŷ_q − y_q)·∂ŷ_q/∂v at a = b = 0 against the network's "
               "(w₂ᵀW₁z − y_q)·∂(w₂ᵀW₁z)/∂w₂ with w₂ = v, the row of W₁ = vec(U)")
        d.step("∂ℓ/∂U = the network's ∂ℓ/∂W₁ at a = b = 0",
               sp.MatMul(res, I(D, D, lambda i, j: sp.diff(output(WKQ), U[i, j]).xreplace(zero)), evaluate=False),
               sp.MatMul(net - yq, v, I(beta * xq.T), evaluate=False),
               "ATTN_M's gradient (ŷ_q − y_q)·∂ŷ_q/∂U at a = b = 0 against the network's "
               "(w₂ᵀW₁z − y_q)·w₂ z with ∂(w₂ᵀW₁z)/∂(W₁)_{ab} = w₂ z_ab = v β_a x_q,b")
        d.say("So one GD step maps corresponding weights (a = b = 0) to corresponding weights, and by "
              "induction the two trainings agree at every step: the same weights, the same predictions, the "
              "same training loss. Every other entry of W^V and W^KQ (the value's input rows, the key-query's "
              "label column) never enters ŷ_q and never moves.")
