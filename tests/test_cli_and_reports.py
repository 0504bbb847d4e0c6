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


# ------------------------------------------------------------------ the friendlier command line


@pytest.fixture
def fake_claims():
    """Register the test-only claims for one test (also seen by forked report workers)."""
    from _fake_claims import FAKE_CLAIMS

    from icltheory.core import _registry, register

    for c in FAKE_CLAIMS:
        register(c)
    yield {c.id: c for c in FAKE_CLAIMS}
    for c in FAKE_CLAIMS:
        _registry._EXTRA.pop(c.id, None)
    _registry._load.cache_clear()


def test_bare_command_prints_usage(capsys):
    code, out, err = _run([], capsys)
    assert code == 2 and "usage: icltheory" in out and "describe" in out and "exit status" in out
    assert err.count("\n") == 1 and "no command" in err


def test_version(capsys):
    import icltheory

    code, out, _ = _run(["--version"], capsys)
    assert code == 0 and out.strip() == f"icltheory {icltheory.__version__}"


@pytest.mark.parametrize("args,hint", [
    (["chek", CLAIM], "did you mean check?"),
    (["check", CLAIM, "--sett", "D=3"], "did you mean --set"),
    (["check", "linattn.merged.sigmod"], "did you mean linattn.merged.sigmoid"),
    (["check", CLAIM, "--set", "w_int=0.1"], "did you mean w_init?"),
    # an option of other commands only: say which take it, not "did you mean" the option itself
    (["describe", CLAIM, "--set", "D=3"], "'describe' takes no --set (an option of check, constants"),
    (["check", CLAIM, "--bogus"], "unknown option '--bogus' for 'check' (see icltheory check --help)"),
    (["--dry-run", "check", CLAIM], "--dry-run is an option of 'check': write it after the command"),
])
def test_did_you_mean(args, hint, capsys):
    code, _, err = _run(args, capsys)
    assert code == 2 and hint in err and err.count("\n") == 1


def test_end_of_options_marker_is_no_argument(capsys):
    """``--`` ends the options: it is not itself an unknown option, and what follows it is
    read as arguments (a command that takes none names the first)."""
    code, out, _ = _run(["list", "--"], capsys)
    assert code == 0 and CLAIM in out
    code, _, err = _run(["list", "--", "x"], capsys)
    assert code == 2 and "unexpected argument 'x'" in err and err.count("\n") == 1
    code, out, _ = _run(["describe", "--", CLAIM], capsys)
    assert code == 0 and CLAIM in out


def test_typo_suggests_a_few_not_all(capsys):
    code, _, err = _run(["check", "linattn.zzz"], capsys)
    assert code == 2 and err.count("linattn.") <= 4  # the name itself + at most 3 suggestions


def test_check_help_points_to_describe(capsys):
    code, out, _ = _run(["check", "--help"], capsys)
    assert code == 0 and "icltheory describe CLAIM" in out and "--quiet" in out


def test_describe_text_and_json(fake_claims, capsys):
    code, out, _ = _run(["describe", "testonly.square.mean"], capsys)
    assert code == 0
    for text in ("E[x²] = s² for x ~ N(0, s²)", "a textbook identity", r"\mathbb E[x^2]=s^2",
                 "standard deviation", "default: 1.5", "second_moment", "E[x²], the second moment",
                 "formula: s^2", "reported only", "Backends", "numpy",
                 "icltheory check testonly.square.mean --set"):
        assert text in out, text
    example = out.split("Example:\n", 1)[1].splitlines()[0].split()
    assert _run(example[1:], capsys)[0] == 0  # the example command runs and holds
    code, out, _ = _run(["describe", "testonly.square.mean", "--json"], capsys)
    d = json.loads(out)
    assert code == 0 and d["predictions"]["second_moment"]["formula"] == "s^2"
    assert {r["key"] for r in d["settings"]} == {"seed", "profile", "s", "n"}
    assert d["example"].startswith("icltheory check testonly.square.mean")


def test_describe_every_registered_claim(capsys):
    for c in all_claims():
        code, out, _ = _run(["describe", c.id], capsys)
        assert code == 0 and c.id in out and "Example:" in out


