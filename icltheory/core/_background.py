"""A computation that runs in a worker thread while the caller does something else.

A claim whose measurement has two independent parts — one that spends its time in the
interpreter (an adaptive flow's lockstep loop) and one that spends it in NumPy kernels that
release the GIL (drawing a training set and its moments) — finishes sooner on a two-core
machine when the second runs beside the first.  The result is the same bytes either way: the
worker's computation shares no state with the caller (its own random stream, its own arrays);
BLAS is held on one thread for the whole block (:mod:`._threads` — the limit is process-wide,
and a caller's own scoped limits would otherwise switch the worker's thread count mid-run); and
the worker runs in a copy of the caller's context, so NumPy's floating-point error settings
(``np.errstate``, per thread) are the caller's.

The worker reports progress through the ``tick(fraction, what)`` it is given; the caller's own
``tick`` sees that progress while it waits in :meth:`Background.result`, so a long wait still
shows progress and still meets the run's watchdog.  Leaving the ``with`` block before taking the
result (an error, a time limit, an early return) cancels the worker at its next ``tick`` and
waits for it, so no thread outlives the block.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from typing import Any, Callable

__all__ = ["Background"]


class _Cancelled(Exception):
    """Raised inside the worker at its next progress report once the block was left."""


class Background:
    """``fn(*args, tick=…, **kw)`` started in a worker thread on entering the ``with`` block;
    :meth:`result` waits for it (calling the caller's ``tick`` with the worker's progress) and
    returns its value or raises its exception."""

    _POLL_S = 0.05

    def __init__(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> None:
        self._fn, self._args, self._kw = fn, args, kw
        self._cancel = threading.Event()
        self._progress: tuple[float | None, str] = (None, "")
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._blas = contextlib.ExitStack()

    def _tick(self, fraction: float | None = None, what: str = "") -> None:
        if self._cancel.is_set():
            raise _Cancelled
        self._progress = (fraction, what)

    def _work(self) -> None:
        try:
            self._value = self._fn(*self._args, tick=self._tick, **self._kw)
        except _Cancelled:
            pass
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def __enter__(self) -> "Background":
        from ._threads import one_blas_thread

        self._blas.enter_context(one_blas_thread())
        context = contextvars.copy_context()  # the caller's NumPy error settings, among others
        self._thread = threading.Thread(target=context.run, args=(self._work,), name="icltheory-background",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._cancel.set()
        if self._thread is not None:
            self._thread.join()
        self._blas.close()

    def result(self, tick: Callable[..., None] | None = None) -> Any:
        """The worker's value (its exception raised here), after it finished; meanwhile
        ``tick(fraction, what)`` is called with its latest progress every 50 ms."""
        if self._thread is None:
            raise RuntimeError("Background.result: use it inside its with block")
        while self._thread.is_alive():
            self._thread.join(self._POLL_S)
            if tick is not None and self._thread.is_alive():
                tick(*self._progress)
        if self._error is not None:
            raise self._error
        return self._value
