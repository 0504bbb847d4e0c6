r"""Property-testing theorems: Hypothesis strategies from each claim's setting schema, and
helpers to check claims and plant errors.

Write a property test of a theorem at random settings::

    from hypothesis import given, settings as hsettings
    import icltheory.testing as itest

    @hsettings(max_examples=20, deadline=None)
    @given(itest.settings("linattn.merged.fixed-points", N=12))
    def test_eq19_at_random_spectra(setting):
        itest.assert_holds("linattn.merged.fixed-points", setting)

* :func:`settings` draws valid settings: every key declared with ``sample=`` in the claim's
  setting is drawn from that range (lists get the length of the key named by ``length=``);
  other keys keep their defaults unless fixed by keyword; a draw that the setting's own
  validation rejects is discarded (``hypothesis.assume``), so cross-field constraints hold;
  so is a setting the claim calls undecidable by construction (``Claim.undecidable``).
  ``icltheory describe CLAIM`` lists the drawn keys and their ranges.
* :func:`check` runs a claim (profile ``quick`` by default) and returns the
  :class:`~icltheory.core.Verdict`; :func:`assert_holds` / :func:`assert_fails` raise an
  ``AssertionError`` naming the failing checks, predicted vs measured; with
  ``inconclusive="skip"`` an undecided draw is rejected instead (and most draws undecided is
  an error saying so).
* :func:`check_contract` / :func:`contract_test` run the claim contract (declared keys and
  constants, the defaults, every planted error, wrong predictions, reproduction) for any
  package's claims, as a function or as a parametrised pytest test.
* :func:`run_planted` runs one of a claim's planted errors (a monkeypatch of a function the
  claim relies on); :func:`theory_independent` shows in one measurement that none of a claim's
  theory-side errors reaches its measurement; :func:`planted_predictions` lists the wrong ``--predict`` values that must
  turn a claim to ``fails``.
"""

from __future__ import annotations

import importlib
import math
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

from ._contract import ContractItem as ContractItem
from ._contract import check_contract as check_contract
from ._contract import contract_items as contract_items
from ._contract import contract_test as contract_test
from .core import (Claim, Measurement, PlantedError, Setting, SettingError, Verdict, get_claim,
                   judge_claim, measure_claim, rederive, run_check)

__all__ = ["settings", "check", "assert_holds", "assert_fails", "run_planted", "planted", "theory_independent",
           "planted_predictions", "raw_settings", "check_contract", "contract_test",
           "contract_items", "ContractItem"]


def _claim(claim: str | Claim) -> Claim:
    if isinstance(claim, str):
        return get_claim(claim)
    if not isinstance(claim, Claim):
        raise TypeError(f"the claim must be a Claim or a claim id such as "
                        f"'linattn.merged.sigmoid', got {type(claim).__name__}")
    return claim


def _number_strategy(st, kind: str, sample: tuple):
    lo, hi = sample[0], sample[1]
    log = len(sample) > 2 and sample[2] == "log"
    if kind == "int":
        if log:
            return st.floats(math.log(lo), math.log(hi)).map(lambda u: int(round(math.exp(u))))
        return st.integers(int(lo), int(hi))
    if log:
        return st.floats(math.log(lo), math.log(hi)).map(math.exp)
    return st.floats(float(lo), float(hi), allow_nan=False, allow_infinity=False)


def raw_settings(claim: str | Claim, **fixed: Any):
    """A strategy of raw setting dicts (key → value) for ``claim`` (no validation)."""
    from hypothesis import strategies as st

    c = _claim(claim)
    specs = c.setting_type.field_specs()
    unknown = set(fixed) - set(specs)
    if unknown:
        raise SettingError(sorted(unknown)[0], f"unknown key for {c.id}")

    @st.composite
    def draw(draw_):
        raw: dict[str, Any] = {}
        for key, spec in specs.items():
            if key in fixed:
                raw[key] = fixed[key]
            elif key == "profile":
                continue
            elif spec.sample is None or spec.kind == "floats":
                continue
            elif spec.kind == "choice":
                raw[key] = draw_(st.sampled_from(spec.sample))
            elif spec.kind == "text":
                raw[key] = draw_(st.sampled_from(spec.sample))
            else:
                raw[key] = draw_(_number_strategy(st, spec.kind, spec.sample))
        for key, spec in specs.items():  # lists last: their length may follow an int key
            if spec.kind != "floats" or key in fixed or spec.sample is None:
                continue
            n = raw.get(spec.length) if spec.length else None
            if n is None and spec.length:
                n = _default(c.setting_type, spec.length)
            if n is None:
                n = len(_default(c.setting_type, key) or (1,))
            if n > 64:
                continue
            raw[key] = draw_(st.lists(_number_strategy(st, "float", spec.sample),
                                      min_size=int(n), max_size=int(n)))
        return raw

    return draw()


