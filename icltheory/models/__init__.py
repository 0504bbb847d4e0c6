"""Numeric models (numpy): the attention models the papers study, and their exact reductions."""

from . import _categorical as categorical  # noqa: F401
