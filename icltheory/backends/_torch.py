r"""Optional PyTorch backend: autograd gradients, float64, CUDA when available.

Imported lazily; without torch, :meth:`TorchBackend.available` says so and the setting that
asked for it is rejected with an install hint.  Determinism: float64,
``torch.use_deterministic_algorithms(True)``.
"""

from __future__ import annotations

import numpy as np

from ..models._linear_attention import run_gd_loop
from ._base import Backend

__all__ = ["TorchBackend"]


class TorchBackend(Backend):
    name = "torch"

    @classmethod
    def available(cls) -> tuple[bool, str]:
        try:
            import torch  # noqa: F401
        except ImportError:
            return False, "needs PyTorch: pip install 'icltheory[torch]' (torch==2.13.0 is the CPU build)"
        except Exception as exc:  # a broken install (e.g. missing shared libraries)
            return False, f"needs a working PyTorch; importing it failed: {type(exc).__name__}"
        return True, ""

    @staticmethod
    def device():
        import torch

        return torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def train_quadratic(self, model, moments, params, *, lr, steps, record_every=1,
                        keep_theta=False, blowup=1e6):
        import torch

        torch.use_deterministic_algorithms(True)
        dev = self.device()
        T = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64), device=dev)  # noqa: E731
        C, g, s = T(moments.C), T(moments.g), float(moments.s)
        p = {k: T(v).clone().requires_grad_(True) for k, v in params.items()}
        names = sorted(p)

        def mse(theta):
            return torch.einsum("si,ij,sj->s", theta, C, theta) - 2 * theta @ g + s

        def step(theta):
            grads = torch.autograd.grad(0.5 * mse(theta).sum(), [p[n] for n in names])
            with torch.no_grad():
                for n, gr in zip(names, grads):
                    p[n] -= lr * gr

        return run_gd_loop(lambda: model.theta(p, einsum=torch.einsum), mse, step, lambda: p,
                           steps=steps, record_every=record_every, keep_theta=keep_theta,
                           blowup=blowup, to_numpy=lambda a: a.detach().cpu().numpy())
