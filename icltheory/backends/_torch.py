r"""Optional PyTorch backend: float64 tensors, CUDA when available.

Imported lazily; without torch, :meth:`TorchBackend.available` says so and the setting that
asked for it is rejected with an install hint.  Determinism: float64,
``torch.use_deterministic_algorithms(True)``.  The kernels this project runs are small (tens to
thousands of entries per operation), so by default torch runs them on one CPU thread: its
thread pool costs more than it gains there (≈ 100× slower on a loaded two-core machine).
"""

from __future__ import annotations

import numpy as np

from ._base import Backend

__all__ = ["TorchBackend"]


class TorchBackend(Backend):
    name = "torch"

    def __init__(self, threads: int | None = 1) -> None:
        import torch

        torch.use_deterministic_algorithms(True)
        if threads is not None:
            torch.set_num_threads(threads)
        self._torch = torch
        self._device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    @classmethod
    def available(cls) -> tuple[bool, str]:
        try:
            import torch  # noqa: F401
        except ImportError:
            return False, "needs PyTorch: pip install 'icltheory[torch]' (torch==2.13.0 is the CPU build)"
        except Exception as exc:  # a broken install (e.g. missing shared libraries)
            return False, f"needs a working PyTorch; importing it failed: {type(exc).__name__}"
        return True, ""

    @property
    def float64(self):
        return self._torch.float64

    @property
    def device(self):
        return self._device

    def asarray(self, a):
        if isinstance(a, self._torch.Tensor):
            return a.detach().to(device=self._device, dtype=self._torch.float64).clone()
        return self._torch.tensor(np.asarray(a, dtype=np.float64), dtype=self._torch.float64,
                                  device=self._device)

    def asindex(self, a):
        if isinstance(a, self._torch.Tensor):
            return a.to(device=self._device, dtype=self._torch.long)
        return self._torch.as_tensor(np.asarray(a, dtype=np.int64), device=self._device)

    def einsum(self, spec, *operands):
        return self._torch.einsum(spec, *operands)

    def zeros(self, shape):
        return self._torch.zeros(shape, dtype=self._torch.float64, device=self._device)

    def swapaxes(self, a, i, j):
        return self._torch.transpose(a, i, j)

    def stack(self, arrays, axis=0):
        return self._torch.stack(list(arrays), dim=axis)

    def concatenate(self, arrays):
        return self._torch.cat(list(arrays))

    def diagonal(self, a):
        return self._torch.diagonal(a)

    def exp(self, a):
        return self._torch.exp(a)

    def sqrt(self, a):
        return self._torch.sqrt(a)

    def abs(self, a):
        return self._torch.abs(a)

    def sign(self, a):
        return self._torch.sign(a)

    def softmax(self, a, axis=-1):
        return self._torch.softmax(a, dim=axis)

    def log_softmax(self, a, axis=-1):
        return self._torch.log_softmax(a, dim=axis)

    def sum(self, a, axis=None, keepdims=False):
        if axis is None:
            total = self._torch.sum(a)
            return total.reshape((1,) * a.ndim) if keepdims else total
        return self._torch.sum(a, dim=axis, keepdim=keepdims)

    def mean(self, a, axis=None):
        return self._torch.mean(a) if axis is None else self._torch.mean(a, dim=axis)

    def amin(self, a, axis):
        return self._torch.amin(a, dim=axis)

    def all_finite(self, a) -> bool:
        return bool(self._torch.isfinite(a).all())

    def to_numpy(self, a) -> np.ndarray:
        if isinstance(a, self._torch.Tensor):
            return a.detach().cpu().numpy()
        return np.asarray(a)
