r"""The theory of softmax regression in the tensor-trick form: derived once in SymPy, lowered.

* :mod:`._paper`    — :func:`theory`, the one :class:`SoftmaxTheory` (every constant and proved
  bound as a named SymPy term, every step verified), the tensor trick and the gradient's closed
  form, lowered to arb/numpy;
* :mod:`._symbolic` — the SymPy helpers (vectorisation, the two routes to the gradient, Hessians);
* :mod:`._hessian`  — the gradient's Lipschitz constant reduced to the logits;
* :mod:`._bnb`      — a certified upper bound on that constant by branch and bound, with its
  certificate (re-checked by :mod:`icltheory.certify`, which shares no code with it).

Names of :mod:`._paper` and the submodules (``symbolic``, ``hessian``, ``bnb``) resolve on first
use (PEP 562), so importing a submodule directly (as a planted error does) runs no second copy.
"""

from __future__ import annotations

import importlib

_SUBMODULES = ("symbolic", "hessian", "bnb")


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}._{name}")
    if not name.startswith("__"):
        paper = importlib.import_module(f"{__name__}._paper")
        if hasattr(paper, name):
            return getattr(paper, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
