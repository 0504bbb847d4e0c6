"""Planning a sweep: parse the grid and the seeds, build and validate every cell's setting.

Everything here runs before anything is computed or written: a bad grid (unknown key, a value
that is invalid in any cell, an empty grid, a grid over ``profile`` or ``seed``, a key given
twice, more than :data:`MAX_CELLS` runs) is :class:`~icltheory.core.BadInput`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..core import PROFILES, BadInput, Claim, Setting, SettingError, get_claim
from ..core._setting import TomlValue

__all__ = ["MAX_CELLS", "Cell", "Plan", "plan_sweep", "parse_grid", "parse_seeds", "cell_key"]

#: the most runs (grid cells × seeds) one sweep may hold
MAX_CELLS = 10_000
_RANGE = re.compile(r"([+-]?[0-9]+)\.\.([+-]?[0-9]+)")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":"),
                      allow_nan=False, default=str)


def cell_key(claim_id: str, setting: Mapping[str, Any]) -> str:
    """The identity of one run: a hash of the claim id and the complete setting that runs."""
    blob = _canonical({"claim": claim_id, "setting": _plain(dict(setting))})
    return hashlib.sha256(blob.encode("ascii")).hexdigest()[:32]


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return v


def _expand_range(text: str, what: str, limit: int) -> list[int] | None:
    m = _RANGE.fullmatch(text.strip())
    if not m:
        return None
    lo, hi = int(m.group(1)), int(m.group(2))
    if hi < lo:
        raise BadInput(f"{what}: empty range {text.strip()!r} (the end is below the start)")
    if hi - lo + 1 > limit:
        raise BadInput(f"{what}: the range {text.strip()!r} has {hi - lo + 1} values, more than "
                       f"the {limit} runs a sweep may hold")
    return list(range(lo, hi + 1))


def _split_values(key: str, text: str) -> list[str]:
    """``v1,v2,...``; ``v1;v2;...`` when the values are lists (``lambdas=1,2;3,4``);
    ``a..b`` is the integers a, a+1, …, b."""
    text = text.strip()
    if not text:
        raise BadInput(f"--grid {key}: no values (write --grid {key}=v1,v2,...)")
    sep = ";" if ";" in text else ","
    items = [t.strip() for t in text.split(sep)]
    if any(not t for t in items):
        raise BadInput(f"--grid {key}: an empty value in {text[:60]!r}")
    out: list[str] = []
    for t in items:
        r = _expand_range(t, f"--grid {key}", MAX_CELLS)
        out.extend(str(x) for x in r) if r is not None else out.append(t)
        if len(out) > MAX_CELLS:
            raise BadInput(f"--grid {key}: more than {MAX_CELLS} values")
    return out


def parse_grid(items: Sequence[str]) -> dict[str, list[str]]:
    """Parse ``["N=4,8,16", "lam=0.5,1"]`` into ``{"N": [...], "lam": [...]}`` (values stay
    text; each cell's setting parses them).  A key given twice is an error."""
    grid: dict[str, list[str]] = {}
    for item in items:
        if "=" not in item:
            raise BadInput(f"--grid {item[:60]!r}: expected KEY=v1,v2,...")
        key, text = item.split("=", 1)
        key = key.strip()
        if not key or not key.isascii() or not key.replace("_", "").isalnum():
            raise BadInput(f"--grid {item[:60]!r}: bad key {key[:40]!r}")
        if key in grid:
            raise BadInput(f"--grid {key}: key given twice (put every value in one --grid)")
        grid[key] = _split_values(key, text)
    return grid


def parse_seeds(text: str | Sequence[int] | None) -> list[int] | None:
    """``"0..9"`` (inclusive), ``"0,3,7"``, ``"5"`` or a sequence of integers; ``None``: the
    setting's own seed."""
    if text is None:
        return None
    if isinstance(text, str):
        seeds: list[int] = []
        body = text.strip()
        if not body:
            raise BadInput("--seeds: no seeds (write --seeds 0..9 or --seeds 0,1,2)")
        for part in body.split(","):
            r = _expand_range(part, "--seeds", MAX_CELLS)
            if r is not None:
                seeds.extend(r)
            elif re.fullmatch(r"[0-9]{1,19}", part.strip()):
                seeds.append(int(part.strip()))
            else:
                raise BadInput(f"--seeds: expected 0..9 or a comma list of integers, "
                               f"got {part.strip()[:40]!r}")
            if len(seeds) > MAX_CELLS:
                raise BadInput(f"--seeds: more than {MAX_CELLS} seeds")
    else:
        seeds = []
        for s in text:
            if isinstance(s, bool) or not isinstance(s, int):
                raise BadInput(f"seeds: expected integers, got {s!r}")
            seeds.append(int(s))
        if not seeds:
            raise BadInput("seeds: an empty list")
        if len(seeds) > MAX_CELLS:
            raise BadInput(f"seeds: more than {MAX_CELLS} seeds")
    if len(set(seeds)) != len(seeds):
        dup = next(s for s in seeds if seeds.count(s) > 1)
        raise BadInput(f"--seeds: seed {dup} given twice")
    return seeds


@dataclass(frozen=True)
class Cell:
    """One run of a sweep: the grid values, the seed and the complete setting."""

    index: int
    values: dict[str, Any]
    seed: int
    setting: Setting
    key: str


@dataclass(frozen=True)
class Plan:
    """A validated sweep: the claim, the grid (canonical values), the seeds and every cell."""

    claim: Claim
    grid: dict[str, list[Any]]
    seeds: list[int] | None
    base: dict[str, Any]
    profile: str
    cells: list[Cell]

    @property
    def keys(self) -> list[str]:
        return list(self.grid)

    def spec(self) -> dict[str, Any]:
        """What defines the sweep (its directory name is a hash of this)."""
        return {"claim": self.claim.id, "grid": _plain(self.grid), "seeds": self.seeds,
                "base": _plain(self.base), "profile": self.profile}

    @property
    def digest(self) -> str:
        return hashlib.sha256(_canonical(self.spec()).encode("ascii")).hexdigest()[:10]

    @property
    def name(self) -> str:
        """The sweep's directory name under ``--out``: ``sweep-<claim>-<keys>-<hash>``."""
        keys = "-".join(self.grid)[:60]
        return f"sweep-{self.claim.id}-{keys}-{self.digest}"

    def command(self) -> str:
        """The ``icltheory sweep`` command line that reproduces this sweep."""
        parts = ["icltheory", "sweep", self.claim.id]
        for k, vals in self.grid.items():
            lists = any(isinstance(v, (list, tuple)) for v in vals)
            sep = ";" if lists else ","
            text = sep.join(",".join(_num(x) for x in v) if isinstance(v, (list, tuple))
                            else _num(v) for v in vals)
            parts += ["--grid", _quote(f"{k}={text}")]
        if self.seeds is not None:
            parts += ["--seeds", ",".join(str(s) for s in self.seeds)]
        for k, v in self.base.items():
            text = ",".join(_num(x) for x in v) if isinstance(v, (list, tuple)) else _num(v)
            parts += ["--set", _quote(f"{k}={text}")]
        parts += ["--profile", self.profile]
        return " ".join(parts)


def _num(v: Any) -> str:
    return repr(v) if isinstance(v, float) else str(v)


def _quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


def _canonical_key(setting_type: type[Setting], key: str) -> str:
    return setting_type.aliases.get(key, key)


def plan_sweep(claim: str | Claim, grid: Mapping[str, Sequence[Any]], *,
               seeds: str | Sequence[int] | None = None,
               base: Mapping[str, Any] | None = None,
               profile: str | None = None,
               max_cells: int = MAX_CELLS) -> Plan:
    """Validate a sweep and build every cell's setting (nothing runs, nothing is written).

    ``grid``: key → values (text as on the command line, or native values; a list-valued key
    takes lists); ``seeds``: see :func:`parse_seeds`; ``base``: the fixed setting keys
    (``--set``); ``profile``: the one profile of every cell."""
    c = get_claim(claim) if isinstance(claim, str) else claim
    if not isinstance(c, Claim):
        raise BadInput(f"not a claim: {claim!r}")
    st = c.setting_type
    known = set(st.keys())
    base = dict(base or {})
    if "profile" in base:
        given = base.pop("profile")
        given = given.value if isinstance(given, TomlValue) else given
        if not isinstance(given, str):
            raise BadInput(f"profile: expected one of {', '.join(PROFILES)}, got {given!r}")
        if profile is not None and given.strip() != profile:
            raise BadInput("profile given twice (--profile and --set profile=)")
        profile = given.strip()
    profile = profile or "standard"
    if profile not in PROFILES:
        raise BadInput(f"unknown profile {str(profile)[:40]!r}; valid: {', '.join(PROFILES)}")
    specs = st.field_specs()
    fixed: dict[str, Any] = {}
    for key, v in base.items():
        k = _canonical_key(st, key)
        if k not in known:
            raise BadInput(f"--set {key}: unknown key for {c.id}; valid keys: "
                           f"{', '.join(sorted(known))}")
        if k in fixed:
            raise BadInput(f"--set {k}: key given twice")
        try:
            fixed[k] = _plain(specs[k].convert(k, v))
        except SettingError as exc:
            raise BadInput(str(exc)) from None
    base = fixed
    if not grid:
        raise BadInput("an empty grid: give at least one --grid KEY=v1,v2,...")
    canon: dict[str, list[Any]] = {}
    for key, values in grid.items():
        k = _canonical_key(st, key)
        if k == "profile":
            raise BadInput("--grid profile: a sweep runs one profile (use --profile); sweep "
                           "the sizes themselves instead")
        if k == "seed":
            raise BadInput("--grid seed: give the seeds with --seeds (e.g. --seeds 0..9)")
        if k not in known:
            raise BadInput(f"--grid {key}: unknown key for {c.id}; valid keys: "
                           f"{', '.join(sorted(known - {'seed', 'profile'}))}")
        if k in canon:
            raise BadInput(f"--grid {key}: key given twice")
        if k in base:
            raise BadInput(f"--grid {key}: also fixed by --set {key}=; give it once")
        vals = list(values)
        if not vals:
            raise BadInput(f"--grid {key}: no values")
        canon[k] = vals
    seed_list = parse_seeds(seeds)
    if seed_list is not None and "seed" in base:
        raise BadInput("seed given twice (--seeds and --set seed=)")
    n = len(seed_list or [None])
    for vals in canon.values():
        n *= len(vals)
    if n > max_cells:
        shape = " × ".join(str(len(v)) for v in canon.values())
        raise BadInput(f"the sweep has {n} runs ({shape} grid cells × {len(seed_list or [0])} "
                       f"seeds), more than the limit of {max_cells}")
    # canonical grid values: each as the setting parses it (so "1" and "1.0" are one value)
    typed: dict[str, list[Any]] = {}
    for k, vals in canon.items():
        out: list[Any] = []
        spec = specs[k]
        for v in vals:
            try:
                tv = spec.convert(k, v)
            except SettingError as exc:
                raise BadInput(f"--grid {k}: {exc.problem}") from None
            tv = list(tv) if isinstance(tv, tuple) else tv
            if tv in out:
                raise BadInput(f"--grid {k}: the value {v!r} is given twice")
            out.append(tv)
        typed[k] = out
    cells: list[Cell] = []
    keys = list(typed)
    seen_cells: dict[str, dict] = {}
    for combo in itertools.product(*(typed[k] for k in keys)):
        cell_values = dict(zip(keys, combo))
        seeds_here: list[int | None] = list(seed_list) if seed_list else [None]
        for seed in seeds_here:
            raw = dict(base)
            raw.update(cell_values)
            raw["profile"] = profile
            if seed is not None:
                raw["seed"] = seed
            try:
                setting = c.setting(raw)
            except SettingError as exc:
                where = ", ".join(f"{k}={_num(v)}" for k, v in cell_values.items())
                raise BadInput(f"grid cell {where}: {exc}") from None
            key = cell_key(c.id, setting.as_dict())
            if key in seen_cells:
                raise BadInput(f"grid cells {seen_cells[key]} and {cell_values} are the same setting")
            seen_cells[key] = cell_values
            cells.append(Cell(len(cells), cell_values, setting.seed, setting, key))
    return Plan(c, typed, seed_list, base, profile, cells)
