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

The forward pass, the loss and the backprop are written once against an array namespace ``xp``
(:mod:`icltheory.backends`; keyword ``xp``, numpy by default): the parameters, tokens and label
indices are arrays of that namespace (``xp.asarray``, ``xp.asindex``), so the same code trains on
numpy or on torch (float64).  On numpy the softmax is the numpy backend's (SciPy's arithmetic);
the constructions below (:func:`gd_model`, :func:`random_model`, …) build numpy parameters.
Nothing here knows functional GD.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import log_softmax, softmax

from icltheory.backends import NumpyBackend

__all__ = ["HEAD_KINDS", "Layout", "layout", "Head", "Cross", "Block", "Model", "embed", "forward",
           "backward", "query_loss", "cross_attention", "erase_head", "update_head", "update_value", "exact_cross",
           "gd_model", "softmax", "log_softmax"]

HEAD_KINDS = ("linear", "exp", "rbf", "laplacian", "softmax", "softmax_negsq", "delta")
_MEAN_KINDS = ("linear", "exp", "rbf", "laplacian")
_BILINEAR_KINDS = ("linear", "exp", "softmax")  # the score is q^T k
NUMPY = NumpyBackend()


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


def embed(model: Model, X, labels, xp=NUMPY):
    """Tokens ``(B, T, D)``: ``X`` (B, T, d) and ``labels`` (B, N) an ``xp`` array and index array."""
    lay = model.lay
    B, T, _ = X.shape
    N = labels.shape[1]
    C = model.W_u.shape[1]
    H = xp.zeros((B, T, lay.D))
    H[:, :, lay.x] = X
    H[:, :N, lay.u] = model.W_u.T[labels]
    H[:, :, lay.v] = model.W_v @ xp.asarray(np.full(C, 1.0 / C))
    return H


def _scores(kind: str, q, k, xp=NUMPY):
    """Pre-normalisation scores ``g`` (B, T, N) and the attention weights ``a``."""
    N = k.shape[1]
    if kind in ("linear", "exp", "softmax"):
        g = q @ xp.swapaxes(k, 1, 2)
    elif kind in ("rbf", "softmax_negsq"):
        g = -(xp.sum(q * q, -1)[:, :, None] + xp.sum(k * k, -1)[:, None, :]
              - 2.0 * q @ xp.swapaxes(k, 1, 2))
    elif kind == "laplacian":
        g = -xp.sum(xp.abs(q[:, :, None, :] - k[:, None, :, :]), axis=-1)
    else:
        raise ValueError(f"unknown head kind {kind!r}; valid: {', '.join(HEAD_KINDS)}")
    if kind == "linear":
        a = g / N
    elif kind in _MEAN_KINDS:
        with np.errstate(under="ignore"):
            a = xp.exp(g) / N
    else:
        a = xp.softmax(g, axis=-1)
    return g, a


def _rows(a, W):
    """``a @ W`` for tokens ``a`` (B, T, D) and one matrix ``W`` (D, r): a single product over the
    stacked rows (B·T, D) rather than one per prompt."""
    return (a.reshape(-1, a.shape[-1]) @ W).reshape(tuple(a.shape[:-1]) + (W.shape[-1],))


def _head_forward(head: Head, H, N: int, xp=NUMPY, query_only: bool = False):
    """The head's output (the residual increment) on every row of ``H``, or with ``query_only``
    on the query row alone (B, 1, D): the keys and values still come from every context row."""
    Hc = H[:, :N]
    if head.kind == "delta" and query_only:
        # δ weights give the query row nothing
        return xp.zeros((H.shape[0], 1, H.shape[-1])), {}
    if query_only:
        return _query_head_forward(head, H, N, xp)
    val = _rows(Hc, head.V.T)
    if head.kind == "delta":
        # the weights are δ_ij for context rows and 0 for the query: the output is the values
        # themselves on the context rows (what the product with that 0/1 matrix gives, exactly)
        # and 0 on the query
        out = xp.zeros((H.shape[0], H.shape[1], val.shape[-1]))
        out[:, :N] = val
        return out, {"val": val}
    q = _rows(H, head.Q.T)
    k = _rows(Hc, head.K.T)
    g, a = _scores(head.kind, q, k, xp)
    return a @ val, {"a": a, "val": val, "q": q, "k": k, "g": g}


