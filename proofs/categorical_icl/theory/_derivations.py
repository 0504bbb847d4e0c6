r"""SymPy derivations for categorical in-context learning (Wang et al., ICML 2025).

* :func:`functional_gd_derivation` — the gradient of the softmax cross-entropy in the RKHS
  parameter :math:`A` (finite feature map :math:`\psi`), and why one GD step on :math:`A` is the
  kernel update of functional GD (plain step, matrix step :math:`\Gamma`, bias ⇔ :math:`\kappa+1`).
* :func:`cross_attention_derivation` — the cross-attention of the construction (query = the
  :math:`f` slot, keys/values = the columns of :math:`W_e`) writes
  :math:`\nabla_f\log\sum_c e^{w_{e,c}^\top f}=\mathbb E(w_e)|_f` into the scratch slot, and
  :math:`\bar w_e` at :math:`f=0`.

All symbols are real; sizes are kept small (the identities are entrywise, so small symbolic
sizes plus the numeric checks at the claim's sizes cover the general case).
"""

from __future__ import annotations

import sympy as sp

from icltheory.core import Derivation

__all__ = ["functional_gd_derivation", "cross_attention_derivation", "softmax_expected"]


def _matrix(name: str, rows: int, cols: int) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i + 1}{j + 1}", real=True))


def _at_zero(M: sp.Matrix, f: sp.Matrix) -> sp.ImmutableMatrix:
    """``M`` at ``f = 0``, entry by entry as unevaluated substitutions (``doit`` carries them out)."""
    zero = (sp.Integer(0),) * len(f)
    return sp.ImmutableMatrix(M.rows, M.cols, lambda i, j: sp.Subs(M[i, j], tuple(f), zero))


def softmax_expected(W: sp.Matrix, f: sp.Matrix) -> sp.Matrix:
    logits = W.T * f
    e = [sp.exp(z) for z in logits]
    Z = sum(e)
    return sum((W[:, c] * e[c] for c in range(W.shape[1])), sp.zeros(W.shape[0], 1)) / Z


def functional_gd_derivation(C: int = 2, dp: int = 2, dpsi: int = 1, N: int = 2) -> Derivation:
    r"""Gradient of :math:`\mathcal L(A,b)=-\frac1N\sum_i\log\operatorname{softmax}(W_e^\top(A\psi_i+b))_{y_i}`."""
    d = Derivation("functional GD for the softmax likelihood (RKHS parameter A)")
    W = _matrix("w", dp, C)
    A = _matrix("a", dp, dpsi)
    b = _matrix("b", dp, 1)
    psis = [_matrix(f"psi{i + 1}", dpsi, 1) for i in range(N)]
    psiq = _matrix("psiq", dpsi, 1)
    labels = [i % C for i in range(N)]  # any fixed labels: the identity is per example
    alpha = sp.Symbol("alpha", positive=True)
    d.say(
        "Per example the negative log-likelihood is "
        r"$\ell(f)=\log\sum_c e^{w_{e,c}^\top f}-w_{e,y}^\top f$, so "
        r"$\nabla_f\ell=\mathbb E(w_e)|_f-w_{e,y}$ with "
        r"$\mathbb E(w_e)|_f=W_e\operatorname{softmax}(W_e^\top f)$. "
        r"With $f=A\psi(x)+b$ the chain rule gives the gradient in $A$ and $b$; one GD step "
        r"changes $f$ at any point $x_j$ by $\frac{\alpha}{N}\sum_i(w_{e,y_i}-\mathbb E_i)"
        r"(\psi_i^\top\psi_j+1)$, i.e. functional GD with the kernel $\kappa=\psi^\top\psi$ "
        r"(plus 1 for the bias). Sizes here: "
        f"C={C}, d'={dp}, dim ψ={dpsi}, N={N}; labels y=({', '.join(str(y + 1) for y in labels)})."
    )
    fs = [A * p + b for p in psis]
    Es = [softmax_expected(W, f) for f in fs]
    loss = sum((sp.log(sum(sp.exp(z) for z in (W.T * f))) - (W[:, y].T * f)[0]
                for f, y in zip(fs, labels)), sp.Integer(0)) / N
    # 1. per-example gradient in f
    fsym = _matrix("f", dp, 1)
    ell = sp.log(sum(sp.exp(z) for z in (W.T * fsym))) - (W[:, 0].T * fsym)[0]
    grad_f = sp.ImmutableMatrix([sp.Derivative(ell, fsym[r]) for r in range(dp)])
    d.step("gradient in f", grad_f, softmax_expected(W, fsym) - W[:, 0],
           "derivative of the log-partition is the softmax-weighted mean embedding")
    # 2. gradient in A and b
    grad_A = sp.Matrix(dp, dpsi, lambda r, s: sp.diff(loss, A[r, s]))
    closed_A = -sum(((W[:, y] - E) * p.T for y, E, p in zip(labels, Es, psis)),
                    sp.zeros(dp, dpsi)) / N
    d.step("gradient in A", grad_A, closed_A,
           r"$\partial\mathcal L/\partial A=-\frac1N\sum_i(w_{e,y_i}-\mathbb E_i)\psi_i^\top$")
    grad_b = sp.ImmutableMatrix([sp.Derivative(loss, b[r]) for r in range(dp)])
    closed_b = -sum(((W[:, y] - E) for y, E in zip(labels, Es)), sp.zeros(dp, 1)) / N
    d.step("gradient in b", grad_b, closed_b, r"$\partial\mathcal L/\partial b=-\frac1N\sum_i(w_{e,y_i}-\mathbb E_i)$")
    # 3. one step = kernel update (scalar step, with bias)
    f_new = (A - alpha * closed_A) * psiq + (b - alpha * closed_b)
    kern = [(p.T * psiq)[0] for p in psis]
    update = A * psiq + b + alpha / N * sum(((W[:, y] - E) * (k + 1)
                                              for y, E, k in zip(labels, Es, kern)), sp.zeros(dp, 1))
    d.step("one GD step is the kernel update (bias ⇔ κ+1)", f_new, update,
           r"$f_{k+1}(x)=f_k(x)+\frac{\alpha}{N}\sum_i(w_{e,y_i}-\mathbb E_i)(\kappa(x_i,x)+1)$")
    resid = sum(((W[:, y] - E) for y, E in zip(labels, Es)), sp.zeros(dp, 1))
    at_zero = (f_new - A * psiq - b).subs({pp: 0 for pp in psiq})
    d.define("bias kernel shift", sp.cancel(sp.together(at_zero[0] / (alpha / N * resid[0]))),
             "the bias step's update at ψ(x) = 0 divided by (α/N) Σ_i (w_{e,y_i} − E_i): the +1 of κ + 1")
    # 4. matrix step Γ (no bias)
    G = _matrix("g", dp, dp)
    f_new_G = (A - G * closed_A) * psiq
    update_G = A * psiq + G * sum(((W[:, y] - E) * k for y, E, k in zip(labels, Es, kern)),
                                  sp.zeros(dp, 1)) / N
    d.step("matrix step Γ multiplies on the left", f_new_G.subs({bb: 0 for bb in b}),
           update_G.subs({bb: 0 for bb in b}),
           r"$A\leftarrow A-\Gamma\nabla_A\mathcal L$ gives $\Gamma$ in front of the residual")
    # 5. at f = 0 the expected embedding is the mean embedding
    E0 = _at_zero(softmax_expected(W, fsym), fsym)
    d.step("first step uses the mean embedding", E0, sum((W[:, c] for c in range(C)), sp.zeros(dp, 1)) / C,
           r"$\mathbb E(w_e)|_{f_0=0}=\bar w_e$ (all logits 0)")
    return d


