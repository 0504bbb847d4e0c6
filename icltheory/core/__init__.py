"""The verifier core: settings, claims, derivations, checks, verdicts and the registry."""

from ._claim import PROFILES as PROFILES
from ._claim import Claim as Claim
from ._claim import run_check as run_check
from ._claim import versions as versions
from ._derivation import Derivation as Derivation
from ._derivation import Step as Step
from ._derivation import verify_identity as verify_identity
from ._errors import BadInput as BadInput
from ._errors import NumericalTrouble as NumericalTrouble
from ._errors import SettingError as SettingError
from ._registry import all_claims as all_claims
from ._registry import get_claim as get_claim
from ._registry import resolve_claims as resolve_claims
from ._setting import Choice as Choice
from ._setting import Float as Float
from ._setting import Floats as Floats
from ._setting import Int as Int
from ._setting import Setting as Setting
from ._setting import Text as Text
from ._setting import load_toml as load_toml
from ._setting import parse_assignments as parse_assignments
from ._verdict import Check as Check
from ._verdict import CheckContext as CheckContext
from ._verdict import Plot as Plot
from ._verdict import Series as Series
from ._verdict import Verdict as Verdict
