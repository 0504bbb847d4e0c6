r"""The theory of the categorical-ICL paper: ONE derivation object, derived once, lowered.

:func:`paper` returns the memoised :class:`Paper` (:mod:`._paper`): the SymPy derivations of
functional GD and of the cross-attention (:mod:`._derivations`), the update head's kernels, the
equivariance of the attention model and the structure of its gradient (:mod:`._symmetry`), and
the numbers lowered from them — the only source of predicted numbers.  Submodules are imported on
first use (PEP 562), so importing one directly (as a planted error does) runs no second copy.
"""

from __future__ import annotations

import importlib

__all__ = ["paper", "Paper", "KERNEL_NAMES"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module(f"{__name__}._paper"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
