"""The claim contract as a library: what every claim must satisfy, checkable for any package.

:func:`check_contract` runs, for each claim, the contract's items at a profile (``quick`` by
default):

* ``declared``     — every predicted constant has a meaning, every setting key a doc string and
  every integer key an upper bound;
* ``defaults``     — the verdict at the defaults is the claim's ``expected_default``; when it
  holds, every judged constant was judged and the false-fail bound is at most
  :data:`~icltheory.core.FALSE_FAIL_MAX`;
* ``planted:<side>:<what>`` — each planted error turns the verdict to its expected one
  (``fails``), and a theory-side error leaves the measurement unchanged;
* ``predictions``  — every judged constant replaced by a wrong value fails, and the true values
  typed as text hold;
* ``reproduces``   — the recorded setting, read back, gives the same verdict record byte for
  byte (runtimes aside).

Each item is a :class:`ContractItem` (passed, detail).  :func:`contract_test` turns the items
into a parametrised pytest test for a package's own test suite.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Iterable, Sequence

from .core import FALSE_FAIL_MAX, Claim, get_claim, judge_claim, measure_claim

__all__ = ["ContractItem", "check_contract", "contract_items", "contract_test"]


@dataclass
class ContractItem:
    """One item of the contract for one claim; ``run()`` sets ``passed`` and ``detail``."""

    claim: str
    name: str
    _fn: Callable[[], str | None] = field(repr=False)
    passed: bool | None = None
    detail: str = ""

    @property
    def id(self) -> str:
        """``claim::item`` (a pytest id)."""
        return f"{self.claim}::{self.name}"

    def run(self) -> "ContractItem":
        """Run the item: ``passed`` is False with the reason in ``detail`` when it fails."""
        try:
            problem = self._fn()
        except AssertionError as exc:
            problem = str(exc) or "assertion failed"
        self.passed, self.detail = problem is None, problem or ""
        return self


class _Defaults:
    """The claim's default run at ``profile``, measured once and shared by the items."""

    def __init__(self, claim: Claim, profile: str):
        self.claim, self.profile = claim, profile
        self._run: tuple[Any, Any, Any] | None = None

    def get(self) -> tuple[Any, Any, Any]:
        if self._run is None:
            s = self.claim.setting({"profile": self.profile})
            m = measure_claim(self.claim, s)
            self._run = (s, m, judge_claim(self.claim, s, m))
        return self._run


def _declared(c: Claim) -> str | None:
    problems = []
    for f in dataclasses.fields(c.setting_type):
        spec = f.metadata.get("spec")
        if spec is None:
            problems.append(f"setting field {f.name!r} is not declared with Int/Float/…")
            continue
        if not spec.doc:
            problems.append(f"setting key {f.name!r} has no doc")
        if spec.kind == "int" and spec.max is None:
            problems.append(f"size key {f.name!r} has no upper bound (max=)")
    for k, p in c.predictions.items():
        if not p.meaning:
            problems.append(f"predicted constant {k!r} has no meaning")
    s = c.setting({"profile": "quick"})
    if set(c.constants(s)) != set(c.predictions):
        problems.append(f"constants() returns {sorted(c.constants(s))}, the declared predictions "
                        f"are {sorted(c.predictions)}")
    return "; ".join(problems) or None


def _defaults(c: Claim, d: _Defaults) -> str | None:
    s, m, v = d.get()
    if v.verdict != c.expected_default:
        return f"expected {c.expected_default} at the defaults, got {v.verdict}:\n{v.summary()}"
    if v.verdict == "holds":
        missing = sorted(k for k, p in c.predictions.items()
                         if not p.informational and k not in set(v.judged))
        if missing:
            return f"predicted constants never judged: {', '.join(missing)}"
    if v.false_fail > FALSE_FAIL_MAX:
        return f"false-fail bound {v.false_fail:g} > {FALSE_FAIL_MAX:g}"
    return None


def _planted(c: Claim, error: Any) -> str | None:
    from .testing import run_planted

    v = run_planted(c, error, independence=True)
    if v.verdict != error.expect:
        return (f"planted {error.side} error ({error.what}) gave {v.verdict}, expected "
                f"{error.expect}:\n{v.summary()}")
    return None