def _query_head_forward(head: Head, H, N: int, xp=NUMPY):
    r""":func:`_head_forward` on the query row alone, with the products ordered for one query:
    the weighted sum of the context tokens :math:`s=\sum_i a_ih_i` first, then the value map
    (:math:`\sum_i a_iVh_i=Vs`), and for a bilinear score the key map moved onto the query
    (:math:`q^\top Kh_i=(K^\top q)^\top h_i`): the value map (and for a bilinear score the
    key map) then acts on one row per prompt instead of ``N``."""
    Hc = H[:, :N]
    q = _rows(H[:, -1:], head.Q.T)  # (B,1,r)
    if head.kind in _BILINEAR_KINDS:
        w = _rows(q, head.K)  # (B,1,D): K^T q
        g, a = _scores(head.kind, w, Hc, xp)
        k = None
    else:
        w = None
        k = _rows(Hc, head.K.T)
        g, a = _scores(head.kind, q, k, xp)
    s = a @ Hc  # (B,1,D)
    return _rows(s, head.V.T), {"a": a, "s": s, "q": q, "w": w, "k": k, "g": g}


def _cross_forward(cr: Cross, H, W_x, xp=NUMPY):
    q = _rows(H, cr.Qc.T)  # (B,T,p)
    kc = (cr.Kc @ W_x).T  # (C,p)
    vals = (cr.Vc @ W_x).T  # (C,D)
    a = xp.softmax(_rows(q, kc.T), axis=-1)  # (B,T,C)
    return _rows(a, vals), {"q": q, "kc": kc, "vals": vals, "a": a}


def cross_attention(cr: Cross, H, W_x, xp=NUMPY):
    """The cross-attention's output (the residual increment) for tokens ``H``."""
    return _cross_forward(cr, H, W_x, xp)[0]


def forward(model: Model, X, labels, *, keep: bool = False, logits_only: bool = False, xp=NUMPY):
    """Run the model.  Returns ``(logits (B,C), hidden list, cache)``.

    ``hidden[k]`` is the token array after block ``k`` (``hidden[0]`` the embedding).  ``X``,
    ``labels`` and the model's parameters are arrays of the namespace ``xp`` (numpy by default;
    ``labels`` an index array, :meth:`~icltheory.backends.Backend.asindex`).  With
    ``logits_only`` the last block runs on the query row alone (the logits read nothing else;
    its keys and values still come from every context row), so ``hidden[-1]`` has that one row;
    :func:`backward` takes either cache.
    """
    N = labels.shape[1]
    H = embed(model, X, labels, xp)
    hidden = [H]
    cache = []
    for i, blk in enumerate(model.blocks):
        Hin = H
        q_only = logits_only and i == len(model.blocks) - 1
        outs = [_head_forward(h, Hin, N, xp, q_only) for h in blk.heads]
        Hmid = (Hin[:, -1:] if q_only else Hin) + sum(o for o, _ in outs)
        if blk.cross is not None:
            cout, ccache = _cross_forward(blk.cross, Hmid, model.W_x, xp)
            Hout = Hmid + cout
        else:
            ccache = None
            Hout = Hmid
        cache.append({"Hin": Hin, "heads": [c for _, c in outs], "Hmid": Hmid, "cross": ccache,
                      "query_only": q_only})
        H = Hout
        hidden.append(H)
    fq = H[:, -1, model.lay.f]
    logits = fq @ model.W_ro
    return logits, hidden, {"blocks": cache, "fq": fq, "N": N}


def query_loss(logits, target, xp=NUMPY):
    """Per-prompt cross-entropy :math:`-\\sum_c q_c\\log\\hat p_c` against a target distribution."""
    return -xp.sum(target * xp.log_softmax(logits, -1), axis=-1)


