"""The disk cache of derived theory (``icltheory.core.derived``): a value is derived once and then
read back; a corrupt, truncated, foreign or stale entry is derived again, never trusted; code
patched in memory never reads or writes it; concurrent processes agree; ``icltheory cache``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from icltheory.core import _cache

ROOT = Path(__file__).resolve().parents[1]

PKG = """\
from icltheory.core import derived

CALLS = []
FACTOR = 3


def helper(n):
    return FACTOR * n


@derived
def table(n, tag="x"):
    CALLS.append((n, tag))
    return {"n": n, "tag": tag, "value": helper(n)}


@derived
def unpicklable():
    return lambda: 1
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache folder and a fresh package ``cachepkg_<n>`` with derived functions."""
    monkeypatch.setenv("ICLTHEORY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ICLTHEORY_CACHE", raising=False)
    monkeypatch.setitem(_cache._off, "cleared", False)
    monkeypatch.setitem(_cache._off, "scopes", 0)
    name = f"cachepkg_{abs(hash(str(tmp_path))) % 10**8}"
    pkg = tmp_path / "src" / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(PKG, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    import importlib

    mod = importlib.import_module(name)
    _cache._source_hash.cache_clear()
    yield mod
    _cache._clear_memory()
    _cache._source_hash.cache_clear()
    for k in [k for k in _cache._under_patch if k[1].startswith(name)]:
        del _cache._under_patch[k]
    sys.modules.pop(name, None)


def _entries(mod=None):
    folder = Path(os.environ["ICLTHEORY_CACHE_DIR"]) / "derived"
    return sorted(folder.glob("*.pkl")) if folder.is_dir() else []


def _fresh_call(mod, *args):
    """Call as a new process would: nothing memoised in memory."""
    _cache._clear_memory()
    return mod.table(*args)


def test_derived_once_then_read_from_disk(cache):
    v = cache.table(4)
    assert v == {"n": 4, "tag": "x", "value": 12} and len(cache.CALLS) == 1
    assert len(_entries()) == 1
    assert _fresh_call(cache, 4) == v and len(cache.CALLS) == 1  # read back, not derived
    assert _fresh_call(cache, 5)["value"] == 15 and len(cache.CALLS) == 2  # another key
    assert cache.table(4, "y")["tag"] == "y" and len(cache.CALLS) == 3
    assert len(_entries()) == 3


@pytest.mark.parametrize("damage", ["flip a payload byte", "truncate", "empty", "garbage",
                                    "another key's entry", "hash of another payload",
                                    "payload that does not unpickle"])
def test_a_damaged_entry_is_derived_again(cache, damage):
    v = cache.table(7)
    (path,) = _entries()
    data = path.read_bytes()
    magic, key, digest, payload = data.split(b"\n", 3)
    if damage == "flip a payload byte":
        new = data[:-5] + bytes([data[-5] ^ 0x01]) + data[-4:]
    elif damage == "truncate":
        new = data[: len(data) - 10]
    elif damage == "empty":
        new = b""
    elif damage == "garbage":
        new = os.urandom(len(data))
    elif damage == "another key's entry":  # a (hypothetical) file-name collision or a stale file
        other = json.loads(key)
        other["args"] = "(8,)"
        new = b"\n".join([magic, json.dumps(other, sort_keys=True).encode(), digest, payload])
    elif damage == "hash of another payload":
        import hashlib
        import pickle

        forged = pickle.dumps({"n": 7, "tag": "x", "value": -1})
        new = b"\n".join([magic, key, hashlib.sha256(payload).hexdigest().encode(), forged])
    else:
        import hashlib

        junk = b"\x80\x05not a pickle"
        new = b"\n".join([magic, key, hashlib.sha256(junk).hexdigest().encode(), junk])
    path.write_bytes(new)
    assert _fresh_call(cache, 7) == v and len(cache.CALLS) == 2  # derived again, not trusted
    assert path.read_bytes() == data  # and the entry rewritten whole
    assert _fresh_call(cache, 7) == v and len(cache.CALLS) == 2


def test_changed_source_or_versions_make_a_new_entry(cache, monkeypatch):
    cache.table(2)
    (old,) = _entries()
    # the package's source changes (here: a comment) -> a different key, the old entry unused
    init = Path(cache.__file__)
    init.write_text(init.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    _cache._source_hash.cache_clear()
    assert _fresh_call(cache, 2)["value"] == 6 and len(cache.CALLS) == 2
    assert len(_entries()) == 2 and old.exists()
    # another SymPy (or Python, NumPy, mpmath, flint) version -> a different key again
    real = _cache._versions()
    monkeypatch.setattr(_cache, "_versions",
                        lambda: tuple((k, v + "-other" if k == "sympy" else v) for k, v in real))
    assert _fresh_call(cache, 2)["value"] == 6 and len(cache.CALLS) == 3
    assert len(_entries()) == 3


def test_patched_code_never_reads_or_writes_the_cache(cache):
    assert cache.table(3)["value"] == 9
    with _cache.rederive(), pytest.MonkeyPatch.context() as mp:
        mp.setattr(cache, "FACTOR", 100)  # a planted error in a helper's constant
        assert not _cache.disk_cache_enabled()
        assert cache.table(3)["value"] == 300  # derived with the patch, not read from disk
        assert cache.table(11)["value"] == 1100
    assert _fresh_call(cache, 3)["value"] == 9  # nothing from inside the block survived
    assert len(_entries()) == 1  # and nothing was written inside it
    n = len(cache.CALLS)
    assert _fresh_call(cache, 11)["value"] == 33 and len(cache.CALLS) == n + 1


def test_a_named_patch_reuses_what_was_derived_under_it(cache):
    """rederive(key): values derived under a patch are reused by a later block with the same key
    (the same patched code), never by a block with another key, none, or outside any block."""
    def under(key, factor, n=3):
        with _cache.rederive(key=key), pytest.MonkeyPatch.context() as mp:
            mp.setattr(cache, "FACTOR", factor)
            return cache.table(n)["value"]

    assert under(("plant", 1), 100) == 300 and len(cache.CALLS) == 1
    assert under(("plant", 1), 100) == 300 and len(cache.CALLS) == 1  # reused
    assert under(("plant", 2), 7) == 21 and len(cache.CALLS) == 2  # another patch: derived
    assert under(None, 100) == 300 and len(cache.CALLS) == 3  # no key: derived
    assert under(("plant", 1), 100, n=4) == 400 and len(cache.CALLS) == 4  # other arguments
    with _cache.rederive(key=("plant", 1)), _cache.rederive(key=("plant", 1)):
        cache.table(3)  # nested blocks: two patches at once, no reuse
    assert len(cache.CALLS) == 5
    assert _fresh_call(cache, 3)["value"] == 9  # outside: the real code's value


def test_the_planted_error_harness_works_inside_rederive(monkeypatch):
    import icltheory.testing as itest
    from icltheory.core import PlantedError

    seen = []
    monkeypatch.setattr(_cache, "_clear_memory", lambda: seen.append("clear"))
    error = PlantedError("theory", "a no-op", "icltheory.core._cache:_MAGIC", lambda x: x)
    with itest.planted(error):
        assert not _cache.disk_cache_enabled()
    assert seen == ["clear", "clear"]
    assert _cache._off["scopes"] == 0 and _cache._scope_keys == []


def test_clear_caches_turns_the_disk_cache_off_for_the_process(cache):
    from icltheory.core import clear_caches

    cache.table(1)
    clear_caches()  # what code that patches the theory calls
    assert not _cache.disk_cache_enabled()
    assert cache.table(1)["value"] == 3 and len(cache.CALLS) == 2  # derived, not read


def test_switched_off_or_unwritable_folder_still_derives(cache, monkeypatch, tmp_path):
    monkeypatch.setenv("ICLTHEORY_CACHE", "off")
    assert cache.table(6)["value"] == 18 and not _entries()
    assert _cache.cache_info()["why_off"] == "ICLTHEORY_CACHE=off"
    monkeypatch.delenv("ICLTHEORY_CACHE")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ICLTHEORY_CACHE_DIR", str(blocker / "cache"))
    assert _fresh_call(cache, 6)["value"] == 18 and len(cache.CALLS) == 2  # no error, derived
    assert _fresh_call(cache, 6)["value"] == 18 and len(cache.CALLS) == 3


def test_a_value_that_does_not_pickle_is_an_error(cache):
    with pytest.raises(TypeError, match="must pickle"):
        cache.unpicklable()


def test_the_default_folder_is_the_users_cache_not_the_repository(monkeypatch):
    monkeypatch.delenv("ICLTHEORY_CACHE_DIR", raising=False)
    folder = _cache.cache_dir().resolve()
    assert ROOT.resolve() not in (folder, *folder.parents)
    assert folder.name == "icltheory" or folder.parent.name == "icltheory"
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/else")
    if sys.platform.startswith("linux"):
        assert _cache.cache_dir() == Path("/somewhere/else/icltheory")


_WORKER = """\
import sys, importlib
sys.path.insert(0, sys.argv[1])
from icltheory.core import _cache
mod = importlib.import_module(sys.argv[2])
for i in range(int(sys.argv[3])):
    _cache._clear_memory()
    v = mod.table(9)
    assert v == {"n": 9, "tag": "x", "value": 27}, v