def _predictions(c: Claim, d: _Defaults) -> str | None:
    from .testing import planted_predictions

    s, m, v = d.get()
    if v.verdict != "holds":
        return None  # judged only where the defaults hold (the defaults item says why not)
    consts = c.constants(s)
    problems = []
    wrong = planted_predictions(c, s)
    if not wrong:
        problems.append("no wrong prediction can be planted (Prediction.wrong_values is empty)")
    for key, value in wrong:
        w = judge_claim(c, s, m, predict={key: value}, constants=consts)
        if w.verdict != "fails":
            problems.append(f"--predict {key}={value!r} gave {w.verdict}, not fails")
    text = {k: (",".join(repr(float(x)) for x in val) if isinstance(val, list) else repr(float(val)))
            for k, val in consts.items() if not c.predictions[k].informational
            and isinstance(val, (int, float, list)) and not isinstance(val, bool)}
    w = judge_claim(c, s, m, predict=text, constants=consts)
    if w.verdict != "holds":
        problems.append(f"the true values typed as text gave {w.verdict}:\n{w.summary()}")
    return "; ".join(problems) or None


def _reproduces(c: Claim, d: _Defaults) -> str | None:
    from .core import run_check
    from .report import dumps

    s, m, v = d.get()
    again = c.setting(json.loads(dumps(v.setting)))
    if again != s:
        return f"the recorded setting reads back as {again.as_dict()}, not {s.as_dict()}"
    a, b = v.as_dict(), run_check(c, again).as_dict()
    for rec in (a, b):
        rec.pop("runtime_s")
    if dumps(a) != dumps(b):
        diff = sorted(k for k in a if dumps(a[k]) != dumps(b.get(k)))
        return f"a rerun from the recorded setting differs in: {', '.join(diff)}"
    return None


def contract_items(claims: Iterable[str | Claim], *, profile: str = "quick") -> list[ContractItem]:
    """The contract's items for ``claims`` (not yet run)."""
    items: list[ContractItem] = []
    for claim in claims:
        c = get_claim(claim) if isinstance(claim, str) else claim
        if not isinstance(c, Claim):
            raise TypeError(f"check_contract: expected claims or claim ids, got "
                            f"{type(claim).__name__}")
        if c.is_legacy():
            items.append(ContractItem(c.id, "declared", lambda: "a legacy claim (it implements "
                                      "check, not measure and judge): the contract needs both"))
            continue
        d = _Defaults(c, profile)
        items.append(ContractItem(c.id, "declared", partial(_declared, c)))
        items.append(ContractItem(c.id, "defaults", partial(_defaults, c, d)))
        for e in c.planted_errors:
            name = f"planted:{e.side}:{e.target.split(':')[-1]}"
            items.append(ContractItem(c.id, name, partial(_planted, c, e)))
        items.append(ContractItem(c.id, "predictions", partial(_predictions, c, d)))
        items.append(ContractItem(c.id, "reproduces", partial(_reproduces, c, d)))
    return items


def check_contract(claims: str | Claim | Iterable[str | Claim], *, profile: str = "quick",
                   raise_on_failure: bool = True) -> list[ContractItem]:
    """Run the contract for ``claims`` (ids or claims) and return its items; with
    ``raise_on_failure`` an ``AssertionError`` lists every failed item."""
    if isinstance(claims, (str, Claim)):
        claims = [claims]
    items = [it.run() for it in contract_items(claims, profile=profile)]
    failed = [it for it in items if not it.passed]
    if failed and raise_on_failure:
        raise AssertionError("the claim contract fails:\n" + "\n".join(
            f"- {it.id}: {it.detail}" for it in failed))
    return items


def contract_test(*claims: str | Claim, profile: str = "quick") -> Callable[..., None]:
    """A pytest test function parametrised over the contract's items for ``claims``::

        # tests/test_contract.py of a claim package
        from icltheory.testing import contract_test
        test_contract = contract_test("example.onestep.loss")
    """
    import pytest

    holder: dict[str, Sequence[ContractItem]] = {}

    def items() -> Sequence[ContractItem]:
        if "items" not in holder:
            holder["items"] = contract_items(claims, profile=profile)
        return holder["items"]

    names = [it.id for it in items()]

    @pytest.mark.parametrize("item_id", names, ids=names)
    def test_contract(item_id: str) -> None:
        item = next(it for it in items() if it.id == item_id).run()
        assert item.passed, f"{item.id}: {item.detail}"

    return test_contract
