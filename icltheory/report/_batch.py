"""Check many claims and write their reports, one after the other or in worker processes.

Each claim is checked and its report set rendered in one process (a worker, with ``workers >
1``); the parent collects the rendered sets in claim order and commits them together, so the
files are byte-identical whatever the number of workers.  Workers are forked (they inherit the
registered claims, including ones registered from Python) and ignore Ctrl-C: the parent stops
them.  Where ``fork`` is unavailable the claims run in the parent.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import traceback
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..core import BadInput, Claim, Setting, run_check
from ._render import ClaimReport, render_claim
from ._store import commit

__all__ = ["report_claims"]

Progress = Callable[[float, str], None]

#: the jobs of the current parallel batch (read by forked workers by index)
_JOBS: list[tuple[Claim, Setting]] = []
#: whether the current parallel batch renders HTML pages (read by forked workers)
_HTML = False


def _describe(exc: BaseException) -> str:
    msg = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def _crashed(claim: Claim, setting: Setting, exc: BaseException, tb: str) -> ClaimReport:
    """The outcome of a claim whose check raised outside the runner's error boundary: no
    report files (an earlier report stays), an internal error for the exit status."""
    return ClaimReport(claim=claim.id, verdict="error", files={}, runtime_s=0.0,
                       profile=setting.profile, internal_error=_describe(exc),
                       notes=["traceback: " + tb[-4000:]])


def _one(claim: Claim, setting: Setting, progress: Progress | None,
         html: bool = False) -> ClaimReport:
    try:
        return render_claim(run_check(claim, setting, progress=progress), html=html)
    except BadInput:
        raise
    except Exception as exc:  # the error boundary around a claim (checks already have one)
        return _crashed(claim, setting, exc, traceback.format_exc())


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C


def _work(i: int) -> tuple[str, Any]:
    claim, setting = _JOBS[i]
    try:
        return "ok", _one(claim, setting, None, _HTML)
    except BadInput as exc:
        return "bad_input", str(exc)


def _run_serial(jobs: Sequence[tuple[Claim, Setting]], progress: Progress | None,
                on_done: Callable[[ClaimReport], None] | None,
                html: bool = False) -> list[ClaimReport]:
    out = []
    n = len(jobs)
    for i, (claim, setting) in enumerate(jobs):
        sub = None
        if progress is not None:
            def sub(f: float, what: str = "", i: int = i, cid: str = claim.id) -> None:
                progress((i + min(max(f, 0.0), 1.0)) / n, cid)
            sub(0.0)
        r = _one(claim, setting, sub, html)
        out.append(r)
        if on_done is not None:
            on_done(r)
    return out


def _stop(pool: Any) -> None:
    """Stop ``pool`` now: its workers terminated and its manager thread ended, so nothing is
    left for Python's exit to wait on or to race with."""
    terminate = getattr(pool, "terminate_workers", None)  # Python ≥ 3.14
    if terminate is not None:
        terminate()
        return
    # read before shutdown(), which drops the pool's references to them
    manager = getattr(pool, "_executor_manager_thread", None)
    result_queue = getattr(pool, "_result_queue", None)
    workers = list((getattr(pool, "_processes", None) or {}).values())
    # a worker terminated while sending its result leaves the manager thread waiting for the
    # rest of that message; once every worker is gone, the end of file on the pipe ends that
    # wait (the thread takes the pool as broken and ends) — provided this process holds no copy
    # of its write end: closed first, so that a second Ctrl-C below cannot skip it
    writer = getattr(result_queue, "_writer", None)
    if writer is not None and manager is not None and manager.is_alive():
        try:
            writer.close()
        except OSError:  # pragma: no cover - already closed
            pass
    for p in workers:
        try:
            p.terminate()
        except Exception:  # pragma: no cover - already gone
            pass
    for p in workers:
        p.join(timeout=10.0)
    pool.shutdown(wait=False, cancel_futures=True)
    # the manager thread closes its wake-up pipe as it ends, and Python 3.11's exit handler
    # writes to that pipe without a lock: an exit racing the thread's end printed "OSError: Bad
    # file descriptor" under the interrupted line.  Wait for it (bounded)
    if manager is not None and manager.is_alive():
        manager.join(timeout=10.0)


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold SIGINT (delivered when the block ends) in the main thread where POSIX allows it."""
    ok = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if ok else None
    try:
        yield
    finally:
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _run_parallel(jobs: Sequence[tuple[Claim, Setting]], workers: int,
                  progress: Progress | None,
                  on_done: Callable[[ClaimReport], None] | None,
                  html: bool = False) -> list[ClaimReport]:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    global _JOBS, _HTML
    _JOBS = list(jobs)
    _HTML = html
    results: list[ClaimReport | None] = [None] * len(jobs)
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_worker_init,
                               mp_context=multiprocessing.get_context("fork"))
    try:
        # longest first (by the claims' own work estimates), so that no long claim starts last;
        # the results are collected by index, so the order of submission changes no output
        order = sorted(range(len(jobs)), key=lambda i: -_work_estimate(*jobs[i]))
        # the first submit forks the workers: a Ctrl-C between a fork and the pool's record of
        # that worker would leave it running after we exit (no one terminates it), so the
        # interrupt waits until every worker is recorded and then stops them all
        with _sigint_deferred():
            futures = {pool.submit(_work, i): i for i in order}
        pending = set(futures)
        if progress is not None:
            progress(0.0, "")
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                i = futures[fut]
                kind, value = fut.result()
                if kind == "bad_input":
                    raise BadInput(value)
                results[i] = value
                if on_done is not None:
                    on_done(value)
            if progress is not None:
                progress(1.0 - len(pending) / len(jobs), f"{len(jobs) - len(pending)} done")
        pool.shutdown(wait=True)
    except BaseException:
        _stop(pool)
        raise
    finally:
        _JOBS = []
        _HTML = False
    return [r for r in results if r is not None]


def report_claims(jobs: Sequence[tuple[Claim, Setting]], out_dir: str | os.PathLike[str], *,
                  workers: int = 1, progress: Progress | None = None,
                  on_done: Callable[[ClaimReport], None] | None = None,
                  known: Iterable[tuple[str, str]] | None = None,
                  html: bool = False) -> list[ClaimReport]:
    """Check each (claim, setting) and write the reports into ``out_dir`` (complete or absent,
    see :mod:`icltheory.report._store`).

    ``workers``: how many claims run at a time (1: in this process); ``progress(fraction,
    what)`` follows the whole batch; ``on_done(report)`` is called as each claim finishes;
    ``known``: the registered claims (id, title) for the index; ``html``: write each claim's
    self-contained HTML page and ``index.html`` too.  A claim whose check raises
    outside the runner's boundary gets no files (``verdict == "error"``, ``internal_error``
    set); bad input raises :class:`BadInput` before anything is written."""
    if workers < 1:
        raise BadInput(f"workers must be ≥ 1, got {workers}")
    workers = min(workers, len(jobs))
    if workers > 1 and _can_fork():
        results = _run_parallel(jobs, workers, progress, on_done, html)
    else:
        results = _run_serial(jobs, progress, on_done, html)
    commit([r for r in results if r.files], Path(out_dir), known=known, html=html)
    return results


def _work_estimate(claim: Claim, setting: Setting) -> float:
    """The claim's a-priori work at ``setting`` (0 when it cannot say)."""
    try:
        cost = claim.cost(setting)
        return float(cost.work) if cost is not None else 0.0
    except (OverflowError, ValueError, ZeroDivisionError):  # un-estimable: the check will say so
        return 0.0


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()
