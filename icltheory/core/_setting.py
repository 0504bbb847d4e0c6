"""Frozen, validated parameter sets ("settings") for claims.

A claim's setting is a frozen dataclass deriving from :class:`Setting` whose fields are
declared with the typed helpers below (:func:`Int`, :func:`Float`, :func:`Floats`,
:func:`Choice`, :func:`Text`).  Every field carries its own validation, so a value is
checked the same way whether it comes from Python, from ``--set KEY=VALUE`` on the command
line (strings) or from a TOML file (native types).

How to write a setting::

    @dataclass(frozen=True, kw_only=True)
    class MySetting(Setting):
        D: int = Int(4, min=1, doc="input dimension")
        lambdas: tuple[float, ...] | None = Floats(None, positive=True, doc="eigenvalues")

        def _resolve(self):            # optional: fill derived defaults
            if self.lambdas is None:
                self._set("lambdas", (1.0,) * self.D)

        def _validate(self):           # optional: cross-field checks
            if len(self.lambdas) != self.D:
                raise SettingError("lambdas", f"has {len(self.lambdas)} values but D={self.D}")

Every setting has a ``seed`` field (non-negative integer).
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from ._errors import BadInput, SettingError

__all__ = [
    "Setting",
    "Int",
    "Float",
    "Floats",
    "Choice",
    "Text",
    "parse_assignments",
    "load_toml",
]


# --------------------------------------------------------------------------- field specs


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

    # -- conversion -----------------------------------------------------------------------
    def convert(self, key: str, value: Any) -> Any:
        if value is None:
            if self.optional:
                return None
            raise SettingError(key, "a value is required")
        if self.kind == "int":
            return self._check_range(key, _to_int(key, value))
        if self.kind == "float":
            return self._check_range(key, _to_float(key, value))
        if self.kind == "floats":
            items = _to_list(key, value)
            if len(items) < self.min_len:
                raise SettingError(key, f"needs at least {self.min_len} value(s)")
            return tuple(self._check_range(key, _to_float(key, v)) for v in items)
        if self.kind == "choice":
            text = str(value).strip()
            if text not in self.choices:
                raise SettingError(
                    key, f"unknown value {text!r}; valid values: {', '.join(self.choices)}"
                )
            return text
        if self.kind == "text":
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise SettingError(key, f"expected a number or an expression, got {value!r}")
            text = str(value).strip()
            if not text:
                raise SettingError(key, "is empty")
            return text
        raise AssertionError(self.kind)  # pragma: no cover

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
        return ", ".join(parts)


def _fmt(v: float) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _to_int(key: str, value: Any) -> int:
    if isinstance(value, bool):
        raise SettingError(key, f"expected an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value):
            return int(value)
        raise SettingError(key, f"expected an integer, got {value!r}")
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        try:
            f = float(text)
        except ValueError:
            raise SettingError(key, f"expected an integer, got {text!r}") from None
        if math.isfinite(f) and f == int(f):
            return int(f)
        raise SettingError(key, f"expected an integer, got {text!r}") from None


def _to_float(key: str, value: Any) -> float:
    if isinstance(value, bool):
        raise SettingError(key, f"expected a number, got {value!r}")
    if isinstance(value, (int, float)):
        f = float(value)
    else:
        text = str(value).strip()
        try:
            f = float(text)
        except ValueError:
            raise SettingError(key, f"expected a number, got {text!r}") from None
    if not math.isfinite(f):
        raise SettingError(key, f"must be a finite number, got {f!r}")
    return f


def _to_list(key: str, value: Any) -> list:
    if isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        items = [value]
    else:
        text = str(value).strip().strip("[]()")
        items = [t for t in (p.strip() for p in text.split(",")) if t != ""]
        if not items:
            raise SettingError(key, "expected a comma-separated list of numbers")
        if any(" " in t for t in items):
            raise SettingError(key, f"malformed list {value!r}; use comma-separated numbers")
    return items


def _field(default: Any, spec: _Spec):
    return field(default=default, metadata={"spec": spec})


def Int(default: int | None, *, doc: str, min: int | None = None, max: int | None = None):
    """An integer field; ``None`` default means "derived from the other fields"."""
    return _field(default, _Spec("int", doc, min=min, max=max, optional=default is None))


def Float(
    default: float | None,
    *,
    doc: str,
    min: float | None = None,
    max: float | None = None,
    positive: bool = False,
):
    """A finite float; ``positive=True`` requires > 0."""
    spec = _Spec(
        "float",
        doc,
        min=0.0 if positive else min,
        min_open=positive,
        max=max,
        optional=default is None,
    )
    return _field(default, spec)


def Floats(
    default: Sequence[float] | None,
    *,
    doc: str,
    positive: bool = False,
    min: float | None = None,
):
    """A list of finite floats (comma-separated on the command line)."""
    d = tuple(default) if default is not None else None
    spec = _Spec(
        "floats", doc, min=0.0 if positive else min, min_open=positive, optional=d is None
    )
    return _field(d, spec)


def Choice(default: str, choices: Sequence[str], *, doc: str):
    return _field(default, _Spec("choice", doc, choices=tuple(choices)))


def Text(default: str | None, *, doc: str):
    """A free-text field (e.g. an expression); parsed and validated by the claim."""
    return _field(default, _Spec("text", doc, optional=default is None))


# --------------------------------------------------------------------------- the base class


@dataclass(frozen=True, kw_only=True)
class Setting:
    """Base class of every claim's setting.  Subclasses are frozen keyword-only dataclasses."""

    seed: int = Int(0, min=0, doc="seed of every random draw (same seed → same numbers)")

    #: keys that a user may also set but that do not correspond to fields (none by default)
    aliases: ClassVar[Mapping[str, str]] = {}

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            spec: _Spec | None = f.metadata.get("spec")
            if spec is not None:
                object.__setattr__(self, f.name, spec.convert(f.name, getattr(self, f.name)))
        self._resolve()
        self._validate()

    # hooks ---------------------------------------------------------------------------------
    def _resolve(self) -> None:
        """Fill derived defaults (fields left at ``None``).  Use :meth:`_set`."""

    def _validate(self) -> None:
        """Cross-field validation; raise :class:`SettingError` naming the key."""

    def _set(self, name: str, value: Any) -> None:
        spec: _Spec = self.__dataclass_fields__[name].metadata["spec"]
        object.__setattr__(self, name, spec.convert(name, value))

    # construction ------------------------------------------------------------------------
    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> "Setting":
        """Build from a mapping of user values (strings or native); unknown keys are errors."""
        known = set(cls.keys())
        values: dict[str, Any] = {}
        for key, value in raw.items():
            key = cls.aliases.get(key, key)
            if key not in known:
                raise SettingError(
                    key, f"unknown key for {cls.__name__}; valid keys: {', '.join(sorted(known))}"
                )
            values[key] = value
        return cls(**values)

    def given(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def as_dict(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        """One row per key: name, default, type/range, doc (for `list --json` and the README)."""
        rows = []
        for f in dataclasses.fields(cls):
            spec: _Spec = f.metadata["spec"]
            d = f.default
            rows.append(
                {
                    "key": f.name,
                    "default": list(d) if isinstance(d, tuple) else d,
                    "type": spec.describe(),
                    "doc": spec.doc,
                }
            )
        return rows


# --------------------------------------------------------------------------- parsing helpers


def parse_assignments(items: Sequence[str]) -> dict[str, str]:
    """Parse ``["D=4", "lambdas=0.4,0.3"]`` into a dict; malformed items are errors."""
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise BadInput(f"malformed assignment {item!r}: expected KEY=VALUE")
        key, value = item.split("=", 1)
        key = key.strip()
        if not key or not key.replace("_", "").isalnum():
            raise BadInput(f"malformed assignment {item!r}: bad key {key!r}")
        if key in out:
            raise BadInput(f"key {key!r} given twice")
        out[key] = value.strip()
    return out


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML settings file.  A top-level table of keys; errors name the file."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInput(f"config file {str(p)!r} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BadInput(f"config file {str(p)!r} is not valid TOML: {msg}") from None
    except OSError as exc:
        raise BadInput(f"config file {str(p)!r} cannot be read: {exc.strerror}") from None
    for k, v in data.items():
        if isinstance(v, dict):
            raise BadInput(f"config file {str(p)!r}: nested table [{k}] is not supported")
    return data


