r"""Softmax regression via the tensor trick (Gao, Song, Xie, arXiv 2307.02419; Li, Song, Xia,
Yu, Zhou, arXiv 2304.13276).

* :mod:`.settings`    — the settings of every claim and the candidate-constant expression;
* :mod:`.theory`      — the one SymPy derivation of every constant and proved bound, lowered to
  arb/numpy, and the certified band of the gradient's Lipschitz constant (branch and bound over
  the derived reduction to the logits): the only source of predictions and proved bounds;
* :mod:`.experiments` — the numeric model, random pairs, the counterexample search and certified
  witnesses (imports nothing from the theory and shares no helper with it: the softmax is
  SciPy's);
* :mod:`.claims`      — the claims: run an experiment, judge it against the theory.
"""

from .claims import CLAIMS as CLAIMS
