"""Numbers as people type them: decimals judged to the digits typed, fractions, expressions;
strict TOML types; conflicting profile/seed flags."""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

from icltheory.core import Float, Floats, Int, Setting, SettingError, load_toml
from icltheory.core._numbers import NumberError, parse_number
from icltheory.core._verdict import CheckContext, parse_prediction, typed_precision


@pytest.mark.parametrize("text, value, half, digits", [
    ("0.64058", 0.64058, 5e-6, 5),
    ("1.50e-3", 1.5e-3, 5e-6, 3),
    ("0.000120", 1.2e-4, 5e-7, 3),
    ("-1.75", -1.75, 5e-3, 3),
    ("3.", 3.0, 0.5, 1),
    ("3", 3.0, 0.0, None),        # an integer is exact
    ("1e-3", 1e-3, 0.0, None),    # an integer mantissa with an exponent is exact
    ("221/345", 221 / 345, 0.0, None),
    ("sqrt(2)/3", 2 ** 0.5 / 3, 0.0, None),
    ("13/4*0.5^2", 0.8125, 0.0, None),
    ("-(1/3)", -1 / 3, 0.0, None),
])
def test_parse_number(text, value, half, digits):
    t = parse_number(text)
    assert t.value == pytest.approx(value, rel=1e-15, abs=0)
    assert t.half_unit == pytest.approx(half, rel=1e-12, abs=0)
    assert t.digits == digits


@pytest.mark.parametrize("text", ["", "٣١", "1/0", "9^9^9", "inf", "nan", "x+1", "1e999",
                                  "1e-400", "exp(1e9)", "(1", "1,2", "0x10", "1_0"])
def test_parse_number_refuses(text):
    with pytest.raises(NumberError):
        parse_number(text)


def test_fraction_is_exactly_rounded():
    assert parse_number("221/345").value == float(Fraction(221, 345))
    assert parse_number("1/3").value == 1 / 3


def test_predictions_remember_the_digits_typed():
    assert parse_prediction("k", "1, 221/345, 0.3774") == [1.0, 221 / 345, 0.3774]
    assert parse_prediction("k", "[0.5]") == [0.5]
    assert parse_prediction("k", "0.5") == 0.5
    prec = typed_precision({"a": "1,221/345,0.3774", "b": "0.25", "c": "1/4", "d": 0.1234})
    assert prec == {"a": ([0.0, 0.0, 5e-5], 4), "b": (5e-3, 2)}


def _ctx(predicted, typed):
    return CheckContext(predicted=predicted, profile="quick", seed=0,
                        typed=typed_precision(typed))


def test_close_judges_to_the_digits_typed_never_narrower():
    true = [1.0, 221 / 345, 27601 / 73140]
    typed = "1,0.64057971,0.37737216"
    ctx = _ctx({"k": parse_prediction("k", typed)}, {"k": typed})
    c = ctx.close("eq", key="k", measured=true, atol=1e-12, why="exact")
    assert c.passed and "8 significant digits" in c.why
    assert c.tolerance["typed_half_unit"] == [0.0, 5e-9, 5e-9]
    # one digit off in the last place typed fails
    wrong = "1,0.64057972,0.37737216"
    ctx = _ctx({"k": parse_prediction("k", wrong)}, {"k": wrong})
    assert ctx.close("eq", key="k", measured=true, atol=1e-12, why="exact").passed is False
    # the check's own tolerance wins where it is wider than the typed digits
    ctx = _ctx({"k": 0.64}, {"k": "0.64"})
    c = ctx.close("eq", key="k", measured=0.66, rtol=0.05, why="5 %")
    assert c.passed and c.tolerance["typed_half_unit"] == pytest.approx(5e-3)
    # numbers given as numbers (not text) are exact
    ctx = _ctx({"k": 0.6406}, {"k": 0.6406})
    assert ctx.close("eq", key="k", measured=221 / 345, atol=1e-12, why="x").passed is False


