"""BLAS on one thread while a claim runs.

The kernels of this project are small (matrices of tens to thousands of entries per operation):
a multi-threaded BLAS spin-waits on them, and on a loaded two-core machine one GD step of the
nonlinear paper's prompt trainer took 16× longer with two OpenBLAS threads than with one.
Parallelism comes from processes instead (``report -j``, sweeps).  One thread also makes the
floating-point sums independent of the machine's core count, so a claim, setting and seed give
the same bytes everywhere.  The limit is scoped (threadpoolctl), so a caller's own BLAS use
outside a check keeps its settings.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["one_blas_thread"]


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Limit every loaded BLAS/OpenMP pool to one thread for the duration of the block."""
    try:
        from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - a declared dependency; without it, run as is
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield
