"""Test configuration: Hypothesis profiles and the `thorough` marker.

Profiles (``HYPOTHESIS_PROFILE=dev|ci|thorough``; ``ci`` is loaded automatically when ``CI`` is
set): ``dev`` few examples for a fast edit loop, ``ci`` derandomized and moderate, ``thorough``
many examples.  Tests marked ``@pytest.mark.thorough`` (heavy checks) run only under the
``thorough`` profile or with ``ICLTHEORY_THOROUGH=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

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


def pytest_collection_modifyitems(config, items):
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
