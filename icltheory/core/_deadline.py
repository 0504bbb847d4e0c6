"""A user's time limit (``--time-limit SECONDS``): one wall-clock deadline for a whole command.

The deadline is an absolute time (seconds since the epoch) kept in the environment variable
:data:`ENV`, so that worker processes started after it is set (``report -j N``, the sweep's
``processes`` executor, a local Dask cluster) inherit it.  It is enforced cooperatively: a
claim not yet started when the deadline has passed is not started (its verdict is
``inconclusive``, naming the limit), and a running experiment stops at its next progress tick
(:meth:`icltheory.core.Run.tick`); in a process's main thread an alarm (:func:`hard_stop`,
repeated every half second until the block is left) also stops code that does not tick (a
derivation, a solver).  A run stopped by the limit says so in its reasons, starting
with :data:`MARK`, so that a sweep does not store it as a finished cell.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import signal
import threading
import time
from typing import Any, Iterator

from ._errors import BadInput

__all__ = ["ENV", "MARK", "set_time_limit", "clear_time_limit", "time_limit_reason",
           "seconds_left", "hard_stop", "TimeLimitReached", "MAX_TIME_LIMIT"]

ENV = "ICLTHEORY_DEADLINE"
#: the words every reason caused by the user's time limit starts with
MARK = "time limit reached"
#: the longest time limit accepted (a week)
MAX_TIME_LIMIT = 7 * 24 * 3600.0


def set_time_limit(seconds: float) -> None:
    """Start a time limit of ``seconds`` from now (for this process and those it starts)."""
    s = float(seconds)
    if not (math.isfinite(s) and 0 < s <= MAX_TIME_LIMIT):
        raise BadInput(f"--time-limit: expected seconds in (0, {MAX_TIME_LIMIT:g}], got {seconds!r}")
    os.environ[ENV] = f"{time.time() + s!r} {s!r}"


def clear_time_limit() -> None:
    """Remove the time limit."""
    os.environ.pop(ENV, None)


def time_limit_reason(what: str = "") -> str | None:
    """Why to stop now (the limit has passed), or ``None``; a malformed value is ignored."""
    raw = os.environ.get(ENV)
    if not raw:
        return None
    try:
        deadline, limit = (float(x) for x in raw.split())
    except ValueError:
        return None
    if time.time() <= deadline:
        return None
    return (f"{MARK}: the run's limit of {limit:g} s (--time-limit) passed"
            + (f" {what}" if what else ""))


def seconds_left() -> float | None:
    """Seconds until the deadline (negative once passed), or ``None`` without a limit."""
    raw = os.environ.get(ENV)
    if not raw:
        return None
    try:
        deadline = float(raw.split()[0])
    except (ValueError, IndexError):
        return None
    return deadline - time.time()


class TimeLimitReached(BaseException):
    """Raised by the alarm of :func:`hard_stop`.  A ``BaseException`` (as ``KeyboardInterrupt``
    is), so that library code catching ``Exception`` cannot swallow it."""


@contextlib.contextmanager
def hard_stop(exc_type: type[BaseException] = TimeLimitReached) -> Iterator[None]:
    """While inside, the time limit also interrupts code that does not tick: a ``SIGALRM`` at
    the deadline raises ``exc_type`` (with :func:`time_limit_reason`) wherever the main thread
    is, and again every half second while the block has not been left (an exception raised in a
    garbage-collector callback or a finaliser is dropped by Python: an alarm that finds such code
    on the stack waits until it has returned, and one that no frame shows is raised again).
    Elsewhere (another thread, no ``setitimer``) nothing is armed and only the cooperative
    checks apply."""
    global _ARMED
    left = seconds_left()
    if left is not None and left <= 0:
        raise exc_type(time_limit_reason("before the work started")
                       or f"{MARK}: the run's limit (--time-limit) passed")
    armed = (not _ARMED and left is not None and left > 0 and hasattr(signal, "setitimer")
             and threading.current_thread() is threading.main_thread())
    if not armed:  # no limit, not the main thread, or an outer hard_stop already armed
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        if _inside_dropping_frame(frame):  # raised there it would be dropped: try again shortly
            signal.setitimer(signal.ITIMER_REAL, _RETRY_S)
            return
        # armed again first: an exception raised where Python cannot propagate it and no frame
        # shows it (a finaliser called from C) is reported as unraisable and dropped, and the
        # run would go on; the next alarm stops it (leaving the block disarms it)
        signal.setitimer(signal.ITIMER_REAL, _REFIRE_S)
        raise exc_type(time_limit_reason("while the claim was running")
                       or f"{MARK}: the run's limit (--time-limit) passed")

    old = signal.signal(signal.SIGALRM, fire)
    gc.callbacks.insert(0, _track_collection)  # first: its "start" precedes the other callbacks
    signal.setitimer(signal.ITIMER_REAL, max(float(left or 0.0), 1e-3))
    _ARMED = True
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        gc.callbacks.remove(_track_collection)
        _COLLECTING[0] = False
        _ARMED = False


#: whether a :func:`hard_stop` is armed in this process (they do not nest)
_ARMED = False
#: seconds after an alarm at which it fires again if the block has not been left
_REFIRE_S = 0.5
#: seconds after an alarm that arrived inside a garbage-collector callback or a finaliser at
#: which it fires again (such code is short; an exception raised there would be dropped)
_RETRY_S = 0.01


#: whether a garbage collection is under way (kept by :func:`_track_collection` while armed)
_COLLECTING = [False]


def _track_collection(phase: str, info: dict) -> None:
    _COLLECTING[0] = phase == "start"


def _inside_dropping_frame(frame: Any) -> bool:
    """Whether the interrupted code runs inside a garbage collection (its finalisers and weak
    reference callbacks), at any depth inside a garbage-collector callback (one of
    ``gc.callbacks``), or in a ``__del__`` finaliser: Python reports an exception raised there
    as unraisable and goes on, so the alarm waits until that code has returned."""
    if _COLLECTING[0]:
        return True
    callbacks = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    while frame is not None:
        code = frame.f_code
        if code in callbacks or code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False
