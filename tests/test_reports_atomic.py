"""Hard edges of the report writer and the process: a report set is complete or absent after a
crash or SIGKILL at any point (and the next run cleans up), Ctrl-C is one line and exit 130,
``-j N`` writes the same bytes as ``-j 1``, and importing icltheory stays light."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import PROFILE_NAME

from icltheory._cli import main
from icltheory.report import _store, commit, recover, render_claim, verify

TESTS = Path(__file__).resolve().parent
REAL = "linattn.merged.sigmoid"  # a cheap real claim with figures


@pytest.fixture
def fake_claims():
    from _fake_claims import FAKE_CLAIMS

    from icltheory.core import _registry, register

    for c in FAKE_CLAIMS:
        register(c)
    yield {c.id: c for c in FAKE_CLAIMS}
    for c in FAKE_CLAIMS:
        _registry._EXTRA.pop(c.id, None)
    _registry._load.cache_clear()


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _claim_sets(files: dict[str, bytes]) -> dict[str, dict[str, bytes]]:
    """Each claim's report set (sidecar + the files it lists) from a snapshot."""
    sets = {}
    for name, blob in files.items():
        if "/" in name or not name.endswith(".json") or name.startswith("timing"):
            continue
        data = json.loads(blob)
        rels = [name, *data["report"]["files"]]
        sets[data["claim"]] = {r: files.get(r) for r in rels}
    return sets


# ------------------------------------------------------------------ crash at every step


class _Killed(BaseException):
    """Stands for SIGKILL: raised at the chosen step, and by every later file operation, so
    that no clean-up code can run (as after a real kill)."""


def _verdicts(claim, **raw):
    from icltheory.core import run_check

    return run_check(claim, claim.setting(raw))


def test_commit_killed_at_every_step_is_complete_or_absent(fake_claims, tmp_path, monkeypatch):
    sq = fake_claims["testonly.square.mean"]
    old = [render_claim(_verdicts(sq, s=1.5))]
    new = [render_claim(_verdicts(sq, s=0.75, seed=4))]
    ref_old, ref_new = tmp_path / "ref-old", tmp_path / "ref-new"
    commit(old, ref_old)
    commit(old, ref_new)
    commit(new, ref_new)
    snap_old, snap_new = _snapshot(ref_old), _snapshot(ref_new)
    assert _claim_sets(snap_old) != _claim_sets(snap_new)

    real = {"write": _store._write_file, "replace": os.replace, "rmtree": _store.shutil.rmtree,
            "unlink": Path.unlink}
    state = {"left": 0, "count": 0}

    def step(name):
        def op(*a, **k):
            state["count"] += 1
            if state["left"] is not None:
                if state["left"] <= 0:
                    raise _Killed(name)
                state["left"] -= 1
            return real[name](*a, **k)
        return op

    def patch():
        monkeypatch.setattr(_store, "_write_file", step("write"))
        monkeypatch.setattr(os, "replace", step("replace"))
        monkeypatch.setattr(_store.shutil, "rmtree", step("rmtree"))
        monkeypatch.setattr(Path, "unlink", step("unlink"))

    # count the steps of one commit
    probe = tmp_path / "probe"
    commit(old, probe)
    patch()
    state.update(left=None, count=0)
    commit(new, probe)
    total = state["count"]
    monkeypatch.undo()
    assert total >= 8

    for k in range(total + 1):
        out = tmp_path / f"k{k}"
        commit(old, out)
        patch()
        state.update(left=k, count=0)
        try:
            commit(new, out)
            finished = True
        except _Killed:
            finished = False
        monkeypatch.undo()
        assert finished == (k >= total), k
        files = _snapshot(out)
        pending = [p for p in verify(out) if "staging folder" in p]
        for name, blob in files.items():  # every file in place is a whole file of a run
            if ".staging-" not in name:
                assert blob in (snap_old.get(name), snap_new.get(name)), (k, name)
        committed = any("committed staging" in p and "uncommitted" not in p for p in pending)
        if not committed:  # outside the final renames: each set complete, nothing else amiss
            assert [p for p in verify(out) if "staging folder" not in p] == [], k
        recover(out)
        assert verify(out) == [], k
        after = _claim_sets(_snapshot(out))
        assert after in (_claim_sets(snap_old), _claim_sets(snap_new)), k
        assert _snapshot(out) == (snap_new if committed or finished or not pending
                                  and _claim_sets(files) == _claim_sets(snap_new)
                                  else snap_old), k


