"""icltheory — a symbolic-numeric verifier for theorems about in-context learning.

Public API (everything the CLI can do, Python can do)::

    import icltheory as it
    claim = it.get_claim("linattn.merged.sigmoid")
    setting = claim.setting({"D": 4, "N": 31, "w_init": 1e-3})
    it.run_check(claim, setting).verdict        # 'holds' | 'fails' | 'inconclusive'
    it.write_reports([verdict], "reports/")
"""

__version__ = "0.1.0"

from .core import BadInput as BadInput
from .core import Check as Check
from .core import CheckContext as CheckContext
from .core import Claim as Claim
from .core import Derivation as Derivation
from .core import NumericalTrouble as NumericalTrouble
from .core import Plot as Plot
from .core import Series as Series
from .core import Setting as Setting
from .core import SettingError as SettingError
from .core import Verdict as Verdict
from .core import all_claims as all_claims
from .core import get_claim as get_claim
from .core import run_check as run_check
from .report import write_reports as write_reports
