r"""The theory of the linear-attention paper: ONE derivation object, derived once, lowered.

:func:`paper` returns the paper's :class:`Paper` (memoised): its sections are derived in
general symbols with SymPy, every step verified, the first time they are needed —

* ``population``  — Isserlis moments of β, the population loss L(M), c_d, the 2^D fixed points,
  their losses and saddles, Eq. 19 (:mod:`._population`);
* ``merged``      — ATTN_M's saddle at zero and the logistic σ(t) for Λ = λI (:mod:`._dynamics`);
* ``separate``    — ATTN_S's flow equations and per-direction fixed points;
* ``scalar_ode``  — the one-head plateau ODE, its fixed point, stability curvature and the
  closed-form escape time;
* ``init_scale``  — the initialisation-scale laws;
* ``equivalence`` — the reduced predictors of ATTN_M and ATTN_S (:mod:`._equivalence`).

The numbers every claim predicts are *lowered* from those verified terms (``lambdify``, or
exact substitution for the rational strings) by the methods of :class:`Paper` — the only source
of predicted numbers; a claim's ``derive`` returns a view of the sections it relies on.

Submodules are imported on first use (PEP 562 ``__getattr__``), so that importing one of them
directly (as a planted error does) never runs a second copy of it.
"""

from __future__ import annotations

import importlib

__all__ = ["paper", "Paper", "learnable", "rank_stages", "softmax_drop_counts"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module(f"{__name__}._paper"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
