"""The linear-attention claims: each states "run this experiment, judge it against that
prediction" (the machinery lives in :mod:`..experiments`, the predictions in :mod:`..theory`).

* :mod:`.equivalence` — the reductions of ATTN_M and ATTN_S (exact identities);
* :mod:`.merged`    — ATTN_M: fixed points, the logistic σ(t);
* :mod:`.trajectory` — ATTN_M and its two-layer network trained side by side (Fig. 1);
* :mod:`.structure` — ATTN_S: the 2^D fixed points;
* :mod:`.dynamics`  — ATTN_S: saddle-to-saddle (Fig. 3), rank-R heads (Fig. 4);
* :mod:`.scalar`    — the one-head plateau ODE, the initialisation-scale laws;
* :mod:`.init`      — the init-scale claim with its large-init (no-plateau) regime;
* :mod:`.drop_times` — ATTN_S: each seed's first drop time from its initial weights (beyond the paper);
* :mod:`.softmax`   — softmax attention (qualitative);
* :mod:`._common`, :mod:`._planted` — shared judgements and the planted errors several claims use.
"""

from .drop_times import DropTimes
from .dynamics import RankPlateaus, SaddleToSaddle
from .init import InitScaleWithLazy
from .equivalence import MergedEquivalence, SeparateEquivalence
from .merged import MergedFixedPoints, MergedSigmoid
from .trajectory import MergedTrajectory
from .scalar import ScalarOde
from .softmax import SoftmaxDrops
from .structure import SeparateFixedPoints

CLAIMS = (MergedEquivalence(), MergedFixedPoints(), MergedSigmoid(), MergedTrajectory(), SeparateEquivalence(),
          SeparateFixedPoints(), SaddleToSaddle(), ScalarOde(), RankPlateaus(), InitScaleWithLazy(),
          SoftmaxDrops(), DropTimes())
