"""``refute`` and ``boundary``: a planted false claim is found, shrunk toward the defaults and
reproduced; a true claim is not refuted; the verdict's change along a key is bracketed."""

from __future__ import annotations

import json

import pytest

import icltheory.testing as itest
from icltheory._cli import main
from icltheory.core import run_check
from icltheory.explore import boundary, refute, verdict_margin, write_boundary
from icltheory.explore._refute import _middle

CLAIM = "example.onestep.loss"


def _theory_error(claim):
    return next(e for e in claim.planted_errors if e.side == "theory")


def test_a_planted_false_claim_is_found_and_shrunk(example, tmp_path):
    """With c computed from N + 1, short contexts fail: the search finds one, shrinks it and
    the reproduction command's setting fails again."""
    with itest.planted(_theory_error(example)):
        r = refute(example, budget=60, seed=1)
        assert r.found and r.exit_code == 1, r.summary()
        assert r.counterexample is not None and r.command.startswith(f"icltheory check {CLAIM}")
        s = example.setting({**r.counterexample, "profile": "quick"})
        assert run_check(example, s).verdict == "fails"
        assert s.N <= 12  # moved toward the defaults' side where the error shows
        assert r.margin is not None and r.margin < 0
        assert r.evidence and all(c["passed"] is False for c in r.evidence)


@pytest.mark.slow
def test_a_true_claim_is_not_refuted(example):
    r = refute(example, budget=8, seed=2)
    assert not r.found and r.exit_code == 0, r.summary()
    assert r.draws >= 2 and r.margin is not None and r.margin > 0


