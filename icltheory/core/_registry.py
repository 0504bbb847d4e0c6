"""The claim registry: every package that provides claims registers them under the entry-point
group ``icltheory.claims`` (the built-in papers do so in icltheory's own ``pyproject.toml``).

An entry point names either a sequence of :class:`Claim` instances or a module with a ``CLAIMS``
tuple::

    [project.entry-points."icltheory.claims"]
    my_paper = "my_package.claims:CLAIMS"

The core never imports a paper by name.  A registered package that fails to load is reported
(``load_errors()``, ``icltheory list``) and skipped, so one broken plug-in cannot take the tool
down.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from importlib import metadata
from typing import Any, Iterable

from ._claim import Claim
from ._errors import BadInput

__all__ = ["all_claims", "get_claim", "resolve_claims", "load_errors", "GROUP", "register",
           "claim_ids"]

GROUP = "icltheory.claims"
_EXTRA: dict[str, Claim] = {}
_ERRORS: list[str] = []
#: whether this process has made its one lookup without a full load (:func:`get_claim`)
_LAZY = {"used": False}


def _claims_of(obj: Any) -> list[Any]:
    if isinstance(obj, Claim):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return list(obj)
    claims = getattr(obj, "CLAIMS", None)
    if claims is None:
        raise TypeError(f"{obj!r} is neither a sequence of claims nor a module with CLAIMS")
    return list(claims)


def _builtin(ep: metadata.EntryPoint) -> bool:
    return getattr(getattr(ep, "dist", None), "name", None) == "icltheory"


def _entry_points() -> list[metadata.EntryPoint]:
    """The group's entry points in the order a load takes them: built-in papers first (a plug-in
    cannot replace a built-in claim id), each value once (a distribution seen twice on
    sys.path)."""
    eps = sorted(metadata.entry_points(group=GROUP), key=lambda e: (not _builtin(e), e.name, e.value))
    out, seen = [], set()
    for ep in eps:
        if ep.value not in seen:
            seen.add(ep.value)
            out.append(ep)
    return out


def _registered(ep: metadata.EntryPoint, errors: list[str]) -> list[Claim]:
    """The claims of one entry point that a load registers (importing it), its problems
    appended to ``errors``."""
    try:
        claims = _claims_of(ep.load())
    except Exception as exc:  # a broken plug-in is reported, not fatal
        errors.append(f"{ep.name} ({ep.value}): {type(exc).__name__}: {exc}")
        return []
    out = []
    for claim in claims:
        if not isinstance(claim, Claim):
            errors.append(f"{ep.name}: holds a non-Claim {claim!r}")
            continue
        if claim.is_legacy() and not _builtin(ep):
            errors.append(f"{ep.name}: claim {claim.id!r} declares no predictions (the "
                          "claim contract requires predictions, planted errors, measure "
                          "and judge); not registered")
            continue
        out.append(claim)
    return out


@lru_cache(maxsize=1)
def _load() -> dict[str, Claim]:
    found: dict[str, Claim] = {}
    _ERRORS.clear()
    for ep in _entry_points():
        for claim in _registered(ep, _ERRORS):
            if claim.id in found and found[claim.id] is not claim:
                _ERRORS.append(f"{ep.name}: claim id {claim.id!r} declared twice; kept the first")
                continue
            found[claim.id] = claim
    for cid, claim in _EXTRA.items():
        found.setdefault(cid, claim)
    return dict(sorted(found.items()))


def _first_declaring(claim_id: str) -> Claim | None:
    """The claim a load registers under ``claim_id`` — the first declaration in the load's order,
    else one registered from Python — importing entry points only until one declares it, and of
    the built-in papers only the one named by the id's first component (each declares only ids
    under its own name: a test holds them to it), so a command about one claim imports one
    paper."""
    head = claim_id.split(".", 1)[0]
    for ep in _entry_points():
        if _builtin(ep) and ep.name != head:
            continue
        for claim in _registered(ep, []):
            if claim.id == claim_id:
                return claim
    return _EXTRA.get(claim_id)


def register(claim: Claim) -> None:
    """Register a claim from Python (e.g. a notebook or a test) without an entry point."""
    if not isinstance(claim, Claim):
        raise TypeError(f"not a Claim: {claim!r}")
    _EXTRA[claim.id] = claim
    _load.cache_clear()


def load_errors() -> list[str]:
    """Plug-ins that failed to load (one line each)."""
    _load()
    return list(_ERRORS)


def all_claims() -> list[Claim]:
    """Every registered claim, sorted by id."""
    return list(_load().values())


def claim_ids() -> list[str]:
    return list(_load())


def get_claim(claim_id: str) -> Claim:
    """The claim with this id; an unknown id is :class:`BadInput` naming the closest few."""
    from ._claim import Claim

    if isinstance(claim_id, Claim):
        return claim_id
    if not isinstance(claim_id, str):
        raise TypeError(f"get_claim: the claim id must be a string such as "
                        f"'linattn.merged.sigmoid', got {type(claim_id).__name__}")
    if not _load.cache_info().currsize and not _LAZY["used"]:
        # the first lookup, nothing loaded yet: import only up to its package (a command about
        # one claim); any further lookup loads every package once and reads the registry
        _LAZY["used"] = True
        found = _first_declaring(claim_id)
        if found is not None:
            return found
    claims = _load()
    if claim_id not in claims:
        near = difflib.get_close_matches(claim_id, list(claims), n=3, cutoff=0.5)
        if not near:
            head = claim_id.split(".")[0]
            near = [c for c in claims if c.startswith(head + ".")][:3]
        hint = f"; did you mean {', '.join(near)}?" if near else "; run 'icltheory list'"
        raise BadInput(f"unknown claim {claim_id[:80]!r}{hint}")
    return claims[claim_id]


def resolve_claims(ids: Iterable[str]) -> list[Claim]:
    """The claims with these ids, in order (each unknown id is :class:`BadInput`); one id
    may be given as a string."""
    if isinstance(ids, str):
        return [get_claim(ids)]
    if not isinstance(ids, Iterable):
        raise TypeError(f"resolve_claims: expected claim ids (a list of strings), got "
                        f"{type(ids).__name__}")
    return [get_claim(i) for i in ids]
