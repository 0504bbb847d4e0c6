"""Every paper's derivations show their work: every step is verified, and no step records both
sides already simplified to the same expression (a check that cannot fail and shows the reader
nothing)."""

from __future__ import annotations

import pytest

from icltheory.core import Claim, all_claims

#: the claims that have a symbolic derivation (they override ``Claim.derive``)
DERIVED = sorted(c.id for c in all_claims() if type(c).derive is not Claim.derive)


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", DERIVED)
def test_every_step_verified_and_none_printed_the_same_on_both_sides(claim_id):
    from icltheory.core import get_claim

    c = get_claim(claim_id)
    d = c.derive(c.setting({"profile": "quick"}))
    if d is None:
        pytest.skip(f"{claim_id} records no derivation at its defaults")
    assert d.ok, [(s.name, s.status, s.detail) for s in d.steps if s.status != "verified"]
    same = [s.name for s in d.steps if s.same_on_both_sides]
    assert not same, f"steps recorded already simplified on both sides: {same}"


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", DERIVED)
def test_derivation_survives_the_disk_cache(claim_id):
    """What the disk cache stores (a pickle) reads back to the same expressions, assumptions
    included: a report made from a cached derivation is byte-identical to a fresh one."""
    import pickle

    import sympy as sp

    from icltheory.core import get_claim

    c = get_claim(claim_id)
    d = c.derive(c.setting({"profile": "quick"}))
    if d is None:
        pytest.skip(f"{claim_id} records no derivation at its defaults")
    back = pickle.loads(pickle.dumps(d))
    for s, t in zip(d.steps, back.steps):
        if not s.is_fact:
            assert (sp.srepr(s.lhs), sp.srepr(s.rhs)) == (sp.srepr(t.lhs), sp.srepr(t.rhs)), s.name
