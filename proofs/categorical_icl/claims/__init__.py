"""The categorical-ICL claims: each states "run this experiment, judge it against that
prediction" (the machinery lives in :mod:`..experiments`, the predictions in :mod:`..theory`).

* :mod:`.exact`    — functional GD, the cross-attention, the construction, the single step;
* :mod:`.symmetry` — equivariance, stationarity of the GD configuration;
* :mod:`.training` — GD model against a freely trained Transformer (scaled down);
* :mod:`.depth`    — the depth trend: GD models of every depth, each trained from scratch (scaled down);
* :mod:`.thresholds` — the data thresholds of the synthetic table (both models trained to their minimum);
* :mod:`.parameters` — the trained Transformer's attention parameters against the GD stationary point;
* :mod:`._common`  — the source, tolerances and shared planted errors.
"""

from .exact import Construction, CrossAttention, FunctionalGD, SingleStep
from .parameters import TFParameters
from .symmetry import Equivariance, Stationarity
from .thresholds import DataThresholds
from .depth import Depth
from .training import Training

CLAIMS = (FunctionalGD(), CrossAttention(), Construction(), SingleStep(), Equivariance(), Stationarity(), Training(),
          DataThresholds(), TFParameters(), Depth())
