"""Python API calls with arguments of the wrong type raise ``TypeError`` or ``BadInput`` with
a message naming the argument, never an ``AttributeError`` from deep inside."""

from __future__ import annotations

import pytest

import icltheory.core as core
import icltheory.sweep as sw
import icltheory.testing as itest
from icltheory.core import BadInput, get_claim, run_check

c = get_claim("linattn.merged.fixed-points")
s = c.setting({"profile": "quick"})

CALLS = {
 "get_claim(123)": lambda: get_claim(123),
 "get_claim(None)": lambda: get_claim(None),
 "run_check(c, s, predict=[1])": lambda: run_check(c, s, predict=[1]),
 "run_check(c, s, predict={'x':1})": lambda: run_check(c, s, predict={'x':1}),
 "run_check(c, s, profile=3)": lambda: run_check(c, s, profile=3),
 "run_check(c, s, progress=3)": lambda: run_check(c, s, progress=3),
 "c.setting('N=3')": lambda: c.setting("N=3"),
 "c.setting([1])": lambda: c.setting([1]),
 "c.setting({1:2})": lambda: c.setting({1: 2}),
 "c.setting({'N':[1]})": lambda: c.setting({"N": [1]}),
 "c.setting({'N':None})": lambda: c.setting({"N": None}),
 "c.setting({'lambdas':{'a':1}})": lambda: c.setting({"lambdas": {"a": 1}}),
 "c.setting({'lambdas':[None]})": lambda: c.setting({"lambdas": [None]}),
 "c.setting({'lambdas':'a,b'})": lambda: c.setting({"lambdas": "a,b"}),
 "c.setting({'profile':1})": lambda: c.setting({"profile": 1}),
 "c.constants({})": lambda: c.constants({}),
 "c.constants(None)": lambda: c.constants(None),
 "itest.check(123, {})": lambda: itest.check(123, {}),
 "itest.check(c, 5)": lambda: itest.check(c, 5),
 "itest.settings(5)": lambda: itest.settings(5),
 "itest.settings(c, bogus=1)": lambda: itest.settings(c, bogus=1),
 "itest.assert_holds(c, 'x')": lambda: itest.assert_holds(c, "x"),
 "itest.planted(5)": lambda: itest.planted(5).__enter__(),
 "sw.run_sweep(c, 5)": lambda: sw.run_sweep(c, 5),
 "sw.run_sweep(c, {'N':5})": lambda: sw.run_sweep(c, {"N": 5}),
 "sw.run_sweep(c, {'N':[2]}, seeds=5.5)": lambda: sw.run_sweep(c, {"N": [2]}, seeds=5.5),
 "sw.run_sweep(c, {'N':[2]}, out=5)": lambda: sw.run_sweep(c, {"N": [2]}, out=5),
 "sw.load(5)": lambda: sw.load(5),
 "s.replace(bogus=1)": lambda: s.replace(bogus=1),
 "s.with_profile(5)": lambda: s.with_profile(5),
 "core.resolve_claims(5)": lambda: core.resolve_claims(5),
 "core.all_claims(5)": lambda: core.all_claims(5),
 "core.load_toml(5)": lambda: core.load_toml(5),
 "core.parse_assignments([3])": lambda: core.parse_assignments([3]),
 "report.render_claim(5)": lambda: __import__("icltheory.report", fromlist=["x"]).render_claim(5),
 "c.derive({})": lambda: c.derive({}),
 "c.estimate(None)": lambda: c.estimate(None),
 "core.judge_claim(c, s, {})": lambda: core.judge_claim(c, s, {}),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_wrong_types_are_named(name):
    with pytest.raises((TypeError, BadInput)) as exc:
        CALLS[name]()
    assert not isinstance(exc.value, AttributeError)
    msg = str(exc.value)
    assert len(msg) > 20 and "\n" not in msg, msg


def test_friendly_forms():
    """A claim id for a claim, a mapping for a setting, one string for a list of one."""
    assert get_claim(c) is c
    assert core.resolve_claims("linattn.merged.fixed-points") == [c]
    assert core.parse_assignments("N=3") == {"N": "3"}
    a = run_check("linattn.merged.fixed-points", {"profile": "quick"})
    b = run_check(c, s)
    assert a.verdict == b.verdict == "holds" and a.measured == b.measured


def test_predict_values_are_finite_numbers_or_lists_of_them():
    """A --predict value through the API must be a finite number (NumPy scalars included) or a
    list of them; anything else is bad input, not a verdict."""
    import numpy as np

    from icltheory.core import BadInput, run_check

    for bad in (object(), None, True, float("nan"), [1.0, "x"]):
        with pytest.raises(BadInput):
            run_check("linattn.merged.sigmoid", {"profile": "quick"}, predict={"c": bad})
    assert run_check("linattn.merged.sigmoid", {"profile": "quick"}, predict={"c": np.float64(1.0)}).verdict == "fails"