def _dscores(kind: str, a, da, N: int, xp=NUMPY):
    if kind == "linear":
        return da / N
    if kind in _MEAN_KINDS:
        return da * a
    return a * (da - xp.sum(a * da, axis=-1, keepdims=True))


def _outer(a, b, mean: bool, xp=NUMPY):
    r"""Per prompt :math:`\sum_t a_t b_t^\top` over the rows of ``a`` (B, T, r) and ``b``
    (B, T, D): shape (B, r, D); with ``mean``, its mean over the prompts (r, D), as one product
    of the stacked rows (what a parameter's gradient needs when training reads only the mean)."""
    if not mean:
        if a.shape[1] == 1:  # one row: an outer product (numpy's stacked product is slow there)
            return xp.einsum("br,bd->brd", a[:, 0], b[:, 0])
        return xp.swapaxes(a, 1, 2) @ b
    return xp.swapaxes(a.reshape(-1, a.shape[-1]), 0, 1) @ b.reshape(-1, b.shape[-1]) / a.shape[0]


def _score_grads(kind: str, dg, q, k, xp=NUMPY):
    """The gradients of the queries (B, T, r) and keys (B, N, r) from ``dg``, the scores'
    gradient (B, T, N), for a head of ``kind``."""
    if kind in _BILINEAR_KINDS:
        return dg @ k, xp.swapaxes(dg, 1, 2) @ q
    if kind in ("rbf", "softmax_negsq"):
        return (-2.0 * q * xp.sum(dg, -1)[:, :, None] + 2.0 * dg @ k,
                -2.0 * k * xp.sum(dg, 1)[:, :, None] + 2.0 * xp.swapaxes(dg, 1, 2) @ q)
    sgn = xp.sign(q[:, :, None, :] - k[:, None, :, :])  # laplacian
    return -xp.einsum("bji,bjir->bjr", dg, sgn), xp.einsum("bji,bjir->bir", dg, sgn)


def _head_backward(head: Head, c: dict, H, dout, N: int, xp=NUMPY, mean: bool = False,
                   query_only: bool = False):
    """The head's parameter gradients and its input's gradient (B, T, D) from ``dout``, the
    gradient of its output: on every row of ``H``, or with ``query_only`` on the query row
    alone (B, 1, D), as :func:`_head_forward` made it."""
    Hc = H[:, :N]
    if head.kind == "delta" and query_only:  # its output at the query is 0 whatever its parameters
        grads = {} if head.frozen else {m: xp.zeros((() if mean else (H.shape[0],)) + tuple(getattr(head, m).shape))
                                        for m in "QKV"}
        return grads, xp.zeros(tuple(H.shape))
    if query_only:
        return _query_head_backward(head, c, H, dout, N, xp, mean)
    Hq = H
    val = c["val"]
    # δ weights pass the context rows' gradient straight to the values
    dval = dout[:, :N] if head.kind == "delta" else xp.swapaxes(c["a"], 1, 2) @ dout  # (B,N,D)
    grads = {} if head.frozen else {"V": _outer(dval, Hc, mean, xp)}
    dH = xp.zeros(tuple(H.shape))
    dH[:, :N] += _rows(dval, head.V)
    if head.kind == "delta":
        if not head.frozen:
            lead = () if mean else (H.shape[0],)
            grads["Q"] = xp.zeros(lead + tuple(head.Q.shape))
            grads["K"] = xp.zeros(lead + tuple(head.K.shape))
        return grads, dH
    a, q, k = c["a"], c["q"], c["k"]
    da = dout @ xp.swapaxes(val, 1, 2)  # (B,T,N)
    dg = _dscores(head.kind, a, da, N, xp)
    dq, dk = _score_grads(head.kind, dg, q, k, xp)
    if not head.frozen:
        grads["Q"] = _outer(dq, Hq, mean, xp)
        grads["K"] = _outer(dk, Hc, mean, xp)
    dH += _rows(dq, head.Q)
    dH[:, :N] += _rows(dk, head.K)
    return grads, dH