def _default(setting_type, key):
    import dataclasses

    for f in dataclasses.fields(setting_type):
        if f.name == key:
            return f.default
    return None


def settings(claim: str | Claim, *, profile: str = "quick", **fixed: Any):
    """A Hypothesis strategy of valid :class:`Setting` objects for ``claim`` (see the module
    docstring); ``fixed`` keys are held at the given values."""
    from hypothesis import assume

    c = _claim(claim)

    def build(raw):
        try:
            s = c.setting({**raw, "profile": profile, **fixed})
        except SettingError:
            assume(False)
        assume(c.undecidable(s) is None)  # undecidable by construction: not a useful draw
        assume(s.beyond_reach is None)  # no run can be made there: not a useful draw either
        return s

    return raw_settings(c, **fixed).map(build)


def check(claim: str | Claim, setting: Setting | dict | None = None, *, profile: str = "quick",
          predict: dict | None = None) -> Verdict:
    """Check ``claim`` at ``setting`` (a Setting, a dict of keys, or the defaults)."""
    c = _claim(claim)
    if setting is not None and not isinstance(setting, (Setting, Mapping)):
        raise TypeError(f"check: the setting must be a Setting or a mapping of its keys, got "
                        f"{type(setting).__name__}")
    if not isinstance(setting, Setting):
        setting = c.setting({"profile": profile, **(setting or {})})
    elif setting.profile != profile and "profile" not in setting.given():
        setting = setting.with_profile(profile)
    return run_check(c, setting, predict=predict)


def _explain(v: Verdict) -> str:
    return f"{v.claim} at {v.setting}:\n{v.summary()}"


#: per claim: (undecided, drawn) over the calls with ``inconclusive="skip"`` in this process
_UNDECIDED: dict[str, list[int]] = {}
#: with ``inconclusive="skip"``: after this many draws, more than :data:`UNDECIDED_SHARE` of
#: them undecided is an error (the property is hardly being tested)
UNDECIDED_MIN_DRAWS = 20
UNDECIDED_SHARE = 0.8


def _verdict_of(claim: Any, setting: Any, inconclusive: str, kw: dict) -> Verdict:
    if inconclusive not in ("fail", "skip"):
        raise ValueError(f"inconclusive must be 'fail' or 'skip', got {inconclusive!r}")
    v = claim if isinstance(claim, Verdict) else check(claim, setting, **kw)
    if inconclusive == "skip":
        seen = _UNDECIDED.setdefault(v.claim, [0, 0])
        seen[1] += 1
        if v.verdict == "inconclusive":
            seen[0] += 1
            if seen[1] >= UNDECIDED_MIN_DRAWS and seen[0] > UNDECIDED_SHARE * seen[1]:
                raise AssertionError(
                    f"{v.claim}: {seen[0]} of {seen[1]} drawn settings were inconclusive (last: "
                    f"{'; '.join(v.reasons)[:300]}), so the property is hardly tested: fix the "
                    "keys that make it undecidable with settings(claim, KEY=value), or narrow "
                    "their ranges")
            from hypothesis import reject
            from hypothesis.control import currently_in_test_context, note

            if currently_in_test_context():
                note(f"undecided at {v.setting}: {'; '.join(v.reasons)[:300]}")
            reject()
    return v


def assert_holds(claim: str | Claim | Verdict, setting: Setting | dict | None = None, *,
                 inconclusive: str = "fail", **kw) -> Verdict:
    """Check and assert ``holds`` (an ``AssertionError`` lists what failed or was undecided).

    ``inconclusive="skip"``: an undecided draw is rejected (Hypothesis ``reject``) instead of
    failing the test; when most draws of a claim are undecided, an ``AssertionError`` says so
    (see :data:`UNDECIDED_SHARE`)."""
    v = _verdict_of(claim, setting, inconclusive, kw)
    if v.verdict != "holds":
        raise AssertionError(_explain(v))
    return v


