"""Static checks run by the test suite (so CI's ``pytest`` runs them): ruff over the repository
and mypy over ``icltheory/`` (both configured in ``pyproject.toml``; installed by the ``test``
extra), and a docstring on every public name of the public API."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool(module: str, *args: str) -> subprocess.CompletedProcess:
    try:
        importlib.import_module(module)
    except ImportError:
        pytest.fail(f"{module} is not installed: pip install -e '.[test]'")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_ruff():
    r = _tool("ruff", "check", "--no-fix", "--output-format", "concise", ".")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_mypy():
    r = _tool("mypy")  # files and options from [tool.mypy]
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


#: the public API: every name these modules export has a docstring
PUBLIC = ["icltheory", "icltheory.core", "icltheory.report"]


def _public_names(modname: str):
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")]
    for name in names:
        if name.startswith("__"):
            continue
        obj = getattr(mod, name)
        if getattr(obj, "__module__", "icltheory").split(".")[0] != "icltheory":
            continue  # a module or a name imported from elsewhere
        yield f"{modname}.{name}", obj
        if inspect.isclass(obj) and obj.__module__.startswith("icltheory"):
            for attr, member in vars(obj).items():
                if attr.startswith("_") or not (inspect.isfunction(member)
                                                or isinstance(member, (property, classmethod,
                                                                       staticmethod))):
                    continue
                yield f"{modname}.{name}.{attr}", member


def test_public_names_have_docstrings():
    missing = []
    for modname in PUBLIC:
        assert importlib.import_module(modname).__doc__, modname
        for qual, obj in _public_names(modname):
            if inspect.isclass(obj) or inspect.isfunction(obj) or isinstance(
                    obj, (property, classmethod, staticmethod)):
                target = obj.__func__ if isinstance(obj, (classmethod, staticmethod)) else obj
                if not inspect.getdoc(target if not isinstance(target, property)
                                      else target.fget):
                    missing.append(qual)
    assert not missing, "public names without a docstring:\n" + "\n".join(sorted(set(missing)))
