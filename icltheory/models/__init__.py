"""Numeric models (numpy): the attention models the papers study, and their exact reductions."""

from . import _softmax_regression as softmax_regression  # noqa: F401
from . import _categorical as categorical  # noqa: F401
