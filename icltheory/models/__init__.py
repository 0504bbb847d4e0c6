"""Numeric models (numpy): the attention models the papers study, and their exact reductions."""

from . import _linear_attention as linear_attention  # noqa: F401
from . import _categorical as categorical  # noqa: F401
from . import _separate_training as separate_training  # noqa: F401
from . import _softmax_attention as softmax_attention  # noqa: F401
