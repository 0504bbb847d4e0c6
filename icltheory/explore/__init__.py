"""Exploring a claim's settings: search for a counterexample (:func:`refute`) and find where
the verdict changes along one key (:func:`boundary`).

Both run ordinary checks (:func:`icltheory.core.run_check`) at settings they choose, so every
verdict they report is one ``icltheory check`` reproduces; the margin that steers them is the
verdict's distance from failing in units of its own tolerances (:func:`verdict_margin`).
"""

from ._boundary import Boundary as Boundary
from ._boundary import boundary as boundary
from ._boundary import write_boundary as write_boundary
from ._margin import check_margin_of as check_margin_of
from ._margin import verdict_margin as verdict_margin
from ._refute import Refutation as Refutation
from ._refute import refute as refute
from ._refute import reproduce_command as reproduce_command
from ._refute import search_once as search_once

__all__ = ["Boundary", "boundary", "write_boundary", "check_margin_of", "verdict_margin",
           "Refutation", "refute", "reproduce_command", "search_once"]
