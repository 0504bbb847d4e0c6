"""An example claim package for icltheory: the loss of one gradient step as an in-context
learner (a linear-attention layer with W_KQ = I and value scale η).

Layout (the same as every built-in paper):

* :mod:`.settings`    — the setting (keys, ranges, profile-scaled sample size);
* :mod:`.theory`      — the SymPy derivation, done once, and its lowered constants;
* :mod:`.experiments` — the Monte Carlo sampler (imports nothing from the theory);
* :mod:`.claims`      — the claim: run the experiment, judge it against the theory.
"""

from .claims import CLAIMS as CLAIMS
