"""The default numpy backend: hand-written gradients (see ``models/_linear_attention.py``)."""

from __future__ import annotations

from ..models._linear_attention import gd_train
from ._base import Backend

__all__ = ["NumpyBackend"]


class NumpyBackend(Backend):
    name = "numpy"

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return True, ""

    def train_quadratic(self, model, moments, params, *, lr, steps, record_every=1,
                        keep_theta=False, blowup=1e6):
        return gd_train(model, moments, params, lr=lr, steps=steps, record_every=record_every,
                        keep_theta=keep_theta, blowup=blowup)
