"""Memoised theory: in memory per process (``@cached``) and on disk once per machine
(``@derived``).

``@cached`` is ``functools.lru_cache`` registered for :func:`clear_caches`.  ``@derived`` adds a
disk cache for a paper's SymPy derivations, so that no process re-derives what another process
on the same machine already derived:

* **Key.** The function's qualified name and arguments (ints, floats, strings, booleans,
  ``None`` and tuples of them), a hash of the source of the package that defines the function
  and of ``icltheory`` itself (every ``.py`` file), and the Python, SymPy, mpmath, NumPy and
  python-flint versions.  Changing any of them makes a new entry; old ones are never read.
* **Integrity.** An entry holds its full key and the SHA-256 of its payload (a pickle); a file
  whose key or hash does not match, or that does not unpickle, is derived again and
  overwritten, never trusted.
* **Concurrency.** An entry is written to a temporary file in the same folder and renamed into
  place (atomic), so concurrent processes see either no entry or a complete one; two processes
  deriving at once both write the same value.
* **Location.** ``ICLTHEORY_CACHE_DIR`` if set, else the platform's user cache folder
  (``$XDG_CACHE_HOME/icltheory`` or ``~/.cache/icltheory`` on Linux, ``~/Library/Caches/icltheory``
  on macOS, ``%LOCALAPPDATA%\\icltheory\\Cache`` on Windows); entries live in its ``derived/``
  folder (created private to the user).  ``ICLTHEORY_CACHE=off`` turns the disk cache off; an
  unwritable folder leaves it off silently (the theory is then derived in memory, as before).
  ``icltheory cache info`` / ``icltheory cache clear`` show and empty it.
* **Patched code.** A planted error (or any monkeypatch) changes the code in memory, not its
  source, so the key cannot see it.  Code that patches the theory therefore works inside
  :func:`rederive` (the planted-error harness does), where memoised values are dropped on entry
  and exit and the disk cache is neither read nor written (a block given a key that names its
  patch reuses, in memory, what an earlier block with that key derived); and
  :func:`clear_caches` — what patching code called before — also turns the disk cache off for
  the rest of the process.

A derived value must pickle (SymPy expressions and :class:`~icltheory.core.Derivation` do;
a lambdified function does not: keep the expression, e.g. ``icltheory.symbolic.lowered``).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
import tempfile
from contextlib import contextmanager
from functools import lru_cache, wraps
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar, cast

__all__ = ["cached", "derived", "clear_caches", "rederive", "cache_dir", "cache_info",
           "cache_clear", "disk_cache_enabled"]

F = TypeVar("F", bound=Callable[..., Any])
_ALL: list[Any] = []

#: the first line of every entry; bump the number when the entry layout changes
_MAGIC = b"icltheory-derived 1\n"
_SUFFIX = ".pkl"
_TMP_PREFIX = ".tmp-"
#: reasons the disk cache is off in this process (a patch in progress, or clear_caches called)
_off = {"scopes": 0, "cleared": False}
_MISS = object()
#: the keys of the open :func:`rederive` blocks (innermost last) and what was derived under
#: each key (a key names one patch: the same key means the same patched code)
_scope_keys: list[Any] = []
_under_patch: dict[tuple[Any, str, str], Any] = {}
_UNDER_PATCH_MAX = 512


def cached(fn: F | None = None, *, maxsize: int | None = 64) -> Any:
    """``functools.lru_cache`` (arguments must be hashable) registered for :func:`clear_caches`."""

    def wrap(f: F) -> F:
        c = lru_cache(maxsize=maxsize)(f)
        _ALL.append(c)
        return cast(F, wraps(f)(c))

    return wrap(fn) if fn is not None else wrap


def derived(fn: F | None = None, *, maxsize: int | None = 64) -> Any:
    """Like :func:`cached`, and the value is also kept on disk, keyed by the source and the
    library versions (see the module docstring): derived once per machine.  Arguments must be
    ints, floats, strings, booleans, ``None`` or tuples of them; the value must pickle."""

    def wrap(f: F) -> F:
        def load_or_derive(*args: Any) -> Any:
            return _load_or_derive(f, args)

        c = lru_cache(maxsize=maxsize)(load_or_derive)
        _ALL.append(c)
        return cast(F, wraps(f)(c))

    return wrap(fn) if fn is not None else wrap


def _clear_memory() -> None:
    for c in _ALL:
        c.cache_clear()


def clear_caches() -> None:
    """Drop every value memoised with :func:`cached` or :func:`derived`.  Calling it says the
    code may have changed in memory (a patch), so the disk cache stays off for the rest of the
    process; :func:`rederive` is the scoped form."""
    _off["cleared"] = True
    _clear_memory()


@contextmanager
def rederive(key: Any = None) -> Iterator[None]:
    """A block that may patch the theory: memoised values are dropped on entry and on exit, and
    inside it nothing is read from or written to the disk cache.

    ``key`` (hashable) names the patch when the block installs one and only one, the same each
    time the key is given (the planted-error harness passes the planted error): ``@derived``
    values made inside such a block are kept in memory under the key, so another block with
    the same key — the same patched code — reuses them instead of deriving again."""
    _clear_memory()
    _off["scopes"] += 1
    _scope_keys.append(key)
    try:
        yield
    finally:
        _scope_keys.pop()
        _off["scopes"] -= 1
        _clear_memory()


# ----------------------------------------------------------------------------- where, and whether


def cache_dir() -> Path:
    """The cache folder (``ICLTHEORY_CACHE_DIR``, else the platform's user cache folder)."""
    env = os.environ.get("ICLTHEORY_CACHE_DIR", "").strip()
    if env:
        return Path(env).expanduser()
    home = Path.home()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / "icltheory" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "icltheory"
    return Path(os.environ.get("XDG_CACHE_HOME", "").strip() or home / ".cache") / "icltheory"


def _entries_dir() -> Path:
    return cache_dir() / "derived"


def _switched_off() -> bool:
    return os.environ.get("ICLTHEORY_CACHE", "").strip().lower() in ("0", "off", "no", "false")


def disk_cache_enabled() -> bool:
    """Whether ``@derived`` values are read from and written to disk in this process now."""
    return not (_switched_off() or _off["scopes"] or _off["cleared"])


# ----------------------------------------------------------------------------- keys


@lru_cache(maxsize=None)
def _source_hash(package: str) -> str:
    """SHA-256 over every ``.py`` file (relative path and bytes) of a top-level package (or
    the one file of a top-level module)."""
    mod = sys.modules.get(package)
    if mod is None:
        import importlib

        mod = importlib.import_module(package)
    h = hashlib.sha256()
    paths = list(getattr(mod, "__path__", []) or [])
    if paths:
        for root in sorted(paths):
            base = Path(root)
            for p in sorted(base.rglob("*.py")):
                if "__pycache__" in p.parts:
                    continue
                h.update(p.relative_to(base).as_posix().encode() + b"\0")
                h.update(p.read_bytes() + b"\0")
    elif getattr(mod, "__file__", None):
        h.update(Path(str(mod.__file__)).read_bytes())
    else:  # built in or made at run time: no source to key on
        h.update(f"no source: {package}".encode())
    return h.hexdigest()


@lru_cache(maxsize=1)
def _versions() -> tuple[tuple[str, str], ...]:
    import mpmath
    import numpy
    import sympy

    try:
        from importlib import metadata

        flint = metadata.version("python-flint")
    except Exception:  # not installed: the arb tier is unavailable either way
        flint = "absent"
    return (("python", sys.version), ("sympy", sympy.__version__), ("mpmath", mpmath.__version__),
            ("numpy", numpy.__version__), ("python-flint", flint))


_ARG_TYPES = (int, float, str, bool, type(None))


def _plain_args(args: Any) -> bool:
    if isinstance(args, tuple):
        return all(_plain_args(a) for a in args)
    return isinstance(args, _ARG_TYPES)


def _key(f: Callable[..., Any], args: tuple[Any, ...]) -> str:
    top = f.__module__.split(".")[0]
    sources = {p: _source_hash(p) for p in sorted({top, "icltheory"})}
    return json.dumps({"function": f"{f.__module__}.{f.__qualname__}", "args": repr(args),
                       "sources": sources, "versions": dict(_versions())},
                      sort_keys=True, ensure_ascii=True)


def _entry_path(key: str) -> Path:
    return _entries_dir() / (hashlib.sha256(key.encode()).hexdigest()[:40] + _SUFFIX)


# ----------------------------------------------------------------------------- read, write


def _read(path: Path, key: str) -> Any:
    """The value stored under ``key`` at ``path``, or ``_MISS`` (absent, for another key,
    corrupt or unreadable: never trusted)."""
    try:
        data = path.read_bytes()
    except OSError:
        return _MISS
    head = _MAGIC + key.encode() + b"\n"
    if not data.startswith(head):
        return _MISS
    rest = data[len(head):]
    digest, sep, payload = rest.partition(b"\n")
    if not sep or hashlib.sha256(payload).hexdigest().encode() != digest:
        return _MISS
    try:
        return pickle.loads(payload)
    except Exception:  # a payload that passed the hash but does not load: derive again
        return _MISS


def _write(path: Path, key: str, value: Any) -> None:
    """Store ``value`` atomically (temporary file, then rename); silently nothing when the
    folder is not writable.  A value that does not pickle is a programming error."""
    try:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise TypeError(f"a @derived value must pickle: {type(exc).__name__}: {exc}") from exc
    blob = (_MAGIC + key.encode() + b"\n" + hashlib.sha256(payload).hexdigest().encode() + b"\n"
            + payload)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_TMP_PREFIX, suffix=_SUFFIX)
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


