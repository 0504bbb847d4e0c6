"""Dynamics machinery: plateau detection, ODE integration with events, GD drivers."""

from ._plateaus import Plateau as Plateau
from ._plateaus import crossing_times as crossing_times
from ._plateaus import detect_plateaus as detect_plateaus
from ._plateaus import first_crossing as first_crossing
from ._flow import FlowSolution as FlowSolution
from ._flow import integrate_flow as integrate_flow
