r"""Optional PyTorch backend: autograd gradients, float64, CUDA when available.

Imported lazily; without torch, :meth:`TorchBackend.available` says so and the setting that
asked for it is rejected with an install hint.  Determinism: float64,
``torch.use_deterministic_algorithms(True)``.
"""

from __future__ import annotations

import numpy as np

from ..models._linear_attention import TrainResult
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

        rec_steps, rec_loss, hist = [], [], []
        limit, diverged = None, None
        for k in range(steps + 1):
            theta = model.theta(p, einsum=torch.einsum)
            loss = mse(theta)
            if k % record_every == 0 or k == steps:
                lv = loss.detach().cpu().numpy()
                if limit is None:
                    limit = blowup * max(float(np.max(lv)), 1e-300)
                if not np.all(np.isfinite(lv)) or np.max(lv) > limit:
                    diverged = k
                    break
                rec_steps.append(k)
                rec_loss.append(lv)
                if keep_theta:
                    hist.append(theta.detach().cpu().numpy().copy())
            if k == steps:
                break
            grads = torch.autograd.grad(0.5 * loss.sum(), [p[n] for n in names])
            with torch.no_grad():
                for n, gr in zip(names, grads):
                    p[n] -= lr * gr
        out = {k: v.detach().cpu().numpy() for k, v in p.items()}
        return TrainResult(np.asarray(rec_steps), np.asarray(rec_loss).T, out, hist, diverged)
