"""False-fail rates of the statistical checks on their claims' own nulls (a small version of
``benchmarks/bench_false_fail.py``): the measurement feeding each check, at the quick profile,
over a few dozen seeds at the defaults and at the extreme settings; every ``fails`` is a false
fail, and their count must be consistent with the rate each check states."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from scipy import stats

_spec = importlib.util.spec_from_file_location(
    "bench_false_fail", Path(__file__).resolve().parents[1] / "benchmarks" / "bench_false_fail.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

SEEDS = 40
#: the expensive cases (a model trained per setting) are left to the benchmark
CHEAP = [c for c in bench.CASES if c[0].startswith(("linattn.", "catgd.stationarity"))]


@pytest.mark.thorough
@pytest.mark.parametrize("claim,label,over,runner", CHEAP, ids=[f"{c[0]}[{c[1]}]" for c in CHEAP])
def test_false_fails_consistent_with_stated_rate(claim, label, over, runner):
    rows = bench.run_case(claim, over, runner, range(SEEDS))
    assert rows, "no statistical check ran"
    for name, r in rows.items():
        # the chance of at least this many false fails at the stated rate
        p = stats.binom.sf(r["fails"] - 1, r["seeds"], max(r["stated"], 1e-12))
        assert p > 1e-3, f"{claim} [{label}] {name}: {r['fails']}/{r['seeds']} fails, stated {r['stated']:g}"
