"""The claims of the nonlinear-regression paper (and of the blog summary of it)."""

from .finite import FinalAttention, Oscillation
from .isotropic import Asymptote, TwoPhase
from .lemma_table import SummaryLemmaRate, SummaryTable
from .scaling import LScaling, Rescaling, SummaryFastRate
from .summary import SummaryExponentialRise, SummarySinglePhase
from .undecidable import Regimes, SummaryThreshold

__all__ = ["CLAIMS", "Rescaling", "LScaling", "SummaryFastRate", "SummaryThreshold", "TwoPhase",
           "Asymptote", "Oscillation", "FinalAttention", "Regimes", "SummaryExponentialRise",
           "SummarySinglePhase", "SummaryLemmaRate", "SummaryTable"]

CLAIMS = (
    Rescaling(),
    LScaling(),
    SummaryFastRate(),
    SummaryThreshold(),
    TwoPhase(),
    Asymptote(),
    Oscillation(),
    FinalAttention(),
    Regimes(),
    SummaryExponentialRise(),
    SummarySinglePhase(),
    SummaryLemmaRate(),
    SummaryTable(),
)