def test_typed_digits_reach_repeated_predictions_and_mean_tests():
    """A check comparing one typed constant repeated per seed (``judges=``) and a Monte Carlo
    test of it are judged to the digits typed too; a composite of several constants is not."""
    true = 91 / 660
    ok, off = "0.1379", "0.1378"
    for text, passed in ((ok, True), (off, False)):
        ctx = _ctx({"k": parse_prediction("k", text)}, {"k": text})
        c = ctx.close("per seed", judges=("k",), predicted=[ctx.predicted["k"]] * 3,
                      measured=[true] * 3, atol=1e-12, why="exact")
        assert c.passed is passed, c
    ctx = _ctx({"k": parse_prediction("k", ok), "j": 1.0}, {"k": ok})
    c = ctx.close("composite", judges=("k", "j"), predicted=[ctx.predicted["k"]] * 2,
                  measured=[true] * 2, atol=1e-12, why="exact")
    assert c.passed is False and "typed_half_unit" not in c.tolerance
    # a sample whose mean is 91/660 to 1e-6: the typed 0.1379 holds, 0.1375 fails
    rng = np.random.default_rng(0)
    x = true + 1e-4 * rng.standard_normal(100_000)
    for text, passed in ((ok, True), ("0.1375", False)):
        ctx = _ctx({"k": parse_prediction("k", text)}, {"k": text})
        c = ctx.ztest("mean", samples=x, key="k", alpha=1e-3, why="i.i.d.")
        assert c.passed is passed, c
    # given as a number (not text) the value is exact: the mean test refutes 0.1379
    ctx = _ctx({"k": 0.1379}, {"k": 0.1379})
    assert ctx.ztest("mean", samples=x, key="k", alpha=1e-3, why="i.i.d.").passed is False


@dataclass(frozen=True, kw_only=True)
class _S(Setting):
    n: int = Int(3, min=1, max=100, doc="a size")
    x: float = Float(0.5, positive=True, doc="a number")
    lam: tuple[float, ...] = Floats((1.0,), positive=True, doc="numbers")


def test_settings_take_fractions_and_expressions():
    s = _S.parse({"x": "1/64", "lam": "1/2,sqrt(2)/4,0.25"})
    assert s.x == 1 / 64 and s.lam == (0.5, 2 ** 0.5 / 4, 0.25)
    assert _S.parse({"x": Fraction(1, 3)}).x == 1 / 3
    with pytest.raises(SettingError, match="x"):
        _S.parse({"x": "1/0"})
    with pytest.raises(SettingError, match="x"):
        _S.parse({"x": "-1/2"})  # the range still applies


def _toml(tmp_path, text):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return load_toml(p)


@pytest.mark.parametrize("text, key", [
    ('n = "4"', "n"), ("n = 4.0", "n"), ("n = true", "n"),
    ('lam = "0.4,0.3"', "lam"), ('x = "0.4"', "x"), ("x = [0.4]", "x"), ('lam = ["0.4"]', "lam"),
])
def test_toml_types_are_strict(tmp_path, text, key):
    with pytest.raises(SettingError) as exc:
        _S.parse(_toml(tmp_path, text))
    assert exc.value.key == key


def test_toml_takes_native_numbers_and_quoted_expressions(tmp_path):
    s = _S.parse(_toml(tmp_path, 'n = 4\nx = "1/64"\nlam = [0.5, "1/4", 1]'))
    assert (s.n, s.x, s.lam) == (4, 1 / 64, (0.5, 0.25, 1.0))


def test_cli_conflicting_profile_and_seed(tmp_path, capsys):
    from icltheory._cli import main

    for argv in (["--profile", "quick", "--set", "profile=bogus"],
                 ["--seed", "1", "--set", "seed=2"]):
        code = main(["check", "linattn.merged.sigmoid", "--dry-run", *argv])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and "given twice" in err[0], err
    # the same value twice is not a conflict
    assert main(["check", "linattn.merged.sigmoid", "--dry-run", "--json", "--profile", "quick",
                 "--set", "profile=quick"]) in (0, 3)
    json.loads(capsys.readouterr().out)
