r"""Li, Duan, Liang — *Provable In-Context Learning of Nonlinear Regression with Transformers*
(arXiv 2507.20443; an ICLR 2026 submission, not an accepted paper), and a blog summary of it.

The paper's full text (Theorems 1–2, the definitions of Δ and δ, the step-size conditions) was
not available; what is confirmed, inferred and wrong in the summary is recorded in
``shared/reference/nonlinear-regression-icl.md``.  Each claim states its provenance.

Model (inferred, matching the reviews): one softmax-attention layer with one trainable merged
key–query matrix :math:`Q`, fixed value path reading the labels, squared loss, plain GD from
:math:`Q=0`; tasks :math:`f=L\,g` with :math:`g` 1-Lipschitz.  The summary describes another
model — W_Q, W_K, W_V, an output w and a bias b all trained, values :math:`W_Vz_j` — and its
claims take an ``architecture`` key (``paper`` | ``summary``) choosing the model they are
judged in; each verdict names the one it judged.

Layout:

* :mod:`.settings` — the settings; every derived default (step sizes, horizons) is resolved
  there by the rules of :mod:`.rules`, so the recorded setting is what ran;
* :mod:`.theory` — one derivation (SymPy, every step verified), lowered to numbers: the only
  source of predicted numbers;
* :mod:`.experiments` — model A (exact population GD), model B (finite prompts) and the
  summary's model (:mod:`.experiments.summary_model`, finite prompts, hand-written gradients);
  imports nothing from the theory;
* :mod:`.claims` — the claims: run an experiment, judge it against the theory.
"""

from .claims import CLAIMS as CLAIMS
