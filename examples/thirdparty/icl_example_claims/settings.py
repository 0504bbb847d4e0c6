"""The setting of the one-step-GD claim."""

from __future__ import annotations

from dataclasses import dataclass

from icltheory.core import Float, Floats, Int, Setting

__all__ = ["OneStepSetting"]


@dataclass(frozen=True, kw_only=True)
class OneStepSetting(Setting):
    """x_n, x_q ~ N(0, λI_D), w ~ N(0, I_D), y = wᵀx; prediction ŷ_q = η βᵀx_q, β = Σ y_n x_n / N."""

    D: int = Int(3, min=1, max=64, sample=(1, 6), doc="input dimension")
    N: int = Int(10, min=1, max=10_000, sample=(1, 40), doc="context length")
    lam: float = Float(1.0, positive=True, max=1e3, sample=(0.2, 3.0, "log"),
                       doc="input variance λ (Λ = λI)")
    etas: tuple = Floats((0.25, 0.5, 1.0), min=0.0, max=1e3, max_len=16,
                         doc="step sizes η at which the loss is measured (in units of 1/λ)")
    P: int | None = Int(None, min=100, max=10_000_000, by_profile=(20_000, 200_000, 1_000_000),
                        doc="Monte Carlo sequences (default by profile)")