print(len(mod.CALLS))
"""


@pytest.mark.slow
def test_concurrent_processes_agree(cache, tmp_path):
    """Four processes read and write the same entry at once (each forgets its memory between
    calls, so each call reads the disk or derives and writes): every value is right and one
    complete entry is left, no temporary file."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(tmp_path / "src"), cache.__name__,
                               "25"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    assert sum(int(o[0]) for o in outs) >= 1  # someone derived; the rest read
    files = list((Path(os.environ["ICLTHEORY_CACHE_DIR"]) / "derived").iterdir())
    assert len(files) == 1 and not files[0].name.startswith(".tmp-")
    assert _fresh_call(cache, 9)["value"] == 27 and cache.CALLS == []  # read, complete


def test_cache_command(cache, capsys):
    from icltheory._cli import main

    cache.table(1)
    cache.table(2)
    assert main(["cache", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["entries"] == 2 and info["enabled"] and info["bytes"] > 0
    assert info["folder"].startswith(os.environ["ICLTHEORY_CACHE_DIR"])
    assert main(["cache", "info"]) == 0
    assert "entries: 2" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "deleted 2" in capsys.readouterr().out
    assert not _entries()
    assert main(["cache", "bogus"]) == 2
    assert _fresh_call(cache, 1)["value"] == 3 and len(cache.CALLS) == 3  # derived again


@pytest.mark.slow
def test_cached_theory_gives_the_same_bytes(tmp_path):
    """For one claim per paper, the derivation and the predicted constants printed by a process
    that derives (and writes the cache) and by one that reads the cache are the same bytes."""
    env = {**os.environ, "ICLTHEORY_CACHE_DIR": str(tmp_path / "c"), "PYTHONPATH": str(ROOT)}
    claims = ["linattn.merged.sigmoid", "nonlinear.rescaling", "softmaxreg.vectorization",
              "catgd.equivariance"]
    code = textwrap.dedent("""\
        import sys
        from icltheory.core import get_claim
        from icltheory.report import dumps
        for cid in sys.argv[1:]:
            c = get_claim(cid)
            s = c.setting({"profile": "quick"})
            print(c.derive(s).to_markdown(level=1))
            print(dumps(c.constants(s)))
        """)

    def run(**extra):
        r = subprocess.run([sys.executable, "-c", code, *claims], env={**env, **extra},
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        return r.stdout

    written = run()
    assert len(list((tmp_path / "c" / "derived").glob("*.pkl"))) >= 4
    read = run()
    assert written == read


def test_numpy_lambdify_namespace_makes_the_same_functions():
    """``lambdify_modules("numpy")`` (NumPy's module objects, no ``from numpy import *``) gives
    lambdify the namespace the string "numpy" gives it: the same generated code and the same
    values, for elementary functions, piecewise ones, the imaginary unit, Heaviside and a
    matrix product's entry."""
    import inspect

    import numpy as np
    import sympy as sp

    from icltheory.symbolic import lambdify_modules

    x, y = sp.symbols("x y", real=True)
    A = sp.MatrixSymbol("A", 2, 2)
    exprs = [1 + x / 3, sp.exp(x) * sp.sqrt(y) + sp.Abs(x - y), sp.log(1 + x**2) - sp.atan(y),
             sp.Piecewise((x, x > y), (y**2, True)), sp.Max(x, y) - sp.Min(x, 2 * y), sp.Heaviside(x - y),
             sp.re((x + sp.I * y) ** 2), sp.tanh(x) / (1 + sp.cosh(y))]
    rng = np.random.default_rng(0)
    xs, ys = rng.normal(size=50), np.abs(rng.normal(size=50)) + 0.1
    for e in exprs:
        f_str, f_mod = sp.lambdify((x, y), e, "numpy"), sp.lambdify((x, y), e, lambdify_modules("numpy"))
        assert inspect.getsource(f_str) == inspect.getsource(f_mod)
        assert np.array_equal(np.asarray(f_str(xs, ys)), np.asarray(f_mod(xs, ys)))
    M = rng.normal(size=(2, 2))
    prod_str, prod_mod = (sp.lambdify(A, (A * A.T)[0, 1] + A[1, 1], m) for m in ("numpy", lambdify_modules("numpy")))
    assert inspect.getsource(prod_str) == inspect.getsource(prod_mod) and prod_str(M) == prod_mod(M)
    assert lambdify_modules("mpmath") == "mpmath"


def test_cache_clear_refuses_an_empty_folder_variable(cache, capsys, monkeypatch):
    """Everywhere else an empty ICLTHEORY_CACHE_DIR means the default folder; clearing does not
    guess (a variable set to nothing is more likely a mistake) and deletes nothing."""
    from icltheory._cli import main

    cache.table(1)
    folder = os.environ["ICLTHEORY_CACHE_DIR"]
    monkeypatch.setenv("ICLTHEORY_CACHE_DIR", "  ")
    assert main(["cache", "clear"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    monkeypatch.setenv("ICLTHEORY_CACHE_DIR", folder)
    assert _entries()
