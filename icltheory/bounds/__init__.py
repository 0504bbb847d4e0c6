"""Rigorous bounds: arb ball arithmetic (python-flint) and certification helpers."""

from ._arb import CERTIFIED as CERTIFIED
from ._arb import REFUTED as REFUTED
from ._arb import UNDECIDED as UNDECIDED
from ._arb import arb_eval as arb_eval
from ._arb import certify_le as certify_le
from ._arb import to_arb as to_arb
from ._search import Certificate as Certificate
from ._search import certify_le_at as certify_le_at
from ._search import lbfgs_minimize as lbfgs_minimize
from ._search import maximize_log as maximize_log
from ._search import spectral_norm_upper as spectral_norm_upper
