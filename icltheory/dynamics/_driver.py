r"""The one gradient-descent driver: run a step map until done, over budget, or diverged, and
keep a record.

Every trainer in the project (population GD, full-batch GD on P sequences, prompt GD, …) is a
*step map* that advances its own state in place plus an *observer* that returns the numbers
to record (``{"loss": …, "M": …}``, arrays with any leading shape).  :func:`run_gd` owns the
loop around them:

* **recording** — at step 0, every ``record_every`` steps (or on a geometric grid with
  ``record_every="geometric"``: stride ≈ k/``per_decade``·ln 10, so a run of 10⁶ steps keeps a
  few hundred records and a log-time axis keeps its early part), when stopped, and at the end;
* **stopping** — ``stop(trace)`` is asked every ``check_every`` steps (and at the end of the
  step budget) with the record so far; ``True`` ends the run (``stopped="stop"``);
* **divergence** — a non-finite observation, or ``observe()[blowup_key]`` above ``blowup`` ×
  its first value, ends the run with ``stopped="diverged"`` and ``diverged_at``; the caller
  decides whether that is numerical trouble;
* **watchdog and progress** — ``tick(fraction, what)`` (e.g. :meth:`icltheory.core.Run.tick`)
  is called every ``check_every`` steps.

Nothing here knows about any model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

__all__ = ["run_gd", "Trace"]


@dataclass
class Trace:
    """The record of a run: step indices and, per observed key, the stacked observations."""

    steps: np.ndarray
    records: dict[str, np.ndarray]
    n_steps: int
    stopped: str  # "max_steps" | "stop" | "diverged"
    diverged_at: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> np.ndarray:
        return self.records[key]

    def __contains__(self, key: str) -> bool:
        return key in self.records


def _geometric_stride(k: int, per_decade: int) -> int:
    return max(1, int(k * math.log(10) / per_decade))


class _Buffers:
    """Growing arrays (capacity doubling): appending is O(1) amortised and a view of the
    first n records costs nothing, so ``stop`` can look at the record every check."""

    def __init__(self):
        self.k = np.empty(64, dtype=np.int64)
        self.data: dict[str, np.ndarray] = {}
        self.n = 0

    def append(self, k: int, obs: Mapping[str, Any]) -> None:
        if self.n and self.k[self.n - 1] == k:
            return
        if self.n == len(self.k):
            self.k = np.concatenate([self.k, np.empty_like(self.k)])
            for name, arr in self.data.items():
                self.data[name] = np.concatenate([arr, np.empty_like(arr)])
        self.k[self.n] = k
        for name, v in obs.items():
            a = np.asarray(v, dtype=float)
            if name not in self.data:
                self.data[name] = np.empty((len(self.k),) + a.shape)
            self.data[name][self.n] = a
        self.n += 1

    def trace(self, n_steps: int, stopped: str, diverged_at: int | None) -> Trace:
        n = self.n
        return Trace(self.k[:n], {k: v[:n] for k, v in self.data.items()}, n_steps, stopped,
                     diverged_at)


def run_gd(
    step: Callable[[int], None],
    observe: Callable[[], Mapping[str, Any]],
    *,
    max_steps: int,
    record_every: int | str = "geometric",
    per_decade: int = 100,
    stop: Callable[[Trace], bool] | None = None,
    check_every: int = 1000,
    blowup_key: str | None = "loss",
    blowup: float = 1e6,
    tick: Callable[[float, str], None] | None = None,
    what: str = "gradient descent",
) -> Trace:
    """Run ``step(k)`` for k = 0, 1, … (see the module docstring); returns a :class:`Trace`.

    ``step(k)`` advances the state from step k to k + 1; ``observe()`` returns the current
    observations.  ``max_steps`` is the step budget.  Overflow inside ``step``/``observe`` is
    not raised: it shows up as a non-finite observation, i.e. ``stopped="diverged"``.  The
    blow-up reference is the first non-zero value of ``observe()[blowup_key]``.  The arrays of
    the trace passed to ``stop`` are views valid during the call."""
    if max_steps < 0:
        raise ValueError("max_steps must be ≥ 0")
    if check_every < 1:
        raise ValueError("check_every must be ≥ 1")
    if record_every != "geometric" and (not isinstance(record_every, int) or record_every < 1):
        raise ValueError("record_every must be a positive int or 'geometric'")
    buf = _Buffers()
    ref: float | None = None
    next_rec = 0
    k = 0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        while True:
            at_check = k % check_every == 0
            at_record = k >= next_rec or k == max_steps
            if at_record or at_check:
                obs = observe()
                bad = not all(np.all(np.isfinite(np.asarray(v, dtype=float)))
                              for v in obs.values())
                if not bad and blowup_key is not None and blowup_key in obs:
                    level = float(np.max(np.abs(np.asarray(obs[blowup_key], dtype=float))))
                    if ref is None and level > 0:
                        ref = level
                    bad = ref is not None and level > blowup * ref
                if bad:
                    return buf.trace(k, "diverged", k)
                if at_record:
                    buf.append(k, obs)
                    stride = (_geometric_stride(k, per_decade) if record_every == "geometric"
                              else int(record_every))
                    next_rec = k + max(stride, 1)
                if k == max_steps:
                    buf.append(k, obs)
                    return buf.trace(k, "max_steps", None)
                if at_check and k > 0:
                    if tick is not None:
                        tick(k / max_steps if max_steps else 1.0, what)
                    if stop is not None:
                        buf.append(k, obs)
                        if stop(buf.trace(k, "running", None)):
                            return buf.trace(k, "stop", None)
            step(k)
            k += 1
