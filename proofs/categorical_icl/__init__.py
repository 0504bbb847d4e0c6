"""Wang, Convertino, Cheng, Henao, Carin — *On Understanding Attention-Based In-Context Learning
for Categorical Data* (ICML 2025, arXiv 2405.17248).

* :mod:`.settings`    — the settings of every claim (derived defaults resolved: what runs is recorded);
* :mod:`.theory`      — the SymPy derivations (functional GD, the cross-attention, the symmetry of
  the loss, the structure of its gradient) and the numbers lowered from them: the only source of
  predictions, including what the construction's token states should equal;
* :mod:`.experiments` — the constructed Transformer and its hand-written backprop, explicit
  parameter GD, the data generators, the Monte Carlo gradient and the trainers (import nothing
  from the theory and share no helper with it: their softmax is the array backend's);
* :mod:`.claims`      — the claims: run an experiment, judge it against the theory.
"""

from .claims import CLAIMS as CLAIMS
