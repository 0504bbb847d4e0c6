"""Static checks: ruff over the repository and mypy over ``icltheory/`` are CI steps of their own
(``.ci/run`` runs them before the test suite; both configured in ``pyproject.toml`` and installed
by the ``lint`` extra, which CI installs) — here a fast test that they are configured and that CI runs them — and
a docstring on every public name of the public API."""

from __future__ import annotations

import importlib
import inspect
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_and_mypy_are_configured_and_run_by_ci():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    tool = config["tool"]
    assert tool["mypy"]["files"] == ["icltheory"]
    assert tool["ruff"]["lint"]["select"]
    extras = config["project"]["optional-dependencies"]
    assert "ruff" in " ".join(extras["lint"]) and "mypy" in " ".join(extras["lint"])
    assert "lint" in " ".join(extras["dev"])
    steps = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
             if ln.strip() and not ln.strip().startswith("#")]
    assert any(re.search(r"\bruff check\b", ln) and "--fix" not in ln.replace("--no-fix", "")
               for ln in steps), "CI must run `ruff check`"
    assert any(re.search(r"(^|\s)(python -m )?mypy(\s|$)", ln) for ln in steps), "CI must run mypy"
    assert any(re.search(r"pip install .*\.\[dev\]", ln) for ln in steps), "CI must install the dev extra"


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
