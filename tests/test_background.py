"""A computation in a worker thread beside the caller's (icltheory.core.Background)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from icltheory.core import Background


def test_result_is_the_functions_value_and_progress_reaches_the_caller():
    """The value is what the function returns (the same numbers as a direct call); while the
    caller waits, its tick sees the worker's progress."""
    from proofs.linear_attention.experiments import _models

    lam = np.diag([0.4, 0.3, 0.2, 0.1])
    release = threading.Event()

    def draw(tick):
        release.wait(5.0)  # the caller is waiting in result() by then
        return _models.sampled_moments(20000, 10, lam, np.random.default_rng(3), chunk=1000, tick=tick)

    seen: list[tuple[float, str]] = []

    def caller_tick(fraction=None, what=""):
        seen.append((fraction, what))
        release.set()

    with Background(draw) as job:
        got = job.result(caller_tick)
    direct = _models.sampled_moments(20000, 10, lam, np.random.default_rng(3), chunk=1000)
    assert np.array_equal(got.C, direct.C) and np.array_equal(got.g, direct.g) and got.s == direct.s
    assert seen  # the wait ticked the caller


def test_an_error_in_the_worker_is_raised_by_result():
    def broken(tick):
        raise ValueError("bad chunk")

    with Background(broken) as job:
        with pytest.raises(ValueError, match="bad chunk"):
            job.result()


def test_leaving_the_block_early_stops_the_worker_at_its_next_tick():
    """An error in the caller's own work (or a time limit) leaves the block before the result is
    taken: the worker is stopped at its next progress report and no thread outlives the block."""
    calls = []

    def endless(tick):
        while True:
            calls.append(1)
            tick(0.5, "endless")
            threading.Event().wait(0.001)

    job = Background(endless)
    with pytest.raises(RuntimeError, match="the caller failed"):
        with job:
            while not calls:
                threading.Event().wait(0.001)
            raise RuntimeError("the caller failed")
    assert not job._thread.is_alive()