def _query_head_backward(head: Head, c: dict, H, dout, N: int, xp=NUMPY, mean: bool = False):
    r""":func:`_head_backward` for :func:`_query_head_forward`'s cache (``dout``: (B, 1, D)),
    the products in the same order: with :math:`e=V^\top\bar o` (``dout`` through the value map)
    the value weights' gradient is :math:`\bar V=\bar o\,s^\top`, a context row gets
    :math:`a_ie`, and the weights get :math:`\bar a_i=e^\top h_i`; for a bilinear score, with
    :math:`z=\sum_i\bar g_ih_i`, :math:`\bar q=Kz`, :math:`\bar K=q z^\top` and a context row
    gets :math:`\bar g_iK^\top q`."""
    Hc = H[:, :N]
    a, s, q = c["a"], c["s"], c["q"]
    e = _rows(dout, head.V)  # (B,1,D)
    grads = {} if head.frozen else {"V": _outer(dout, s, mean, xp)}
    da = e @ xp.swapaxes(Hc, 1, 2)  # (B,1,N)
    dg = _dscores(head.kind, a, da, N, xp)
    dH = xp.zeros(tuple(H.shape))
    if head.kind in _BILINEAR_KINDS:
        z = dg @ Hc  # (B,1,D)
        dq = _rows(z, head.K.T)
        if not head.frozen:
            grads["K"] = _outer(q, z, mean, xp)
        # both context-row terms as one product [a ḡ] [e; K^T q] (two products with an inner
        # dimension of 1 cost ten times as much in numpy)
        dH[:, :N] = xp.stack([a[:, 0], dg[:, 0]], 2) @ xp.stack([e[:, 0], c["w"][:, 0]], 1)
    else:
        dq, dk = _score_grads(head.kind, dg, q, c["k"], xp)
        if not head.frozen:
            grads["K"] = _outer(dk, Hc, mean, xp)
        dH[:, :N] = xp.einsum("bn,bd->bnd", a[:, 0], e[:, 0]) + _rows(dk, head.K)
    if not head.frozen:
        grads["Q"] = _outer(dq, H[:, -1:], mean, xp)
    dH[:, -1:] += _rows(dq, head.Q)
    return grads, dH


def _cross_backward(cr: Cross, c: dict, H, dout, W_x, xp=NUMPY, mean: bool = False, table: bool = True):
    """The cross-attention's parameter gradients (none when it is frozen), its input's gradient
    and, with ``table``, the gradient of the table ``W_x`` it reads (a model parameter, frozen
    or not: a frozen cross-attention still computes from it; else ``None``)."""
    q, kc, vals, a = c["q"], c["kc"], c["vals"], c["a"]
    da = _rows(dout, vals.T)  # (B,T,C)
    dg = a * (da - xp.sum(a * da, -1, keepdims=True))
    dq = _rows(dg, kc)  # (B,T,p)
    if cr.frozen and not table:
        return {}, _rows(dq, cr.Qc), None
    dvals = _outer(a, dout, mean, xp)  # (B,C,D) per prompt, or (C,D)
    dkc = _outer(dg, q, mean, xp)  # (B,C,p), or (C,p)
    dW_x = (xp.swapaxes(dkc @ cr.Kc, -1, -2) + xp.swapaxes(dvals @ cr.Vc, -1, -2)) if table else None
    if cr.frozen:
        return {}, _rows(dq, cr.Qc), dW_x
    grads = {
        "Qc": _outer(dq, H, mean, xp),
        "Kc": xp.swapaxes(dkc, -1, -2) @ W_x.T,
        "Vc": xp.swapaxes(dvals, -1, -2) @ W_x.T,
    }
    return grads, _rows(dq, cr.Qc), dW_x