#: identity verdicts of this process, by key (bounded: the oldest dropped first)
_IDENTITIES: dict[str, Any] = {}
_IDENTITIES_MAX = 4096


def identity_verdict(parts: tuple[str, ...], compute: Callable[[], Any]) -> Any:
    """The verdict on one symbolic identity, kept once per machine: ``parts`` spell the
    identity completely (both sides' ``srepr`` and the verifier's options), so the key — with
    icltheory's source hash and the library versions — fixes the answer.  Unlike ``@derived``
    values this is read and written inside :func:`rederive` blocks too: a patched theory that
    changes an expression changes its key, and a step it leaves alone needs no second proof.
    (The caller bypasses it while the verifier's own code is patched.)"""
    if _switched_off() or _off["cleared"]:
        return compute()
    key = json.dumps({"identity": list(parts), "sources": {"icltheory": _source_hash("icltheory")},
                      "versions": dict(_versions())}, sort_keys=True, ensure_ascii=True)
    if key in _IDENTITIES:
        return _IDENTITIES[key]
    path = cache_dir() / "identities" / (hashlib.sha256(key.encode()).hexdigest()[:40] + _SUFFIX)
    value = _read(path, key)
    if value is _MISS:
        value = compute()
        _write(path, key, value)
    if len(_IDENTITIES) >= _IDENTITIES_MAX:
        _IDENTITIES.pop(next(iter(_IDENTITIES)))
    _IDENTITIES[key] = value
    return value


