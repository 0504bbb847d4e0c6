"""Test configuration: Hypothesis profiles, the `thorough` marker, one xdist worker per claim.

Profiles (``HYPOTHESIS_PROFILE=dev|ci|thorough``; ``ci`` is loaded automatically when ``CI`` is
set): ``dev`` few examples for a fast edit loop, ``ci`` derandomized and moderate, ``thorough``
many examples.  Tests marked ``@pytest.mark.thorough`` (heavy checks) run only under the
``thorough`` profile or with ``ICLTHEORY_THOROUGH=1``.
"""

from __future__ import annotations

import os

# BLAS on one thread, as the command line runs it (icltheory._cli._one_blas_thread): set before
# NumPy is imported by any test module
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

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
    # under pytest-xdist (-n), tests of one claim share a worker (see below): its memoised
    # theory and measurements are then computed once, not once per worker
    if getattr(config.option, "dist", "no") == "load":
        config.option.dist = "loadgroup"
    # the session's folder of shared default runs (tests/_memo.py), made by the controller
    # before the workers start (they inherit the variable) and removed at the end
    if not os.environ.get("PYTEST_XDIST_WORKER") and not os.environ.get(_memo_env()):
        import tempfile

        config._icltheory_memo = tempfile.mkdtemp(prefix="icltheory-test-memo-")
        os.environ[_memo_env()] = config._icltheory_memo


def pytest_unconfigure(config):
    folder = getattr(config, "_icltheory_memo", None)
    if folder:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(_memo_env(), None)


def _memo_env() -> str:
    return "ICLTHEORY_TEST_MEMO"


def _claim_of(item) -> str | None:
    spec = getattr(item, "callspec", None)
    claim = spec.params.get("claim") if spec is not None else None
    return getattr(claim, "id", claim) if isinstance(getattr(claim, "id", claim), str) else None


def pytest_collection_modifyitems(config, items):
    for item in items:
        claim = _claim_of(item)
        if claim is not None and not any(m.name == "xdist_group" for m in item.iter_markers()):
            item.add_marker(pytest.mark.xdist_group(claim))
    if THOROUGH:
        return
    skip = pytest.mark.skip(reason="heavy check: run with HYPOTHESIS_PROFILE=thorough")
    for item in items:
        if "thorough" in item.keywords:
            item.add_marker(skip)
