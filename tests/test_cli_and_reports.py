"""The CLI contract and the report writer."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from icltheory._cli import main
from icltheory.core import Plot, Series, all_claims
from icltheory.report import atomic_write_text, render_png

CLAIM = "linattn.merged.sigmoid"


def _run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_list_json(capsys):
    code, out, _ = _run(["list", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and {d["id"] for d in data} == {c.id for c in all_claims()}
    for d in data:
        assert d["id"] == d["id"].lower() and "." in d["id"]
        assert d["statement"] and d["source"] and d["settings"]


def test_check_json_contract(capsys):
    code, out, _ = _run(["check", CLAIM, "--set", "D=4", "N=31", "w_init=0.001", "--json",
                         "--profile", "quick"], capsys)
    (v,) = json.loads(out)
    assert code == 0 and v["verdict"] == "holds"
    for key in ("claim", "verdict", "setting", "predicted", "measured", "checks", "evidence",
                "seed", "runtime_s", "versions"):
        assert key in v
    assert v["setting"]["N"] == 31 and v["setting"]["H"] == 8  # defaults resolved
    for c in v["checks"]:
        assert {"name", "predicted", "measured", "tolerance", "passed"} <= set(c)


def test_constants_done_when(capsys):
    code, out, _ = _run(["constants", CLAIM, "--set", "D=4", "N=31", "w_init=0.001", "--json"], capsys)
    c = json.loads(out)
    assert code == 0 and c["claim"] == CLAIM
    assert c["constants"]["sigma_inf"] == pytest.approx(31 / 36, abs=1e-15)
    assert c["constants"]["t_half"] == pytest.approx(3.5898, abs=5e-5)


def test_predict_wrong_value_fails(capsys):
    code, out, _ = _run(["check", CLAIM, "--profile", "quick", "--json",
                         "--predict", f"sigma_inf={32 / 37}"], capsys)  # N+1 in place of N
    (v,) = json.loads(out)
    assert code == 1 and v["verdict"] == "fails" and v["evidence"]["failed_checks"]


@pytest.mark.parametrize(
    "args",
    [["check", CLAIM, "--set", "D=-1"], ["check", CLAIM, "--set", "lambdas=0.5,-0.1"],
     ["check", CLAIM, "--set", "bogus=1"], ["check", "no.such.claim"],
     ["check", CLAIM, "--set", "N=0"], ["check", CLAIM, "--set", "D=4", "lambdas=1,1,1"],
     ["check", CLAIM, "--set", "w_init=-1"], ["check", CLAIM, "--set", "lambdas=nan,1,1,1"],
     ["check", CLAIM, "--predict", "nope=1"], ["check", CLAIM, "--predict", "t_half=abc"],
     ["check", CLAIM, "--profile", "huge"], ["constants", CLAIM, "--set", "D"],
     ["bogus-command"]],
)
def test_bad_input_exit_2_one_line(args, capsys):
    code, out, err = _run(args, capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("icltheory: error:")
    assert "Traceback" not in err


def test_malformed_toml_exit_2(tmp_path, capsys):
    p = tmp_path / "bad.toml"
    p.write_text("D = [4\n")
    code, _, err = _run(["check", CLAIM, "--config", str(p)], capsys)
    assert code == 2 and err.count("\n") == 1


def test_report_bad_input_writes_nothing(tmp_path, capsys):
    out = tmp_path / "r"
    code, _, _ = _run(["report", CLAIM, "--out", str(out), "--set", "bogus=1"], capsys)
    assert code == 2 and not out.exists()


def test_report_writes_md_json_figures_index(tmp_path, capsys):
    out = tmp_path / "r"
    code, _, _ = _run(["report", CLAIM, "--out", str(out), "--profile", "quick"], capsys)
    assert code == 0
    md = (out / f"{CLAIM}.md").read_text()
    data = json.loads((out / f"{CLAIM}.json").read_text())
    assert "```math" in md and data["verdict"] == "holds" and data["figures"]
    for f in data["figures"]:
        assert (out / f).read_bytes()[:4] == b"\x89PNG"
    index = (out / "index.md").read_text()
    assert f"[`{CLAIM}`]({CLAIM}.md)" in index and "not run" in index
    assert not [p for p in out.rglob("*.tmp")]


def test_figures_are_deterministic():
    p = Plot("t", "x", "y", series=[Series([0, 1, 2], [1, 0.5, 0.2], "a")], hlines=[(0.3, "h")])
    assert render_png(p) == render_png(p)


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "f.txt"
    atomic_write_text(target, "old")

    class Boom(str):
        def encode(self, *a, **k):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        atomic_write_text(target, Boom("new"))
    assert target.read_text() == "old" and len(list(tmp_path.iterdir())) == 1


def test_python_dash_m_entry_point():
    r = subprocess.run([sys.executable, "-m", "icltheory", "check", "nope.nope"],
                       capture_output=True, text=True, env={**os.environ})
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_derive_md_and_json(capsys):
    code, out, _ = _run(["derive", CLAIM], capsys)
    assert code == 0 and "```math" in out and "verified" in out
    code, out, _ = _run(["derive", CLAIM, "--format", "json"], capsys)
    d = json.loads(out)
    assert code == 0 and d["summary"]["refuted"] == 0 and d["steps"]
    assert all(s["tier"] for s in d["steps"])


def test_multiple_claims_share_set_keys(capsys):
    code, out, _ = _run(["check", CLAIM, "linattn.merged.equivalence", "--set", "N=12", "--json",
                         "--profile", "quick"], capsys)
    vs = json.loads(out)
    assert code == 0 and [v["setting"]["N"] for v in vs] == [12, 12]
