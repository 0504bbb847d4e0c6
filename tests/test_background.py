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


def test_the_worker_has_the_callers_floating_point_error_settings():
    """A measurement runs under ``np.errstate(over="raise", …)`` (per thread in NumPy): an
    overflow in the worker is raised to the caller, not passed on as inf."""

    def overflow(tick):
        return np.array([1e308]) * 10.0

    with np.errstate(over="raise"):
        with Background(overflow) as job:
            with pytest.raises(FloatingPointError):
                job.result()
    with np.errstate(over="ignore"):
        with Background(overflow) as job:
            assert np.isinf(job.result()[0])


def test_blas_stays_on_one_thread_for_the_whole_block():
    """The BLAS limit is process-wide: the block holds it at one thread, so the caller's own
    scoped limits (the flows enter and leave one) cannot switch the worker's thread count — and
    its sums — mid-run; after the block the caller's limit is back."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from icltheory.core._threads import one_blas_thread

    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    np.ones((4, 4)) @ np.ones((4, 4))  # BLAS loaded
    if not blas_threads():
        pytest.skip("no BLAS library threadpoolctl can see")
    seen = []

    def watch(tick):
        for _ in range(20):
            seen.append(blas_threads())
            tick(0.5, "watching")
            threading.Event().wait(0.002)

    with threadpool_limits(2, user_api="blas"):
        with Background(watch) as job:
            for _ in range(10):
                with one_blas_thread():
                    pass
            job.result()
            assert blas_threads() == {1}
        assert blas_threads() == {2}
    assert seen and all(s == {1} for s in seen)
