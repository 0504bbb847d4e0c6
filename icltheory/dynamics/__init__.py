"""Dynamics machinery: the one GD driver, ODE integration with events (SciPy's solvers stepped
one by one, and a lockstep batch of adaptive NDF rows with the caller's linear algebra), the
comparison of a run with its re-solve, plateau detection, threshold times and scaling fits."""

from ._driver import Trace as Trace
from ._driver import run_gd as run_gd

from ._plateaus import Plateau as Plateau
from ._plateaus import detect_plateaus as detect_plateaus
from ._flow import FlowSolution as FlowSolution
from ._flow import integrate_flow as integrate_flow
from ._scaling import LogLogFit as LogLogFit
from ._scaling import local_slopes as local_slopes
from ._scaling import loglog_fit as loglog_fit
from ._scaling import slope_allowance as slope_allowance
from ._scaling import threshold_times as threshold_times
from ._plateaus import slowest_point as slowest_point
from ._plateaus import slowest_point_level as slowest_point_level
from ._adaptive import AdaptiveSolution as AdaptiveSolution
from ._adaptive import SolverWork as SolverWork
from ._adaptive import integrate_adaptive as integrate_adaptive
from ._adaptive import adaptive_work as adaptive_work
from ._adaptive import compare_solutions as compare_solutions
from ._adaptive import RunDifference as RunDifference
from ._plateaus import EventPlateau as EventPlateau
from ._plateaus import plateaus_between_events as plateaus_between_events
from ._batched import integrate_batch as integrate_batch
from ._batched import BatchRun as BatchRun
from ._batched import DenseNewton as DenseNewton
from ._batched import batch_work as batch_work
from ._batched import BLAS3_WORK as BLAS3_WORK