# ------------------------------------------------------------------ SIGKILL during a real run

_RUNNER = (  # the command line with only the light test claims registered
    "import sys; sys.path.insert(0, {tests!r});"
    "from importlib import metadata; metadata.entry_points = lambda **kw: [];"
    "from _fake_claims import FAKE_CLAIMS; from icltheory.core import register;"
    "[register(c) for c in FAKE_CLAIMS];"
    "print('ready', flush=True);"
    "from icltheory._cli import main; sys.exit(main(sys.argv[1:]))"
)


def _report_cmd(out: Path, seed: int) -> list[str]:
    return [sys.executable, "-c", _RUNNER.format(tests=str(TESTS)), "report",
            "testonly.square.mean", "testonly.square.again", "--seed", str(seed),
            "--out", str(out), "-j", "1", "--quiet"]


def _without_timing(snap: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in snap.items() if not k.startswith("timing.")}


@pytest.mark.slow
def test_sigkill_during_report_leaves_sets_complete_or_absent(tmp_path):
    ref_old, ref_new = tmp_path / "ref-old", tmp_path / "ref-new"
    subprocess.run(_report_cmd(ref_old, 1), check=True, capture_output=True)
    shutil_copy(ref_old, ref_new)
    t0 = time.monotonic()
    subprocess.run(_report_cmd(ref_new, 2), check=True, capture_output=True)
    span = time.monotonic() - t0
    snap_old, snap_new = _snapshot(ref_old), _snapshot(ref_new)
    sets_old, sets_new = _claim_sets(snap_old), _claim_sets(snap_new)
    rng = random.Random(20261201)
    kills = 8 if PROFILE_NAME == "thorough" else 3
    for i in range(kills):
        out = tmp_path / f"kill{i}"
        shutil_copy(ref_old, out)
        p = subprocess.Popen(_report_cmd(out, 2), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        assert p.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, span))
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.communicate()
        files = _snapshot(out)
        for name, blob in files.items():
            if ".staging-" not in name and not name.startswith("timing."):
                assert blob in (snap_old.get(name), snap_new.get(name)), (i, name)
        recover(out)
        assert verify(out) == [], i
        sets = _claim_sets(_snapshot(out))
        for cid in sets_old:
            assert sets[cid] in (sets_old[cid], sets_new[cid]), (i, cid)
        if i == kills - 1:  # the next run cleans up and gives the same bytes
            subprocess.run(_report_cmd(out, 2), check=True, capture_output=True)
            assert verify(out) == []
            assert _without_timing(_snapshot(out)) == _without_timing(snap_new)


def shutil_copy(src: Path, dst: Path) -> None:
    import shutil

    shutil.copytree(src, dst)


# ------------------------------------------------------------------ Ctrl-C


def _interrupt(argv: list[str], delay: float) -> tuple[int, str]:
    """Run ``icltheory ARGV`` as the console script does and send SIGINT ``delay`` seconds
    after ``icltheory._cli`` is imported (a few standard-library modules: the imports of NumPy,
    the claims and the papers all come later, inside ``entry()``; before that point only the
    interpreter's own start-up runs, which no program can guard)."""
    # a SIGINT that lands in this harness line itself, before entry() is entered, is not the
    # command line's to handle (its traceback has the harness frame only), nor one delivered on
    # entry()'s first instruction (the call's own start, before any of its code has run: the
    # traceback ends in entry's frame at its ``def`` line): the harness answers those as the
    # command line would; one raised anywhere later inside entry() propagates, and the test sees it
    code = (f"import sys\nfrom icltheory._cli import entry\nsys.argv = ['icltheory', *{argv!r}]\n"
            "try:\n    print('ready', flush=True); entry()\n"
            "except KeyboardInterrupt as e:\n"
            "    tb = e.__traceback__.tb_next\n"
            "    if tb is not None and (tb.tb_next is not None or tb.tb_frame.f_code is not entry.__code__\n"
            "                           or tb.tb_lineno != entry.__code__.co_firstlineno):\n"
            "        raise\n"
            "    sys.stderr.write('icltheory: interrupted\\n'); sys.exit(130)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "ready\n"
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    return p.returncode, err


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.001, 0.003, 0.005, 0.01, 0.02, 0.05, 0.1, 0.3, 1.0])
def test_ctrl_c_is_one_line_and_exit_130(delay):
    rc, err = _interrupt(["check", REAL, "--profile", "quick"], delay)
    assert "Traceback" not in err
    if rc != 0:  # unless it finished first
        assert rc == 130 and err == "icltheory: interrupted\n", (rc, err)


