r"""Explicit gradient descent on the RKHS parameter :math:`A` of :math:`f(x)=A\psi(x)`.

The gradient of the per-prompt empirical loss
:math:`\mathcal L(A)=-\frac1N\sum_i\log\operatorname{softmax}(W_e^\top A\psi(x_i))_{y_i}` is taken by
the complex step (no closed form is used), so this is independent of the functional-GD formula it
is compared with.
"""

from __future__ import annotations

import numpy as np

__all__ = ["parameter_gd", "features"]


def features(X: np.ndarray, bias: bool) -> np.ndarray:
    """The feature map ψ(x) = x, or [x; 1] for a model with a bias."""
    return np.concatenate([X, np.ones(X.shape[:2] + (1,))], -1) if bias else X


def parameter_gd(Psi: np.ndarray, y: np.ndarray, W: np.ndarray, gammas) -> np.ndarray:
    r"""Explicit GD on :math:`A` (``d' × dim ψ``) from 0 with complex-step gradients.

    The gradient of the per-prompt empirical loss is :math:`\operatorname{Im}\mathcal L(A+ihE_{ab})/h`
    (:math:`h=10^{-30}`), exact to round-off for this analytic loss and independent of the
    closed form.  Returns :math:`f_k(x_j)=A_k\psi(x_j)`, shape ``(K+1, B, N+1, d')``.
    """
    B, T, p = Psi.shape
    N = y.shape[1]
    dp = W.shape[0]
    A = np.zeros((B, dp, p))
    h = 1e-30
    out = [np.einsum("bap,btp->bta", A, Psi)]
    Pc = Psi[:, :N]
    wy = W.T[y]  # (B, N, d')
    for G in gammas:
        grad = np.zeros_like(A)
        for a in range(dp):
            for q in range(p):
                Ac = A.astype(complex)
                Ac[:, a, q] += 1j * h
                f = np.einsum("bap,bnp->bna", Ac, Pc)
                z = f @ W  # (B,N,C) complex
                m = np.max(z.real, -1, keepdims=True)
                lse = m[..., 0] + np.log(np.sum(np.exp(z - m), -1))
                loss = np.mean(lse - np.sum(wy * f, -1), -1)
                grad[:, a, q] = loss.imag / h
        A = A - np.einsum("ab,bpq->apq", G, grad.transpose(1, 0, 2)).transpose(1, 0, 2)
        out.append(np.einsum("bap,btp->bta", A, Psi))
    return np.stack(out)