def assert_fails(claim: str | Claim | Verdict, setting: Setting | dict | None = None, *,
                 inconclusive: str = "fail", **kw) -> Verdict:
    """Check and assert ``fails`` (``inconclusive="skip"`` as for :func:`assert_holds`)."""
    v = _verdict_of(claim, setting, inconclusive, kw)
    if v.verdict != "fails":
        raise AssertionError(f"expected fails, got {v.verdict}: " + _explain(v))
    return v


@contextmanager
def planted(error: PlantedError) -> Iterator[None]:
    """Install a planted error for the duration of the block (inside :func:`icltheory.core.rederive`:
    memoised values dropped on entry and exit, the disk cache of derivations neither read nor
    written, so nothing computed with the error outlives it or hides it)."""
    import inspect

    if not isinstance(error, PlantedError):
        raise TypeError(f"planted: expected a PlantedError (one of claim.planted_errors), got "
                        f"{type(error).__name__}")

    import sys

    mod_name, attr = error.target.split(":", 1)
    # load lazily bound parent packages first: a parent whose __init__ imports the target
    # would otherwise load it a second time, and the patch would miss the copy in use
    parts_mod = mod_name.split(".")
    for i in range(1, len(parts_mod)):
        parent = sys.modules.get(".".join(parts_mod[:i]))
        if parent is not None:
            getattr(parent, "__spec__", None)
    obj: Any = importlib.import_module(mod_name)
    parts = attr.split(".")
    for p in parts[:-1]:
        obj = getattr(obj, p)
    name = parts[-1]
    had = name in vars(obj) if hasattr(obj, "__dict__") else True
    raw = inspect.getattr_static(obj, name)  # restored as it was (staticmethod, classmethod…)
    original = getattr(obj, name)
    replacement = error.replace(original)
    if isinstance(raw, staticmethod):
        replacement = staticmethod(replacement)
    # the key names this patch (kept alive with it): runs of the same planted error reuse the
    # theory derived under it
    _PLANTED_KEYS.setdefault(id(error), error)
    with rederive(key=("planted error", id(error))):
        setattr(obj, name, replacement)
        try:
            yield
        finally:
            if had:
                setattr(obj, name, raw)
            else:
                delattr(obj, name)


#: the planted errors whose patches have run in this process (their ids key the theory derived
#: under them; held so that an id is never reused)
_PLANTED_KEYS: dict[int, PlantedError] = {}


def _feed(h: Any, v: Any, depth: int = 0) -> None:
    """Add ``v`` to the hash ``h``, bit for bit: arrays by dtype, shape and raw bytes, floats by
    their exact hexadecimal value, containers element by element (in order), plain objects
    (learners, simulators) by class name and attribute state rather than memory address."""
    import numpy as np

    def tag(kind: str, body: str = "") -> None:
        h.update(f"{kind}:{len(body)}:{body};".encode("utf-8", "surrogatepass"))

    if v is None or isinstance(v, (bool, str)):
        tag(type(v).__name__, str(v))
    elif isinstance(v, (int, np.integer)):
        tag("int", str(int(v)))
    elif isinstance(v, (float, np.floating)):
        tag("float", float(v).hex())
    elif isinstance(v, (np.ndarray, np.generic)):
        a = np.asarray(v)
        tag("ndarray", f"{a.dtype.str}{a.shape}")
        if a.dtype.hasobject:
            for x in a.ravel().tolist():
                _feed(h, x, depth)
        else:
            h.update(np.ascontiguousarray(a).tobytes())
    elif isinstance(v, dict):
        tag("dict", str(len(v)))
        for k, x in v.items():
            _feed(h, str(k), depth)
            _feed(h, x, depth)
    elif isinstance(v, (list, tuple)):
        tag("list", str(len(v)))
        for x in v:
            _feed(h, x, depth)
    elif hasattr(v, "as_dict"):
        tag("as_dict", type(v).__qualname__)
        _feed(h, v.as_dict(), depth)
    elif (hasattr(v, "__dict__") and not isinstance(v, type)
          and type(v).__repr__ is object.__repr__ and type(v).__str__ is object.__str__):
        tag("object", type(v).__qualname__)
        if depth <= 8:
            state = {k: x for k, x in sorted(vars(v).items()) if not callable(x)}
            _feed(h, state, depth + 1)
    else:
        tag(type(v).__qualname__, str(v))


def _digest(values: Any) -> str:
    """A SHA-256 of ``values`` that two measurements share exactly when they are the same bits."""
    import hashlib

    h = hashlib.sha256()
    _feed(h, values)
    return h.hexdigest()


