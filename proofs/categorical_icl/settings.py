r"""Settings of the categorical-ICL claims (Wang, Convertino, Cheng, Henao, Carin, ICML 2025,
arXiv 2405.17248).

**What runs is what is recorded.**  Every derived default (sample sizes by profile, training
sizes, horizons, depths) is resolved here, so a verdict's ``setting`` re-parses to the run that
produced it.  Plain data only: nothing here imports the theory or the experiments.
"""

from __future__ import annotations

from dataclasses import dataclass

from icltheory.backends import BACKEND_NAMES, get_backend
from icltheory.core import Choice, Float, Floats, Int, Setting, SettingError

__all__ = ["KERNELS", "ERASES", "X_DISTS", "FunctionalGDSetting", "CrossAttentionSetting",
           "ConstructionSetting", "SingleStepSetting", "EquivarianceSetting", "StationaritySetting",
           "TrainingSetting", "ThresholdSetting", "ParameterSetting", "DepthSetting"]

#: head-1 kernels of the update head
KERNELS = ("linear", "exp", "rbf", "laplacian", "softmax")
#: erase-head realisations: softmax over −λ²‖x_j − x_i‖² (rbf) or over λ² x_jᵀx_i (dot)
ERASES = ("rbf", "dot")
#: covariate laws
X_DISTS = ("cube", "gaussian", "sphere", "anisotropic")


def _kernel(default: str = "rbf", sample=True):
    return Choice(default, KERNELS, doc="head-1 kernel (linear|exp|rbf|laplacian|softmax)", sample=sample)


def _xdist(default: str = "cube", sample=True):
    return Choice(default, X_DISTS, sample=sample,
                  doc="covariate law: cube U[-1,1]^d, gaussian N(0,I), unit sphere, anisotropic "
                      "N(0, diag(σ²)) with σ geometric from 2 to 1/2")


def _backend():
    return Choice("numpy", BACKEND_NAMES, doc="array backend of the trainer: forward, backprop and Adam "
                  "(torch: float64, CUDA when present; an optional extra)")


def _sizes(d0: int, dp0: int, c0: int, n0: int, *, dmax: int = 12, nmax: int = 64) -> type:
    """A Setting base with the prompt-size keys d, dprime, C, N and the given defaults."""

    @dataclass(frozen=True, kw_only=True)
    class PromptSizes(Setting):
        d: int = Int(d0, min=1, max=dmax, sample=(1, min(dmax, 6)), doc="covariate dimension")
        dprime: int = Int(dp0, min=1, max=16, sample=(1, 6), doc="embedding dimension d'")
        C: int = Int(c0, min=2, max=64, sample=(2, 12), doc="number of classes")
        N: int = Int(n0, min=1, max=nmax, sample=(2, min(nmax, 12)), doc="context length")

    return PromptSizes


# =============================================================================== exact identities


@dataclass(frozen=True, kw_only=True)
class FunctionalGDSetting(_sizes(3, 2, 4, 6, dmax=6, nmax=16)):
    """Parameter GD on A (explicit, complex-step gradients) against the kernel recursion."""

    K: int = Int(3, min=1, max=6, sample=(1, 4), doc="GD steps")
    x_dist: str = _xdist("gaussian")
    prompts: int | None = Int(None, min=1, max=5000, by_profile=(50, 200, 1000),
                              doc="number of random prompts")


@dataclass(frozen=True, kw_only=True)
class CrossAttentionSetting(Setting):
    """Random f and W_e: the cross-attention's output against W_e softmax(W_eᵀ f)."""

    dprime: int = Int(8, min=1, max=64, sample=(1, 12), doc="embedding dimension d'")
    C: int = Int(25, min=2, max=512, sample=(2, 40), doc="number of classes")
    prompts: int | None = Int(None, min=1, max=100_000, by_profile=(200, 1000, 10_000),
                              doc="number of random query vectors f")
    f_scale: float = Float(3.0, positive=True, max=30.0, sample=(0.1, 6.0),
                           doc="standard deviation of the random f entries")


