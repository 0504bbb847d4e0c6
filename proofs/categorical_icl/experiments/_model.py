r"""The attention model of the construction: tokens, heads, cross-attention, forward and
hand-written reverse-mode backprop, vectorised over a leading *prompt* axis ``B`` (float64).

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

The softmax is SciPy's (:func:`scipy.special.softmax`); nothing here knows functional GD.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import log_softmax, softmax

__all__ = ["HEAD_KINDS", "Layout", "layout", "Head", "Cross", "Block", "Model", "embed", "forward",
           "backward", "query_loss", "cross_attention", "erase_head", "update_head", "exact_cross",
           "gd_model", "softmax", "log_softmax"]

HEAD_KINDS = ("linear", "exp", "rbf", "laplacian", "softmax", "softmax_negsq", "delta")
_MEAN_KINDS = ("linear", "exp", "rbf", "laplacian")


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
    q, k = c["q"], c["k"]
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




# ----------------------------------------------------------------------------- rotations


def random_model(rng: np.random.Generator, lay: Layout, C: int, kernel: str, K: int) -> Model:
    """A model with random (generic, off the GD structure) parameters: per block the update head
    of ``kernel``, an rbf-type second head, and a free cross-attention."""
    D = lay.D
    sc = 0.5 / np.sqrt(D)
    blocks = []
    for _ in range(K):
        heads = [Head(sc * rng.standard_normal((lay.d, D)), sc * rng.standard_normal((lay.d, D)),
                      sc * rng.standard_normal((D, D)), kind) for kind in (kernel, "softmax_negsq")]
        cross = Cross(sc * rng.standard_normal((lay.dp, D)), rng.standard_normal((lay.dp, lay.dp)) / np.sqrt(lay.dp),
                      sc * rng.standard_normal((D, lay.dp)))
        blocks.append(Block(heads, cross))
    W = rng.standard_normal((lay.dp, C))
    return Model(lay, W, W, W, W, blocks)


def rotated_parameters(model: Model, U: np.ndarray, haar: bool) -> Model:
    r"""The parameters for the prompt rotated by ``U``: with :math:`R=\operatorname{diag}(U,I)` on
    tokens, :math:`Q\to OQR^\top`, :math:`K\to OKR^\top`, :math:`V\to RVR^\top`,
    :math:`Q_c\to Q_cR^\top`, :math:`V_c\to RV_c`; :math:`O=U`, except :math:`O=I` for a
    Laplacian head under a Haar rotation (its ℓ1 score is not rotation invariant)."""
    from dataclasses import replace

    lay = model.lay
    R = np.eye(lay.D)
    R[lay.x, lay.x] = U
    blocks = []
    for blk in model.blocks:
        heads = []
        for h in blk.heads:
            O = np.eye(lay.d) if (h.kind == "laplacian" and haar) else U
            heads.append(Head(O @ h.Q @ R.T, O @ h.K @ R.T, R @ h.V @ R.T, h.kind))
        cr = blk.cross
        blocks.append(Block(heads, Cross(cr.Qc @ R.T, cr.Kc, R @ cr.Vc)))
    return replace(model, blocks=blocks)
