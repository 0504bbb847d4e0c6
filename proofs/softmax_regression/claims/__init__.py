"""The softmax-regression claims: each states "run this experiment, judge it against that
prediction" (the machinery lives in :mod:`..experiments`, the predictions and proved bounds in
:mod:`..theory`).

* :mod:`.bounds`  — the tensor trick, the closed-form gradient, the Lipschitz constants of both
  losses and a user's candidate constant (judged on the certified path);
* :mod:`.shift`   — the ICL target shifts: a weight move and a data move are target moves;
* :mod:`._common` — planted-error factories, the certified-bound judging path, cost estimates.
"""

from .bounds import CLAIMS as _BOUNDS
from .shift import CLAIMS as _SHIFT

CLAIMS = _BOUNDS + _SHIFT
