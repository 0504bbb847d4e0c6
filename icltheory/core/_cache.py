"""Memoisation that the planted-error harness can clear.

A theory derived once per setting (``@cached``) is reused across claims; a planted error
monkeypatches a function the derivation calls, so the harness must drop every memoised value
before and after the planted run: :func:`clear_caches` does that for every ``@cached``
function at once.
"""

from __future__ import annotations

from functools import lru_cache, wraps
from typing import Any, Callable, TypeVar, cast

__all__ = ["cached", "clear_caches"]

F = TypeVar("F", bound=Callable[..., Any])
_ALL: list[Any] = []


def cached(fn: F | None = None, *, maxsize: int | None = 64) -> Any:
    """``functools.lru_cache`` (arguments must be hashable) registered for :func:`clear_caches`."""

    def wrap(f: F) -> F:
        c = lru_cache(maxsize=maxsize)(f)
        _ALL.append(c)
        return cast(F, wraps(f)(c))

    return wrap(fn) if fn is not None else wrap


def clear_caches() -> None:
    """Drop every value memoised with :func:`cached`."""
    for c in _ALL:
        c.cache_clear()
