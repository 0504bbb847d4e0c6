"""Zhang, Singh, Latham, Saxe — *Training dynamics of in-context learning in linear attention*
(ICML 2025, arXiv 2501.16265).

* :mod:`.settings`    — the settings of every claim (derived defaults resolved: what runs is recorded);
* :mod:`.theory`      — the paper's one derivation object (SymPy, every step verified) and the
  numbers lowered from it: the only source of predictions;
* :mod:`.experiments` — data, models, trainers, flows, readings (import nothing from the theory);
* :mod:`.claims`      — the ten claims: run an experiment, judge it against the theory.
"""

from .claims import CLAIMS as CLAIMS
