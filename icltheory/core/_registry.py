"""The claim registry: every module of the ``proofs`` package lists its claims in ``CLAIMS``."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from ._claim import Claim
from ._errors import BadInput

__all__ = ["all_claims", "get_claim", "resolve_claims"]


@lru_cache(maxsize=1)
def _load() -> dict[str, Claim]:
    import proofs

    found: dict[str, Claim] = {}
    for mod in sorted(pkgutil.iter_modules(proofs.__path__), key=lambda m: m.name):
        if mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"proofs.{mod.name}")
        for claim in getattr(module, "CLAIMS", ()):
            if not isinstance(claim, Claim):
                raise TypeError(f"proofs.{mod.name}.CLAIMS holds a non-Claim: {claim!r}")
            if claim.id in found:
                raise ValueError(f"claim id {claim.id!r} declared twice")
            found[claim.id] = claim
    return dict(sorted(found.items()))


def all_claims() -> list[Claim]:
    return list(_load().values())


def get_claim(claim_id: str) -> Claim:
    claims = _load()
    if claim_id not in claims:
        near = [c for c in claims if c.startswith(claim_id.split(".")[0])]
        hint = f"; did you mean one of: {', '.join(near)}" if near else "; run 'icltheory list'"
        raise BadInput(f"unknown claim {claim_id!r}{hint}")
    return claims[claim_id]


def resolve_claims(ids) -> list[Claim]:
    return [get_claim(i) for i in ids]