@pytest.mark.slow
def test_ctrl_c_during_a_parallel_report(tmp_path):
    out = tmp_path / "r"
    rc, err = _interrupt(["report", REAL, "linattn.merged.equivalence", "--profile", "quick",
                          "--out", str(out), "-j", "2", "--quiet"], 1.5)
    assert "Traceback" not in err
    if rc != 0:
        assert rc == 130 and err == "icltheory: interrupted\n", (rc, err)
    assert verify(out) == [] or not out.exists() or all("staging" in p for p in verify(out))
    recover(out)
    assert verify(out) == []


def test_ctrl_c_right_after_a_worker_is_forked_leaves_no_worker_behind(tmp_path):
    """A Ctrl-C landing between a worker's fork and the pool's record of it must not leave that
    worker running after the command exits (it would hold the terminal's pipes open for ever):
    the interrupt is sent by the parent right after each fork."""
    out = tmp_path / "r"
    code = ("import os, signal, sys\nfrom multiprocessing import popen_fork\n"
            "orig = popen_fork.Popen._launch\n"
            "def launch(self, obj):\n    orig(self, obj)\n    os.kill(os.getpid(), signal.SIGINT)\n"
            "popen_fork.Popen._launch = launch\nfrom icltheory._cli import entry\n"
            f"sys.argv = ['icltheory', 'report', {REAL!r}, 'linattn.merged.equivalence', '--profile', 'quick', "
            f"'--out', {str(out)!r}, '-j', '2', '--quiet']\nentry()\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        _, err = p.communicate(timeout=60)  # returns only once every holder of the pipes has exited
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail(f"a worker outlived the interrupted command (the command itself: {p.returncode})")
    assert p.returncode == 130 and err == "icltheory: interrupted\n", (p.returncode, err)
    recover(out)
    assert verify(out) == []


# ------------------------------------------------------------------ -j N


@pytest.mark.slow
def test_parallel_report_is_byte_identical_to_serial(fake_claims, tmp_path, capsys):
    claims = ["testonly.square.mean", REAL, "testonly.square.again"]
    a, b = tmp_path / "j1", tmp_path / "j2"
    assert main(["report", *claims, "--profile", "quick", "--out", str(a), "-j", "1",
                 "--quiet"]) == 0
    assert main(["report", *claims, "--profile", "quick", "--out", str(b), "-j", "2",
                 "--quiet"]) == 0
    capsys.readouterr()
    sa, sb = _without_timing(_snapshot(a)), _without_timing(_snapshot(b))
    assert sa == sb and len(sa) > 6


# ------------------------------------------------------------------ a light start

_HEAVY = ("sympy", "scipy", "matplotlib", "hypothesis", "flint", "mpmath", "tqdm")


def _loaded_after(code: str) -> list[str]:
    probe = (f"{code}\nimport sys\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & "
             f"{set(_HEAVY)!r}))")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       check=True)
    return json.loads(r.stdout.strip().splitlines()[-1].replace("'", '"'))


def test_import_icltheory_loads_nothing_heavy():
    assert _loaded_after("import icltheory") == []
    assert _loaded_after("import icltheory as it; it.get_claim; it.run_check; it.Verdict;"
                         "it.write_reports; import icltheory.core, icltheory.report,"
                         "icltheory.testing") == []


def test_help_and_cli_modules_load_nothing_heavy():
    code = ("from icltheory._cli import main\n"
            "import icltheory._cli_commands, icltheory._cli_describe\n"
            "assert main(['--help']) == 0 and main(['check', '--help']) == 0\n"
            "assert main(['report', '--help']) == 0\n")
    assert _loaded_after(code) == []


def test_list_loads_no_heavy_module_of_its_own():
    """`list` with the registry holding only light claims: whatever the CLI itself loads."""
    code = (f"import sys; sys.path.insert(0, {str(TESTS)!r})\n"
            "from importlib import metadata\n"
            "metadata.entry_points = lambda **kw: []\n"
            "from _fake_claims import FAKE_CLAIMS\n"
            "from icltheory.core import register\n"
            "[register(c) for c in FAKE_CLAIMS]\n"
            "from icltheory._cli import main\n"
            "assert main(['list']) == 0 and main(['list', '--json']) == 0\n"
            "assert main(['describe', 'testonly.square.mean']) == 0\n")
    assert _loaded_after(code) == []


