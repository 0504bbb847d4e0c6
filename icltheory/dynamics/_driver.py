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


def run_gd(
    step: Callable[[int], None],
    observe: Callable[[], Mapping[str, Any]],
    *,
    max_steps: int,
    record_every: int | str = 1,
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
    observations.  ``max_steps`` is the step budget."""
    if max_steps < 0:
        raise ValueError("max_steps must be ≥ 0")
    rec_k: list[int] = []
    rec: dict[str, list] = {}
    first_blow: float | None = None
    stopped, diverged_at = "max_steps", None
    next_rec = 0

    def record(k: int, obs: Mapping[str, Any]) -> None:
        if rec_k and rec_k[-1] == k:
            return
        rec_k.append(k)
        for name, v in obs.items():
            rec.setdefault(name, []).append(np.array(v, dtype=float, copy=True))

    def trace(n: int) -> Trace:
        return Trace(np.asarray(rec_k), {k: np.stack(v) for k, v in rec.items()}, n, stopped,
                     diverged_at)

    k = 0
    while True:
        at_check = k % check_every == 0
        at_record = k >= next_rec or k == max_steps
        if at_record or at_check:
            obs = observe()
            bad = not all(np.all(np.isfinite(np.asarray(v, dtype=float))) for v in obs.values())
            if not bad and blowup_key is not None and blowup_key in obs:
                level = float(np.max(np.asarray(obs[blowup_key], dtype=float)))
                if first_blow is None:
                    first_blow = max(abs(level), 1e-300)
                bad = level > blowup * first_blow
            if bad:
                stopped, diverged_at = "diverged", k
                return trace(k)
            if at_record:
                record(k, obs)
                stride = (_geometric_stride(k, per_decade) if record_every == "geometric"
                          else int(record_every))
                next_rec = k + max(stride, 1)
            if k == max_steps:
                record(k, obs)
                return trace(k)
            if at_check and k > 0:
                if tick is not None:
                    tick(k / max_steps if max_steps else 1.0, what)
                if stop is not None:
                    record(k, obs)
                    if stop(trace(k)):
                        stopped = "stop"
                        return trace(k)
        step(k)
        k += 1