@dataclass(frozen=True, kw_only=True)
class ConstructionSetting(_sizes(5, 8, 25, 10, nmax=40)):
    """The constructed Transformer against K steps of functional GD (the issue's sizes)."""

    K: int = Int(3, min=1, max=6, sample=(1, 4), doc="number of blocks (GD steps)")
    kernel: str = _kernel("rbf")
    erase: str = Choice("rbf", ERASES, doc="erase-head score: rbf softmax(-λ²‖x_j-x_i‖²) or "
                        "dot softmax(λ² x_jᵀx_i)")
    x_dist: str = _xdist("cube")
    prompts: int | None = Int(None, min=1, max=20_000, by_profile=(300, 1000, 5000),
                              doc="number of random prompts")
    lam: float | None = Float(None, positive=True, max=1e8, doc="erase-head λ (default: large, "
                              "λ² = 200 / smallest squared distance between context points)")
    gamma: str = Choice("diag", ("scalar", "diag", "full"), sample=True,
                        doc="form of the step matrices Γ_k")
    scale: float = Float(1.0, positive=True, max=10.0, sample=(0.2, 2.0),
                         doc="kernel scale s of the update head")


@dataclass(frozen=True, kw_only=True)
class SingleStepSetting(_sizes(5, 8, 25, 10, nmax=40)):
    """One head on centred tokens against one step of functional GD."""

    K: int = Int(1, min=1, max=1, doc="number of GD steps (this claim is about K = 1)")
    kernel: str = _kernel("rbf")
    x_dist: str = _xdist("cube")
    prompts: int | None = Int(None, min=1, max=20_000, by_profile=(300, 1000, 5000),
                              doc="number of random prompts")
    scale: float = Float(1.0, positive=True, max=10.0, sample=(0.2, 2.0), doc="kernel scale s")


# =============================================================================== symmetry


@dataclass(frozen=True, kw_only=True)
class EquivarianceSetting(_sizes(4, 3, 6, 8, dmax=8, nmax=16)):
    """Rotated prompts with transformed parameters; the GD structure without transformation."""

    K: int = Int(2, min=1, max=4, sample=(1, 3), doc="number of blocks")
    kernel: str = _kernel("softmax")
    x_dist: str = _xdist("gaussian", sample=("cube", "gaussian", "sphere"))
    prompts: int | None = Int(None, min=1, max=5000, by_profile=(100, 200, 1000),
                              doc="number of random prompts")
    samples: int = Int(4, min=1, max=32, sample=(1, 4), doc="random orthogonal matrices per group")


@dataclass(frozen=True, kw_only=True)
class StationaritySetting(_sizes(4, 3, 6, 8, dmax=6, nmax=12)):
    """Monte Carlo gradient of the population query loss on and at the optimum of the GD set."""

    K: int = Int(2, min=1, max=3, doc="number of blocks (2: block 2's update reads the E(w_e) that block "
                 "1's cross-attention wrote, the multi-step construction; 1: the single step, where the "
                 "scopes structure and paper coincide)")
    kernel: str = _kernel("softmax", sample=("softmax", "rbf", "linear"))
    x_dist: str = _xdist("gaussian", sample=("gaussian", "cube", "sphere"))
    prompts: int | None = Int(None, min=100, max=200_000, by_profile=(2000, 16_000, 100_000),
                              doc="Monte Carlo antithetic pairs per sample")
    task_scale: float = Float(2.0, positive=True, max=10.0, sample=(0.5, 3.0),
                              doc="task prior f(x)=Ax, A_ab ~ N(0, τ²/d): τ")
    step: float | None = Float(None, positive=True, max=100.0, doc="hand-picked step size: "
                               "Γ_k = step·I is fixed instead of optimised (a negative control)")
    alpha: float = Float(2e-4, positive=True, max=4e-4, doc="family-wise false-fail level of each "
                         "Bonferroni-corrected family of mean tests")
    gamma: str = Choice("full", ("full", "diag"), doc="form of Γ_k in the structured set S "
                        "(diag: the off-diagonal Γ gradient is reported, not claimed)")
    scope: str = Choice("structure", ("structure", "paper"), doc="what is asserted stationary at θ*: "
                        "structure — the GD parametrisation's coordinates and every symmetry-breaking "
                        "direction; paper — every free parameter of the update heads (adds the "
                        "rotation-invariant directions outside S: untied value V_u+V_v and f→f value)")


# =============================================================================== training


def _check_train_sizes_and_backend(s) -> None:
    """A training grid of at least two strictly increasing integers in [16, 100000], and an
    available backend (an unavailable optional backend is a setting error)."""
    if any(v != int(v) or v < 16 or v > 100_000 for v in s.train_sizes) or len(s.train_sizes) < 2:
        raise SettingError("train_sizes", "needs at least two integers in [16, 100000]")
    if list(s.train_sizes) != sorted(set(s.train_sizes)):
        raise SettingError("train_sizes", "must be strictly increasing")
    get_backend(s.backend)