@pytest.mark.slow
def test_refute_cli(example, tmp_path, capsys):
    code = main(["refute", CLAIM, "--budget", "5", "--json", "--out", str(tmp_path), "--quiet"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["counterexample"] is None and out["draws"] >= 1
    for bad in (["--budget", "0"], ["--budget", "nan"], ["--set", "bogus=1"],
                ["--set", "profile=thorough"]):
        assert main(["refute", CLAIM, *bad, "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err


@pytest.mark.slow
def test_boundary_brackets_the_change(example, tmp_path):
    with itest.planted(_theory_error(example)):
        b = boundary(example, "N", lo=2, hi=256, points=4, steps=4)
    assert b.changes, b.summary()
    a, va, z, vz = b.changes[0]
    assert {va, vz} == {"holds", "fails"} and abs(z - a) <= 64
    paths = write_boundary(b, tmp_path)
    assert [p.suffix for p in paths] == [".json", ".png"]
    rec = json.loads(paths[0].read_text())
    assert rec["key"] == "N" and rec["changes"][0]["width"] == abs(z - a)


def test_boundary_bad_input(example, capsys, tmp_path):
    for bad in (["--along", "bogus"], ["--along", "N", "--from", "3", "--to", "3"],
                ["--along", "profile"]):
        assert main(["boundary", CLAIM, *bad, "--out", str(tmp_path)]) == 2
        assert capsys.readouterr().err.count("\n") == 1


def test_margin_sign(example):
    v = run_check(example, {"profile": "quick"})
    m = verdict_margin(v)
    assert v.verdict == "holds" and m is not None and 0 < m <= 1


@pytest.mark.parametrize("good, bad, mid", [(1, 9, 5), (1, 2, None), (1.0, 100.0, 10.0),
                                            (1.0, 3.0, 2.0), (9, 1, 5)])
def test_middle(good, bad, mid):
    assert _middle(good, bad) == pytest.approx(mid) if mid is not None else \
        _middle(good, bad) is None


def test_a_boundary_without_a_holds_fails_change_lists_its_verdicts_along_the_key():
    """Where the runs change only between inconclusive and fails (no holds/fails bracket to
    bisect), the summary says so and lists each verdict's stretch of the key, instead of "no
    change of verdict" above runs whose verdicts did change."""
    from icltheory.explore._boundary import Boundary

    b = Boundary("x.claim", "R", {}, "quick")
    b.points = [(0.5, None, "inconclusive"), (1.125, None, "inconclusive"), (1.75, None, "fails"),
                (3.0, None, "fails")]
    line = b.summary()
    assert "no change between holds and fails found" in line
    assert "inconclusive at R=0.5…1.125, fails at R=1.75…3" in line and "larger --profile" in line


def test_a_boundary_with_no_run_says_so():
    """No run at all, and grid points the budget left unrun, are said in the summary and the
    record (they used to vanish from both)."""
    from icltheory.explore._boundary import Boundary

    assert "no run was made" in Boundary("x.claim", "R", {}, "quick").summary()
    b = Boundary("x.claim", "R", {}, "quick", skipped=[(2.0, "not run"), (3.0, "not run")])
    b.points = [(1.0, 0.5, "holds")]
    assert "2 grid points not run (the budget was spent) at R=2, 3" in b.summary()
    assert b.as_dict()["skipped"] == [{"value": 2.0, "why": "not run"}, {"value": 3.0, "why": "not run"}]


def test_the_counterexample_keeps_only_the_keys_the_failure_needs(example):
    """A planted error that shows only at N ≥ 30: every other drawn key goes back to its
    default (tried directly, not only by bisection), N is bisected to the first failing value,
    and no key the setting derives is moved."""
    from icltheory.core import PlantedError

    def late(orig):
        return lambda D, N: orig(D, N + 1) if N >= 30 else orig(D, N)

    err = PlantedError("theory", "c with N + 1 from N = 30 on", "icl_example_claims.theory:c_coefficient", late)
    with itest.planted(err):
        r = refute(example, budget=60, seed=1)
    assert r.found and r.counterexample == {"N": 30}, r.summary()


def test_boundary_brackets_an_int_key_at_values_it_ran(example):
    """Along an int key the bracket's ends are the values the runs were made at."""
    from icltheory.core import PlantedError

    def late(orig):
        return lambda D, N: orig(D, N + 1) if N >= 30 else orig(D, N)

    err = PlantedError("theory", "c with N + 1 from N = 30 on", "icl_example_claims.theory:c_coefficient", late)
    with itest.planted(err):
        b = boundary(example, "N", lo=10, hi=40, points=5, steps=8)
    assert [(a, va, z, vz) for a, va, z, vz in b.changes] == [(29.0, "holds", 30.0, "fails")], b.summary()
    ran = {x for x, _, _ in b.points}
    assert {29.0, 30.0} <= ran and all(float(x).is_integer() for x in ran)


@pytest.mark.parametrize("budget", ["-5", "nan", "inf"])
def test_boundary_refuses_a_bad_budget(example, capsys, tmp_path, budget):
    assert main(["boundary", CLAIM, "--along", "N", "--budget", budget, "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1 and not list(tmp_path.iterdir())


def test_exploration_output_beside_the_reports_is_not_read_as_a_report(tmp_path):
    """refute and boundary write JSON that names a claim into the reports' folder: the index
    reads a claim's record only from the file named after it."""
    from icltheory.report._store import read_records

    (tmp_path / "x.claim.json").write_text(json.dumps({"claim": "x.claim", "verdict": "holds"}))
    (tmp_path / "refute-x.claim.json").write_text(json.dumps({"claim": "x.claim", "counterexample": None}))
    (tmp_path / "boundary-x.claim-N.json").write_text(json.dumps({"claim": "x.claim", "key": "N"}))
    (tmp_path / "y.claim.json").write_text("{ not json")
    assert read_records(tmp_path) == {"x.claim": {"claim": "x.claim", "verdict": "holds"}, "y.claim": {}}


def test_fixed_keys_are_judged_with_the_keys_the_search_draws():
    """A fixed key that is valid only with some drawn values (an eigenvalue above the default
    trace) starts a search; a fixed key invalid on its own is bad input."""
    from icltheory.core import BadInput, get_claim
    from icltheory.explore._refute import _check_fixed

    c = get_claim("linattn.separate.scalar-ode")
    _check_fixed(c, {"lam": 1.5}, "quick")  # trace is drawn up to 3
    with pytest.raises(BadInput):
        _check_fixed(c, {"lam": -1.0}, "quick")
    with pytest.raises(BadInput):
        _check_fixed(c, {"bogus": 1}, "quick")


def test_refute_writes_nothing_outside_its_out_folder(tmp_path):
    """In a fresh process (as a user runs it), Hypothesis's own cache goes to a temporary home,
    not to the current directory's .hypothesis."""
    import subprocess
    import sys

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = subprocess.run([sys.executable, "-m", "icltheory", "refute", "softmaxreg.vectorization", "--budget", "2",
                           "--out", str(tmp_path / "out"), "--quiet"], cwd=cwd, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert list(cwd.iterdir()) == []
