"""Frozen, validated parameter sets ("settings") for claims.

A claim's setting is a frozen dataclass deriving from :class:`Setting` whose fields are
declared with the typed helpers below (:func:`Int`, :func:`Float`, :func:`Floats`,
:func:`Choice`, :func:`Text`).  Every field carries its own validation, so a value is
checked the same way whether it comes from Python, from ``--set KEY=VALUE`` on the command
line (strings) or from a TOML file (native types).

How to write a setting::

    @dataclass(frozen=True, kw_only=True)
    class MySetting(Setting):
        D: int = Int(4, min=1, max=64, sample=(1, 6), doc="input dimension")
        lambdas: tuple[float, ...] | None = Floats(None, positive=True, length="D",
                                                   doc="eigenvalues")
        P: int | None = Int(None, min=1, max=10**6, by_profile=(500, 5000, 50000),
                            doc="training sequences")

        def _resolve(self):            # optional: fill derived defaults
            if self.lambdas is None:
                self._set("lambdas", (1.0,) * self.D)

        def _validate(self):           # optional: cross-field checks
            ...

Every setting has a ``seed`` and a ``profile`` field.  **What runs is what is recorded**: a
field declared with ``by_profile=(quick, standard, thorough)`` and left unset is resolved from
the profile when the setting is built, and every other derived default is filled by
``_resolve``; :meth:`Setting.as_dict` is then the complete record, and parsing that record
again (``check --config``) gives an equal setting, whatever its profile.

Input rules (hard edges): integers are written as ASCII digits (``1e30`` is not an integer);
numbers are ASCII decimal literals (no ``inf``/``nan``, no other scripts' digits); lists have
no empty items and at most ``max_len`` entries; every size key states an upper bound.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from ._errors import BadInput, SettingError
from ._numbers import NumberError, is_plain_decimal, parse_number

__all__ = [
    "Setting",
    "Int",
    "Float",
    "Floats",
    "Choice",
    "Text",
    "PROFILES",
    "parse_assignments",
    "load_toml",
    "CONFIG_MAX_BYTES",
]

#: the three profiles, in increasing work: a smoke run, the default, heavy checks
PROFILES = ("quick", "standard", "thorough")
#: the largest TOML settings file read (a settings file is a handful of keys)
CONFIG_MAX_BYTES = 1 << 20
#: the longest list a ``Floats`` key accepts unless the field says otherwise
DEFAULT_MAX_LEN = 256
#: the longest free-text value (expressions)
TEXT_MAX_LEN = 2000

_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


# --------------------------------------------------------------------------- field specs


@dataclass(frozen=True)
class TomlValue:
    """A value read from a TOML file: a setting key checks its TOML type strictly."""

    value: Any




@dataclass(frozen=True)
class _Spec:
    kind: str
    doc: str
    min: float | None = None
    max: float | None = None
    min_open: bool = False  # True: strictly greater than min
    choices: tuple[str, ...] | None = None
    optional: bool = False
    min_len: int = 1
    max_len: int = DEFAULT_MAX_LEN
    by_profile: tuple | None = None  # (quick, standard, thorough) default when left unset
    length: str | None = None  # a Floats list whose length must equal this int key
    sample: tuple | None = None  # (lo, hi[, "log"]) range that random settings draw from

    # -- conversion -----------------------------------------------------------------------
    def convert(self, key: str, value: Any) -> Any:
        if isinstance(value, TomlValue):
            value = self._from_toml(key, value.value)
        if value is None:
            if self.optional:
                return None
            raise SettingError(key, "a value is required")
        if self.kind == "int":
            return self._check_range(key, _to_int(key, value))
        if self.kind == "float":
            return self._check_range(key, _to_float(key, value))
        if self.kind == "floats":
            items = _to_list(key, value, self.max_len)
            if len(items) < self.min_len:
                raise SettingError(key, f"needs at least {self.min_len} value(s)")
            return tuple(self._check_range(key, _to_float(key, v)) for v in items)
        if self.kind == "choice":
            assert self.choices is not None
            if not isinstance(value, str):
                raise SettingError(key, f"expected one of {', '.join(self.choices)}, got {value!r}")
            text = value.strip()
            if text not in self.choices:
                raise SettingError(
                    key, f"unknown value {text[:40]!r}; valid values: {', '.join(self.choices)}"
                )
            return text
        if self.kind == "text":
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise SettingError(key, f"expected a number or an expression, got {value!r}")
            text = str(value).strip()
            if not text:
                raise SettingError(key, "is empty")
            if len(text) > TEXT_MAX_LEN:
                raise SettingError(key, f"is longer than {TEXT_MAX_LEN} characters")
            return text
        raise AssertionError(self.kind)  # pragma: no cover

    def _from_toml(self, key: str, v: Any) -> Any:
        """TOML has types: a key takes its own type only (``n = "4"``, ``n = 4.0`` and
        ``lambdas = "0.4,0.3"`` are refused); a number may be a quoted fraction or expression
        (``w_init = "1/64"``), never a quoted plain number."""
        def number(x: Any) -> Any:
            if isinstance(x, bool) or not isinstance(x, (int, float, str)):
                raise SettingError(key, f"expected a TOML number, got {_toml_type(x)}")
            if isinstance(x, str) and is_plain_decimal(x):
                raise SettingError(key, f"write the number {x.strip()[:40]} without quotes")
            return x

        if self.kind == "int":
            if isinstance(v, bool) or not isinstance(v, int):
                raise SettingError(key, f"expected a TOML integer (e.g. 4), got {_toml_type(v)}")
            return v
        if self.kind == "float":
            return number(v)
        if self.kind == "floats":
            if not isinstance(v, list):
                raise SettingError(key, "expected a TOML array of numbers (e.g. [0.4, 0.3]), "
                                        f"got {_toml_type(v)}")
            return [number(x) for x in v]
        if self.kind == "choice" and not isinstance(v, str):
            raise SettingError(key, f"expected a TOML string, got {_toml_type(v)}")
        return v

    def _check_range(self, key: str, v: float) -> float:
        if self.min is not None:
            if self.min_open and not v > self.min:
                raise SettingError(key, f"must be > {_fmt(self.min)}, got {_fmt(v)}")
            if not self.min_open and v < self.min:
                raise SettingError(key, f"must be ≥ {_fmt(self.min)}, got {_fmt(v)}")
        if self.max is not None and v > self.max:
            raise SettingError(key, f"must be ≤ {_fmt(self.max)}, got {_fmt(v)}")
        return v

    def describe(self) -> str:
        parts = [self.kind]
        if self.min is not None:
            parts.append(("> " if self.min_open else "≥ ") + _fmt(self.min))
        if self.max is not None:
            parts.append("≤ " + _fmt(self.max))
        if self.choices:
            parts.append("one of " + "|".join(self.choices))
        if self.length:
            parts.append(f"{self.length} values")
        return ", ".join(parts)


def _fmt(v: float) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    s = str(v)
    return s if len(s) <= 24 else f"{float(v):.3g}"


#: integer settings beyond this are refused (no key needs them; a float view of them overflows)
_INT_MAX = 2**63


def _to_int(key: str, value: Any) -> int:
    if isinstance(value, bool):
        raise SettingError(key, f"expected an integer, got {value!r}")
    if isinstance(value, int):
        if abs(value) >= _INT_MAX:
            raise SettingError(key, f"is too large for an integer setting ({len(str(abs(value)))} digits)")
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 2**53:
            return int(value)
        raise SettingError(key, f"expected an integer, got {value!r}")
    text = str(value).strip()
    if not _INT_RE.fullmatch(text[:4096]):
        raise SettingError(key, f"expected an integer written in digits, got {text[:40]!r}")
    if len(text) > 40:
        raise SettingError(key, f"is too large for an integer setting ({len(text)} characters)")
    return int(text)


def _toml_type(v: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string",
             list: "an array", dict: "a table"}
    return f"{names.get(type(v), type(v).__name__)} {str(v)[:40]!r}" if not isinstance(
        v, (list, dict)) else names[type(v)]


def _to_float(key: str, value: Any) -> float:
    if isinstance(value, bool):
        raise SettingError(key, f"expected a number, got {value!r}")
    if isinstance(value, numbers.Real):
        try:
            f = float(value)
        except OverflowError:
            raise SettingError(key, "is too large for a float") from None
    elif isinstance(value, str):
        try:
            f = parse_number(value).value
        except NumberError as exc:
            raise SettingError(key, f"expected a number, a fraction or an expression "
                                    f"({exc}), got {value.strip()[:40]!r}") from None
    else:
        raise SettingError(key, f"expected a number, got {type(value).__name__}")
    if not math.isfinite(f):
        raise SettingError(key, f"must be a finite number, got {f!r}")
    return f


def _to_list(key: str, value: Any, max_len: int) -> list:
    if isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        items = [value]
    elif isinstance(value, str):
        text = value.strip()
        if len(text) > 64 * (max_len + 1):
            raise SettingError(key, f"is too long (at most {max_len} values)")
        text = text.strip("[]()")
        if text.count(",") + 1 > max_len:
            raise SettingError(key, f"has more than {max_len} values")
        items = [p.strip() for p in text.split(",")]
        if any(t == "" for t in items):
            raise SettingError(key, f"malformed list {value[:60]!r}: an empty item")
        if any(" " in t for t in items):
            raise SettingError(key, f"malformed list {value[:60]!r}; use comma-separated numbers")
    else:
        raise SettingError(key, f"expected a list of numbers, got {type(value).__name__}")
    if len(items) > max_len:
        raise SettingError(key, f"has more than {max_len} values")
    return items


def _field(default: Any, spec: _Spec) -> Any:
    return field(default=default, metadata={"spec": spec})


def _by_profile(by_profile: Sequence[Any] | None) -> tuple[Any, ...] | None:
    if by_profile is None:
        return None
    t = tuple(by_profile)
    if len(t) != 3:
        raise TypeError("by_profile needs (quick, standard, thorough)")
    return t


def _declared(default: Any, spec: _Spec) -> Any:
    """Check a field declaration: a profile default needs ``default=None`` and must itself be
    a valid value (a declaration error is the author's, not the user's)."""
    if spec.by_profile is not None:
        if default is not None:
            raise TypeError("a by_profile field needs default=None (the profile supplies it)")
        for v in spec.by_profile:
            try:
                spec.convert("by_profile", v)
            except SettingError as exc:
                raise TypeError(f"by_profile value {v!r} is invalid: {exc.problem}") from None
    if default is not None and spec.kind != "choice":
        try:
            spec.convert("default", default)
        except SettingError as exc:
            raise TypeError(f"default {default!r} is invalid: {exc.problem}") from None
    return _field(default, spec)


def Int(default: int | None, *, doc: str, min: int | None = None, max: int | None = None,
        by_profile: Sequence[int] | None = None, sample: tuple[Any, ...] | None = None) -> Any:
    """An integer field; ``None`` default means "derived" (by ``by_profile`` or ``_resolve``)."""
    return _declared(default, _Spec("int", doc, min=min, max=max, optional=default is None,
                                    by_profile=_by_profile(by_profile), sample=sample))


def Float(
    default: float | None,
    *,
    doc: str,
    min: float | None = None,
    max: float | None = None,
    positive: bool = False,
    by_profile: Sequence[float] | None = None,
    sample: tuple | None = None,
) -> Any:
    """A finite float; ``positive=True`` requires > 0."""
    spec = _Spec(
        "float",
        doc,
        min=0.0 if positive else min,
        min_open=positive,
        max=max,
        optional=default is None,
        by_profile=_by_profile(by_profile),
        sample=sample,
    )
    return _declared(default, spec)


def Floats(
    default: Sequence[float] | None,
    *,
    doc: str,
    positive: bool = False,
    min: float | None = None,
    max: float | None = None,
    max_len: int = DEFAULT_MAX_LEN,
    length: str | None = None,
    sample: tuple | None = None,
) -> Any:
    """A list of finite floats (comma-separated on the command line).

    ``length="D"``: the list must have as many entries as the int key ``D`` (checked for every
    setting, and respected by the random settings of :mod:`icltheory.testing`)."""
    d = tuple(default) if default is not None else None
    spec = _Spec(
        "floats", doc, min=0.0 if positive else min, min_open=positive, max=max,
        optional=d is None, max_len=max_len, length=length, sample=sample,
    )
    return _field(d, spec)


def Choice(default: str, choices: Sequence[str], *, doc: str,
           sample: bool | tuple[str, ...] = False) -> Any:
    """One of ``choices``; ``sample=True`` lets random settings draw any of them (or a tuple:
    the ones to draw)."""
    return _field(default, _Spec("choice", doc, choices=tuple(choices),
                                 sample=(tuple(choices) if sample is True else
                                         (tuple(sample) if sample else None))))


def Text(default: str | None, *, doc: str, sample: tuple[str, ...] | None = None) -> Any:
    """A free-text field (e.g. an expression); parsed and validated by the claim."""
    return _field(default, _Spec("text", doc, optional=default is None, sample=sample))


# --------------------------------------------------------------------------- the base class


@dataclass(frozen=True, kw_only=True)
class Setting:
    """Base class of every claim's setting.  Subclasses are frozen keyword-only dataclasses."""

    seed: int = Int(0, min=0, max=2**63 - 1, sample=(0, 10_000),
                    doc="seed of every random draw (same seed → same numbers)")
    profile: str = Choice("standard", PROFILES,
                          doc="how much work: quick (smoke), standard (default), thorough")

    #: keys that a user may also set but that do not correspond to fields (none by default)
    aliases: ClassVar[Mapping[str, str]] = {}

    def __post_init__(self) -> None:
        given = {}
        for f in dataclasses.fields(self):
            spec: _Spec | None = f.metadata.get("spec")
            if spec is not None:
                value = spec.convert(f.name, getattr(self, f.name))
                object.__setattr__(self, f.name, value)
                default = spec.convert(f.name, f.default) if f.default is not None else None
                if value is not None and value != default:
                    given[f.name] = value
        object.__setattr__(self, "_given", given)
        for f in dataclasses.fields(self):
            spec = f.metadata.get("spec")
            if spec is not None and spec.by_profile is not None and getattr(self, f.name) is None:
                self._set(f.name, spec.by_profile[PROFILES.index(self.profile)])
        self._check_lengths()  # before _resolve derives anything from a list and its length
        try:
            self._resolve()
        except (OverflowError, ZeroDivisionError, FloatingPointError, ValueError) as exc:
            if isinstance(exc, BadInput):
                raise
            raise SettingError("setting", f"its derived defaults cannot be computed "
                                          f"({type(exc).__name__}: {exc}); the values are too "
                                          "extreme") from None
        self._check_lengths()
        try:
            self._validate()
        except (OverflowError, ZeroDivisionError, FloatingPointError, ValueError) as exc:
            if isinstance(exc, BadInput):
                raise
            raise SettingError("setting", f"cannot be validated ({type(exc).__name__}: {exc}); "
                                          "the values are too extreme") from None

    def _check_lengths(self) -> None:
        for f in dataclasses.fields(self):
            spec = f.metadata.get("spec")
            if spec is None or spec.length is None or getattr(self, f.name) is None:
                continue
            n, values = getattr(self, spec.length), getattr(self, f.name)
            if n is not None and len(values) != n:
                whose = "" if f.name in self._given else " (its default)"  # type: ignore[attr-defined]
                raise SettingError(f.name, f"has {len(values)} values{whose} but {spec.length}={n}: "
                                           f"give {n} values")

    # hooks ---------------------------------------------------------------------------------
    def _resolve(self) -> None:
        """Fill derived defaults (fields left at ``None``).  Use :meth:`_set`."""

    def _validate(self) -> None:
        """Cross-field validation; raise :class:`SettingError` naming the key."""

    def _set(self, name: str, value: Any) -> None:
        spec: _Spec = self.__dataclass_fields__[name].metadata["spec"]
        object.__setattr__(self, name, spec.convert(name, value))

    def _beyond_reach(self, why: str) -> None:
        """Called by :meth:`_resolve` when a *derived* default cannot be met (e.g. a step the
        spectrum's stability allows that would need more steps than any run can take): the values
        the user gave are valid, but no run at them can decide, so every run is refused before
        anything is derived or solved and the verdict is ``inconclusive`` with ``why``.  A value
        the user gave that cannot be met is bad input instead (raise :class:`SettingError`)."""
        object.__setattr__(self, "_beyond", why)

    @property
    def beyond_reach(self) -> str | None:
        """Why no run at this setting can decide (see :meth:`_beyond_reach`), or ``None``."""
        return getattr(self, "_beyond", None)

    # construction ------------------------------------------------------------------------
    @classmethod
    def keys(cls) -> list[str]:
        """Every key of this setting type (the dataclass fields, ``seed`` and ``profile`` included)."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> "Setting":
        """Build from a mapping of user values (strings or native); unknown keys are errors."""
        known = set(cls.keys())
        values: dict[str, Any] = {}
        for key, value in raw.items():
            key = cls.aliases.get(key, key)
            if key in values:
                raise SettingError(key, "given twice (under two names)")
            if key not in known:
                raise SettingError(
                    key, f"unknown key for {cls.__name__}; valid keys: {', '.join(sorted(known))}"
                )
            values[key] = value
        return cls(**values)

    def given(self) -> dict[str, Any]:
        """The values set away from their declared defaults (derived defaults excluded)."""
        return dict(self._given)  # type: ignore[attr-defined]

    def replace(self, **changes: Any) -> "Setting":
        """A new setting with ``changes`` applied to the given values (derived defaults are
        derived again)."""
        return type(self).parse({**self.given(), **changes})

    def with_profile(self, profile: str) -> "Setting":
        """The same user values under another profile (derived defaults resolved again)."""
        if profile == self.profile:
            return self
        raw = {k: v for k, v in self.given().items() if k != "profile"}
        raw["profile"] = profile
        return type(self).parse(raw)

    def as_dict(self) -> dict[str, Any]:
        """Every key with the value that runs (derived defaults resolved): the record."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    @classmethod
    def field_specs(cls) -> dict[str, _Spec]:
        """Each key's specification (kind, bounds, default per profile, sample range, meaning)."""
        return {f.name: f.metadata["spec"] for f in dataclasses.fields(cls)}

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        """One row per key: name, default, type/range, doc (for ``describe``, ``list --json``)."""
        rows = []
        for f in dataclasses.fields(cls):
            spec: _Spec = f.metadata["spec"]
            d = f.default
            row = {
                "key": f.name,
                "default": list(d) if isinstance(d, tuple) else d,
                "type": spec.describe(),
                "kind": spec.kind,
                "min": spec.min,
                "min_open": spec.min_open,
                "max": spec.max,
                "doc": spec.doc,
            }
            if spec.choices:
                row["choices"] = list(spec.choices)
            if spec.by_profile is not None:
                row["by_profile"] = dict(zip(PROFILES, spec.by_profile))
            if spec.length:
                row["length"] = spec.length
            if spec.kind == "floats":
                row["max_len"] = spec.max_len
            rows.append(row)
        return rows


