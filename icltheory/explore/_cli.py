"""``icltheory refute`` and ``icltheory boundary``: the command-line layer over
:func:`icltheory.explore.refute` and :func:`icltheory.explore.boundary`.

``refute`` exits 1 when it found a counterexample, 0 when the decided draws found none, 3 when
every draw was undecided; ``boundary`` exits 0 once its files are written.  Bad input is exit 2
with one line, before anything runs.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_parsers", "run_refute", "run_boundary"]

_REFUTE_EPILOG = """examples:
  icltheory refute softmaxreg.candidate --set 'candidate=0.3*R^2' n=4 d=3 --budget 120
  icltheory refute linattn.merged.fixed-points --budget 60 --executor processes

Draws settings from the claim's own ranges (`icltheory describe CLAIM` lists them; --set keys
stay fixed), steers toward failure by each verdict's margin, shrinks a counterexample and
bisects it toward the defaults. A found counterexample gets a page under --out."""

_BOUNDARY_EPILOG = """examples:
  icltheory boundary softmaxreg.candidate --along R --from 0.5 --to 3 --set 'candidate=0.3*R^2'
  icltheory boundary nonlinear.asymptote --along K --from 4 --to 64

Writes boundary-<claim>-<key>.json and .png under --out (margin against the key, each change
of verdict marked)."""


def add_parsers(subparsers, common) -> None:
    """Add ``refute`` and ``boundary`` to the main parser's subparsers."""
    from ..core import PROFILES

    q = subparsers.add_parser(
        "refute", help="search a claim's settings for a counterexample and shrink it",
        description="Search a claim's settings for a counterexample, shrink it, and print the "
                    "command that reproduces it.", epilog=_REFUTE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    common(q)
    q.add_argument("claim", metavar="CLAIM")
    q.add_argument("--set", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                   help="a setting key held fixed in every draw")
    q.add_argument("--budget", type=float, default=60.0, metavar="SECONDS",
                   help="wall seconds of searching (per search; shrinking included)")
    q.add_argument("--profile", choices=PROFILES, default="quick",
                   help="the profile of every draw (default: quick)")
    q.add_argument("--seed", type=int, default=0, metavar="S", help="the search's seed")
    q.add_argument("--executor", choices=("local", "processes", "dask"), default="local",
                   help="run --workers independent searches in parallel")
    q.add_argument("--workers", type=int, default=None, metavar="N")
    q.add_argument("--scheduler", default=None, metavar="ADDRESS")
    q.add_argument("--out", default="reports", metavar="DIR",
                   help="where a counterexample's page is written (default: reports)")
    q.add_argument("--json", action="store_true", help="the result as JSON")

    q = subparsers.add_parser(
        "boundary", help="find where a claim's verdict changes along one setting key",
        description="Find where a claim's verdict changes along one numeric setting key, by "
                    "bisection; plot the margin against the key.", epilog=_BOUNDARY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    common(q)
    q.add_argument("claim", metavar="CLAIM")
    q.add_argument("--along", required=True, metavar="KEY", help="the numeric key to vary")
    q.add_argument("--from", dest="lo", type=float, default=None, metavar="A",
                   help="one end (default: the key's random-settings range)")
    q.add_argument("--to", dest="hi", type=float, default=None, metavar="B", help="the other end")
    q.add_argument("--set", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                   help="a setting key held fixed")
    q.add_argument("--profile", choices=PROFILES, default="quick",
                   help="the profile of every run (default: quick)")
    q.add_argument("--points", type=int, default=5, metavar="N",
                   help="evenly (or geometrically) spaced first runs (default 5)")
    q.add_argument("--steps", type=int, default=6, metavar="K",
                   help="bisection steps per change of verdict (default 6)")
    q.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                   help="stop starting runs after this many seconds")
    q.add_argument("--out", default="reports", metavar="DIR",
                   help="where the JSON and PNG are written (default: reports)")
    q.add_argument("--json", action="store_true", help="print the result as JSON")


def _progress(label: str, quiet: bool):
    from .._cli_commands import progress_bar

    return progress_bar(label, quiet)


def run_refute(args: argparse.Namespace) -> int:
    """Run ``icltheory refute``."""
    from ..core import get_claim, parse_assignments
    from ..report import check_out_dir, dumps
    from . import refute
    from ._pages import write_refutation

    claim = get_claim(args.claim)
    fixed = parse_assignments(args.set)
    check_out_dir(args.out)
    update, close = _progress(f"refute {claim.id}", getattr(args, "quiet", False))
    import tempfile

    from hypothesis.configuration import set_hypothesis_home_dir

    # Hypothesis keeps a cache of the searched modules' constants in its home folder (the
    # current directory's .hypothesis by default): a command writes only under --out, so the
    # search gets a temporary home, removed with it
    with tempfile.TemporaryDirectory(prefix="icltheory-refute-") as home:
        set_hypothesis_home_dir(home)
        try:
            r = refute(claim, fixed, budget=args.budget, profile=args.profile, seed=args.seed,
                       executor=args.executor, workers=args.workers, scheduler=args.scheduler,
                       progress=update)
        finally:
            set_hypothesis_home_dir(None)
            close()
    page = write_refutation(r, args.out) if r.found else None
    if args.json:
        print(dumps({**r.as_dict(), "page": str(page) if page else None}))
    else:
        print(r.summary())
        if page is not None:
            print(f"    page: {page}")
    sys.stdout.flush()
    return r.exit_code


def run_boundary(args: argparse.Namespace) -> int:
    """Run ``icltheory boundary``."""
    from ..core import get_claim, parse_assignments
    from ..report import check_out_dir, dumps
    from . import boundary, write_boundary

    claim = get_claim(args.claim)
    fixed = parse_assignments(args.set)
    check_out_dir(args.out)
    update, close = _progress(f"boundary {claim.id}", getattr(args, "quiet", False))
    try:
        b = boundary(claim, args.along, lo=args.lo, hi=args.hi, fixed=fixed,
                     profile=args.profile, points=args.points, steps=args.steps,
                     budget=args.budget, progress=update)
    finally:
        close()
    paths = write_boundary(b, args.out)
    from ..report import write_index

    from ..core import all_claims

    write_index(args.out, known=[(c.id, c.title) for c in all_claims()])
    if args.json:
        print(dumps(b.as_dict()))
    else:
        print(b.summary())
        print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0
