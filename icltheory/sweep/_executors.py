"""Where the runs of a sweep execute: any :class:`concurrent.futures.Executor`.

* ``local``     — in this process, one run after another (:class:`InlineExecutor`);
* ``processes`` — a :class:`~concurrent.futures.ProcessPoolExecutor` on this machine (spawned
  workers, one run each at a time);
* ``dask``      — Dask distributed: a ``LocalCluster`` on 127.0.0.1, or the scheduler at
  ``scheduler`` (``tcp://host:8786``), through ``Client.get_executor()``.  Dask is the way
  beyond one machine: start a cluster with dask-jobqueue (SLURM, PBS, SGE, LSF) or
  dask-kubernetes and give its scheduler address; each worker needs icltheory (and the claim
  packages the sweep uses) installed.

A run is a pure function of its claim and setting, so every executor gives the same numbers.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import os
from concurrent.futures import Executor, Future
from typing import Any, Callable, Iterator

from ..core import BadInput

__all__ = ["EXECUTORS", "InlineExecutor", "open_executor", "dask_available", "WorkerTrouble"]

EXECUTORS = ("local", "processes", "dask")
DASK_HINT = "pip install 'icltheory[dask]' (or pip install 'dask[distributed]')"


class WorkerTrouble(RuntimeError):
    """The executor could not run a cell (a worker died or did not start, a call could not be
    sent or its result not returned)."""


class InlineExecutor(Executor):
    """Runs each submitted call at once, in the calling process (the ``local`` executor)."""

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Future:
        fut: Future = Future()
        if fut.set_running_or_notify_cancel():
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                fut.set_exception(exc)
        return fut


def dask_available() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else (os.cpu_count() or 1))


@contextlib.contextmanager
def open_executor(name: str, *, workers: int | None = None, scheduler: str | None = None
                  ) -> Iterator[tuple[Executor, int]]:
    """The executor ``name`` and how many runs it executes at once; closed on exit."""
    if name not in EXECUTORS:
        raise BadInput(f"unknown executor {name!r}; valid: {', '.join(EXECUTORS)}")
    if scheduler is not None and name != "dask":
        raise BadInput("--scheduler needs --executor dask")
    if scheduler is not None and workers is not None:
        raise BadInput("--workers starts local workers; a scheduler's cluster has its own")
    if workers is not None and (workers < 1 or workers > 4096):
        raise BadInput(f"--workers must be between 1 and 4096, got {workers}")
    if name == "local":
        yield InlineExecutor(), 1
        return
    if name == "processes":
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        n = workers or default_workers()
        # spawn: a fresh interpreter per worker (no fork of a process with threads); it gets
        # this process's sys.path, so claim packages found here are found there too.  The
        # workers start now, with one BLAS/OpenMP thread each (n runs at once already use the
        # cores), as Dask's workers do.
        from .._cli import _keep_freed_memory

        pool = ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_keep_freed_memory)
        try:
            with _environ(_ONE_THREAD):
                for f in [pool.submit(os.getpid) for _ in range(n)]:
                    f.result()
        except Exception as exc:  # noqa: BLE001 - e.g. a worker that cannot start
            pool.shutdown(wait=False, cancel_futures=True)
            raise WorkerTrouble(f"the worker processes did not start: {type(exc).__name__}: "
                                f"{exc}") from exc
        try:
            yield pool, n
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return
    with _dask_client(workers, scheduler) as client:
        n = max(1, sum(client.nthreads().values()))
        yield client.get_executor(pure=False), n


@contextlib.contextmanager
def _dask_client(workers: int | None, scheduler: str | None):
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise BadInput(f"--executor dask needs Dask distributed: {DASK_HINT}") from None
    if scheduler is not None:
        if not scheduler.strip() or len(scheduler) > 300:
            raise BadInput("--scheduler: expected an address such as tcp://host:8786")
        try:
            client = Client(scheduler)  # timeout: Dask's distributed.comm.timeouts.connect
        except (OSError, TimeoutError, ValueError) as exc:
            msg = " ".join(str(exc).split())[:200]
            raise BadInput(f"cannot connect to the Dask scheduler {scheduler!r}: {msg}") from None
        with client:
            _say_dashboard(client, local=False)
            yield client
        return
    n = workers or default_workers()
    import dask

    # Dask's workers start with one BLAS/OpenMP thread (kept) and MALLOC_TRIM_THRESHOLD_ set,
    # which makes numpy's large temporaries go back to the kernel on every free: runs that
    # allocate in chunks took 2-3x as long, so a LocalCluster started here leaves it unset.
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}), \
            LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                         dashboard_address=_dashboard_address(),
                         silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        _say_dashboard(client)
        yield client


def _dashboard_address() -> str | None:
    """A free local port for Dask's dashboard when its web server (bokeh) is installed."""
    import importlib.util

    return "127.0.0.1:0" if importlib.util.find_spec("bokeh") is not None else None


def _say_dashboard(client, local: bool = True) -> None:
    """Print where Dask's dashboard is (on stderr)."""
    link = getattr(client, "dashboard_link", None) if (_dashboard_address() or not local) \
        else None
    print(f"Dask dashboard: {link}" if link else
          "Dask dashboard: not available (pip install 'bokeh>=3.1' to watch the workers)",
          file=sys.stderr)


#: one BLAS/OpenMP thread per worker process (a value the user set in the environment wins)
_ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@contextlib.contextmanager
def _environ(values: dict[str, str]):
    """Set environment variables not already set, for the processes started in the block."""
    added = [k for k in values if k not in os.environ]
    for k in added:
        os.environ[k] = values[k]
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)
