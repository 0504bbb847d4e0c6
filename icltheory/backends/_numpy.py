"""The default numpy backend."""

from __future__ import annotations

import numpy as np

from ._base import Backend

__all__ = ["NumpyBackend"]


class NumpyBackend(Backend):
    name = "numpy"

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return True, ""

    @property
    def float64(self):
        return np.float64

    @property
    def device(self) -> str:
        return "cpu"

    def asarray(self, a):
        return np.array(a, dtype=np.float64, copy=True)

    def asindex(self, a):
        return np.asarray(a, dtype=np.intp)

    def einsum(self, spec, *operands):
        return np.einsum(spec, *operands)

    def zeros(self, shape):
        return np.zeros(shape)

    def swapaxes(self, a, i, j):
        return np.swapaxes(a, i, j)

    def stack(self, arrays, axis=0):
        return np.stack(arrays, axis=axis)

    def concatenate(self, arrays):
        return np.concatenate(list(arrays))

    def diagonal(self, a):
        return np.diagonal(a)

    def exp(self, a):
        return np.exp(a)

    def sqrt(self, a):
        return np.sqrt(a)

    def abs(self, a):
        return np.abs(a)

    def sign(self, a):
        return np.sign(a)

    def softmax(self, a, axis=-1):
        # SciPy's arithmetic (shift by the max, exponentiate, divide by the sum), without its
        # array-API dispatch, which costs ≈ 50 µs a call in the small GD loops that call it
        # (in place on one new array: the same values as the expression, fewer temporaries)
        e = a - np.max(a, axis=axis, keepdims=True)
        if e.dtype.kind != "f":  # integer scores: exponentiate in float64, as np.exp would
            e = e.astype(np.float64)
        np.exp(e, out=e)
        e /= np.sum(e, axis=axis, keepdims=True)
        return e

    def log_softmax(self, a, axis=-1):
        from scipy import special

        return special.log_softmax(a, axis=axis)

    def sum(self, a, axis=None, keepdims=False):
        return np.sum(a, axis=axis, keepdims=keepdims)

    def mean(self, a, axis=None):
        return np.mean(a, axis=axis)

    def amin(self, a, axis):
        return np.min(a, axis=axis)

    def all_finite(self, a) -> bool:
        return bool(np.all(np.isfinite(a)))

    def to_numpy(self, a) -> np.ndarray:
        return np.asarray(a)
