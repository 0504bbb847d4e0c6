"""Training backends: ``numpy`` (default) and the optional ``torch``."""

from __future__ import annotations

from ..core import SettingError
from ._base import Backend as Backend
from ._numpy import NumpyBackend as NumpyBackend
from ._torch import TorchBackend as TorchBackend

_BACKENDS: dict[str, type[Backend]] = {"numpy": NumpyBackend, "torch": TorchBackend}
BACKEND_NAMES = tuple(_BACKENDS)


_NUMPY = NumpyBackend()


def namespace_of(a) -> Backend:
    """The backend whose arrays ``a`` is: numpy for numpy arrays and scalars, torch for tensors."""
    if type(a).__module__.startswith("torch"):
        return TorchBackend(threads=None)
    return _NUMPY


def get_backend(name: str) -> Backend:
    """The backend called ``name``; a missing optional dependency is a SettingError on 'backend'."""
    if name not in _BACKENDS:
        raise SettingError("backend", f"unknown value {name!r}; valid values: {', '.join(_BACKENDS)}")
    ok, why = _BACKENDS[name].available()
    if not ok:
        raise SettingError("backend", f"{name!r} {why}")
    return _BACKENDS[name]()