@dataclass(frozen=True, kw_only=True)
class TrainingSetting(Setting):
    """The scaled-down synthetic experiment: GD model against a freely trained Transformer."""

    d: int = Int(10, min=1, max=32, doc="covariate dimension (paper: 10)")
    dprime: int = Int(5, min=1, max=16, doc="embedding dimension d' (paper: 5)")
    C: int = Int(25, min=2, max=64, doc="number of classes (paper: 25)")
    N: int | None = Int(None, min=1, max=256, by_profile=(10, 10, 30),
                        doc="context length (the paper's code uses 125)")
    K: int | None = Int(None, min=1, max=4, by_profile=(1, 1, 2),
                        doc="blocks of the L-comparison (the paper's main table: 2)")
    kernel: str = _kernel("softmax", sample=False)
    x_dist: str = _xdist("cube", sample=False)
    train_sizes: tuple | None = Floats(None, positive=True, max=100_000, max_len=6,
                                       doc="training-set sizes L (default by profile: quick 64,1024; "
                                           "standard 64,2048; thorough 512,2048,8192)")
    steps: int | None = Int(None, min=10, max=20_000, by_profile=(150, 300, 2000),
                            doc="Adam steps per model (paper 5000)")
    prompts: int | None = Int(None, min=64, max=20_000, by_profile=(1024, 2048, 2048),
                              doc="test prompts (paper: 2048)")
    amplitude: float = Float(10.0, positive=True, max=100.0, doc="λ_data of the RBF-bump "
                             "generator (PyTorch code: 10)")
    backend: str = _backend()

    def _resolve(self):
        if self.train_sizes is None:
            self._set("train_sizes", {"quick": (64.0, 1024.0), "standard": (64.0, 2048.0),
                                      "thorough": (512.0, 2048.0, 8192.0)}[self.profile])

    def _validate(self):
        _check_train_sizes_and_backend(self)


@dataclass(frozen=True, kw_only=True)
class ThresholdSetting(Setting):
    """The synthetic table's data thresholds: the GD model and a freely trained K-block
    Transformer, each trained to its early-stopping minimum on L prompts, over an L grid that
    crosses the paper's thresholds."""

    d: int = Int(10, min=1, max=32, doc="covariate dimension (paper: 10)")
    dprime: int = Int(5, min=1, max=16, doc="embedding dimension d' (paper: 5)")
    C: int = Int(25, min=2, max=64, doc="number of classes (paper: 25)")
    N: int | None = Int(None, min=1, max=256, by_profile=(5, 10, 10),
                        doc="context length (the paper's code uses 125)")
    K: int = Int(1, min=1, max=2, doc="blocks of both models (the paper's thresholds: 10000 prompts "
                 "for 1 block, 25000 for 2)")
    kernel: str = Choice("softmax", ("rbf", "softmax"), sample=False, doc="head-1 kernel of the GD model (the paper "
                         "states its thresholds for the RBF and softmax kernels)")
    x_dist: str = _xdist("cube", sample=False)
    train_sizes: tuple | None = Floats(None, positive=True, max=100_000, max_len=8,
                                       doc="training-set sizes L (default by profile and K: quick "
                                           "256,4096,5120; standard 512,4096,8192,32768 (K=2: "
                                           "512,4096,16384,32768); thorough 512,2048,4096,8192,16384,32768)")
    steps: int | None = Int(None, min=100, max=50_000, by_profile=(3000, 6000, 10_000),
                            doc="most Adam steps per model; each stops earlier on its plateau (paper: 5000)")
    prompts: int | None = Int(None, min=256, max=50_000, by_profile=(2048, 8192, 16_384),
                              doc="test prompts (paper: 2048)")
    amplitude: float = Float(10.0, positive=True, max=100.0, doc="λ_data of the RBF-bump "
                             "generator (PyTorch code: 10)")
    backend: str = _backend()

    def _resolve(self):
        if self.train_sizes is None:
            self._set("train_sizes", {"quick": (256.0, 4096.0, 5120.0),
                                      "standard": (512.0, 4096.0, 8192.0, 32768.0) if self.K == 1
                                      else (512.0, 4096.0, 16384.0, 32768.0),
                                      "thorough": (512.0, 2048.0, 4096.0, 8192.0, 16384.0, 32768.0)}[self.profile])

    def _validate(self):
        _check_train_sizes_and_backend(self)