def _load_or_derive(f: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    if _off["scopes"]:
        return _derive_under_patch(f, args)
    if not disk_cache_enabled() or not _plain_args(args):
        return f(*args)
    key = _key(f, args)
    path = _entry_path(key)
    value = _read(path, key)
    if value is not _MISS:
        return value
    value = f(*args)
    if disk_cache_enabled():  # still: the derivation did not start a patch
        _write(path, key, value)
    return value


def _derive_under_patch(f: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """Inside :func:`rederive`: derive, or reuse what a block with the same key derived."""
    key = _scope_keys[-1] if len(_scope_keys) == 1 else None  # nested blocks: no reuse
    if key is None or not _plain_args(args):
        return f(*args)
    k = (key, f"{f.__module__}.{f.__qualname__}", repr(args))
    if k in _under_patch:
        return _under_patch[k]
    value = f(*args)
    if len(_under_patch) >= _UNDER_PATCH_MAX:
        _under_patch.pop(next(iter(_under_patch)))
    _under_patch[k] = value
    return value


# ----------------------------------------------------------------------------- inspect, empty


def cache_info() -> dict[str, Any]:
    """The cache folder, whether the disk cache is on (and why not), its entries and bytes."""
    folder = _entries_dir()
    files = sorted(folder.glob("*" + _SUFFIX)) if folder.is_dir() else []
    entries = [p for p in files if not p.name.startswith(_TMP_PREFIX)]
    size = 0
    for p in entries:
        try:
            size += p.stat().st_size
        except OSError:
            pass
    why_off = ("ICLTHEORY_CACHE=off" if _switched_off() else
               "a patch is in progress" if _off["scopes"] else
               "clear_caches() was called in this process" if _off["cleared"] else "")
    writable = _writable(folder)
    if not why_off and not writable:
        why_off = "the folder is not writable"
    return {"folder": str(folder), "enabled": not why_off, "why_off": why_off,
            "entries": len(entries), "bytes": size}


def _writable(folder: Path) -> bool:
    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            return False
        probe = probe.parent
    return probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)


def cache_clear() -> int:
    """Delete every entry (and stray temporary file) of the disk cache; the number deleted."""
    folder = _entries_dir()
    n = 0
    if folder.is_dir():
        for p in folder.glob("*" + _SUFFIX):
            try:
                p.unlink()
                n += 1
            except FileNotFoundError:
                pass
    _clear_memory()
    return n