def backward(model: Model, X, labels, target, logits, cache: dict, xp=NUMPY, *, mean: bool = False,
             embeddings: bool = True):
    """Per-prompt gradients of :func:`query_loss` (hand-written reverse mode), on the namespace
    ``xp`` of :func:`forward`.

    Returns a dict with ``blocks`` (a list, per block, of ``{"heads": [{"Q","K","V"}],
    "cross": {"Qc","Kc","Vc"}}``), ``W_u``, ``W_v``, ``W_x``, ``W_ro`` and ``X``; every
    array has a leading prompt axis.  With ``mean``, the parameters' gradients are their means
    over the prompts instead (no prompt axis; each one product over the stacked rows, the cheap
    form training needs); ``X``'s stays per prompt.  Without ``embeddings`` the four embedding
    maps' gradients are left out (``None``): for callers that hold them fixed.
    """
    lay = model.lay
    N = cache["N"]
    B = X.shape[0]
    p = xp.softmax(logits, -1)
    dlogits = p * xp.sum(target, -1, keepdims=True) - target
    grads: dict = {"W_ro": None if not embeddings else (xp.swapaxes(cache["fq"], 0, 1) @ dlogits / B if mean
                                                        else xp.einsum("bd,bc->bdc", cache["fq"], dlogits))}
    dH = xp.zeros((B, X.shape[1], lay.D))
    dH[:, -1, lay.f] = dlogits @ model.W_ro.T
    dW_x = xp.zeros((() if mean else (B,)) + tuple(model.W_x.shape))
    bgrads = []
    for blk, c in zip(reversed(model.blocks), reversed(cache["blocks"])):
        g_blk: dict = {"heads": [], "cross": None}
        q_only = c.get("query_only", False)
        dout = dH[:, -1:] if q_only else dH  # the gradient of the block's output rows
        if blk.cross is not None:
            gc, dHc, dWx = _cross_backward(blk.cross, c["cross"], c["Hmid"], dout, model.W_x, xp, mean,
                                           table=embeddings)
            g_blk["cross"] = gc
            if dWx is not None:
                dW_x += dWx
            dout = dout + dHc
        if q_only:  # the residual path: the query row of the block's input
            dH_in = xp.zeros(tuple(dH.shape))
            dH_in[:, -1:] = dout
        else:
            dH_in = dout
        for h, hc in zip(blk.heads, c["heads"]):
            gh, dHh = _head_backward(h, hc, c["Hin"], dout, N, xp, mean, q_only)
            g_blk["heads"].append(gh)
            dH_in = dH_in + dHh  # a new array: dout itself stays the heads' common input
        dH = dH_in
        bgrads.append(g_blk)
    grads["blocks"] = bgrads[::-1]
    grads["X"] = dH[:, :, lay.x]
    if not embeddings:
        return dict(grads, W_x=None, W_u=None, W_v=None)
    grads["W_x"] = dW_x
    C = model.W_u.shape[1]
    onehot = xp.zeros((B, N, C))
    onehot[xp.asindex(np.arange(B))[:, None], xp.asindex(np.arange(N))[None, :], labels] = 1.0
    uniform = xp.asarray(np.full(C, 1.0 / C))
    if mean:
        grads["W_u"] = _outer(dH[:, :N, lay.u], onehot, True, xp)
        grads["W_v"] = xp.einsum("d,c->dc", xp.sum(xp.sum(dH[:, :, lay.v], 1), 0) / B, uniform)
    else:
        grads["W_u"] = xp.einsum("bnd,bnc->bdc", dH[:, :N, lay.u], onehot)
        grads["W_v"] = xp.einsum("bd,c->bdc", xp.sum(dH[:, :, lay.v], 1), uniform)
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
    r = np.sqrt(scale)
    return Head(r * Sx, r * Sx, update_value(lay, gamma), kernel)


def update_value(lay: Layout, gamma, xp=NUMPY):
    r"""The update head's value matrix: :math:`\Gamma(u-v)` into the ``f`` slot (``V[f, u] = Γ``,
    ``V[f, v] = −Γ``), an ``xp`` array; ``gamma`` a ``dp × dp`` matrix, or a vector: the diagonal
    of a diagonal Γ (the other entries stay zero)."""
    V = xp.zeros((lay.D, lay.D))
    if len(gamma.shape) == 1:
        f, u, v = (xp.asindex(getattr(lay, b).start + np.arange(lay.dp)) for b in ("f", "u", "v"))
        V[f, u] = gamma
        V[f, v] = -gamma
    else:
        V[lay.f, lay.u] = gamma
        V[lay.f, lay.v] = -gamma
    return V


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