def test_constants_carry_their_meaning(fake_claims, capsys):
    code, out, _ = _run(["constants", "testonly.square.mean", "--set", "s=2"], capsys)
    assert code == 0 and "second_moment = 4  # E[x²], the second moment" in out
    code, out, _ = _run(["constants", "testonly.square.mean", "--json"], capsys)
    d = json.loads(out)
    assert d["constants"]["second_moment"] == 2.25
    assert d["meanings"]["s"]["informational"] is True


def test_dry_run_validates_and_runs_nothing(fake_claims, capsys, monkeypatch):
    import icltheory._cli_commands as cmds

    monkeypatch.setattr(cmds, "run_check", lambda *a, **k: pytest.fail("a check ran"))
    code, out, _ = _run(["check", "testonly.square.mean", "--set", "n=500", "--dry-run"], capsys)
    assert code == 0 and "would run: about 5e+03 operations" in out
    code, _, err = _run(["check", "testonly.square.mean", "--set", "n=5", "--dry-run"], capsys)
    assert code == 2 and err.count("\n") == 1


# ------------------------------------------------------------------ the error boundary


def test_internal_error_in_a_check_is_exit_4_after_the_verdict(fake_claims, capsys):
    code, out, err = _run(["check", "testonly.crash.check"], capsys)
    assert code == 4 and "INCONCLUSIVE" in out and "deliberate crash inside the check" in out
    assert err.count("\n") == 1 and err.startswith("icltheory: internal error: ")
    assert "Traceback" not in err + out and "--debug" in err
    code, _, err = _run(["check", "testonly.crash.check", "--debug"], capsys)
    assert code == 4 and "RuntimeError" in err and 'File "' in err  # the kept traceback


def test_exception_outside_a_check_is_exit_4(fake_claims, capsys):
    code, out, err = _run(["check", "testonly.crash.constants"], capsys)
    assert code == 4 and err.count("\n") == 1 and "KeyError" in err and "Traceback" not in err
    code, _, err = _run(["--debug", "check", "testonly.crash.constants"], capsys)
    assert code == 4 and "Traceback (most recent call last)" in err


def test_report_out_is_checked_before_any_check(tmp_path, capsys, monkeypatch):
    import icltheory.report._batch as batch

    monkeypatch.setattr(batch, "run_check", lambda *a, **k: pytest.fail("a check ran"))
    f = tmp_path / "a-file"
    f.write_text("keep me")
    for out in (f, f / "below", "/proc/no-such-folder"):
        code, _, err = _run(["report", CLAIM, "--out", str(out)], capsys)
        assert code == 2 and err.count("\n") == 1, err
    assert f.read_text() == "keep me" and sorted(tmp_path.iterdir()) == [f]


def test_report_with_a_crashing_claim_writes_the_others_and_exits_4(fake_claims, tmp_path,
                                                                    capsys):
    out = tmp_path / "r"
    code, stdout, err = _run(["report", "testonly.square.mean", "testonly.crash.constants",
                              "--out", str(out), "-j", "1"], capsys)
    assert code == 4 and "testonly.crash.constants" in err.splitlines()[-1]
    assert "Traceback" not in err
    assert (out / "testonly.square.mean.md").exists()
    # the crashing claim is reported honestly: inconclusive, naming the internal error
    crashed = json.loads((out / "testonly.crash.constants.json").read_text())
    assert crashed["verdict"] == "inconclusive" and "internal error" in crashed["internal_error"]
    from icltheory.report import verify

    assert verify(out) == []


# ------------------------------------------------------------------ reports


def _report_files(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.startswith("timing.")}


