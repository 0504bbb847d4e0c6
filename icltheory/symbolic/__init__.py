"""Shared SymPy machinery (Gaussian moments, matrix calculus helpers, exact conversions)."""

from ._gaussian import beta_moments_symbolic as beta_moments_symbolic
from ._gaussian import fourth_moment_contracted as fourth_moment_contracted
from ._gaussian import isserlis as isserlis
from ._gaussian import symmetric_matrix as symmetric_matrix
from ._exact import exact as exact
from ._exact import exact_list as exact_list
from ._lowered import Lowered as Lowered
from ._lowered import lambdify_modules as lambdify_modules
from ._lowered import lowered as lowered
