"""Test configuration: Hypothesis profiles, the `thorough` marker, the developer tier, one xdist
worker per claim.

Profiles (``HYPOTHESIS_PROFILE=dev|ci|thorough``; ``ci`` is loaded automatically when ``CI`` is
set): ``dev`` few examples for a fast edit loop, ``ci`` derandomized and moderate, ``thorough``
many examples.  Tests marked ``@pytest.mark.thorough`` (heavy checks) run only under the
``thorough`` profile or with ``ICLTHEORY_THOROUGH=1``.  ``pytest -m "not slow"`` is the
developer tier: the tests marked ``slow`` by hand, every run of a costly claim
(``DEV_TIER_WORK``) and the tests listed in ``slow_tests.txt`` (measured) are left to the full
suite.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

# the command line's arithmetic, set before NumPy is imported by any test module: BLAS on one
# thread and the pinned kernels, so the tests' numbers are the committed reports' on any x86-64
# machine with AVX2; and its memory policy (freed memory kept for reuse)
from icltheory._cli import _keep_freed_memory, _one_blas_thread, _portable_arithmetic

_one_blas_thread()
_portable_arithmetic()
_keep_freed_memory()

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("dev", max_examples=10, deadline=None)
settings.register_profile(
    "ci", max_examples=25, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
_PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
settings.load_profile(_PROFILE)
#: the Hypothesis profile in force (dev | ci | thorough): tests scale their run counts by it
PROFILE_NAME = _PROFILE

THOROUGH = _PROFILE == "thorough" or os.environ.get("ICLTHEORY_THOROUGH") == "1"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # the session's folder of shared measurements (tests/_memo.py), made by the controller
    # before the workers start (they inherit the variable) and removed at the end
    if not os.environ.get("PYTEST_XDIST_WORKER") and not os.environ.get(_MEMO_ENV):
        import tempfile

        config._icltheory_memo = tempfile.mkdtemp(prefix="icltheory-test-memo-")
        os.environ[_MEMO_ENV] = config._icltheory_memo
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        _compile_sources()


#: the project's source folders whose bytecode the session writes up front
_SOURCES = ("icltheory", "proofs", "examples", "tests")


def _compile_sources() -> None:
    """Write the bytecode of the project's own modules once, before any worker or subprocess
    starts.  Where ``PYTHONDONTWRITEBYTECODE`` is set (as on CI machines) no process writes it,
    so every one of the suite's several hundred subprocesses (the command-line, sweep, report and
    fuzz tests) would compile the project's sources again (≈ 0.6 s each); existing, up-to-date
    bytecode is still read.  Sources are checked by modification time and size as usual, so an
    edited module is recompiled; a read-only tree is left as it is."""
    import compileall

    root = Path(__file__).resolve().parent.parent
    for name in _SOURCES:
        try:
            compileall.compile_dir(str(root / name), quiet=2, workers=1)
        except OSError:
            pass


def pytest_unconfigure(config):
    folder = getattr(config, "_icltheory_memo", None)
    if folder:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(_MEMO_ENV, None)


_MEMO_ENV = "ICLTHEORY_TEST_MEMO"


@functools.lru_cache(maxsize=1)
def _claim_ids() -> tuple[str, ...]:
    from icltheory.core import all_claims

    return tuple(sorted((c.id for c in all_claims()), key=len, reverse=True))


@functools.lru_cache(maxsize=1)
def _claim_id_set() -> frozenset[str]:
    return frozenset(_claim_ids())


def _group(nodeid: str) -> str:
    """The unit of work a test belongs to: the claim it is parametrized by (its id opens the
    parameter id, as in ``CLAIM``, ``CLAIM-…`` and a planted error's ``CLAIM:SIDE:TARGET``), so
    the tests that start from the claim's shared measurements (its quick default run, the
    combined run of its theory errors) run where those are made, not on two workers at once;
    else the test itself (a test that runs a claim without naming it in its parameters is its
    own unit and may measure the claim again on the other worker)."""
    if "[" not in nodeid:
        return nodeid
    params = nodeid[nodeid.index("[") + 1:]
    claim = next((cid for cid in _claim_ids() if params.startswith(cid)
                  and params[len(cid):len(cid) + 1] in (":", "-", "]")), None)
    return nodeid if claim is None else claim


@functools.lru_cache(maxsize=None)
def _unit_cost(unit: str) -> float:
    """The order units are handed out in: a claim's unit by the work its quick default run is
    estimated to take (its tests measure at that setting a few times), so the longest units start
    first and the two workers finish together; any other unit after them (cost 0)."""
    from icltheory.core import get_claim

    try:
        claim = get_claim(unit)
        return float(claim.cost(claim.setting({"profile": "quick"})).work)
    except Exception:  # not a claim id, or no estimate: ordered after the claims
        return 0.0


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist's default distribution (``-n``), the tests of one unit (``_group``)
    run on one worker, so what they share is computed once there; every other test is its own
    unit, as in ``load``."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByClaim(LoadScopeScheduling):
        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not self._ordered:  # once the queue is complete: costliest first (a stable sort)
                units = sorted(self.workqueue.items(), key=lambda kv: -_unit_cost(kv[0]))
                self.workqueue.clear()
                self.workqueue.update(units)
                self._ordered = True
            super()._assign_work_unit(node)

    return ByClaim(config, log)


#: the developer tier (``pytest -m "not slow"``, the one-minute loop) leaves out every run of a
#: claim whose quick default run is estimated above this much work (``Claim.cost``, in units
#: of which ``icltheory.core.WORK_RATE`` make a CPU second on the reference machine): the
#: trained-model claims and the longer flows, which the full suite (README's test command) still
#: runs with all their tests
DEV_TIER_WORK = 2e9


def _runs_claim(item) -> str | None:
    """The claim a test is parametrized by — a parameter that is the claim itself or its id (as
    the contract, backend and fuzz tests take it) — else None (e.g. a README number's
    ``CLAIM:path`` reads a report, and runs nothing)."""
    from icltheory.core import Claim

    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    for value in callspec.params.values():
        if isinstance(value, Claim):
            return value.id
        if isinstance(value, str) and value in _claim_id_set():
            return value
    return None


#: the developer tier's tests whose call alone took 0.7 s or more when last measured
#: (``scripts/dev_tier.py`` writes the list; ``ICLTHEORY_DEV_TIER_ALL=1`` ignores it)
SLOW_LIST = Path(__file__).resolve().parent / "slow_tests.txt"


def _listed_slow() -> frozenset[str]:
    if os.environ.get("ICLTHEORY_DEV_TIER_ALL") == "1" or not SLOW_LIST.exists():
        return frozenset()
    lines = SLOW_LIST.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.strip().startswith("#"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    slow = pytest.mark.slow
    listed = _listed_slow()
    for item in items:
        claim = _runs_claim(item)
        if (claim is not None and _unit_cost(claim) > DEV_TIER_WORK) or item.nodeid in listed:
            item.add_marker(slow)
    if THOROUGH:
        return
    skip = pytest.mark.skip(reason="heavy check: run with HYPOTHESIS_PROFILE=thorough")
    for item in items:
        if "thorough" in item.keywords:
            item.add_marker(skip)


#: the third-party example claim package (examples/thirdparty)
EXAMPLE_CLAIMS = Path(__file__).resolve().parent.parent / "examples" / "thirdparty"


@pytest.fixture
def example(monkeypatch):
    """The example claim package (``example.onestep.loss``), registered under the
    entry-point group for this test."""
    from importlib import metadata

    from icltheory.core import _registry

    monkeypatch.syspath_prepend(str(EXAMPLE_CLAIMS))
    ep = metadata.EntryPoint("example", "icl_example_claims:CLAIMS", _registry.GROUP)
    real = metadata.entry_points

    def eps(**kw):
        found = list(real(**kw))
        if kw.get("group") == _registry.GROUP and not any(e.value == ep.value for e in found):
            found.append(ep)
        return found

    monkeypatch.setattr(metadata, "entry_points", eps)
    _registry._load.cache_clear()
    yield _registry.get_claim("example.onestep.loss")
    _registry._load.cache_clear()
