r"""Training backends behind one small protocol.

A backend runs full-batch gradient descent on a quadratic-feature loss
(:class:`~icltheory.models.linear_attention.QuadraticMoments`) for a factorised parametrisation
(``MergedHeads``/``SeparateHeads``), vectorised over seeds, and returns a ``TrainResult``.

* ``numpy`` (default): hand-written pullbacks (``model.pullback``).
* ``torch`` (optional extra): the same loss, differentiated by ``torch.autograd`` in float64 on
  the best available device (CUDA if present, else CPU) — an independent check of the
  hand-written gradients, and the path to a GPU.

How to add a backend: subclass :class:`Backend`, set ``name``, implement ``available()`` (import
its dependency lazily and say whether it works here) and ``train_quadratic`` with the exact
semantics of :func:`~icltheory.models.linear_attention.gd_train` (same recording grid, same
divergence rule), then register it in ``_BACKENDS`` in ``backends/__init__.py``.
"""

from __future__ import annotations

import abc

__all__ = ["Backend"]


class Backend(abc.ABC):
    name: str

    @classmethod
    @abc.abstractmethod
    def available(cls) -> tuple[bool, str]:
        """(works here?, reason if not)."""

    @abc.abstractmethod
    def train_quadratic(self, model, moments, params: dict, *, lr: float, steps: int,
                        record_every: int = 1, keep_theta: bool = False, blowup: float = 1e6):
        """Full-batch GD on $L_{1/2}$; returns a ``TrainResult`` with numpy arrays."""
