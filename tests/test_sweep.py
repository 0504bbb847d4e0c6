"""Sweeps: grids of settings on local / process / Dask executors, the resumable
store, the report page and the index hook.

The claim swept is the example third-party package (``examples/thirdparty``), registered the
way ``test_contract.py::test_third_party_claim_package`` does, so these tests do not depend on
how the built-in papers are being migrated.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import icltheory.testing as itest
from icltheory._cli import main
from icltheory.core import BadInput
from icltheory.sweep import (check_margin, load, plan_sweep, records, run_sweep, update_index)
from icltheory.sweep._figure import phase_png
from icltheory.sweep._store import STORE_NAME, Store

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "thirdparty"
CLAIM = "example.onestep.loss"
# 12 runs: 3 context lengths × 2 dimensions × 2 seeds, at the quick profile (contexts of a few
# tokens at D = 1 give Monte Carlo samples too heavy-tailed for the example's tests: undecided)
GRID = ["--grid", "N=5,10,20", "--grid", "D=1,3", "--seeds", "0,1", "--profile", "quick"]


def _has_dask() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


needs_dask = pytest.mark.skipif(not _has_dask(), reason="Dask distributed is not installed "
                                "(pip install 'icltheory[dask]')")


def _same_numbers(result: dict) -> dict:
    """A verdict record without its wall-clock time (everything else must match bit for bit)."""
    return {k: v for k, v in result.items() if k != "runtime_s"}


def _cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ----------------------------------------------------------------------------- bad grids


@pytest.mark.parametrize("argv, words", [
    ([], "empty grid"),
    (["--grid", "N="], "no values"),
    (["--grid", "Q=1,2"], "unknown key"),
    (["--grid", "N=4,0"], "must be ≥ 1"),
    (["--grid", "N=4,x"], "integer"),
    (["--grid", "N=2,3", "--grid", "N=4"], "given twice"),
    (["--grid", "N=2,3", "--set", "N=4"], "also fixed"),
    (["--grid", "profile=quick,standard"], "one profile"),
    (["--grid", "seed=1,2"], "--seeds"),
    (["--grid", "N=3,3"], "given twice"),
    (["--grid", "N=1..200", "--seeds", "0..99"], "more than the limit"),
    (["--grid", "N=2", "--seeds", "0..3", "--set", "seed=1"], "seed given twice"),
    (["--grid", "N=2", "--seeds", "5..1"], "empty range"),
    (["--grid", "etas=0.1,0.2;-1"], "must be ≥ 0"),
    (["--grid", "N=2", "--workers", "2"], "--workers"),
    (["--grid", "N=2", "--scheduler", "tcp://127.0.0.1:1"], "--executor dask"),
    (["--grid", "N=2", "--constant", "nothing"], "predicts no such constant"),
    (["--grid", "N=2", "--executor", "dask", "--scheduler", "tcp://127.0.0.1:1", "--workers",
      "2"], "its own"),
    (["--grid", "N=2", "--grid", "D=1", "--constant", "loss"], "one grid key"),
])
def test_bad_grids_are_refused_before_anything_runs(example, tmp_path, capsys, argv, words):
    out = tmp_path / "out"
    code, stdout, err = _cli(capsys, "sweep", CLAIM, *argv, "--out", str(out), "--quiet")
    assert code == 2
    assert stdout == ""
    assert err.count("\n") == 1 and err.startswith("icltheory: error:"), err
    assert words in err, err
    assert not out.exists()


def test_out_must_be_a_directory(example, tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    code, _, err = _cli(capsys, "sweep", CLAIM, "--grid", "N=2", "--out", str(f), "--quiet")
    assert code == 2 and "not a folder" in err and f.read_text() == "x"


def test_any_executor_object(example):
    """The API takes any concurrent.futures.Executor (here a thread pool)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        res = run_sweep(CLAIM, {"N": [2, 3, 4]}, profile="quick", executor=pool)
    local = run_sweep(CLAIM, {"N": [2, 3, 4]}, profile="quick")
    assert [_same_numbers(r.result) for r in res] == [_same_numbers(r.result) for r in local]