# --------------------------------------------------------------------------- parsing helpers


def parse_assignments(items: Sequence[str]) -> dict[str, str]:
    """Parse ``["D=4", "lambdas=0.4,0.3"]`` (or one ``"D=4"``) into a dict; malformed items
    are errors."""
    if isinstance(items, str):
        items = [items]
    out: dict[str, str] = {}
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"parse_assignments: expected 'KEY=VALUE' strings, got "
                            f"{type(item).__name__}")
        if "=" not in item:
            raise BadInput(f"malformed assignment {item[:60]!r}: expected KEY=VALUE")
        key, value = item.split("=", 1)
        key = key.strip()
        if not key or not key.isascii() or not key.replace("_", "").isalnum():
            raise BadInput(f"malformed assignment {item[:60]!r}: bad key {key[:40]!r}")
        if key in out:
            raise BadInput(f"key {key!r} given twice")
        out[key] = value.strip()
    return out


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML settings file (at most :data:`CONFIG_MAX_BYTES`).  A top-level table of
    keys, each value wrapped in :class:`TomlValue` (so that ``n = "4"`` is refused where an
    integer is expected); errors name the file."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load_toml: the path must be a string or a path, got {type(path).__name__}")
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            blob = fh.read(CONFIG_MAX_BYTES + 1)
    except FileNotFoundError:
        raise BadInput(f"config file {str(p)!r} does not exist") from None
    except IsADirectoryError:
        raise BadInput(f"config file {str(p)!r} is a directory") from None
    except OSError as exc:
        raise BadInput(f"config file {str(p)!r} cannot be read: {exc.strerror}") from None
    if len(blob) > CONFIG_MAX_BYTES:
        raise BadInput(f"config file {str(p)!r} is larger than {CONFIG_MAX_BYTES} bytes")
    try:
        data = tomllib.loads(blob.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BadInput(f"config file {str(p)!r} is not valid TOML: {msg}") from None
    for k, v in data.items():
        if isinstance(v, dict):
            raise BadInput(f"config file {str(p)!r}: nested table [{k}] is not supported")
    return {k: TomlValue(v) for k, v in data.items()}