@pytest.mark.slow
def test_report_rerun_is_byte_identical_and_runtimes_live_apart(fake_claims, tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        assert _run(["report", "testonly.square.mean", CLAIM, "--profile", "quick", "--out",
                     str(out), "-j", "1", "--quiet"], capsys)[0] == 0
    fa, fb = _report_files(a), _report_files(b)
    assert fa == fb and "figures/testonly.square.mean-1.png" in fa
    for name, blob in fa.items():
        if name.endswith((".md", ".json")):
            assert b"runtime" not in blob, name
    timing = json.loads((a / "timing.json").read_text())["runtime_s"]
    assert set(timing) == {"testonly.square.mean", CLAIM}
    assert timing[CLAIM]["runtime_s"] > 0.01 and timing["testonly.square.mean"]["runtime_s"] >= 0
    assert f"`{CLAIM}` | {timing[CLAIM]['runtime_s']:.2f} |" in (a / "timing.md").read_text()


def test_index_merges_earlier_results_and_states_settings(fake_claims, tmp_path, capsys):
    out = tmp_path / "r"
    assert _run(["report", "testonly.square.mean", "--out", str(out), "--set", "s=0.75",
                 "--seed", "3", "--quiet"], capsys)[0] == 0
    assert _run(["report", CLAIM, "--out", str(out), "--profile", "quick", "--quiet"],
                capsys)[0] == 0
    index = (out / "index.md").read_text()
    row = next(line for line in index.splitlines() if "testonly.square.mean" in line)
    assert "✅ holds" in row and "s=0.75" in row and "seed=3" in row and "standard" in row
    row = next(line for line in index.splitlines() if f"`{CLAIM}`" in line)
    assert "✅ holds" in row and "| default | quick |" in row
    assert "not run" in index  # claims never reported into this folder
    md = (out / "testonly.square.mean.md").read_text()
    assert "non-default setting: seed=3, s=0.75" in md


def test_quiet_report_prints_no_progress(fake_claims, tmp_path, capsys):
    code, out, err = _run(["report", "testonly.square.mean", "--out", str(tmp_path / "r"),
                           "--quiet"], capsys)
    assert code == 0 and err == "" and "testonly.square.mean" in out
    code, out, err = _run(["report", "testonly.square.mean", "--out", str(tmp_path / "r")],
                          capsys)
    assert code == 0 and "[1/1] holds" in err


def test_report_progress_callback_for_python_callers(fake_claims, tmp_path):
    from icltheory.report import report_claims

    c = fake_claims["testonly.square.mean"]
    seen = []
    done = []
    report_claims([(c, c.setting())], tmp_path / "r", progress=lambda f, w: seen.append(f),
                  on_done=done.append)
    assert seen and seen[-1] >= 0.5 and all(0.0 <= f <= 1.0 for f in seen)
    assert [r.claim for r in done] == ["testonly.square.mean"]


# ------------------------------------------------------------------ the same arithmetic everywhere

_KERNELS = (
    "import json, os, threadpoolctl, numpy, scipy.linalg\n"
    "try:\n"
    "    from numpy._core._multiarray_umath import __cpu_dispatch__ as targets, __cpu_features__ as on\n"
    "except ImportError:  # NumPy 1.x\n"
    "    from numpy.core._multiarray_umath import __cpu_dispatch__ as targets, __cpu_features__ as on\n"
    "print(json.dumps({'blas': sorted({i.get('architecture') for i in threadpoolctl.threadpool_info()\n"
    "                                  if i.get('internal_api') == 'openblas'}),\n"
    "                  'simd': [t for t in targets if on.get(t)],\n"
    "                  'pinned': 'OPENBLAS_CORETYPE' in os.environ}))\n"
)


def _kernels(prelude: str, **env) -> dict:
    from icltheory._cli import PORTABLE_ARITHMETIC

    clean = {k: v for k, v in os.environ.items()
             if k not in PORTABLE_ARITHMETIC and k != "ICLTHEORY_NATIVE_ARITHMETIC"}
    out = subprocess.run([sys.executable, "-c", prelude + _KERNELS], capture_output=True, text=True,
                         env={**clean, **env}, timeout=120, check=True)
    return json.loads(out.stdout)


def test_the_arithmetic_is_pinned_to_the_avx2_level():
    """The command line (``_portable_arithmetic``, before NumPy is imported) runs OpenBLAS's
    Haswell kernels (NumPy's and SciPy's copies) and NumPy's loops without their AVX-512
    variants, so an AVX-512 machine computes the bytes an AVX2 machine does; this test session
    runs the same way (tests/conftest.py); ``ICLTHEORY_NATIVE_ARITHMETIC=1`` leaves the kernels
    to the libraries.  Skipped where the pin does not apply (not x86-64 Linux with AVX2 and FMA)."""
    from icltheory._cli import _has_avx2_fma

    if not _has_avx2_fma():
        pytest.skip("not an x86-64 Linux machine with AVX2 and FMA: the kernels are the libraries' choice")
    pin = "from icltheory._cli import _portable_arithmetic\n_portable_arithmetic()\n"
    pinned = _kernels(pin)
    assert pinned["pinned"] and pinned["blas"] == ["Haswell"], pinned
    assert not [t for t in pinned["simd"] if "AVX512" in t or t == "X86_V4"], pinned
    here = json.loads(subprocess.run([sys.executable, "-c", _KERNELS], capture_output=True, text=True,
                                     timeout=120, check=True).stdout)  # inherits this session's pin
    assert here["blas"] == pinned["blas"] and here["simd"] == pinned["simd"], (here, pinned)
    assert not _kernels(pin, ICLTHEORY_NATIVE_ARITHMETIC="1")["pinned"]


def test_freed_memory_is_kept_for_reuse_unless_the_user_tuned_malloc():
    """The command line's memory policy (``_keep_freed_memory``): on Linux with glibc, large
    temporaries freed and made again reuse the same memory (the process's minor page faults do
    not grow), where glibc's default returns it to the system and faults it in afresh; a user's
    own ``GLIBC_TUNABLES`` is left alone.  Skipped elsewhere."""
    import platform

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("not Linux with glibc: the C library's own policy is kept")
    probe = ("import resource, sys\n"
             "if sys.argv[1] == '1':\n"
             "    from icltheory._cli import _keep_freed_memory; _keep_freed_memory()\n"
             "import numpy as np\n"
             "def step():\n"  # three 8 MiB temporaries at once, then freed (a training step's pattern)
             "    a, b, c = np.ones(1 << 20), np.ones(1 << 20), np.ones(1 << 20)\n"
             "step()\n"  # once, so that both runs start alike
             "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
             "for _ in range(20):\n"
             "    step()\n"
             "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n")
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES" and not k.startswith("MALLOC_")}

    def faults(keep: str, **extra) -> int:
        out = subprocess.run([sys.executable, "-c", probe, keep], capture_output=True, text=True,
                             timeout=120, check=True, env={**env, **extra})
        return int(out.stdout)

    pages = 20 * 3 * (8 << 20) // 4096  # what 60 fresh 8 MiB arrays touch
    # measured here: 30000–40000 faults with glibc's default (its heap top trimmed between
    # steps), 0 with the memory kept
    assert faults("0") > pages // 10  # glibc's default: fresh pages again and again
    assert faults("1") < pages // 100  # kept: the same pages again
    # the user's own tuning wins: nothing is changed
    assert faults("1", GLIBC_TUNABLES="glibc.malloc.mmap_threshold=131072") > pages // 10


def test_a_key_that_only_some_named_claims_have_is_noted(capsys):
    """--set N=12 over two claims of which one has no N: both run, and one stderr line says
    which claim runs without the key (it was dropped silently)."""
    code, out, err = _run(["check", CLAIM, "softmaxreg.vectorization", "--set", "N=12", "--json",
                           "--profile", "quick"], capsys)
    vs = json.loads(out)
    assert code == 0 and vs[0]["setting"]["N"] == 12 and "N" not in vs[1]["setting"]
    assert err.count("note: N is not a key of softmaxreg.vectorization; those run without it") == 1


def test_bad_input_with_a_partial_key_is_still_one_line(capsys):
    """The partial-key note is said only once the input is known to be good: a bad --predict
    with such a key is one stderr line, exit 2."""
    code, _, err = _run(["check", CLAIM, "softmaxreg.vectorization", "--set", "N=12",
                         "--predict", "bogus=1", "--profile", "quick"], capsys)
    assert code == 2 and err.count("\n") == 1 and "note:" not in err, err