def test_a_value_invalid_in_one_cell_only_is_refused(example):
    """Every cell's setting is built before anything runs, cross-field checks included."""
    plan = plan_sweep(CLAIM, {"N": ["2", "4"]}, profile="quick")
    assert [c.values for c in plan.cells] == [{"N": 2}, {"N": 4}]
    with pytest.raises(BadInput, match="--grid P: must be ≥ 100, got 50"):
        plan_sweep(CLAIM, {"P": [1000, 50]})
    from icltheory.core import all_claims

    merged = next((c for c in all_claims() if c.id == "linattn.merged.fixed-points"), None)
    if merged is None or "lambdas" not in merged.setting_type.keys():
        pytest.skip("no built-in claim with a list whose length is another key")
    n = len(merged.setting().lambdas)
    with pytest.raises(BadInput, match=f"grid cell D={n + 1}: setting 'lambdas'"):
        plan_sweep(merged, {"D": [n, n + 1]})


# ----------------------------------------------------------------------------- same numbers


def _individual_checks(capsys, rows) -> dict[tuple, dict]:
    """``icltheory check --json`` at each row's setting."""
    out = {}
    for r in rows:
        code, text, _ = _cli(capsys, "check", CLAIM, "--set", f"N={r.cell['N']}",
                             f"D={r.cell['D']}", "--seed", str(r.seed), "--profile", "quick",
                             "--json")
        assert code in (0, 1, 3)
        (v,) = json.loads(text)
        out[(r.cell["N"], r.cell["D"], r.seed)] = v
    return out


@pytest.mark.parametrize("executor", ["local", "processes",
                                      pytest.param("dask", marks=needs_dask)])
@pytest.mark.slow
def test_sweep_equals_individual_checks(example, tmp_path, capsys, executor):
    """12 runs, cell for cell the same verdicts and numbers as `icltheory check` runs."""
    res = run_sweep(CLAIM, {"N": [5, 10, 20], "D": [1, 3]}, seeds=[0, 1], profile="quick",
                    executor=executor, workers=2 if executor != "local" else None,
                    out=tmp_path)
    assert len(res) == 12 and res.computed == 12 and res.reused == 0
    singles = _individual_checks(capsys, res.rows)
    for r in res.rows:
        assert _same_numbers(r.result) == _same_numbers(singles[(r.cell["N"], r.cell["D"],
                                                                 r.seed)])
    assert {r.verdict for r in res.rows} == {"holds"}
    # the store holds each run once, the same as the rows
    keys, stored = records(tmp_path)
    assert keys == ["N", "D"] and len(stored) == 12
    assert [_same_numbers(r.result) for r in stored] == [_same_numbers(r.result) for r in res]


@pytest.mark.slow
@needs_dask
def test_dask_at_a_scheduler_address(example):
    """--scheduler: the sweep runs on an existing cluster (here a LocalCluster on 127.0.0.1)."""
    import logging

    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, host="127.0.0.1",
                      dashboard_address=":0", silence_logs=logging.ERROR) as cluster:
        res = run_sweep(CLAIM, {"N": [2, 3]}, profile="quick", executor="dask",
                        scheduler=cluster.scheduler_address)
    local = run_sweep(CLAIM, {"N": [2, 3]}, profile="quick")
    assert [_same_numbers(r.result) for r in res] == [_same_numbers(r.result) for r in local]


