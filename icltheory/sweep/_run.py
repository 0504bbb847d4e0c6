"""Running a sweep: every cell through an Executor, each finished run appended to the store."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Executor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..core import BadInput, Claim, Setting, run_check, versions
from ..core._deadline import MARK
from ..report import jsonable
from ._executors import WorkerTrouble, open_executor
from ._plan import MAX_CELLS, Cell, Plan, plan_sweep
from ._rows import Row, summary_table, to_dataframe
from ._store import FORMAT, Store

__all__ = ["run_sweep", "execute", "run_cell", "SweepResult", "SweepError"]


SweepError = WorkerTrouble


def run_cell(claim: Claim, setting: Setting) -> dict[str, Any]:
    """One run, as ``icltheory check --json`` records it (executes in a worker).

    ``run_check`` turns trouble inside the experiment and the judgement into verdicts; an
    exception outside that boundary (the claim's constants or derivation) is recorded as an
    ``inconclusive`` run naming it, so one bad cell cannot stop a sweep."""
    t0 = time.perf_counter()
    try:
        return jsonable(run_check(claim, setting).as_dict())
    except Exception as exc:  # noqa: BLE001 - the sweep's error boundary
        what = "refused" if isinstance(exc, BadInput) else "internal error"
        msg = f"{what}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        return jsonable({
            "claim": claim.id, "verdict": "inconclusive", "setting": setting.as_dict(),
            "predicted": {}, "measured": {}, "checks": [], "evidence": {},
            "seed": setting.seed, "runtime_s": round(time.perf_counter() - t0, 4),
            "versions": versions(), "profile": setting.profile, "reasons": [msg], "notes": [],
            "false_fail_bound": 0.0, "judged": [], "internal_error": msg,
        })


class _MemoryStore:
    """The store of a sweep run without ``out`` (nothing written)."""

    def __init__(self):
        self.records: dict[str, dict[str, Any]] = {}
        self.repaired = 0

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def append(self, record: dict[str, Any]) -> None:
        self.records.setdefault(record["key"], record)


@dataclass
class SweepResult:
    """The rows of a sweep (one per run, in grid order) and where they were written.

    Iterating, ``len`` and indexing go over :attr:`rows`; :meth:`table` is the summary printed
    by the CLI; :meth:`to_dataframe` needs pandas."""

    plan: Plan
    rows: list[Row]
    directory: Path | None = None
    computed: int = 0
    reused: int = 0
    repaired_bytes: int = 0
    paths: list[Path] = field(default_factory=list)
    #: runs stopped by the time limit (shown, not stored: a rerun computes them)
    stopped: int = 0

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> Row:
        return self.rows[i]

    @property
    def keys(self) -> list[str]:
        return self.plan.keys

    def counts(self) -> dict[str, int]:
        out = {"holds": 0, "fails": 0, "inconclusive": 0}
        for r in self.rows:
            out[r.verdict if r.verdict in out else "inconclusive"] += 1
        return out

    def table(self, *, runtimes: bool = True) -> str:
        return summary_table(self.rows, self.keys, runtimes=runtimes)

    def to_dataframe(self):
        return to_dataframe(self.rows, self.keys)


def _record(plan: Plan, cell: Cell, result: dict[str, Any]) -> dict[str, Any]:
    return {"format": FORMAT, "key": cell.key, "index": cell.index, "claim": plan.claim.id,
            "cell": cell.values, "seed": cell.seed, "result": result}


def _progress_bar(total: int, done: int, label: str, enabled: bool):
    if not enabled or not sys.stderr.isatty():  # no bar in logs and pipes
        return contextlib.nullcontext(None)
    from tqdm import tqdm

    return tqdm(total=total, initial=done, desc=label, unit="run", file=sys.stderr,
                dynamic_ncols=True, mininterval=0.5, smoothing=0.1)


def _stopped_by_time_limit(result: dict[str, Any]) -> bool:
    return any(str(r).startswith(MARK) for r in result.get("reasons", ()))


def _drive(plan: Plan, executor: Executor, window: int, store, bar
           ) -> tuple[int, dict[str, dict[str, Any]]]:
    """Submit the missing cells (at most ``window`` in flight) and store each as it ends; a
    run stopped by the time limit is kept aside (returned), not stored: a rerun computes it."""
    todo = iter([c for c in plan.cells if c.key not in store])
    pending: dict[Any, Cell] = {}
    computed = 0
    stopped: dict[str, dict[str, Any]] = {}

    def submit_next() -> None:
        cell = next(todo, None)
        if cell is not None:
            try:
                pending[executor.submit(run_cell, plan.claim, cell.setting)] = cell
            except Exception as exc:  # noqa: BLE001 - e.g. a claim that cannot be pickled
                raise SweepError(f"could not send a run to the executor: "
                                 f"{type(exc).__name__}: {exc}") from exc

    for _ in range(window):
        submit_next()
    while pending:
        done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
        for fut in sorted(done, key=lambda f: pending[f].index):
            cell = pending.pop(fut)
            try:
                result = fut.result()
            except Exception as exc:  # noqa: BLE001 - a worker died or could not unpickle
                raise SweepError(f"the executor lost the run {cell.values} seed {cell.seed}: "
                                 f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}") \
                    from exc
            if _stopped_by_time_limit(result):
                stopped[cell.key] = _record(plan, cell, result)
            else:
                store.append(_record(plan, cell, result))
                computed += 1
            if bar is not None:
                bar.update(1)
            submit_next()
    return computed, stopped


@contextlib.contextmanager
def _executor(executor: str | Executor, workers: int | None, scheduler: str | None):
    if isinstance(executor, Executor):  # the caller's: it stays open
        yield executor, (workers or getattr(executor, "_max_workers", None) or 2)
    elif isinstance(executor, str):
        with open_executor(executor, workers=workers, scheduler=scheduler) as pair:
            yield pair
    else:
        raise BadInput(f"executor: expected a name or a concurrent.futures.Executor, "
                       f"got {executor!r}")


def _check_constant(plan: Plan, constant: str | None) -> None:
    if constant is None:
        return
    if len(plan.keys) != 1:
        raise BadInput("--constant: only a sweep over one grid key plots a constant")
    preds = getattr(plan.claim, "predictions", None)
    if preds and constant.split("[")[0] not in preds:
        raise BadInput(f"--constant {constant[:40]}: {plan.claim.id} predicts no such constant; "
                       f"valid: {', '.join(sorted(preds))}")


def execute(plan: Plan, *, executor: str | Executor = "local", workers: int | None = None,
            scheduler: str | None = None, out: str | Path | None = None,
            progress: bool = False, constant: str | None = None) -> SweepResult:
    """Run a validated :class:`Plan` (see :func:`run_sweep`)."""
    from ._page import check_manifest, write_manifest, write_outputs

    _check_constant(plan, constant)
    from ..report import check_out_dir

    directory = check_out_dir(out) / plan.name if out is not None else None
    if directory is not None:
        check_manifest(directory, plan)  # a different sweep under the same name: refuse
    with _executor(executor, workers, scheduler) as (ex, n), \
            (Store(directory) if directory is not None else contextlib.nullcontext(_MemoryStore())
             ) as store:
        if directory is not None:
            write_manifest(directory, plan)
        reused = sum(1 for c in plan.cells if c.key in store)
        with _progress_bar(len(plan.cells), reused, plan.claim.id, progress) as bar:
            computed, stopped = _drive(plan, ex, max(2, 2 * n), store, bar)
        rows = [Row.from_record({**(stopped.get(c.key) or store.records[c.key]),
                                 "index": c.index, "cell": c.values})
                for c in plan.cells]
        result = SweepResult(plan, rows, directory, computed, reused, store.repaired,
                             stopped=len(stopped))
        if directory is not None:
            result.paths = write_outputs(directory, result, constant=constant)
    return result


def run_sweep(claim: str | Claim, grid: Mapping[str, Sequence[Any]], *,
              seeds: str | Sequence[int] | None = None, base: Mapping[str, Any] | None = None,
              profile: str | None = None, executor: str | Executor = "local",
              workers: int | None = None, scheduler: str | None = None,
              out: str | Path | None = None, progress: bool = False,
              constant: str | None = None, max_cells: int = MAX_CELLS) -> SweepResult:
    """Check ``claim`` at every cell of the Cartesian ``grid`` (× ``seeds``).

    ``grid``: key → values (``{"N": [4, 8, 16], "lam": [0.5, 1.0]}``; text is parsed as on
    the command line); ``seeds``: ``"0..9"``, a list, or ``None`` (the setting's seed);
    ``base``: fixed setting keys; ``profile``: one profile for every run; ``executor``:
    ``"local"`` | ``"processes"`` | ``"dask"`` or any ``concurrent.futures.Executor`` (e.g. a
    Dask ``client.get_executor()``); ``workers``: processes or Dask workers to start (with an
    Executor given: how many runs it executes at once); ``scheduler``: a running Dask scheduler's
    address; ``out``: a directory under which the sweep's store and report are written (in
    ``<out>/<plan.name>/``; a rerun computes only the runs the store lacks), or ``None`` to keep
    everything in memory; ``progress``: a tqdm bar on stderr.

    The grid is validated whole before anything runs (:class:`~icltheory.core.BadInput`).
    Returns a :class:`SweepResult` (the rows, one per run, in grid order)."""
    if not isinstance(grid, Mapping):
        raise TypeError(f"run_sweep: grid must map keys to lists of values ({{'N': [8, 16]}}), "
                        f"got {type(grid).__name__}")
    for key, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise TypeError(f"run_sweep: grid[{key!r}] must be a list of values, got "
                            f"{type(values).__name__}")
    if seeds is not None and not isinstance(seeds, (str, Sequence)):
        raise TypeError(f"run_sweep: seeds must be '0..9', a list of integers or None, got "
                        f"{type(seeds).__name__}")
    if out is not None and not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"run_sweep: out must be a folder (a string or a path) or None, got "
                        f"{type(out).__name__}")
    plan = plan_sweep(claim, grid, seeds=seeds, base=base, profile=profile,
                      max_cells=max_cells)
    return execute(plan, executor=executor, workers=workers, scheduler=scheduler, out=out,
                   progress=progress, constant=constant)