def theory_independent(claim: str | Claim, setting: Setting, measurement: Measurement,
                       errors: Any = None) -> tuple[PlantedError, ...]:
    """The theory-side planted errors shown, in one run, not to reach the measurement.

    ``errors`` (default: the claim's planted errors) are filtered to the theory side and to
    those whose setting resolves to ``setting``; all of them are planted at once, the claim is
    measured once, and the result is compared bit for bit with ``measurement`` (taken at
    ``setting`` without them: measurements are deterministic).  Equal: a measurement that read
    any patched target would have changed (short of errors cancelling exactly), so each error
    is shown not to reach it and is returned.  Different, or the errors cannot be planted
    together (two patches of one function's source): ``()`` — each error then needs its own
    check (:func:`run_planted` with ``independence=True``), which names the one that reached it."""
    from contextlib import ExitStack

    c = _claim(claim)
    pool = c.planted_errors if errors is None else tuple(errors)
    theory = tuple(e for e in pool if e.side == "theory"
                   and c.setting({"profile": "quick", **dict(e.setting)}) == setting)
    if not theory:
        return ()
    clean = _digest(measurement.values)
    try:
        with ExitStack() as stack:
            for e in theory:
                stack.enter_context(planted(e))
            m = measure_claim(c, setting)
    except Exception:  # patches that do not stack, or a run that breaks under all of them
        return ()
    return theory if _digest(m.values) == clean else ()


def run_planted(claim: str | Claim, error: PlantedError, *, independence: bool = False,
                unplanted: tuple[Setting, Measurement] | None = None,
                reuse_measurement: bool = False) -> Verdict:
    """The verdict of ``claim`` with ``error`` planted (profile quick unless the error's
    setting says otherwise).  The setting is resolved *before* the error is planted, so a
    theory error does not move a horizon.

    ``independence=True`` also asserts that the two sides are independent: a theory-side
    error leaves the measurement bit for bit unchanged, a measurement-side error leaves the
    predicted constants unchanged (``AssertionError`` otherwise; a certified-layer error is not held to either).  ``unplanted``: a
    ``(setting, measurement)`` already taken without the error — used as the clean side of that
    comparison when its setting is the one this run resolves (measurements are deterministic),
    instead of measuring again.  ``reuse_measurement=True`` (a theory-side error whose
    independence :func:`theory_independent` has shown): the error is judged on the
    ``unplanted`` measurement instead of a new one (the same bytes, by that check)."""
    c = _claim(claim)
    setting = c.setting({"profile": "quick", **dict(error.setting)})
    if reuse_measurement and error.side == "theory" and unplanted is not None and unplanted[0] == setting:
        with planted(error):
            return judge_claim(c, setting, unplanted[1])
    # a certified-layer error (interval arithmetic, branch and bound) may move either side
    independence = independence and error.side in ("theory", "measurement")
    if independence:
        if error.side == "theory":
            if unplanted is not None and unplanted[0] == setting:
                clean = _digest(unplanted[1].values)
            else:
                clean = _digest(measure_claim(c, setting).values)
        else:
            clean = _digest(c.constants(setting))
    with planted(error):
        if independence:
            if error.side == "theory":
                m = measure_claim(c, setting)
                if _digest(m.values) != clean:
                    raise AssertionError(f"{c.id}: the theory-side error ({error.what}) changed "
                                         "the measurement: measure() depends on the theory")
                return judge_claim(c, setting, m)
            if _digest(c.constants(setting)) != clean:
                raise AssertionError(f"{c.id}: the measurement-side error ({error.what}) changed "
                                     "the predicted constants: the theory depends on the "
                                     "experiment code")
        return run_check(c, setting)


def planted_predictions(claim: str | Claim, setting: Setting) -> list[tuple[str, Any]]:
    """(key, wrong value) pairs for every judged predicted constant of ``claim``."""
    c = _claim(claim)
    if isinstance(setting, Mapping):
        setting = c.setting(setting)
    consts = c.constants(setting)
    out = []
    for key, pred in getattr(c, "predictions", {}).items():
        if pred.informational:
            continue
        for wrong in pred.wrong_values(consts[key]):
            out.append((key, wrong))
    return out


def judge_planted_predictions(claim: str | Claim, setting: Setting):
    """Measure once, then judge each planted wrong prediction: yields (key, value, verdict)."""
    c = _claim(claim)
    m = measure_claim(c, setting)
    consts = c.constants(setting)
    for key, wrong in planted_predictions(c, setting):
        yield key, wrong, judge_claim(c, setting, m, predict={key: wrong}, constants=consts)
