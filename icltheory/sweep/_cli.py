"""``icltheory sweep``: the command-line layer over :func:`icltheory.sweep.run_sweep`.

Exit status: 0 every cell ran (the verdicts are in the files; the counts are printed), 3 the
time limit stopped some runs (rerun to compute them), 2 bad input (one line on stderr, nothing
written), 4 the executor lost a run (what had finished is in the store: rerun the command to
go on).
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_parser", "run"]

EXIT_OK, EXIT_INCONCLUSIVE, EXIT_EXECUTOR = 0, 3, 4

_EPILOG = """examples:
  icltheory sweep linattn.merged.fixed-points --grid N=8,16,31 --grid w_init=1e-3,1e-2 --profile quick
  icltheory sweep example.onestep.loss --grid N=2..12 --seeds 0..9 --executor processes
  icltheory sweep CLAIM --grid ... --executor dask                     (a LocalCluster here)
  icltheory sweep CLAIM --grid ... --executor dask --scheduler tcp://HOST:8786  (a cluster)

Values: v1,v2,...; a..b for the integers a to b; v1;v2 when each value is a list
(--grid 'lambdas=0.4,0.3;0.2,0.1'). A rerun of the same command computes only the runs that
the store under --out lacks (the store is keyed by claim and setting: after changing a claim's
code, give a fresh --out)."""


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``sweep`` subcommand to the main parser's subparsers."""
    from ..core import PROFILES

    q = subparsers.add_parser(
        "sweep", help="check a claim over a grid of settings (× seeds), resumable",
        description="Check a claim at every cell of a Cartesian grid of settings (× seeds); "
                    "write a store, a CSV, a phase diagram and a report page under --out.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    q.add_argument("claim", metavar="CLAIM")
    q.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="a grid axis (repeat for more axes)")
    q.add_argument("--seeds", metavar="0..9", default=None,
                   help="seeds of every cell: a..b (inclusive) or a comma list")
    q.add_argument("--set", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                   help="a setting key fixed in every cell")
    q.add_argument("--config", metavar="FILE", help="TOML file of fixed setting keys")
    q.add_argument("--profile", choices=PROFILES, default=None,
                   help="quick | standard (default) | thorough, for every cell")
    q.add_argument("--executor", choices=("local", "processes", "dask"), default="local",
                   help="local (this process, default) | processes (this machine) | dask")
    q.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes or LocalCluster workers (default: the CPUs available)")
    q.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="a running Dask scheduler, e.g. tcp://host:8786 (with --executor dask)")
    from .._cli_parser import time_limit_arg

    time_limit_arg(q)
    q.add_argument("--out", default="sweeps", metavar="DIR",
                   help="where the sweep's directory is written (default: sweeps)")
    q.add_argument("--constant", default=None, metavar="CHECK",
                   help="the check a 1-D sweep plots predicted vs measured (a judged key)")
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    return q


def run(args) -> int:
    """Run the ``sweep`` subcommand (bad input raises ``BadInput``: the main CLI prints it)."""
    from ..core import BadInput, load_toml, parse_assignments
    from . import SweepError, execute, parse_grid, plan_sweep

    if args.workers is not None and args.executor == "local":
        raise BadInput("--workers needs --executor processes or dask")
    base = {}
    if args.config:
        base.update(load_toml(args.config))
    base.update(parse_assignments(args.set))
    plan = plan_sweep(args.claim, parse_grid(args.grid), seeds=args.seeds, base=base,
                      profile=args.profile)
    try:
        result = execute(plan, executor=args.executor, workers=args.workers,
                         scheduler=args.scheduler, out=args.out, progress=not args.quiet,
                         constant=args.constant)
    except SweepError as exc:
        print(f"icltheory: sweep stopped: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_EXECUTOR
    counts = result.counts()
    runtime = sum(r.runtime_s for r in result.rows)
    print(f"{plan.claim.id}: {len(result.rows)} runs ({result.computed} computed, "
          f"{result.reused} from the store); " + ", ".join(f"{n} {k}" for k, n in counts.items())
          + f"; {runtime:.1f} s of runs")
    print(result.table())
    if result.directory is not None:
        print(f"wrote {result.directory}/ (report.md, phase.png, results.csv, results.jsonl)")
    if result.stopped:
        print(f"time limit reached: {result.stopped} run(s) did not finish (not stored; the same "
              "command computes them)", file=sys.stderr)
        return EXIT_INCONCLUSIVE
    return EXIT_OK  # every cell ran: the verdicts are in the files
