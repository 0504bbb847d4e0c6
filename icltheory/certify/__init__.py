"""Independent checking of branch-and-bound certificates.

A certificate (:class:`BoxCertificate`) lists boxes that partition a domain, each with the
bound it was given, and a reported bound on the supremum of a quantity over the domain.
:func:`check_certificate` re-checks it with code of its own — exact comparisons and rationals
for the partition, its own outward-rounded interval arithmetic with exponentials from
python-flint ``arb`` for the enclosures, ``arb`` point values to refute a box — and imports
nothing from :mod:`icltheory.bounds` or from any paper's branch and bound.

The domains of the softmax-regression certificates are :class:`SoftmaxPencil` and
:class:`SoftmaxRatio`; a domain supplies its regions, an exact outside test, a box enclosure
and a certified point value.
"""

from ._certificate import KINDS, BoxCertificate
from ._check import CheckReport, check_certificate
from ._softmax import SoftmaxPencil, SoftmaxRatio

__all__ = ["BoxCertificate", "CheckReport", "KINDS", "SoftmaxPencil", "SoftmaxRatio",
           "check_certificate"]
