"""Measure the developer tier and write the list of its tests that are left to the full suite.

    python scripts/dev_tier.py [--seconds S] [--keep] [--print]

Runs ``pytest -q -n auto -m "not slow"`` with the list switched off (``ICLTHEORY_DEV_TIER_ALL=1``)
and reads each test's call time from pytest's duration report; every test of that tier whose
call takes at least ``S`` seconds (default 0.7) is written to ``tests/slow_tests.txt``, which
``tests/conftest.py`` marks ``slow``.  The full suite (README's test command) runs every test
whatever the list says: the list only shapes the one-minute developer loop.  ``--keep`` also
keeps the tests already listed that the tier still runs (a list measured on a slower machine is
not shortened by a faster one).  ``--print`` prints the list without writing it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "tests" / "slow_tests.txt"
HEADER = """\
# Tests of the developer tier (pytest -m "not slow") whose call took at least {s:g} s when
# scripts/dev_tier.py measured it (with --keep, the tests listed before stay); tests/conftest.py marks them slow, so the tier stays a
# one-minute loop.  The full suite runs them all.  Written by scripts/dev_tier.py: re-run it
# rather than editing by hand.
"""
_DURATION = re.compile(r"^\s*([0-9.]+)s\s+call\s+(\S.*?)\s*$")


def measure() -> dict[str, float]:
    """Per test node id, its call time in the developer tier (every test, the list ignored)."""
    env = dict(os.environ, ICLTHEORY_DEV_TIER_ALL="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-n", "auto", "-m", "not slow", "-p", "no:cacheprovider",
           "--durations=0", "--durations-min=0.05"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.stderr.write(out.stdout[-4000:] + out.stderr[-4000:])
        raise SystemExit(f"the developer tier failed (exit {out.returncode}): no list written")
    times: dict[str, float] = {}
    for line in out.stdout.splitlines():
        m = _DURATION.match(line)
        if m:
            times[m.group(2)] = float(m.group(1))
    return times


def main(argv: list[str]) -> int:
    seconds, show_only, keep = 0.7, False, False
    usage = "usage: python scripts/dev_tier.py [--seconds S] [--keep] [--print]"
    it = iter(argv)
    for a in it:
        if a == "--seconds":
            try:
                seconds = float(next(it))
            except (StopIteration, ValueError):
                print(f"--seconds needs a number; {usage}")
                return 2
        elif a == "--print":
            show_only = True
        elif a == "--keep":
            keep = True
        else:
            print(f"unknown argument {a!r}; {usage}")
            return 2
    times = measure()
    listed = set()
    if keep and LIST.exists():
        listed = {line.strip() for line in LIST.read_text(encoding="utf-8").splitlines()
                  if line.strip() and not line.lstrip().startswith("#")}
    slow = sorted(t for t, s in times.items() if s >= seconds or t in listed)
    kept = sum(s for t, s in times.items() if not (s >= seconds or t in listed))
    left = sum(times[t] for t in slow)
    text = HEADER.format(s=seconds) + "".join(t + "\n" for t in slow)
    print(f"{len(slow)} tests at or above {seconds:g} s{' or listed before' if keep else ''} "
          f"({left:.0f} s of calls) left to the full suite; the tier keeps {kept:.0f} s of calls")
    if show_only:
        print(text, end="")
    else:
        LIST.write_text(text, encoding="utf-8")
        print(f"wrote {LIST.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
