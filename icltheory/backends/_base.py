r"""Array backends behind one small protocol.

A backend is a tiny array namespace — ``asarray``, ``asindex``, ``zeros``, ``einsum``,
``swapaxes``, ``stack``, ``concatenate``, ``diagonal``, the elementwise ``exp``, ``sqrt``, ``abs`` and ``sign``, the
reductions ``sum``, ``mean`` and ``amin``, ``softmax`` and ``log_softmax``, ``all_finite``,
``to_numpy``, ``device`` and ``float64`` — that trainer kernels are written against *once*: a
kernel takes ``xp`` (a backend), converts its inputs with ``xp.asarray`` (float64, on
``xp.device``; integer index arrays with ``xp.asindex``), computes with these and with ordinary
arithmetic, ``@``, slicing and integer-array indexing (which numpy arrays and torch tensors
share), and hands results back with ``xp.to_numpy``.  Reductions take ``axis`` and ``keepdims``
(numpy's spelling) on every backend.  On numpy every primitive is the numpy (or SciPy) function
of the same name — ``softmax`` SciPy's arithmetic without its per-call dispatch — so a numpy
kernel moved onto the namespace computes the same bits as before.
The kernel itself (the model's parametrisation and its hand-written gradients, the GD loop
through :func:`icltheory.dynamics.run_gd`) lives with the paper that needs it; nothing here
knows about any model.

* ``numpy`` (default);
* ``torch`` (optional extra): the same kernel on torch tensors, float64, on CUDA when present —
  the path to a GPU, and an independent check of the numpy run (the tests compare them).

How to add a backend: subclass :class:`Backend`, set ``name``, implement ``available()``
(import its dependency lazily and say whether it works here) and the namespace methods, then
register it in ``_BACKENDS`` in ``backends/__init__.py``.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

__all__ = ["Backend"]


class Backend(abc.ABC):
    """An array namespace: what a trainer kernel needs from numpy or torch."""

    name: ClassVar[str]

    @classmethod
    @abc.abstractmethod
    def available(cls) -> tuple[bool, str]:
        """(works here?, reason if not)."""

    @property
    @abc.abstractmethod
    def float64(self) -> Any:
        """The 64-bit float dtype of this namespace."""

    @property
    @abc.abstractmethod
    def device(self) -> Any:
        """Where arrays live (``"cpu"`` for numpy)."""

    @abc.abstractmethod
    def asarray(self, a: Any) -> Any:
        """A float64 copy of ``a`` on :attr:`device` (safe to update in place)."""

    @abc.abstractmethod
    def asindex(self, a: Any) -> Any:
        """An integer index array (numpy ``intp``, torch ``long``) on :attr:`device`, for fancy
        indexing (e.g. gathering the rows of a minibatch or the columns of a label embedding)."""

    @abc.abstractmethod
    def einsum(self, spec: str, *operands: Any) -> Any:
        """Einstein summation (numpy's spec language)."""

    @abc.abstractmethod
    def zeros(self, shape: tuple[int, ...]) -> Any:
        """A float64 array of zeros on :attr:`device`."""

    @abc.abstractmethod
    def swapaxes(self, a: Any, i: int, j: int) -> Any:
        """``a`` with axes ``i`` and ``j`` exchanged (a view where the backend allows)."""

    @abc.abstractmethod
    def stack(self, arrays: Sequence[Any], axis: int = 0) -> Any:
        """The arrays (all of one shape; 0-d allowed) stacked along a new axis ``axis``."""

    @abc.abstractmethod
    def concatenate(self, arrays: Sequence[Any]) -> Any:
        """The 1-d arrays joined end to end, in order."""

    @abc.abstractmethod
    def diagonal(self, a: Any) -> Any:
        """The main diagonal of a 2-D array (numpy's ``diagonal`` over axes 0 and 1)."""

    @abc.abstractmethod
    def exp(self, a: Any) -> Any:
        """Elementwise exponential (underflow to 0 is silent where the caller says so)."""

    @abc.abstractmethod
    def sqrt(self, a: Any) -> Any:
        """Elementwise square root."""

    @abc.abstractmethod
    def abs(self, a: Any) -> Any:
        """Elementwise absolute value."""

    @abc.abstractmethod
    def sign(self, a: Any) -> Any:
        """Elementwise sign (−1, 0, 1)."""

    @abc.abstractmethod
    def softmax(self, a: Any, axis: int = -1) -> Any:
        """The softmax along ``axis`` (shift-invariant, computed without overflow)."""

    @abc.abstractmethod
    def log_softmax(self, a: Any, axis: int = -1) -> Any:
        """The log of the softmax along ``axis`` (shift-invariant, computed without overflow)."""

    @abc.abstractmethod
    def sum(self, a: Any, axis: int | None = None, keepdims: bool = False) -> Any:
        """The sum over ``axis`` (all entries when ``None``); ``keepdims`` keeps it as length 1."""

    @abc.abstractmethod
    def mean(self, a: Any, axis: int | None = None) -> Any:
        """The mean over ``axis`` (all entries when ``None``)."""

    @abc.abstractmethod
    def amin(self, a: Any, axis: int) -> Any:
        """The minimum over ``axis``."""

    @abc.abstractmethod
    def all_finite(self, a: Any) -> bool:
        """Whether every entry of ``a`` is finite."""

    @abc.abstractmethod
    def to_numpy(self, a: Any) -> np.ndarray:
        """``a`` as a numpy array on the host."""