@pytest.mark.slow
def test_unreachable_scheduler_is_bad_input(example, tmp_path, capsys):
    if not _has_dask():
        pytest.skip("Dask distributed is not installed")
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        code, _, err = _cli(capsys, "sweep", CLAIM, "--grid", "N=2", "--executor", "dask",
                            "--scheduler", "tcp://127.0.0.1:9", "--out", str(tmp_path / "o"),
                            "--quiet")
    assert code == 2 and "cannot connect" in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_dask_absent_is_one_line(example, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    code, _, err = _cli(capsys, "sweep", CLAIM, "--grid", "N=2", "--executor", "dask",
                        "--out", str(tmp_path / "o"), "--quiet")
    assert code == 2 and "pip install" in err and not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------- resumable


_DRIVER = """
import sys, time
sys.path.insert(0, {examples!r})
from icl_example_claims import CLAIMS, experiments
from icltheory.core import register
register(CLAIMS[0])
# slow enough to be killed mid-sweep, without spending CPU: every run first sleeps (its numbers
# are unchanged: the uninterrupted comparison run does not sleep)
_sample = experiments.sample_features
def _slow(*args, **kw):
    time.sleep({pause!r})
    return _sample(*args, **kw)
experiments.sample_features = _slow
from icltheory._cli import main
sys.exit(main(sys.argv[1:]))
"""
#: seconds each run of the killed sweep sleeps
_PAUSE = 0.4
# 12 runs (3 context lengths × 2 dimensions × 2 seeds) of 20000 sequences each
_SLOW = ["--grid", "N=2,3,4", "--grid", "D=1,2", "--seeds", "0,1", "--set", "P=20000",
         "--profile", "quick", "--quiet"]


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


@pytest.mark.slow
def test_kill_9_then_rerun_completes_with_each_run_once(example, tmp_path):
    driver = tmp_path / "driver.py"
    driver.write_text(_DRIVER.format(examples=str(EXAMPLES), pause=_PAUSE))
    cmd = [sys.executable, str(driver), "sweep", CLAIM, *_SLOW, "--out", str(tmp_path / "b")]
    plan = plan_sweep(CLAIM, {"N": [2, 3, 4], "D": [1, 2]}, seeds=[0, 1],
                      base={"P": 20000}, profile="quick")
    store = tmp_path / "b" / plan.name / STORE_NAME
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while _lines(store) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the sweep ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = _lines(store)
    assert 3 <= killed_at < 12
    # rerun the same command: only the missing runs are computed
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"({12 - killed_at} computed, {killed_at} from the store)" in done.stdout
    lines = store.read_text().splitlines()
    keys = [json.loads(ln)["key"] for ln in lines]
    assert len(lines) == 12 and sorted(keys) == sorted(c.key for c in plan.cells)
    # equal to an uninterrupted run
    whole = run_sweep(plan.claim, {"N": [2, 3, 4], "D": [1, 2]}, seeds=[0, 1],
                      base={"P": 20000}, profile="quick", out=tmp_path / "a")
    _, resumed = records(tmp_path / "b")
    assert [_same_numbers(r.result) for r in resumed] == [_same_numbers(r.result)
                                                          for r in whole]
    # the page and the figure are the same bytes
    for name in ("phase.png", "report.md", "sweep.json"):
        assert (tmp_path / "a" / plan.name / name).read_bytes() == \
            (tmp_path / "b" / plan.name / name).read_bytes(), name


@pytest.mark.slow
def test_a_torn_last_record_is_cut_and_recomputed(example, tmp_path):
    grid = {"N": [2, 3, 4]}
    first = run_sweep(CLAIM, grid, profile="quick", out=tmp_path)
    store = first.directory / STORE_NAME
    lines = store.read_bytes().splitlines(keepends=True)
    # as if the writer had been killed in the middle of the last record
    store.write_bytes(b"".join(lines[:2]) + lines[2][: len(lines[2]) // 2])
    assert len(records(tmp_path)[1]) == 2  # a reader ignores the torn tail
    again = run_sweep(CLAIM, grid, profile="quick", out=tmp_path)
    assert again.computed == 1 and again.reused == 2 and again.repaired_bytes > 0
    assert store.read_bytes().count(b"\n") == 3
    assert [_same_numbers(r.result) for r in again] == [_same_numbers(r.result) for r in first]


@pytest.mark.slow
def test_a_rerun_of_a_finished_sweep_computes_nothing(example, tmp_path, capsys):
    args = ["sweep", CLAIM, "--grid", "N=2,3", "--profile", "quick", "--out", str(tmp_path),
            "--quiet"]
    assert _cli(capsys, *args)[0] == 0
    code, out, _ = _cli(capsys, *args)
    assert code == 0 and "(0 computed, 2 from the store)" in out


def test_one_writer_at_a_time(tmp_path):
    with Store(tmp_path):
        with pytest.raises(BadInput, match="another sweep"):
            with Store(tmp_path):
                pass


def test_a_hand_edited_store_is_refused(example, tmp_path):
    res = run_sweep(CLAIM, {"N": [2, 3]}, profile="quick", out=tmp_path)
    store = res.directory / STORE_NAME
    recs = [json.loads(ln) for ln in store.read_text().splitlines()]
    recs[0]["result"]["setting"]["N"] = 7  # no longer the run its key names
    store.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.raises(BadInput, match="does not match"):
        run_sweep(CLAIM, {"N": [2, 3]}, profile="quick", out=tmp_path)


# ----------------------------------------------------------------------------- outputs


def test_a_sweep_reports_fails_honestly(example, tmp_path, capsys):
    """With the example's theory-side planted error (c computed with N + 1), small contexts
    fail and the page lists the failed checks; the exit status is 0 (every cell ran: the
    verdicts are in the files), and the counts per verdict are printed."""
    error = next(e for e in example.planted_errors if e.side == "theory")
    with itest.planted(error):
        code, out, _ = _cli(capsys, "sweep", CLAIM, "--grid", "N=2,3,4", "--profile", "quick",
                            "--out", str(tmp_path), "--quiet")
    assert code == 0 and "fails" in out.splitlines()[0]
    _, rows = records(tmp_path)
    assert rows[0].verdict == "fails" and rows[0].worst_margin > 1
    page = next(tmp_path.glob("sweep-*/report.md")).read_text()
    assert "## Runs that do not hold" in page and "failed:" in page


def test_summary_csv_and_dataframe(example, tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    code, out, _ = _cli(capsys, "sweep", CLAIM, "--grid", "N=5,10", "--grid", "D=1,3",
                        "--seeds", "0..1", "--profile", "quick", "--out", str(tmp_path),
                        "--quiet")
    assert code == 0
    assert "8 runs (8 computed, 0 from the store); 8 holds" in out
    assert out.splitlines()[1].split()[:2] == ["N", "D"]
    df = load(tmp_path)
    assert isinstance(df, pd.DataFrame) and len(df) == 8
    assert list(df.columns[:5]) == ["index", "N", "D", "seed", "verdict"]
    assert (df["verdict"] == "holds").all() and (df["worst_margin"] <= 1).all()
    assert "predicted:eta_star" in df.columns and "margin:loss_star" in df.columns
    csv = pd.read_csv(next(tmp_path.glob("sweep-*/results.csv")))
    assert csv["worst_margin"].tolist() == df["worst_margin"].tolist()


def test_load_without_pandas_says_how_to_install(example, tmp_path, monkeypatch):
    run_sweep(CLAIM, {"N": [2]}, profile="quick", out=tmp_path)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"pip install 'icltheory\[pandas\]'"):
        load(tmp_path)


@pytest.mark.slow
def test_phase_figure_is_deterministic(example):
    two = run_sweep(CLAIM, {"N": [2, 3], "D": [1, 2]}, seeds=[0, 1], profile="quick")
    one = run_sweep(CLAIM, {"N": [2, 3, 5]}, profile="quick")
    for res in (two, one):
        a = phase_png(res.rows, res.keys, title="t")
        b = phase_png(list(res.rows), list(res.keys), title="t")
        assert a == b and a.startswith(b"\x89PNG")


def test_the_index_gets_one_sweeps_section(example, tmp_path):
    """The index (and its HTML page, where the folder has one) is rendered again with one
    Sweeps section; a later report run keeps the section."""
    from icltheory.report import write_index

    write_index(tmp_path)
    (tmp_path / "index.html").write_text("<html></html>")
    run_sweep(CLAIM, {"N": [2, 3]}, profile="quick", out=tmp_path)
    run_sweep(CLAIM, {"D": [1, 2]}, profile="quick", out=tmp_path)
    update_index(tmp_path)  # idempotent
    for _ in range(2):
        text = (tmp_path / "index.md").read_text()
        assert text.count("## Sweeps") == 1 and text.count("/report.md)") == 2
        assert text.startswith("# icltheory reports")
        assert "2 holds, 0 fails, 0 inconclusive" in text
        page = (tmp_path / "index.html").read_text()
        assert page.count("/report.md") == 2 and "Sweeps" in page
        write_index(tmp_path)  # what every report run does


def test_no_index_no_link(example, tmp_path):
    run_sweep(CLAIM, {"N": [2]}, profile="quick", out=tmp_path)
    assert not (tmp_path / "index.md").exists()


def test_margins():
    close = {"tolerance": {"rtol": 0.1, "atol": 0.0}, "predicted": [1.0, 2.0],
             "measured": [1.05, 2.4], "passed": False}
    assert check_margin(close) == pytest.approx(2.0)
    z = {"tolerance": {"critical": [-3.0, 4.0], "stderr": 0.5}, "predicted": 1.0,
         "measured": 2.0, "passed": True}
    assert check_margin(z) == pytest.approx(0.5)
    z["measured"] = 0.0
    assert check_margin(z) == pytest.approx(2.0 / 3.0)
    bound = {"tolerance": {"certified_lower": 3.0, "proved_upper": 5.0}, "predicted": 6.0,
             "measured": 3.0, "passed": True}
    assert check_margin(bound) == pytest.approx(0.5)
    assert check_margin({"tolerance": "exact", "passed": True}) is None
    assert check_margin({"tolerance": "exact", "passed": False}) == float("inf")
