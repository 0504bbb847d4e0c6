r"""Softmax regression via the tensor trick (Gao, Song, Xie, arXiv 2307.02419; Li, Song, Xia,
Yu, Zhou, arXiv 2304.13276).

Layout:

* :mod:`.settings`        — the settings and the candidate-constant expression;
* :mod:`.theory`          — the one SymPy derivation of every constant and proved bound
  (helpers in :mod:`.theory_symbolic`), lowered to arb/numpy;
* :mod:`.experiments`     — random pairs, the counterexample search, certified witnesses (on the
  numeric model :mod:`.model`; imports nothing from the theory);
* :mod:`.claims`, :mod:`.claims_shift` — the claims (shared judging in :mod:`._judging`);
* :mod:`.bnb`, :mod:`.theory_hessian` — the certified band of the Lipschitz constant.
"""

from . import claims, claims_shift

CLAIMS = claims.CLAIMS + claims_shift.CLAIMS
