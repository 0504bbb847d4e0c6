"""Zhang, Singh, Latham, Saxe — *Training dynamics of in-context learning in linear attention*
(ICML 2025, arXiv 2501.16265).

* :mod:`.merged`   — merged key-query ATTN_M: equivalence, fixed points, the logistic σ(t);
* :mod:`.separate` — separate key/query ATTN_S: equivalence, 2^D fixed points, saddle-to-saddle
  dynamics, the scalar plateau ODE, rank-R heads, init-scale laws, softmax (qualitative);
* :mod:`._common`  — what both share: the citation, :class:`~._common.SpectrumSetting` (D, N, H,
  λ with their resolution and validation), symbolic/numeric token helpers, check/plot helpers.
"""

from .merged import CLAIMS as _MERGED
from .separate import SEPARATE_CLAIMS as _SEPARATE

CLAIMS = _MERGED + _SEPARATE
