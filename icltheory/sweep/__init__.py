"""Sweeps: check a claim over a grid of settings (× seeds), on one machine or a Dask cluster.

Python first, the command line (``icltheory sweep``) is a thin layer over it::

    from icltheory.sweep import run_sweep, load
    result = run_sweep("linattn.merged.fixed-points", {"N": [8, 16, 31], "w_init": [1e-3, 1e-2]},
                       seeds="0..4", profile="quick", executor="processes", out="sweeps")
    print(result.table())              # one line per grid cell: verdict counts, worst margin
    df = load("sweeps")                # one row per run (needs pandas)

* The grid is validated whole before anything runs (:func:`plan_sweep`): an unknown key, a
  value invalid in any cell, an empty grid, a grid over ``profile`` or ``seed``, a key given
  twice or more than :data:`MAX_CELLS` runs is :class:`~icltheory.core.BadInput`.
* Each run is ``icltheory.core.run_check(claim, setting)`` — deterministic by seed, so the
  ``local``, ``processes`` and ``dask`` executors (or any ``concurrent.futures.Executor``)
  give the same numbers, the same as ``icltheory check`` at that setting.
* Each finished run is appended durably to ``<out>/<name>/results.jsonl`` (see
  :mod:`icltheory.sweep._store` for why JSON Lines); a sweep that was killed, rerun with the
  same arguments, computes only the runs its store lacks.
* Its report page under ``<out>/<name>/``: ``report.md``, ``phase.png`` (the phase diagram),
  ``sweep.json``, ``results.csv``; when ``<out>`` holds an ``index.md`` (a reports directory)
  the page is linked from its "Sweeps" section (:func:`update_index`).
"""

from __future__ import annotations

import os

from pathlib import Path
from typing import Any

from ..core import BadInput
from ._executors import EXECUTORS as EXECUTORS
from ._executors import InlineExecutor as InlineExecutor
from ._index import index_section as index_section
from ._index import update_index as update_index
from ._plan import MAX_CELLS as MAX_CELLS
from ._plan import Cell as Cell
from ._plan import Plan as Plan
from ._plan import parse_grid as parse_grid
from ._plan import parse_seeds as parse_seeds
from ._plan import plan_sweep as plan_sweep
from ._rows import PANDAS_HINT as PANDAS_HINT
from ._rows import Row as Row
from ._rows import check_margin as check_margin
from ._run import SweepError as SweepError
from ._run import SweepResult as SweepResult
from ._run import execute as execute
from ._run import run_cell as run_cell
from ._run import run_sweep as run_sweep

__all__ = ["run_sweep", "plan_sweep", "execute", "load", "records", "sweep_dirs",
           "SweepResult", "Row", "Plan", "Cell", "MAX_CELLS", "EXECUTORS", "InlineExecutor",
           "SweepError", "parse_grid", "parse_seeds", "run_cell", "check_margin",
           "index_section", "update_index", "PANDAS_HINT"]


def sweep_dirs(path: str | Path) -> list[Path]:
    """The sweep directories at ``path``: itself if it is one, else the ``sweep-*`` ones in it."""
    from ._store import STORE_NAME

    p = Path(path)
    if (p / STORE_NAME).exists():
        return [p]
    return sorted(d for d in p.glob("sweep-*") if (d / STORE_NAME).exists())


def _one_dir(path: str | Path) -> Path:
    dirs = sweep_dirs(path)
    if not dirs:
        raise BadInput(f"no sweep under {str(path)!r} (no results.jsonl)")
    if len(dirs) > 1:
        raise BadInput(f"{str(path)!r} holds {len(dirs)} sweeps; name one: "
                       + ", ".join(d.name for d in dirs[:6]))
    return dirs[0]


def records(path: str | Path) -> tuple[list[str], list[Row]]:
    """The grid keys and the rows (one per stored run, in grid order) of the sweep at
    ``path`` (a sweep directory, or an ``--out`` directory holding one sweep).  Works on a
    sweep that was interrupted; needs no pandas."""
    import json

    from ._page import MANIFEST
    from ._store import STORE_NAME, read_records

    d = _one_dir(path)
    recs = read_records(d / STORE_NAME)
    keys: list[str] = []
    try:
        keys = list(json.loads((d / MANIFEST).read_text(encoding="utf-8"))["spec"]["grid"])
    except (OSError, ValueError, KeyError, TypeError):
        for r in recs:
            keys += [k for k in r["cell"] if k not in keys]
    rows = sorted((Row.from_record(r) for r in recs), key=lambda r: r.index)
    return keys, rows


def load(path: str | Path) -> Any:
    """The sweep at ``path`` as a pandas DataFrame, one row per run: ``index``, the grid keys,
    ``seed``, ``verdict``, ``worst_margin``, ``runtime_s``, ``reasons``, ``predicted:<key>``
    and ``measured:<key>`` (scalars) and ``margin:<check id>``.  Needs pandas
    (``pip install 'icltheory[pandas]'``)."""
    from ._rows import to_dataframe

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load: the sweep folder must be a string or a path, got "
                        f"{type(path).__name__}")
    keys, rows = records(path)
    return to_dataframe(rows, keys)