def cross_attention_derivation(C: int) -> Derivation:
    r"""The constructed cross-attention computes :math:`\mathbb E(w_e)|_f` (symbolic, ``C`` classes)."""
    dp, dx = 2, 1
    d = Derivation(f"cross-attention computes the expected embedding (C={C})")
    W = _matrix("w", dp, C)
    x = _matrix("x", dx, 1)
    u, v, f = _matrix("u", dp, 1), _matrix("v", dp, 1), _matrix("f", dp, 1)
    h = sp.Matrix.vstack(x, u, v, f)
    D = dx + 3 * dp
    Qc = sp.zeros(dp, D)
    Qc[:, dx + 2 * dp:] = sp.eye(dp)
    Kc = sp.eye(dp)
    Vc = sp.zeros(D, dp)
    Vc[dx + dp:dx + 2 * dp, :] = sp.eye(dp)
    d.say("Token h = [x; u; v; f] (d = 1, d' = 2). Query map Q_c = S_f, keys K_c w_{e,c} = w_{e,c}, "
          "values V_c w_{e,c} = w_{e,c} placed in the v slot; softmax over the C classes.")
    q = Qc * h
    scores = [(q.T * (Kc * W[:, c]))[0] for c in range(C)]
    Z = sum(sp.exp(s) for s in scores)
    out = sum((Vc * W[:, c] * sp.exp(s) for c, s in enumerate(scores)), sp.zeros(D, 1)) / Z
    lse = sp.log(sum(sp.exp(z) for z in (W.T * f)))
    grad_lse = sp.ImmutableMatrix([sp.Derivative(lse, f[r]) for r in range(dp)])
    d.step("v slot = ∇_f log-partition", out[dx + dp:dx + 2 * dp, :], grad_lse,
           r"$\sum_c\operatorname{softmax}_c(w_{e,c}^\top f)w_{e,c}=\nabla_f\log\sum_ce^{w_{e,c}^\top f}$")
    # the output is V_c times the softmax-weighted mean of the columns w_{e,c}
    mean = sum((W[:, c] * sp.exp(s) for c, s in enumerate(scores)), sp.zeros(dp, 1)) / Z
    rows_elsewhere = sp.ImmutableMatrix.vstack(Vc[:dx + dp, :], Vc[dx + 2 * dp:, :])
    d.step("nothing else is written",
           sp.UnevaluatedExpr(sp.MatMul(rows_elsewhere, sp.ImmutableMatrix(mean))),
           sp.zeros(dx + 2 * dp, 1), "the value map only has rows in the v slot: its other rows "
           "times Σ_c softmax_c(w_{e,c}ᵀf) w_{e,c} vanish")
    at0 = _at_zero(out[dx + dp:dx + 2 * dp, :], f)
    d.step("equals the mean embedding at f = 0", at0,
           sum((W[:, c] for c in range(C)), sp.zeros(dp, 1)) / C, "all scores are 0 at f = 0")
    return d
