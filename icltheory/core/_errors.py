"""Errors that the CLI turns into exit codes.

* :class:`BadInput` — the user asked for something impossible (unknown claim, unknown
  or malformed setting key, impossible value).  The CLI prints its message on one line
  and exits with status 2, writing nothing.
* :class:`BeyondReach` — the values given are valid, but the defaults derived from them cannot be
  run (e.g. more steps than any run may take); raised by a claim's ``constants`` and ``measure``
  at such a setting, so nothing hangs on it.  A verdict there is ``inconclusive`` ("not run").
* :class:`NumericalTrouble` — a computation overflowed, diverged or otherwise could not
  produce a number it could stand behind.  The runner turns it into an ``inconclusive``
  verdict naming the reason; it never reaches the user as a traceback.
"""

from __future__ import annotations


class BadInput(ValueError):
    """Invalid user input; the message is one line that names the problem."""


class SettingError(BadInput):
    """A setting key is unknown, malformed or has an impossible value."""

    def __init__(self, key: str, problem: str):
        self.key = key
        self.problem = problem
        super().__init__(f"setting {key!r}: {problem}")


class BeyondReach(RuntimeError):
    """No run at this setting can decide (see ``Setting.beyond_reach``); the message is the
    one-line reason."""


class NumericalTrouble(RuntimeError):
    """Raised inside a check when the numbers can no longer be trusted (overflow, divergence)."""
