r"""Attention-based in-context learning for categorical data (Wang et al., ICML 2025).

Everything here is plain numpy, float64 and vectorised over a leading *prompt* axis ``B``.

Data model
----------
Classes :math:`c=1..C`, embeddings :math:`W_e\in\mathbb R^{d'\times C}` (columns
:math:`w_{e,c}`), latent :math:`f:\mathbb R^d\to\mathbb R^{d'}` and
:math:`p(y=c\mid x,f)=\operatorname{softmax}_c(W_e^\top f(x))`.  A prompt holds ``N`` context
pairs :math:`(x_i,y_i)` and a query :math:`x_{N+1}` (position ``N``, the last one).

Functional gradient descent (:func:`functional_gd`)
----------------------------------------------------
.. math::
   f_{k+1}(x_j)=f_k(x_j)+\sum_{i=1}^N \tilde\kappa(x_j,x_i)\,\Gamma_k\big[w_{e,y_i}
   -\mathbb E(w_e)|_{f_k(x_i)}\big],\qquad f_0\equiv 0,

with :math:`\tilde\kappa=\kappa/N` for the kernels linear :math:`s\,x^\top x'`, exp
:math:`e^{s x^\top x'}`, rbf :math:`e^{-s\lVert x-x'\rVert^2}`, laplacian
:math:`e^{-\sqrt s\lVert x-x'\rVert_1}`, and :math:`\tilde\kappa(x_j,x_i)=
\operatorname{softmax}_i(s\,x_j^\top x_i)` (no :math:`1/N`) for ``softmax``.  This is an
independent implementation: it never builds tokens or attention heads.

The attention model (:class:`Model`, :func:`forward`, :func:`backward`)
----------------------------------------------------------------------
Token :math:`h=[x;u;v;f]` (widths :math:`d,d',d',d'`; :func:`layout`).  A block is a sum of
self-attention heads (keys/values: the ``N`` context tokens; queries: every token) with a
residual, then a softmax cross-attention whose keys/values are the columns of :math:`W_e`,
with a residual.  A head has query/key maps ``Q, K`` (``r × D``), a value map ``V``
(``D × D``, the output projection folded in) and a score ``kind``:

==================  =======================================================
kind                attention weight :math:`a_{ji}` from :math:`q_j=Qh_j`, :math:`k_i=Kh_i`
==================  =======================================================
``linear``          :math:`q_j^\top k_i/N`
``exp``             :math:`e^{q_j^\top k_i}/N`
``rbf``             :math:`e^{-\lVert q_j-k_i\rVert^2}/N`
``laplacian``       :math:`e^{-\lVert q_j-k_i\rVert_1}/N`
``softmax``         :math:`\operatorname{softmax}_i(q_j^\top k_i)` (dot-product erase)
``softmax_negsq``   :math:`\operatorname{softmax}_i(-\lVert q_j-k_i\rVert^2)` (rbf erase)
``delta``           :math:`\delta_{ij}` for context rows, 0 for the query (idealised erase)
==================  =======================================================

:func:`backward` is hand-written reverse-mode differentiation of :func:`forward` and returns
**per-prompt** parameter gradients (a leading ``B`` axis); the tests check it against
central finite differences.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

__all__ = [
    "KERNELS", "ERASES", "X_DISTS", "HEAD_KINDS", "Layout", "layout", "softmax",
    "expected_embedding", "sample_x", "anisotropic_std", "kernel_matrix", "functional_gd",
    "Head", "Cross", "Block", "Model", "embed", "forward", "backward", "query_loss",
    "gd_model", "erase_head", "own_argmax_fraction", "rbf_bump_task", "linear_task",
    "sample_labels", "relative_distance_to_scaled_identity", "update_head", "exact_cross",
    "StructuredPoint", "FreeParams", "GAMMA_FORMS", "stationarity_model", "PromptBatch",
    "draw_linear_task_prompts", "pair_gradients", "structured_objective", "ComponentTable",
    "gradient_components", "structural_zero_mask", "flatten_gradients", "raw_gradient_names",
    "log_softmax", "fit_structured", "cross_attention", "Dataset",
    "synthetic_dataset", "GDLearner", "TFLearner", "evaluate", "train",
]

KERNELS = ("linear", "exp", "rbf", "laplacian", "softmax")
ERASES = ("rbf", "dot")
X_DISTS = ("cube", "gaussian", "sphere", "anisotropic")
HEAD_KINDS = KERNELS + ("softmax_negsq", "delta")
_MEAN_KINDS = ("linear", "exp", "rbf", "laplacian")
_SOFTMAX_KINDS = ("softmax", "softmax_negsq")


# ----------------------------------------------------------------------------- basics


@dataclass(frozen=True)
class Layout:
    """Block slices of a token :math:`h=[x;u;v;f]`."""

    d: int
    dp: int

    @property
    def D(self) -> int:
        return self.d + 3 * self.dp

    @property
    def x(self) -> slice:
        return slice(0, self.d)

    @property
    def u(self) -> slice:
        return slice(self.d, self.d + self.dp)

    @property
    def v(self) -> slice:
        return slice(self.d + self.dp, self.d + 2 * self.dp)

    @property
    def f(self) -> slice:
        return slice(self.d + 2 * self.dp, self.d + 3 * self.dp)

    def selector(self, block: str) -> np.ndarray:
        """``S`` with ``S @ h`` the named block (shape ``width × D``)."""
        sl = getattr(self, block)
        S = np.zeros((sl.stop - sl.start, self.D))
        S[:, sl] = np.eye(sl.stop - sl.start)
        return S


def layout(d: int, dp: int) -> Layout:
    return Layout(d, dp)


def softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    """Stable softmax (max subtracted; underflow to 0 is benign)."""
    m = np.max(z, axis=axis, keepdims=True)
    with np.errstate(under="ignore"):
        e = np.exp(z - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    m = np.max(z, axis=axis, keepdims=True)
    with np.errstate(under="ignore"):
        return z - m - np.log(np.sum(np.exp(z - m), axis=axis, keepdims=True))


def expected_embedding(W_e: np.ndarray, f: np.ndarray) -> np.ndarray:
    r""":math:`\mathbb E(w_e)|_f=W_e\operatorname{softmax}(W_e^\top f)` for ``f`` of shape ``(..., d')``."""
    return softmax(f @ W_e, axis=-1) @ W_e.T


def anisotropic_std(d: int) -> np.ndarray:
    """Per-coordinate standard deviations of the anisotropic law: geometric from 2 to 1/2."""
    return np.geomspace(2.0, 0.5, d) if d > 1 else np.array([2.0])


def sample_x(rng: np.random.Generator, dist: str, shape: tuple[int, ...], d: int,
             *, unit_variance: bool = False) -> np.ndarray:
    """Covariates of shape ``shape + (d,)``.

    ``cube``: :math:`U[-1,1]^d` (or :math:`U[-\\sqrt3,\\sqrt3]^d` with ``unit_variance``);
    ``gaussian``: :math:`N(0,I)`; ``sphere``: uniform on the unit sphere;
    ``anisotropic``: :math:`N(0,\\operatorname{diag}(\\sigma^2))` with :func:`anisotropic_std`.
    """
    if dist == "cube":
        half = np.sqrt(3.0) if unit_variance else 1.0
        return rng.uniform(-half, half, size=shape + (d,))
    g = rng.standard_normal(shape + (d,))
    if dist == "gaussian":
        return g
    if dist == "sphere":
        return g / np.linalg.norm(g, axis=-1, keepdims=True)
    if dist == "anisotropic":
        return g * anisotropic_std(d)
    raise ValueError(f"unknown x_dist {dist!r}; valid: {', '.join(X_DISTS)}")


def kernel_matrix(kernel: str, Xq: np.ndarray, Xk: np.ndarray, scale: float) -> np.ndarray:
    r"""Normalised kernel :math:`\tilde\kappa(x_j,x_i)`, shape ``(B, M, N)`` (direct formula)."""
    N = Xk.shape[-2]
    if kernel in ("linear", "exp", "softmax"):
        dot = scale * np.einsum("bjd,bid->bji", Xq, Xk)
        if kernel == "linear":
            return dot / N
        if kernel == "exp":
            return np.exp(dot) / N
        return softmax(dot, axis=-1)
    diff = Xq[:, :, None, :] - Xk[:, None, :, :]
    with np.errstate(under="ignore"):
        if kernel == "rbf":
            return np.exp(-scale * np.sum(diff * diff, axis=-1)) / N
        if kernel == "laplacian":
            return np.exp(-np.sqrt(scale) * np.sum(np.abs(diff), axis=-1)) / N
    raise ValueError(f"unknown kernel {kernel!r}; valid: {', '.join(KERNELS)}")


def functional_gd(kernel: str, X: np.ndarray, labels: np.ndarray, W_e: np.ndarray,
                  gammas: list[np.ndarray], scale: float, kap: np.ndarray | None = None):
    """K steps of functional GD at every position.

    ``X``: ``(B, N+1, d)`` (query last); ``labels``: ``(B, N)`` ints.  Returns
    ``f`` of shape ``(K+1, B, N+1, d')`` and ``E`` (the expected embedding at the context
    points, ``(K+1, B, N, d')``).  ``kap`` overrides the kernel matrix ``(B, N+1, N)``.
    """
    N = labels.shape[1]
    if kap is None:
        kap = kernel_matrix(kernel, X, X[:, :N], scale)  # (B, N+1, N)
    U = W_e.T[labels]  # (B, N, d')
    f = np.zeros(X.shape[:2] + (W_e.shape[0],))
    fs, Es = [f], [expected_embedding(W_e, f[:, :N])]
    for G in gammas:
        resid = (U - Es[-1]) @ G.T
        f = f + kap @ resid
        fs.append(f)
        Es.append(expected_embedding(W_e, f[:, :N]))
    return np.stack(fs), np.stack(Es)


# ----------------------------------------------------------------------------- the model


@dataclass
class Head:
    """One self-attention head: ``q = Q h``, ``k = K h``, value ``V h`` (into the token)."""

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    kind: str
    frozen: bool = False  # True: backward skips this head's parameter gradients


@dataclass
class Cross:
    r"""Cross-attention over the columns of :math:`W_e`: query ``Qc h``, key ``Kc w_c``, value ``Vc w_c``."""

    Qc: np.ndarray
    Kc: np.ndarray
    Vc: np.ndarray
    frozen: bool = False


@dataclass
class Block:
    heads: list[Head]
    cross: Cross | None = None


@dataclass
class Model:
    r"""Embedding maps (label ``W_u``, constant ``W_v``), blocks, cross-attention table and readout.

    Context token :math:`(x_i, W_u e_{y_i}, W_v\mathbf 1/C, 0)`, query :math:`(x, 0, W_v\mathbf 1/C, 0)`;
    logits :math:`W_{ro}^\top f_{\rm query}`; the cross-attention uses ``W_x``.
    """

    lay: Layout
    W_u: np.ndarray
    W_v: np.ndarray
    W_x: np.ndarray
    W_ro: np.ndarray
    blocks: list[Block] = field(default_factory=list)


def embed(model: Model, X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    lay = model.lay
    B, T, _ = X.shape
    N = labels.shape[1]
    C = model.W_u.shape[1]
    H = np.zeros((B, T, lay.D))
    H[:, :, lay.x] = X
    H[:, :N, lay.u] = model.W_u.T[labels]
    H[:, :, lay.v] = model.W_v @ np.full(C, 1.0 / C)
    return H


def _scores(kind: str, q: np.ndarray, k: np.ndarray):
    """Pre-normalisation scores ``g`` (B, T, N) and the attention weights ``a``."""
    N = k.shape[1]
    if kind in ("linear", "exp", "softmax"):
        g = q @ k.transpose(0, 2, 1)
    elif kind in ("rbf", "softmax_negsq"):
        g = -(np.sum(q * q, -1)[:, :, None] + np.sum(k * k, -1)[:, None, :]
              - 2.0 * q @ k.transpose(0, 2, 1))
    elif kind == "laplacian":
        g = -np.sum(np.abs(q[:, :, None, :] - k[:, None, :, :]), axis=-1)
    else:
        raise ValueError(f"unknown head kind {kind!r}; valid: {', '.join(HEAD_KINDS)}")
    if kind == "linear":
        a = g / N
    elif kind in _MEAN_KINDS:
        with np.errstate(under="ignore"):
            a = np.exp(g) / N
    else:
        a = softmax(g, axis=-1)
    return g, a


def _head_forward(head: Head, H: np.ndarray, N: int):
    Hc = H[:, :N]
    val = Hc @ head.V.T
    if head.kind == "delta":
        B, T, _ = H.shape
        a = np.zeros((B, T, N))
        a[:, np.arange(N), np.arange(N)] = 1.0
        return a @ val, {"a": a, "val": val}
    q = H @ head.Q.T
    k = Hc @ head.K.T
    g, a = _scores(head.kind, q, k)
    return a @ val, {"a": a, "val": val, "q": q, "k": k, "g": g}


def _cross_forward(cr: Cross, H: np.ndarray, W_x: np.ndarray):
    q = H @ cr.Qc.T  # (B,T,p)
    kc = (cr.Kc @ W_x).T  # (C,p)
    vals = (cr.Vc @ W_x).T  # (C,D)
    a = softmax(q @ kc.T, axis=-1)  # (B,T,C)
    return a @ vals, {"q": q, "kc": kc, "vals": vals, "a": a}


def cross_attention(cr: Cross, H: np.ndarray, W_x: np.ndarray) -> np.ndarray:
    """The cross-attention's output (the residual increment) for tokens ``H``."""
    return _cross_forward(cr, H, W_x)[0]


def forward(model: Model, X: np.ndarray, labels: np.ndarray, *, keep: bool = False):
    """Run the model.  Returns ``(logits (B,C), hidden list, cache)``.

    ``hidden[k]`` is the token array after block ``k`` (``hidden[0]`` the embedding).
    """
    N = labels.shape[1]
    H = embed(model, X, labels)
    hidden = [H]
    cache = []
    for blk in model.blocks:
        Hin = H
        outs = [_head_forward(h, Hin, N) for h in blk.heads]
        Hmid = Hin + sum(o for o, _ in outs)
        if blk.cross is not None:
            cout, ccache = _cross_forward(blk.cross, Hmid, model.W_x)
            Hout = Hmid + cout
        else:
            ccache = None
            Hout = Hmid
        cache.append({"Hin": Hin, "heads": [c for _, c in outs], "Hmid": Hmid, "cross": ccache})
        H = Hout
        hidden.append(H)
    fq = H[:, -1, model.lay.f]
    logits = fq @ model.W_ro
    return logits, hidden, {"blocks": cache, "fq": fq, "N": N}


def query_loss(logits: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Per-prompt cross-entropy :math:`-\\sum_c q_c\\log\\hat p_c` against a target distribution."""
    return -np.sum(target * log_softmax(logits, -1), axis=-1)


def _dscores(kind: str, a: np.ndarray, da: np.ndarray, N: int) -> np.ndarray:
    if kind == "linear":
        return da / N
    if kind in _MEAN_KINDS:
        return da * a
    return a * (da - np.sum(a * da, axis=-1, keepdims=True))


def _head_backward(head: Head, c: dict, H: np.ndarray, dout: np.ndarray, N: int):
    Hc = H[:, :N]
    a, val = c["a"], c["val"]
    dval = a.transpose(0, 2, 1) @ dout  # (B,N,D)
    grads = {} if head.frozen else {"V": dval.transpose(0, 2, 1) @ Hc}
    dH = np.zeros_like(H)
    dH[:, :N] += dval @ head.V
    if head.kind == "delta":
        if not head.frozen:
            grads["Q"] = np.zeros((H.shape[0],) + head.Q.shape)
            grads["K"] = np.zeros((H.shape[0],) + head.K.shape)
        return grads, dH
    q, k, g = c["q"], c["k"], c["g"]
    da = dout @ val.transpose(0, 2, 1)  # (B,T,N)
    dg = _dscores(head.kind, a, da, N)
    if head.kind in ("linear", "exp", "softmax"):
        dq = dg @ k
        dk = dg.transpose(0, 2, 1) @ q
    elif head.kind in ("rbf", "softmax_negsq"):
        dq = -2.0 * q * np.sum(dg, -1)[:, :, None] + 2.0 * dg @ k
        dk = -2.0 * k * np.sum(dg, 1)[:, :, None] + 2.0 * dg.transpose(0, 2, 1) @ q
    else:  # laplacian
        sgn = np.sign(q[:, :, None, :] - k[:, None, :, :])
        dq = -np.einsum("bji,bjir->bjr", dg, sgn)
        dk = np.einsum("bji,bjir->bir", dg, sgn)
    if not head.frozen:
        grads["Q"] = dq.transpose(0, 2, 1) @ H
        grads["K"] = dk.transpose(0, 2, 1) @ Hc
    dH += dq @ head.Q
    dH[:, :N] += dk @ head.K
    return grads, dH


def _cross_backward(cr: Cross, c: dict, H: np.ndarray, dout: np.ndarray, W_x: np.ndarray):
    q, kc, vals, a = c["q"], c["kc"], c["vals"], c["a"]
    da = dout @ vals.T  # (B,T,C)
    dg = a * (da - np.sum(a * da, -1, keepdims=True))
    dq = dg @ kc  # (B,T,p)
    if cr.frozen:
        return {}, dq @ cr.Qc, None
    dvals = a.transpose(0, 2, 1) @ dout  # (B,C,D) per prompt
    dkc = dg.transpose(0, 2, 1) @ q  # (B,C,p)
    grads = {
        "Qc": dq.transpose(0, 2, 1) @ H,
        "Kc": dkc.transpose(0, 2, 1) @ W_x.T,
        "Vc": dvals.transpose(0, 2, 1) @ W_x.T,
    }
    dW_x = (dkc @ cr.Kc).transpose(0, 2, 1) + (dvals @ cr.Vc).transpose(0, 2, 1)
    return grads, dq @ cr.Qc, dW_x


def backward(model: Model, X: np.ndarray, labels: np.ndarray, target: np.ndarray,
             logits: np.ndarray, cache: dict):
    """Per-prompt gradients of :func:`query_loss` (hand-written reverse mode).

    Returns a dict with ``blocks`` (a list, per block, of ``{"heads": [{"Q","K","V"}],
    "cross": {"Qc","Kc","Vc"}}``), ``W_u``, ``W_v``, ``W_x``, ``W_ro`` and ``X``; every
    array has a leading prompt axis.
    """
    lay = model.lay
    N = cache["N"]
    B = X.shape[0]
    p = softmax(logits, -1)
    dlogits = p * np.sum(target, -1, keepdims=True) - target
    grads: dict = {"W_ro": np.einsum("bd,bc->bdc", cache["fq"], dlogits)}
    dH = np.zeros((B, X.shape[1], lay.D))
    dH[:, -1, lay.f] = dlogits @ model.W_ro.T
    dW_x = np.zeros((B,) + model.W_x.shape)
    bgrads = []
    for blk, c in zip(reversed(model.blocks), reversed(cache["blocks"])):
        g_blk: dict = {"heads": [], "cross": None}
        if blk.cross is not None:
            gc, dHc, dWx = _cross_backward(blk.cross, c["cross"], c["Hmid"], dH, model.W_x)
            g_blk["cross"] = gc
            if dWx is not None:
                dW_x += dWx
            dH = dH + dHc
        dH_in = dH.copy()
        for h, hc in zip(blk.heads, c["heads"]):
            gh, dHh = _head_backward(h, hc, c["Hin"], dH, N)
            g_blk["heads"].append(gh)
            dH_in += dHh
        dH = dH_in
        bgrads.append(g_blk)
    grads["blocks"] = bgrads[::-1]
    grads["W_x"] = dW_x
    C = model.W_u.shape[1]
    onehot = np.zeros((B, N, C))
    onehot[np.arange(B)[:, None], np.arange(N)[None, :], labels] = 1.0
    grads["W_u"] = np.einsum("bnd,bnc->bdc", dH[:, :N, lay.u], onehot)
    grads["W_v"] = np.einsum("bd,c->bdc", dH[:, :, lay.v].sum(1), np.full(C, 1.0 / C))
    grads["X"] = dH[:, :, lay.x]
    return grads


# ----------------------------------------------------------------------------- constructions


def erase_head(lay: Layout, erase: str, lam: float) -> Head:
    r"""Erase head: ``Q = K = λ S_x``, value ``-v`` into the ``v`` slot.

    ``rbf``: softmax over :math:`-\lambda^2\lVert x_j-x_i\rVert^2`; ``dot``: softmax over
    :math:`\lambda^2x_j^\top x_i`; ``delta``: the exact Kronecker delta (idealised).
    """
    Sx = lay.selector("x")
    V = np.zeros((lay.D, lay.D))
    V[lay.v, lay.v] = -np.eye(lay.dp)
    kind = {"rbf": "softmax_negsq", "dot": "softmax", "delta": "delta"}[erase]
    return Head(lam * Sx, lam * Sx, V, kind)


def update_head(lay: Layout, kernel: str, scale: float, gamma: np.ndarray) -> Head:
    r"""Update head: :math:`Q=K=\sqrt s\,S_x`; value :math:`\Gamma(u-v)` into the ``f`` slot.

    For ``laplacian`` the score is :math:`-\lVert\sqrt s(x_j-x_i)\rVert_1`, so the kernel is
    :math:`e^{-\sqrt s\lVert x_j-x_i\rVert_1}`, matching :func:`kernel_matrix`.
    """
    Sx = lay.selector("x")
    V = np.zeros((lay.D, lay.D))
    V[lay.f, lay.u] = gamma
    V[lay.f, lay.v] = -gamma
    r = np.sqrt(scale)
    return Head(r * Sx, r * Sx, V, kernel)


def exact_cross(lay: Layout) -> Cross:
    r"""Cross-attention that writes :math:`\mathbb E(w_e)|_f` into the ``v`` slot."""
    Vc = np.zeros((lay.D, lay.dp))
    Vc[lay.v] = np.eye(lay.dp)
    return Cross(lay.selector("f"), np.eye(lay.dp), Vc)


def gd_model(lay: Layout, W_e: np.ndarray, kernel: str, scale: float, gammas, *,
             erase: str = "delta", lam: float = 1.0) -> Model:
    """The constructed Transformer of §2.3: K blocks (update + erase head, cross-attention)."""
    blocks = [Block([update_head(lay, kernel, scale, G), erase_head(lay, erase, lam)],
                    exact_cross(lay)) for G in gammas]
    return Model(lay, W_e, W_e, W_e, W_e, blocks)


def own_argmax_fraction(X: np.ndarray) -> np.ndarray:
    r"""Per prompt: does every context point win its own dot-product argmax,
    :math:`x_j^\top x_j>\max_{i\ne j}x_j^\top x_i` for all ``j``?  ``X``: ``(B, N, d)``."""
    G = np.einsum("bjd,bid->bji", X, X)
    N = X.shape[1]
    own = G[:, np.arange(N), np.arange(N)]
    G = G.copy()
    G[:, np.arange(N), np.arange(N)] = -np.inf
    return np.all(own > G.max(-1), axis=-1)


# ----------------------------------------------------------------------------- tasks


def sample_labels(rng: np.random.Generator, logits: np.ndarray) -> np.ndarray:
    """Categorical draws from ``softmax(logits)`` by inverse CDF (common random numbers)."""
    p = softmax(logits, -1)
    u = rng.uniform(size=logits.shape[:-1] + (1,))
    return np.minimum((np.cumsum(p, -1) < u).sum(-1), logits.shape[-1] - 1)


def linear_task(rng: np.random.Generator, B: int, d: int, dp: int, scale: float) -> np.ndarray:
    r"""Task matrices :math:`A\sim N(0,\tau^2/d)^{d'\times d}` (rotation-invariant prior), shape ``(B,d',d)``."""
    return rng.standard_normal((B, dp, d)) * (scale / np.sqrt(d))


def rbf_bump_task(rng: np.random.Generator, X: np.ndarray, W_e: np.ndarray, *, bumps: int = 5,
                  amplitude: float = 3.0) -> np.ndarray:
    r"""The paper's synthetic generator: logits :math:`W_e^\top f(x)` for every position.

    Per prompt choose ``bumps`` distinct classes, centres :math:`\mu_j\sim N(0,I_d)`, widths
    :math:`\sigma_j^2=-\delta_j/\ln 0.1` (:math:`\delta_j` the squared distance to the nearest
    other centre), :math:`f(x)=\lambda\sum_j e^{-\lVert x-\mu_j\rVert^2/\sigma_j^2}w_{e,c_j}`.
    """
    B, T, d = X.shape
    C = W_e.shape[1]
    m = min(bumps, C)
    cls = np.argsort(rng.uniform(size=(B, C)), axis=1)[:, :m]
    mu = rng.standard_normal((B, m, d))
    dmu = np.sum((mu[:, :, None] - mu[:, None]) ** 2, -1)
    dmu[:, np.arange(m), np.arange(m)] = np.inf
    near = dmu.min(-1) if m > 1 else np.ones((B, 1))
    sig2 = -near / np.log(0.1)
    dist = np.sum((X[:, :, None, :] - mu[:, None]) ** 2, -1)  # (B,T,m)
    with np.errstate(under="ignore"):
        w = amplitude * np.exp(-dist / sig2[:, None, :])
    f = np.einsum("btm,bmd->btd", w, W_e.T[cls])
    return f @ W_e


def relative_distance_to_scaled_identity(M: np.ndarray) -> float:
    r""":math:`\lVert M-(\operatorname{tr}M/d)I\rVert_F/\lVert M\rVert_F`."""
    d = M.shape[0]
    nrm = np.linalg.norm(M)
    if nrm == 0:
        return 0.0
    return float(np.linalg.norm(M - np.trace(M) / d * np.eye(d)) / nrm)


def with_blocks(model: Model, blocks: list[Block]) -> Model:
    return replace(model, blocks=blocks)


# ----------------------------------------------------------------------------- stationarity


@dataclass
class StructuredPoint:
    r"""A point of the GD-structured set :math:`S`: per block :math:`Q_k=b_kS_x`,
    :math:`K_k=c_kS_x`, value :math:`\Gamma_k(u-v)` into the ``f`` slot."""

    b: np.ndarray
    c: np.ndarray
    gammas: list

    def vector(self) -> np.ndarray:
        return np.concatenate([self.b, self.c] + [G.ravel() for G in self.gammas])

    @classmethod
    def from_vector(cls, vec: np.ndarray, K: int, dp: int) -> "StructuredPoint":
        b, c = vec[:K], vec[K:2 * K]
        rest = vec[2 * K:]
        return cls(b.copy(), c.copy(), [rest[k * dp * dp:(k + 1) * dp * dp].reshape(dp, dp).copy()
                                        for k in range(K)])


@dataclass
class FreeParams:
    r"""The free self-attention parameters of the update head of every block:
    ``Q[k]``, ``K[k]`` (``d × D``) and ``V[k]`` (``d' × D``, the rows written into ``f``)."""

    Q: list
    K: list
    V: list

    @classmethod
    def from_point(cls, lay: Layout, pt: StructuredPoint) -> "FreeParams":
        Sx = lay.selector("x")
        Qs, Ks, Vs = [], [], []
        for b, c, G in zip(pt.b, pt.c, pt.gammas):
            V = np.zeros((lay.dp, lay.D))
            V[:, lay.u] = G
            V[:, lay.v] = -G
            Qs.append(b * Sx)
            Ks.append(c * Sx)
            Vs.append(V)
        return cls(Qs, Ks, Vs)

    def vector(self) -> np.ndarray:
        return np.concatenate([a.ravel() for a in self.Q + self.K + self.V])

    def shifted(self, direction: "FreeParams", eps: float) -> "FreeParams":
        return FreeParams([a + eps * b for a, b in zip(self.Q, direction.Q)],
                          [a + eps * b for a, b in zip(self.K, direction.K)],
                          [a + eps * b for a, b in zip(self.V, direction.V)])


def stationarity_model(lay: Layout, W_e: np.ndarray, kernel: str, fp: FreeParams) -> Model:
    """Update head with free ``Q, K, V_f``; exact δ erase; exact cross-attention (the theorem's assumptions)."""
    blocks = []
    for Q, K, Vf in zip(fp.Q, fp.K, fp.V):
        V = np.zeros((lay.D, lay.D))
        V[lay.f] = Vf
        erase = replace(erase_head(lay, "delta", 1.0), frozen=True)
        blocks.append(Block([Head(Q, K, V, kernel), erase], replace(exact_cross(lay), frozen=True)))
    # W_e is centred for this claim, so the v slot starts at exactly w̄_e = 0 (W_v = 0 makes
    # that exact in floating point rather than ~1e-17).
    return Model(lay, W_e, np.zeros_like(W_e), W_e, W_e, blocks)


@dataclass
class PromptBatch:
    """Antithetic pairs: rows ``[:n]`` use ``X``, rows ``[n:]`` use ``-X`` with the same
    task and the same label uniforms (common random numbers)."""

    X: np.ndarray
    labels: np.ndarray
    target: np.ndarray

    @property
    def pairs(self) -> int:
        return self.X.shape[0] // 2

    def chunks(self, size: int):
        n = self.pairs
        for s in range(0, n, size):
            e = min(n, s + size)
            idx = np.r_[s:e, n + s:n + e]
            yield PromptBatch(self.X[idx], self.labels[idx], self.target[idx])


def draw_linear_task_prompts(rng: np.random.Generator, n: int, *, d: int, dp: int, N: int,
                             W_e: np.ndarray, x_dist: str, task_scale: float) -> PromptBatch:
    r"""``n`` antithetic pairs from the rotation-invariant prior :math:`f(x)=Ax`,
    :math:`A_{ab}\sim N(0,\tau^2/d)`; query target = the exact label distribution."""
    A = linear_task(rng, n, d, dp, task_scale)
    X = sample_x(rng, x_dist, (n, N + 1), d, unit_variance=True)
    u = rng.uniform(size=(n, N, 1))
    Xs = np.concatenate([X, -X])
    As = np.concatenate([A, A])
    us = np.concatenate([u, u])
    logits = np.einsum("btd,bed,ec->btc", Xs, As, W_e)
    p = softmax(logits[:, :N], -1)
    labels = np.minimum((np.cumsum(p, -1) < us).sum(-1), W_e.shape[1] - 1)
    return PromptBatch(Xs, labels, softmax(logits[:, N], -1))


def pair_gradients(lay: Layout, W_e: np.ndarray, kernel: str, fp: FreeParams,
                   batch: PromptBatch, chunk: int = 4096):
    """Per-pair (antithetic average) loss and gradients of the free parameters.

    Returns ``loss (n,)`` and a list per block of ``(gQ (n,d,D), gK (n,d,D), gV (n,d',D))``.
    """
    model = stationarity_model(lay, W_e, kernel, fp)
    losses, per_block = [], [[[], [], []] for _ in fp.Q]
    for ch in batch.chunks(chunk):
        logits, _, cache = forward(model, ch.X, ch.labels)
        g = backward(model, ch.X, ch.labels, ch.target, logits, cache)
        m = ch.pairs
        loss = query_loss(logits, ch.target)
        losses.append(0.5 * (loss[:m] + loss[m:]))
        for k, gb in enumerate(g["blocks"]):
            h = gb["heads"][0]
            for slot, arr in enumerate((h["Q"], h["K"], h["V"][:, lay.f, :])):
                per_block[k][slot].append(0.5 * (arr[:m] + arr[m:]))
    out = [tuple(np.concatenate(s) for s in blk) for blk in per_block]
    return np.concatenate(losses), out


def structural_zero_mask(lay: Layout, K: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    r"""The entries of the free-parameter gradient that vanish identically, derived from the token
    layout and the architecture of :func:`stationarity_model` alone (never from a measured gradient).

    Returned per block as boolean arrays shaped like :func:`pair_gradients`' output:
    ``(Q (d, D), K (d, D), V_f (d', D))``; ``True`` = structurally zero.  Every free parameter
    multiplies one token slot :math:`s`:

    .. math::
       \frac{\partial L}{\partial Q_{rs}}=\sum_{j\le N+1}\Big(\frac{\partial L}{\partial q_j}\Big)_r h_{j,s},\qquad
       \frac{\partial L}{\partial K_{rs}}=\sum_{i\le N}\Big(\frac{\partial L}{\partial k_i}\Big)_r h_{i,s},\qquad
       \frac{\partial L}{\partial V_{f,rs}}=\sum_{i\le N}\Big(\frac{\partial L}{\partial\,\mathrm{val}_i}\Big)_r h_{i,s},

    with :math:`h` the block's input tokens, so an entry is exactly 0 whenever :math:`h_{\cdot,s}`
    is exactly 0 at every token that carries upstream gradient.  Facts used:

    (a) nothing writes the ``u`` slot (free values go to ``f``; the erase head and the
        cross-attention write ``v``), so the query's ``u`` is 0 in every block;
    (b) the embedding has ``v`` = :math:`W_v\mathbf 1/C` = 0 (:math:`W_v=0`, i.e. :math:`\bar w_e=0`)
        and ``f`` = 0, so at the input of block 1 the ``v`` and ``f`` slots are 0 at every token;
    (c) the loss reads only the query's ``f``; in block :math:`K` the cross-attention writes ``v``,
        which nothing reads afterwards, so the update head of block :math:`K` receives upstream
        gradient at the query only, hence :math:`\partial L/\partial q_j=0` for every context
        token :math:`j` (its attention row gets no gradient).

    Structurally zero therefore: block 1 — ``Q``, ``K`` and ``V_f`` reading ``v`` and ``f`` (b);
    block :math:`K` — ``Q`` reading ``u`` (a + c).  For :math:`K=1` both apply to block 1.
    These hold at *every* parameter value (on or off the GD-structured set), because they come
    from the layout, not from the parameters.  Every other entry is a sum of generically nonzero
    products (context ``u``, ``x`` everywhere, and ``v``, ``f`` after block 1), so at a generic
    point it is nonzero; the tests check both directions.
    """
    d, dp, D = lay.d, lay.dp, lay.D
    masks = []
    for k in range(1, K + 1):
        mQ, mK, mV = (np.zeros((d, D), bool), np.zeros((d, D), bool), np.zeros((dp, D), bool))
        if k == 1:
            for m in (mQ, mK, mV):
                m[:, lay.v] = True
                m[:, lay.f] = True
        if k == K:
            mQ[:, lay.u] = True
        masks.append((mQ, mK, mV))
    return masks


def flatten_gradients(grads) -> np.ndarray:
    """Per-pair gradients of :func:`pair_gradients` (or a mask from :func:`structural_zero_mask`,
    without the pair axis) as one flat vector per pair: block by block, ``Q``, ``K``, ``V_f``, row-major."""
    lead = grads[0][0].ndim == 3
    parts = [a.reshape(a.shape[0], -1) if lead else a.reshape(-1) for blk in grads for a in blk]
    return np.concatenate(parts, axis=-1)


def raw_gradient_names(lay: Layout, K: int) -> list[str]:
    """Names of the entries of :func:`flatten_gradients`, e.g. ``Q1[2,u0]`` (row 2, column ``u_0``)."""
    cols = [f"{blk}{j}" for blk in ("x", "u", "v", "f")
            for j in range(getattr(lay, blk).stop - getattr(lay, blk).start)]
    names = []
    for k in range(1, K + 1):
        for label, rows in (("Q", lay.d), ("K", lay.d), ("V", lay.dp)):
            names += [f"{label}{k}[{r},{c}]" for r in range(rows) for c in cols]
    return names


GAMMA_FORMS = ("full", "diag", "fixed")


def structured_objective(lay: Layout, W_e: np.ndarray, kernel: str, batch: PromptBatch,
                         gamma: str, fixed: StructuredPoint):
    """Mean loss, its gradient in the in-S coordinates (b, c and Γ: ``full`` matrix,
    ``diag`` diagonal, or ``fixed`` at ``fixed.gammas``) and the standard errors of that
    gradient (from the per-pair spread)."""
    K = len(fixed.b)
    dp = lay.dp

    def unpack(vec):
        b, c, rest = vec[:K].copy(), vec[K:2 * K].copy(), vec[2 * K:]
        if gamma == "full":
            return StructuredPoint.from_vector(vec, K, dp)
        if gamma == "diag":
            return StructuredPoint(b, c, [np.diag(rest[k * dp:(k + 1) * dp]) for k in range(K)])
        return StructuredPoint(b, c, fixed.gammas)

    def pack(pt):
        if gamma == "full":
            return pt.vector()
        if gamma == "diag":
            return np.concatenate([pt.b, pt.c] + [np.diag(G) for G in pt.gammas])
        return np.concatenate([pt.b, pt.c])

    def fun(vec):
        pt = unpack(vec)
        loss, grads = pair_gradients(lay, W_e, kernel, FreeParams.from_point(lay, pt), batch)
        cols = [np.einsum("nii->n", gQ[:, :, lay.x]) for gQ, _, _ in grads]
        cols += [np.einsum("nii->n", gK[:, :, lay.x]) for _, gK, _ in grads]
        for _, _, gV in grads:
            gG = gV[:, :, lay.u] - gV[:, :, lay.v]
            if gamma == "full":
                cols += list(gG.reshape(len(loss), -1).T)
            elif gamma == "diag":
                cols += list(np.einsum("nii->ni", gG).T)
        per = np.stack(cols, axis=1)
        se = per.std(0, ddof=1) / np.sqrt(len(loss))
        return float(loss.mean()), per.mean(0), se

    return fun, unpack, pack


def fit_structured(lay: Layout, W_e: np.ndarray, kernel: str, batch: PromptBatch,
                   start: StructuredPoint, gamma: str, *, warm_pairs: int = 2000,
                   rel_tol: float = 0.05, max_newton: int = 30):
    r"""Minimise the sample-average loss over the in-S coordinates (SAA).

    1. L-BFGS on a ``warm_pairs`` sub-sample; 2. Hessian there by central differences of the
    analytic gradient (pseudo-inverted: for dot-product kernels only :math:`b_kc_k\Gamma_k` or
    :math:`b_kc_k` matters, a flat direction); 3. quasi-Newton steps on the whole sample (BFGS
    updates of that Hessian, step-length control, backtracking) until every gradient coordinate
    is below ``rel_tol`` × its Monte Carlo standard error, so the optimisation error shifts a
    z-score by at most ``rel_tol``.  Returns ``(point, info)``.
    """
    from scipy.optimize import minimize

    fun, unpack, pack = structured_objective(lay, W_e, kernel, batch, gamma, start)
    n = batch.pairs
    m = min(warm_pairs, n)
    idx = np.r_[0:m, n:n + m]
    small = PromptBatch(batch.X[idx], batch.labels[idx], batch.target[idx])
    f_small, _, _ = structured_objective(lay, W_e, kernel, small, gamma, start)

    def safe(f, v):
        try:
            out = f(v)
        except FloatingPointError:
            return np.inf, None, None
        return out if np.isfinite(out[0]) else (np.inf, None, None)

    def for_scipy(v):
        loss, g, _ = safe(f_small, v)
        return (1e10, np.zeros_like(v)) if g is None else (loss, g)

    res = minimize(for_scipy, pack(start), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-6, "ftol": 1e-12, "maxiter": 150})
    x = res.x
    h = 1e-4
    H = np.zeros((len(x), len(x)))
    for i in range(len(x)):
        e = np.zeros(len(x))
        e[i] = h
        H[:, i] = (f_small(x + e)[1] - f_small(x - e)[1]) / (2 * h)
    H = 0.5 * (H + H.T)
    loss, g, se = fun(x)
    it = 0
    while it < max_newton and np.max(np.abs(g) / np.maximum(se, 1e-300)) > rel_tol:
        w, Vh = np.linalg.eigh(H)
        keep = w > 1e-6 * max(w.max(), 1e-300)
        step = -(Vh[:, keep] / w[keep]) @ (Vh[:, keep].T @ g)
        cap = 0.5 * max(1.0, float(np.linalg.norm(x)))
        if np.linalg.norm(step) > cap:
            step *= cap / np.linalg.norm(step)
        t = 1.0
        while True:
            loss_new, g_new, se_new = safe(fun, x + t * step)
            if g_new is not None and loss_new <= loss + 1e-12 * abs(loss):
                break
            t *= 0.5
            if t < 1e-4:
                break
        if g_new is None or t < 1e-4:
            break
        sv, yv = t * step, g_new - g
        if yv @ sv > 1e-12 * np.linalg.norm(yv) * np.linalg.norm(sv):
            Hs = H @ sv
            H = H + np.outer(yv, yv) / (yv @ sv) - np.outer(Hs, Hs) / (sv @ Hs)
        x, loss, g, se = x + sv, loss_new, g_new, se_new
        it += 1
    ratio = float(np.max(np.abs(g) / np.maximum(se, 1e-300)))
    return unpack(x), {"warm_iterations": int(res.nit), "newton_iterations": it,
                       "max_grad_over_stderr": ratio, "converged": ratio <= rel_tol,
                       "rel_tol": rel_tol, "loss": loss}


@dataclass
class ComponentTable:
    """Per-pair values of named linear functionals of the gradient.

    ``kind``: ``off`` (zero on S by symmetry), ``in`` (an in-S direction), ``outside``
    (rotation-invariant directions outside the reconstructed parametrisation — the untied value
    direction :math:`V_u+V_v` and the ``f → f`` value; reported, not claimed).
    """

    names: list
    groups: list
    kinds: list
    fitted: list
    values: np.ndarray  # (n, m)
    support: list = field(default_factory=list)  # per component: indices into flatten_gradients

    def inside(self, flat_mask: np.ndarray) -> np.ndarray:
        """Per component: does it read only entries of ``flat_mask`` (flattened like
        :func:`flatten_gradients`)?  Such a component is structurally zero."""
        return np.array([bool(np.all(flat_mask[s])) for s in self.support])


def gradient_components(lay: Layout, grads, gamma: str) -> ComponentTable:
    """Named gradient components; ``gamma`` (``full``/``diag``/``fixed``) says which Γ
    entries are in-S and fitted (with ``diag`` the off-diagonal Γ entries are ``outside``)."""
    names, groups, kinds, fitted, cols, support = [], [], [], [], [], []

    def add(name, group, kind, col, entries, fit=False):
        names.append(name)
        groups.append(group)
        kinds.append(kind)
        fitted.append(fit)
        cols.append(col)
        support.append(np.asarray(entries, dtype=int))

    d, dp, D = lay.d, lay.dp, lay.D
    per_block = 2 * d * D + dp * D
    for k, (gQ, gK, gV) in enumerate(grads, 1):
        base = (k - 1) * per_block
        for label, g, off in (("Q", gQ, base), ("K", gK, base + d * D)):
            def at(i, col, off=off):  # flat index of entry (row i, token column col)
                return off + i * D + col
            xx = g[:, :, lay.x]
            diag = np.einsum("nii->ni", xx)
            mean = diag.mean(-1)
            diag_entries = [at(m, lay.x.start + m) for m in range(d)]
            for i in range(d):
                for j in range(d):
                    if i != j:
                        add(f"{label}{k}.xx[{i},{j}]", f"block {k} {label} x-block off-diagonal", "off",
                            xx[:, i, j], [at(i, lay.x.start + j)])
            if d > 1:
                for i in range(d):
                    add(f"{label}{k}.xx[{i},{i}]-mean", f"block {k} {label} x-block traceless diagonal",
                        "off", diag[:, i] - mean, diag_entries)
            add(f"{label}{k}.trace", f"block {k} {label} x-block trace (∂/∂{'b' if label == 'Q' else 'c'})",
                "in", diag.sum(-1), diag_entries, fit=True)
            for blk in ("u", "v", "f"):
                sl = getattr(lay, blk)
                for i in range(d):
                    for j in range(dp):
                        add(f"{label}{k}.x{blk}[{i},{j}]", f"block {k} {label} reads the {blk} slot", "off",
                            g[:, i, sl.start + j], [at(i, sl.start + j)])
        voff = base + 2 * d * D
        for i in range(dp):
            for j in range(d):
                add(f"V{k}.fx[{i},{j}]", f"block {k} value x→f", "off", gV[:, i, j], [voff + i * D + j])
        for i in range(dp):
            for j in range(dp):
                c = lay.f.start + j
                add(f"V{k}.ff[{i},{j}]", f"block {k} value f→f", "outside", gV[:, i, c], [voff + i * D + c])
        for i in range(dp):
            for j in range(dp):
                cu, cv = lay.u.start + j, lay.v.start + j
                gu, gv = gV[:, i, cu], gV[:, i, cv]
                uv = [voff + i * D + cu, voff + i * D + cv]
                if gamma == "diag" and i != j:
                    add(f"V{k}.gamma[{i},{j}]", f"block {k} value Γ off-diagonal (outside diagonal S)",
                        "outside", gu - gv, uv)
                else:
                    add(f"V{k}.gamma[{i},{j}]", f"block {k} value Γ direction (u−v)", "in", gu - gv, uv,
                        fit=gamma != "fixed")
                add(f"V{k}.tie[{i},{j}]", f"block {k} value tie direction (u+v)", "outside", gu + gv, uv)
    return ComponentTable(names, groups, kinds, fitted, np.stack(cols, axis=1), support)


# ----------------------------------------------------------------------------- training


@dataclass
class Dataset:
    X: np.ndarray  # (B, N+1, d)
    labels: np.ndarray  # (B, N)
    y_query: np.ndarray  # (B,) sampled query label
    p_query: np.ndarray  # (B, C) true query label distribution

    def __len__(self):
        return self.X.shape[0]

    def take(self, idx) -> "Dataset":
        return Dataset(self.X[idx], self.labels[idx], self.y_query[idx], self.p_query[idx])


def synthetic_dataset(rng: np.random.Generator, B: int, *, d: int, N: int, W_true: np.ndarray,
                      amplitude: float, x_dist: str = "cube") -> Dataset:
    """Prompts from :func:`rbf_bump_task` (the paper's synthetic generator)."""
    X = sample_x(rng, x_dist, (B, N + 1), d)
    logits = rbf_bump_task(rng, X, W_true, amplitude=amplitude)
    labels = sample_labels(rng, logits)
    return Dataset(X, labels[:, :N], labels[:, N], softmax(logits[:, N], -1))


def _onehot(y: np.ndarray, C: int) -> np.ndarray:
    out = np.zeros((len(y), C))
    out[np.arange(len(y)), y] = 1.0
    return out


class GDLearner:
    r"""The GD model: the construction with learned :math:`W_e` (tied everywhere), per-block
    diagonal steps :math:`\Gamma_k=\operatorname{diag}(\alpha_k)` and one kernel scale
    :math:`r` (:math:`Q=K=rS_x`); exact δ erase and exact cross-attention (frozen)."""

    def __init__(self, rng, lay: Layout, C: int, K: int, kernel: str):
        self.lay, self.kernel, self.K = lay, kernel, K
        self.params = {"W": rng.standard_normal((lay.dp, C)),
                       "alpha": np.full((K, lay.dp), 1.0),
                       "r": np.array([1.0 / np.sqrt(lay.d)])}

    def model(self, p=None) -> Model:
        p = p or self.params
        lay = self.lay
        blocks = []
        for k in range(self.K):
            h = update_head(lay, self.kernel, 1.0, np.diag(p["alpha"][k]))
            h = replace(h, Q=p["r"][0] * h.Q, K=p["r"][0] * h.K)
            erase = replace(erase_head(lay, "delta", 1.0), frozen=True)
            blocks.append(Block([h, erase], replace(exact_cross(lay), frozen=True)))
        W = p["W"]
        return Model(lay, W, W, W, W, blocks)

    def grads(self, g: dict) -> dict:
        lay = self.lay
        gW = (g["W_u"] + g["W_v"] + g["W_x"] + g["W_ro"]).mean(0)
        ga = np.stack([np.diagonal(b["heads"][0]["V"].mean(0)[lay.f, lay.u])
                       - np.diagonal(b["heads"][0]["V"].mean(0)[lay.f, lay.v]) for b in g["blocks"]])
        gr = sum(np.trace(b["heads"][0]["Q"].mean(0)[:, lay.x]) + np.trace(b["heads"][0]["K"].mean(0)[:, lay.x])
                 for b in g["blocks"])
        return {"W": gW, "alpha": ga, "r": np.array([gr])}


class TFLearner:
    r"""A freely trained Transformer of the same topology: per block two softmax self-attention
    heads with free ``Q, K`` (``D × D``) and ``V`` (``D × D``), a free cross-attention
    (``Q_c, K_c, V_c``) over the label embedding :math:`E`; the constant-slot embedding
    :math:`E_2` is learned separately; readout and cross-attention use :math:`E`."""

    def __init__(self, rng, lay: Layout, C: int, K: int, init: float = 0.05):
        D, dp = lay.D, lay.dp
        self.lay, self.K = lay, K
        p = {"E": rng.standard_normal((dp, C)), "E2": rng.standard_normal((dp, C))}
        for k in range(K):
            for h in (1, 2):
                p[f"Q{h}_{k}"] = init * rng.standard_normal((D, D))
                p[f"K{h}_{k}"] = init * rng.standard_normal((D, D))
                p[f"V{h}_{k}"] = init * rng.standard_normal((D, D))
            p[f"Qc_{k}"] = init * rng.standard_normal((dp, D))
            p[f"Kc_{k}"] = init * rng.standard_normal((dp, dp))
            p[f"Vc_{k}"] = init * rng.standard_normal((D, dp))
        self.params = p

    def model(self, p=None) -> Model:
        p = p or self.params
        blocks = []
        for k in range(self.K):
            heads = [Head(p[f"Q{h}_{k}"], p[f"K{h}_{k}"], p[f"V{h}_{k}"], "softmax") for h in (1, 2)]
            blocks.append(Block(heads, Cross(p[f"Qc_{k}"], p[f"Kc_{k}"], p[f"Vc_{k}"])))
        return Model(self.lay, p["E"], p["E2"], p["E"], p["E"], blocks)

    def grads(self, g: dict) -> dict:
        out = {"E": (g["W_u"] + g["W_x"] + g["W_ro"]).mean(0), "E2": g["W_v"].mean(0)}
        for k, b in enumerate(g["blocks"]):
            for h in (1, 2):
                for m in "QKV":
                    out[f"{m}{h}_{k}"] = b["heads"][h - 1][m].mean(0)
            for m in ("Qc", "Kc", "Vc"):
                out[f"{m}_{k}"] = b["cross"][m].mean(0)
        return out

    def qk_x(self, p=None):
        """:math:`Q_x^\\top K_x` of every head (the x-block of the bilinear score)."""
        p = p or self.params
        sl = self.lay.x
        return {f"block {k + 1} head {h}": p[f"Q{h}_{k}"][:, sl].T @ p[f"K{h}_{k}"][:, sl]
                for k in range(self.K) for h in (1, 2)}


def evaluate(learner, data: Dataset, params=None, chunk: int = 1024):
    """Per-prompt NLL of the sampled query label, correctness of the top-1 prediction, and the
    NLL against the exact label distribution."""
    model = learner.model(params)
    nll, correct, nll_exact = [], [], []
    for s in range(0, len(data), chunk):
        part = data.take(slice(s, s + chunk))
        logits = forward(model, part.X, part.labels)[0]
        ls = log_softmax(logits)
        nll.append(-ls[np.arange(len(part)), part.y_query])
        nll_exact.append(-np.sum(part.p_query * ls, -1))
        correct.append((np.argmax(logits, -1) == part.y_query).astype(float))
    return np.concatenate(nll), np.concatenate(correct), np.concatenate(nll_exact)


def train(learner, train_set: Dataset, val_set: Dataset, rng: np.random.Generator, *,
          steps: int, batch: int, lr: float, clip: float, eval_every: int):
    """Adam on the mean query cross-entropy (sampled labels, like the paper's code) with
    global-norm clipping; keeps the parameters with the best validation loss (early stopping).
    Returns the curve ``[(step, train_loss, val_loss)]``."""
    p = learner.params
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v2 = {k: np.zeros_like(v) for k, v in p.items()}
    b1, b2, eps = 0.9, 0.999, 1e-8
    C = train_set.p_query.shape[1]
    best = (np.inf, {k: a.copy() for k, a in p.items()})
    curve = []
    run = []
    for t in range(1, steps + 1):
        idx = rng.integers(0, len(train_set), batch)
        part = train_set.take(idx)
        model = learner.model()
        target = _onehot(part.y_query, C)
        logits, _, cache = forward(model, part.X, part.labels)
        run.append(float(query_loss(logits, target).mean()))
        g = learner.grads(backward(model, part.X, part.labels, target, logits, cache))
        gn = np.sqrt(sum(float(np.sum(a * a)) for a in g.values()))
        if not np.isfinite(gn):
            raise FloatingPointError(f"non-finite gradient at step {t}")
        sc = min(1.0, clip / gn) if gn > 0 else 1.0
        for k in p:
            gk = g[k] * sc
            m[k] = b1 * m[k] + (1 - b1) * gk
            v2[k] = b2 * v2[k] + (1 - b2) * gk * gk
            p[k] = p[k] - lr * (m[k] / (1 - b1 ** t)) / (np.sqrt(v2[k] / (1 - b2 ** t)) + eps)
        if t % eval_every == 0 or t == steps:
            val = float(evaluate(learner, val_set)[0].mean())
            curve.append((t, float(np.mean(run)), val))
            run = []
            if val < best[0]:
                best = (val, {k: a.copy() for k, a in p.items()})
    learner.params = best[1]
    return curve
