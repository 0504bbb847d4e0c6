"""Timings of ``icltheory sweep`` on this machine, in one run.

1. The sweep's own cost: 12 runs of a cheap claim through ``run_sweep`` (local executor, the
   store fsync'd after every run, CSV, figure and page written) versus the same 12
   ``run_check`` calls in a plain loop.
2. The executors on 12 heavier runs (a million Monte Carlo sequences each): ``local``,
   ``processes`` and ``dask`` (a LocalCluster on 127.0.0.1), with the number of workers given
   (default 2), checking that every executor gives the same numbers.  The first call of each
   executor pays its start-up (spawning interpreters, importing SymPy, deriving the theory).

The claim is the example third-party package (``examples/thirdparty``), so these numbers do
not move when the papers' claims change.  Usage: ``python benchmarks/bench_sweep.py [WORKERS]``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "thirdparty"))

from icl_example_claims import CLAIMS  # noqa: E402

from icltheory.core import register, run_check  # noqa: E402
from icltheory.sweep import run_sweep  # noqa: E402
from icltheory.sweep._executors import dask_available  # noqa: E402


def _numbers(res) -> list[dict]:
    return [{k: v for k, v in r.result.items() if k != "runtime_s"} for r in res]


def main() -> None:
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    claim = CLAIMS[0]
    register(claim)
    grid = {"N": [2, 5, 10], "D": [1, 3]}

    # 1. overhead of the sweep machinery over a plain loop (theory derived beforehand)
    plan_settings = [claim.setting({"N": n, "D": d, "seed": s, "profile": "quick"})
                     for n in grid["N"] for d in grid["D"] for s in (0, 1)]
    for s in plan_settings:
        run_check(claim, s)  # warm the theory cache
    t0 = time.perf_counter()
    for s in plan_settings:
        run_check(claim, s)
    t_loop = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run_sweep(claim, grid, seeds=[0, 1], profile="quick", out=tmp)
        t_sweep = time.perf_counter() - t0
    print("12 cheap runs (quick, example.onestep.loss)")
    print(f"  plain run_check loop   {t_loop:7.2f} s")
    print(f"  run_sweep, local, out  {t_sweep:7.2f} s   (store, CSV, figure, page included)")

    # 2. executors on heavier runs
    base = {"P": 1_000_000}
    print(f"\n12 runs of 10^6 sequences each, {workers} workers")
    print(f"  {'executor':<10} {'wall s':>8}  same numbers as local")
    ref = None
    for name in ("local", "processes", "dask"):
        if name == "dask" and not dask_available():
            print(f"  {name:<10} {'skipped (pip install icltheory[dask])':>8}")
            continue
        t0 = time.perf_counter()
        res = run_sweep(claim, grid, seeds=[0, 1], base=base, profile="quick", executor=name,
                        workers=None if name == "local" else workers)
        wall = time.perf_counter() - t0
        nums = _numbers(res)
        ref = ref if ref is not None else nums
        print(f"  {name:<10} {wall:8.2f}  {nums == ref}")


if __name__ == "__main__":
    main()