@dataclass(frozen=True, kw_only=True)
class ParameterSetting(Setting):
    """The trained Transformer's attention parameters against the GD stationary point: ``runs``
    Transformers trained to their plateau on ``L_small`` prompts and ``runs`` on ``L_large``
    prompts (independent initialisations and batches, the same prompt pool)."""

    d: int | None = Int(None, min=1, max=32, by_profile=(4, 10, 10), doc="covariate dimension (paper: 10)")
    dprime: int | None = Int(None, min=1, max=16, by_profile=(2, 5, 5), doc="embedding dimension d' (paper: 5)")
    C: int | None = Int(None, min=2, max=64, by_profile=(6, 25, 25), doc="number of classes (paper: 25)")
    N: int | None = Int(None, min=1, max=256, by_profile=(4, 5, 10),
                        doc="context length (the paper's code uses 125)")
    K: int = Int(1, min=1, max=2, doc="blocks of the Transformer (its first block is read)")
    x_dist: str = _xdist("cube", sample=False)
    L_small: int | None = Int(None, min=16, max=100_000, by_profile=(32, 128, 512),
                              doc="training prompts of the first group of runs")
    L_large: int | None = Int(None, min=32, max=100_000, by_profile=(1024, 4096, 8192),
                              doc="training prompts of the second group of runs (more than L_small)")
    runs: int = Int(7, min=7, max=20, doc="Transformers trained per group (at least 7: the exact "
                    "separation test then has level 1/C(2·runs, runs) ≤ 2.9e-4)")
    steps: int | None = Int(None, min=100, max=50_000, by_profile=(2000, 4000, 8000),
                            doc="most Adam steps per run; each stops earlier on its plateau")
    amplitude: float = Float(10.0, positive=True, max=100.0, doc="λ_data of the RBF-bump generator")
    backend: str = _backend()

    def _validate(self):
        if self.L_large <= self.L_small:
            raise SettingError("L_large", f"must exceed L_small={self.L_small} (the trend compares them)")
        get_backend(self.backend)


@dataclass(frozen=True, kw_only=True)
class DepthSetting(Setting):
    """The depth trend of the GD model (more layers help), scaled down: GD models of every depth
    from K to K_deep blocks, each trained from scratch on the same prompts of the synthetic
    generator, compared on test prompts."""

    d: int = Int(10, min=1, max=32, doc="covariate dimension (paper: 10)")
    dprime: int = Int(5, min=1, max=16, doc="embedding dimension d' (paper: 5)")
    C: int = Int(25, min=2, max=64, doc="number of classes (paper: 25)")
    N: int | None = Int(None, min=1, max=256, by_profile=(10, 10, 30), doc="context length (paper: 125)")
    K: int = Int(1, min=1, max=5, doc="blocks of the shallowest GD model")
    K_deep: int | None = Int(None, min=2, max=6, by_profile=(2, 2, 6),
                             doc="blocks of the deepest GD model (every depth from K to K_deep is trained)")
    kernel: str = _kernel("softmax", sample=False)
    x_dist: str = _xdist("cube", sample=False)
    L: int | None = Int(None, min=16, max=100_000, by_profile=(2048, 2048, 2048),
                        doc="training prompts (paper: 2048)")
    steps: int | None = Int(None, min=10, max=20_000, by_profile=(300, 600, 2000),
                            doc="Adam steps per depth (paper 5000)")
    prompts: int | None = Int(None, min=64, max=50_000, by_profile=(16384, 16384, 16384),
                              doc="test prompts (16384 at every profile: one more block gains ≈ 0.006 in "
                                  "accuracy at the quick profile, and the paired bounds over 8192 prompts "
                                  "resolve only gains above ≈ 0.0075)")
    amplitude: float = Float(10.0, positive=True, max=100.0, doc="λ_data of the RBF-bump generator")
    backend: str = _backend()

    def _validate(self):
        if self.K_deep <= self.K:
            raise SettingError("K_deep", f"must exceed K={self.K} (the trend runs from K to K_deep blocks: set K_deep "
                                          f"to at least {self.K + 1})")
        get_backend(self.backend)  # an unavailable optional backend is a setting error
