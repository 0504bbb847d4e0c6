r"""The theory of softmax regression in the tensor-trick form: derived once in SymPy, lowered.

* :mod:`._paper`    — :func:`theory`, the one :class:`SoftmaxTheory` (every constant and proved
  bound as a named SymPy term, every step verified), the tensor trick and the gradient's closed
  form, lowered to arb/numpy;
* :mod:`._symbolic` — the SymPy helpers (vectorisation, the two routes to the gradient, Hessians);
* :mod:`._hessian`  — the gradient's Lipschitz constant reduced to the logits;
* :mod:`._bnb`      — a certified upper bound on that constant by branch and bound, with its
  certificate (re-checked by :mod:`icltheory.certify`, which shares no code with it).

The names of :mod:`._paper`'s ``__all__`` and the submodules (``symbolic``, ``hessian``, ``bnb``)
resolve on first use (PEP 562), so importing a submodule directly (as a planted error does) runs
no second copy.
"""

from __future__ import annotations

import importlib

_SUBMODULES = ("symbolic", "hessian", "bnb")
__all__ = ["SoftmaxTheory", "theory", "tensor_trick", "gradient_theory", "GradientTheory",
           "softmax_jacobian_bound", "residual_bound", "mean_value_factor", "ASSUMPTIONS_TEXT",
           "hessian_norm_constant", *_SUBMODULES]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}._{name}")
    if name in __all__:
        return getattr(importlib.import_module(f"{__name__}._paper"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
