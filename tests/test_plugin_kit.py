"""The plugin kit: a third-party claim package (examples/minimal_plugin, one module) installs
with pip, registers through the entry point, and passes the claim contract run by its own
pytest file; the contract catches a claim that breaks it."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from icltheory.core import Claim, Float, PlantedError, Prediction, Setting
from icltheory.testing import check_contract

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "examples" / "minimal_plugin"


def test_the_minimal_plugin_is_small():
    lines = (PLUGIN / "icl_minimal" / "__init__.py").read_text().splitlines()
    assert len(lines) <= 60


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--target", str(target), str(PLUGIN)], capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0 and "Could not find a version" in r.stderr + r.stdout:
        pytest.skip("no package index to build the plugin with")
    assert r.returncode == 0, r.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(target), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return env


@pytest.mark.slow
def test_installed_plugin_is_listed_and_checked(installed):
    out = subprocess.run([sys.executable, "-m", "icltheory", "list"], env=installed,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "minimal.second-moment" in out.stdout, out.stderr
    chk = subprocess.run([sys.executable, "-m", "icltheory", "check", "minimal.second-moment",
                          "--profile", "quick", "--summary"], env=installed,
                         capture_output=True, text=True, timeout=300)
    assert chk.returncode == 0 and chk.stdout.startswith("HOLDS"), chk.stdout + chk.stderr


@pytest.mark.slow
def test_installed_plugin_passes_its_contract_test(installed, tmp_path):
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "no:randomly", str(PLUGIN / "tests")], env=installed,
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:]
    assert "6 passed" in r.stdout, r.stdout[-1000:]


# -------------------------------------------------------------- the contract catches a broken claim

def _identity(x):
    return x


@dataclass(frozen=True, kw_only=True)
class _S(Setting):
    x: float = Float(2.0, positive=True, max=10.0, doc="a number")


class _Broken(Claim):
    id = "example.broken"
    title = "x = x (a measurement-side planted error that changes nothing)"
    source = "a test"
    statement = "x = x"
    setting_type = _S
    predictions = {"x": Prediction("x itself")}
    planted_errors = (
        PlantedError("theory", "x + 1", f"{__name__}:_identity", lambda f: (lambda x: x + 1)),
        PlantedError("measurement", "nothing at all", f"{__name__}:_unused",
                     lambda f: (lambda x: x)),
    )

    def constants(self, s):
        return {"x": _identity(s.x)}

    def measure(self, s, run):
        return {"x": s.x}

    def judge(self, s, predicted, m, ctx):
        ctx.close("x", key="x", measured=m["x"], atol=1e-12, why="exact")


def _unused(x):
    return x


def test_the_contract_catches_a_planted_error_that_changes_nothing():
    items = check_contract(_Broken(), raise_on_failure=False)
    by_name = {it.name: it for it in items}
    assert by_name["defaults"].passed and by_name["planted:theory:_identity"].passed
    bad = by_name["planted:measurement:_unused"]
    assert bad.passed is False and "gave holds" in bad.detail
    with pytest.raises(AssertionError, match="planted:measurement"):
        check_contract(_Broken())


# -------------------------------------------------------------- recorders a plugin author uses

def test_exact_and_condition_recorders():
    from icltheory.core import CheckContext

    c = CheckContext(predicted={"n": 3, "r": "1/3", "v": [1, 2]}, profile="quick", seed=0)
    assert c.exact("count", key="n", measured=3, why="integers").passed is True
    assert c.exact("count", key="n", measured=4, why="integers").passed is False
    assert c.exact("count", key="n", measured=3.0000001, why="integers").passed is False
    assert c.exact("rational", key="r", measured="1/3", why="SymPy").passed is True
    assert c.exact("list", key="v", measured=[1, 2], why="x").passed is True
    assert c.exact("list", key="v", measured=[1, 2, 3], why="x").passed is False
    assert c.exact("flag", predicted=True, judges=("n",), measured=1, why="x").passed is False
    # condition: the claim decides; key= and predicted= together are allowed
    assert c.condition("order", True, key="n", predicted="3 drops", measured=3, why="x").passed
    with pytest.raises(ValueError, match="use exact"):
        c.close("x", key="n", measured=3, atol=0, why="x")
    with pytest.raises(KeyError, match="not a predicted constant"):
        c.close("x", key="bogus", measured=3, atol=1, why="x")
    with pytest.raises(TypeError, match="judges="):
        c.close("x", judges="n", predicted=3, measured=3, atol=1, why="x")
