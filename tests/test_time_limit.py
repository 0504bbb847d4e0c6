"""``--time-limit SECONDS`` on check, report and sweep: runs not finished by then are
inconclusive naming the limit; nothing waits long past it; a sweep does not store them."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from icltheory._cli import main
from icltheory.core._deadline import ENV, MARK

#: a claim whose default check takes several seconds (flows at four ranks)
SLOW = "linattn.separate.rank"
#: what a stopped run may take beyond its limit (the next tick or the alarm, one process)
SLACK = 4.0


@pytest.fixture(autouse=True)
def _no_leftover_limit():
    yield
    assert ENV not in os.environ, "a time limit outlived its command"


def _run(capsys, *argv):
    t0 = time.monotonic()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err, time.monotonic() - t0


@pytest.mark.parametrize("bad", ["0", "-1", "abc", "1e3", "inf", "٣"])
def test_bad_time_limit_is_bad_input(capsys, bad):
    code, out, err, _ = _run(capsys, "check", SLOW, "--time-limit", bad)
    assert code == 2 and err.count("\n") == 1 and "--time-limit" in err, err


def test_check_stops_at_the_limit(capsys):
    """Wherever the limit strikes (resolving the setting derives theory): exit 3, one line or
    a verdict naming the limit, soon after it."""
    code, out, err, took = _run(capsys, "check", SLOW, "--json", "--quiet", "--time-limit", "0.5")
    assert code == 3 and MARK in out + err, (out, err)
    assert took < 0.5 + SLACK, took


def test_a_running_check_stops_at_the_limit(capsys):
    from icltheory.core import get_claim

    get_claim(SLOW).setting({})  # the setting's derived defaults: cached in this process
    code, out, err, took = _run(capsys, "check", SLOW, "--json", "--quiet", "--time-limit", "1")
    assert code == 3
    rec = json.loads(out)
    rec = rec[0] if isinstance(rec, list) else rec
    assert rec["verdict"] == "inconclusive"
    assert any(r.startswith(MARK) for r in rec["reasons"]), rec["reasons"]
    assert took < 1 + SLACK, took


def test_a_generous_limit_changes_nothing(capsys):
    code, out, _, _ = _run(capsys, "check", "linattn.merged.fixed-points", "--profile", "quick",
                           "--json", "--quiet", "--time-limit", "600")
    rec = json.loads(out)
    rec = rec[0] if isinstance(rec, list) else rec
    assert code == 0 and rec["verdict"] == "holds"


def test_sweep_keeps_stopped_runs_out_of_its_store(capsys, tmp_path):
    args = ["sweep", SLOW, "--grid", "R=1,2", "--profile", "quick", "--out", str(tmp_path),
            "--quiet"]
    code, out, err, took = _run(capsys, *args, "--time-limit", "0.5")
    assert code == 3 and "time limit reached" in err, (out, err)
    assert took < 0.5 + 2 * SLACK
    store = next(tmp_path.glob("sweep-*/results.jsonl"))
    assert store.read_bytes().count(b"\n") == 0  # nothing finished, nothing stored


def test_an_alarm_python_drops_is_raised_again(monkeypatch):
    """The hard stop's alarm, raised where Python cannot propagate it (a garbage-collector
    callback or a finaliser reports it as unraisable and goes on — here: code that swallows
    it), fires again half a second later, so code that never ticks still stops; leaving the
    block disarms it."""
    import signal

    from icltheory.core._deadline import TimeLimitReached, clear_time_limit, hard_stop, set_time_limit

    set_time_limit(0.05)
    swallowed = []
    t0 = time.monotonic()
    try:
        with pytest.raises(TimeLimitReached):
            with hard_stop():
                try:
                    while time.monotonic() - t0 < 5.0:
                        pass
                except TimeLimitReached:  # dropped, as Python drops it in a gc callback
                    swallowed.append(time.monotonic() - t0)
                while time.monotonic() - t0 < 5.0:  # a loop that never ticks
                    pass
    finally:
        clear_time_limit()
    assert swallowed and time.monotonic() - t0 < 2.0
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.parametrize("where", ["gc callback", "weakref callback in a collection"])
def test_an_alarm_inside_a_collection_waits_until_it_returns(monkeypatch, where):
    """An alarm that arrives while a garbage-collector callback, or a weak reference's callback
    during a collection, runs would be dropped there (Python reports it as unraisable): it
    waits until that code has returned and then stops the code that never ticks at once, with
    nothing reported as unraisable."""
    import gc
    import weakref

    from icltheory.core._deadline import TimeLimitReached, clear_time_limit, hard_stop, set_time_limit

    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u))
    done = []

    def slow(*_):  # the alarm lands in here
        if not done:
            t = time.monotonic()
            while time.monotonic() - t < 0.3:
                pass
            done.append(time.monotonic())

    class Node:
        pass

    keep = []
    if where == "gc callback":
        gc.callbacks.append(slow)
    set_time_limit(0.05)
    t0 = time.monotonic()
    try:
        with pytest.raises(TimeLimitReached):
            with hard_stop():
                if where != "gc callback":  # a cycle only the collector frees, watched by a weakref
                    a, b = Node(), Node()
                    a.b, b.a = b, a
                    keep.append(weakref.ref(a, slow))
                    del a, b
                gc.collect()
                while time.monotonic() - t0 < 5.0:  # a loop that never ticks
                    pass
    finally:
        if where == "gc callback":
            gc.callbacks.remove(slow)
        clear_time_limit()
    stopped = time.monotonic()
    # nothing dropped: an alarm raised inside would have been reported as unraisable (and only
    # the half-second re-fire would then have stopped the loop)
    assert done and not unraisable
    assert stopped - done[0] < 2.0