def test_a_ctrl_c_landing_in_a_weakref_callback_prints_no_traceback():
    """Python only reports an exception raised in a weakref callback (importlib's module locks
    use them): a first Ctrl-C landing there says nothing and is recorded — also one raised by
    Python's own handler, before the command line's was installed — so the command still ends
    as interrupted; any other such exception is still reported by Python's own hook."""
    code = ("import sys, weakref\nfrom icltheory import _cli\nsys.unraisablehook = _cli._on_unraisable\n"
            "class A: pass\n"
            "def fire(exc):\n    a = A()\n    def cb(_r): raise exc\n    r = weakref.ref(a, cb)\n    del a\n"
            "assert not _cli._interrupted\nfire(KeyboardInterrupt())\n"
            "print('went on', _cli._interrupted, flush=True)\n"
            "fire(ValueError('other'))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout == "went on True\n", (p.stdout, p.stderr)
    assert "KeyboardInterrupt" not in p.stderr and "ValueError: other" in p.stderr, p.stderr


def test_ctrl_c_wrapped_by_set_name_is_still_one_line(monkeypatch, capsys):
    """A Ctrl-C during an import's class creation (before the handler is in place) reaches
    Python 3.11 as the cause of a RuntimeError from __set_name__ (seen at 1 ms: `platform`'s
    cached properties): still one line and exit 130."""
    from icltheory import _cli

    def interrupted():
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__ on 'cached_property' instance") from exc

    monkeypatch.setattr(_cli, "_one_blas_thread", interrupted)
    monkeypatch.setattr(_cli.signal, "signal", lambda *a: None)  # this process keeps its Ctrl-C
    monkeypatch.setattr(sys, "argv", ["icltheory", "list"])
    with pytest.raises(SystemExit) as e:
        _cli.entry()
    assert e.value.code == 130
    assert capsys.readouterr().err == "icltheory: interrupted\n"


def test_stopping_a_pool_waits_for_its_manager_thread():
    # Python 3.11's exit handler writes to the manager thread's wake-up pipe without a lock; if
    # that thread is still closing the pipe, the interrupted report printed an OSError traceback
    # at exit.  Stopping the pool must therefore leave its manager thread finished.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from icltheory.report._batch import _can_fork, _stop

    if not _can_fork() or sys.version_info >= (3, 14):
        pytest.skip("the pool is stopped by fork-free means here")
    pool = ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("fork"))
    futures = [pool.submit(time.sleep, 30) for _ in range(2)]
    manager = pool._executor_manager_thread
    assert manager is not None and manager.is_alive()
    _stop(pool)
    assert not manager.is_alive()
    assert all(f.done() for f in futures)


_RESULT_FD = -1


def _half_sent_result() -> None:
    """In a forked worker: the header of a 1000-byte result on the pool's result pipe, then
    nothing (a worker stopped while sending its result)."""
    import struct

    os.write(_RESULT_FD, struct.pack("!i", 1000))
    time.sleep(60)


def test_stopping_a_pool_ends_a_manager_thread_left_waiting_for_a_half_sent_result():
    # the manager thread blocks reading the rest of the message; this process still holds the
    # pipe's write end, so it never sees the end of file, and Python's exit would wait for that
    # thread for ever
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from icltheory.report._batch import _can_fork, _stop

    global _RESULT_FD
    if not _can_fork() or sys.version_info >= (3, 14):
        pytest.skip("the pool is stopped by fork-free means here")
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
    _RESULT_FD = pool._result_queue._writer.fileno()
    pool.submit(_half_sent_result)
    manager = pool._executor_manager_thread
    time.sleep(0.5)  # the header is read; the thread waits for the rest
    t0 = time.monotonic()
    _stop(pool)
    assert not manager.is_alive() and time.monotonic() - t0 < 5.0


@pytest.mark.parametrize("taken", ["softmaxreg.vectorization.json", "softmaxreg.vectorization.md"])
def test_a_report_file_name_taken_by_a_folder_is_bad_input_with_nothing_written(tmp_path, capsys, taken):
    (tmp_path / taken).mkdir()
    assert main(["report", "softmaxreg.vectorization", "--profile", "quick", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [taken]
