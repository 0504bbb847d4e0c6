"""What several categorical-ICL claims share: the source line, tolerances and their reasons,
the planted errors on the shared theory and experiment code."""

from __future__ import annotations

import numpy as np

from icltheory.core import PlantedError, lazy_module, mean_bounds

theory = lazy_module("proofs.categorical_icl.theory")

__all__ = ["SOURCE", "EXACT_WHY", "THEORY", "EXPERIMENTS", "term_size", "embedding_size", "SOFTMAX_TEMPERATURE_THEORY",
           "SCORE_TEMPERATURE_EXPERIMENT", "KERNEL_SCALE_THEORY", "step_work", "synthetic_task"]

SOURCE = "Wang et al., ICML 2025, arXiv 2405.17248"
EXACT_WHY = ("exact identity evaluated in float64: a few hundred flops per entry give round-off "
             "~1e-15; 1e-10 leaves five orders of margin and still rejects any real discrepancy")
THEORY = "proofs.categorical_icl.theory"
EXPERIMENTS = "proofs.categorical_icl.experiments"


def term_size(kernel: str, X: np.ndarray, N: int, scale: float, gammas, W: np.ndarray) -> np.ndarray:
    r"""Per-prompt size of the terms functional GD sums into the ``f`` slots,
    :math:`K\max_j\sum_i|\tilde\kappa_{ji}|\,\max_k\lVert\Gamma_k\rVert_2\,2\max_c\lVert w_{e,c}\rVert`:
    float64 round-off of an ``f`` slot is relative to it, whatever its scale (the exp kernel can
    make it ~1e9, a small linear-kernel scale ~1e-6).  Not floored at 1: an absolute floor would
    turn the 1e-10 relative resolution into an absolute one, blind to a relative error of the
    terms where they are small.  (The smallest positive float where every term is 0: both sides
    are then exactly 0.)"""
    kap = theory.paper().kernel(kernel, X, X[:, :N], scale)
    size = (np.abs(kap).sum(-1).max(-1) * max(np.linalg.norm(G, 2) for G in gammas)
            * 2 * np.linalg.norm(W, axis=0).max() * len(gammas))
    return np.maximum(size, np.finfo(float).tiny)


def embedding_size(W: np.ndarray) -> float:
    r""":math:`\max_c\lVert w_{e,c}\rVert`: the size of a ``v`` slot (a convex combination of the
    embeddings), to which its float64 round-off is relative."""
    return float(np.linalg.norm(W, axis=0).max())


#: the two sides' float64 round-off, each about the theory's own (measured against its long-double
#: evaluation), allowed 10× each
ROUNDOFF_MARGIN = 20.0


def roundoff_tolerance(floor: float) -> tuple[float, str]:
    """(tolerance, why) of an exact identity between a model and the functional-GD recursion:
    1e-10, or ROUNDOFF_MARGIN × ``floor`` where the recursion's own float64 round-off — measured
    as its distance from the same recursion in long double — is larger (the softmax over
    W_eᵀf amplifies round-off over the K steps: a setting with large iterates reaches 1e-10
    from float64 arithmetic alone)."""
    tol = max(1e-10, ROUNDOFF_MARGIN * floor)
    why = (EXACT_WHY + f"; the recursion's own float64 round-off, measured against its long-double "
           f"evaluation, is {floor:.2g}" + (f", so the tolerance is {ROUNDOFF_MARGIN:g}× that (both sides' "
                                             "round-off, 10× each)" if tol > 1e-10 else " (below 1e-10 / 20)"))
    return tol, why


def _hot(orig):
    return lambda z: orig(2.0 * z)


#: the theory's normalised exponential at temperature 1/2 (E(w_e), readout, softmax kernel)
SOFTMAX_TEMPERATURE_THEORY = PlantedError(
    "theory", "the theory's softmax at the wrong temperature (logits doubled)",
    f"{THEORY}._paper:_normalise_exp", _hot)


def _score_hot(orig):
    def scores(kind, q, k, *rest):
        return orig(kind, np.sqrt(2.0) * q, np.sqrt(2.0) * k, *rest)
    return scores


#: the experiment's attention scores at the wrong temperature (every self-attention head)
SCORE_TEMPERATURE_EXPERIMENT = PlantedError(
    "measurement", "the attention heads' scores at the wrong temperature (q, k scaled by √2)",
    f"{EXPERIMENTS}._model:_scores", _score_hot)


def _warm(orig):
    return lambda z: orig((1.0 + 1e-8) * z)


#: the same softmax with its logits 1e-8 too large: an error of the size the 1e-10 checks resolve
SOFTMAX_SLIGHTLY_HOT_THEORY = PlantedError(
    "theory", "the theory's softmax logits 1e-8 too large", f"{THEORY}._paper:_normalise_exp", _warm)


def _score_warm(orig):
    def scores(kind, q, k, *rest):
        return orig(kind, (1.0 + 1e-8) * q, k, *rest)
    return scores


#: the experiment's queries 1e-8 too large (every self-attention head)
SCORE_SLIGHTLY_HOT_EXPERIMENT = PlantedError(
    "measurement", "the attention heads' queries 1e-8 too large", f"{EXPERIMENTS}._model:_scores", _score_warm)


def _kernel_scaled(orig):
    def kernel(self, kernel, Xq, Xk, scale):
        return orig(self, kernel, Xq, Xk, 2.0 * scale)
    return kernel


#: the theory's kernel at twice the scale s
KERNEL_SCALE_THEORY = PlantedError("theory", "the theory's kernel κ̃ at scale 2s",
                                   f"{THEORY}._paper:Paper.kernel", _kernel_scaled)


def _kernel_scaled_slightly(orig):
    def kernel(self, kernel, Xq, Xk, scale):
        return orig(self, kernel, Xq, Xk, (1.0 + 1e-8) * scale)
    return kernel


#: the same kernel at a scale 1e-8 too large: an error of the size the 1e-10 checks resolve
KERNEL_SCALE_SLIGHTLY_THEORY = PlantedError("theory", "the theory's kernel κ̃ at scale (1 + 1e-8)s",
                                            f"{THEORY}._paper:Paper.kernel", _kernel_scaled_slightly)


# ----------------------------------------------------------------- the trained models' bounds

#: the level of each one-sided confidence bound in the trained-model claims (training, depth,
#: data thresholds); a claim's false-fail probability is this times its number of bounds
_A = 2e-4
_BOUNDS_WHY = ("bounds: the studentized mean's Cornish–Fisher quantiles at the sample's skewness and "
               "kurtosis (undecided when the sample is too skewed or heavy-tailed for its size)")


def _margin(bound: float, mean: float, threshold: float) -> float | None:
    """How far a one-sided refutation is: the refuting bound's distance to the threshold over its
    distance to the mean (0 when the bound reaches the threshold, negative when it passed it)."""
    half = abs(bound - mean)
    return (bound - threshold) / half * (1.0 if bound >= mean else -1.0) if half > 0 else None


def _overfit_before_first_look(curve) -> bool:
    """True when the validation NLL already rises after the first evaluation: the model overfit
    inside the first evaluation interval, so early stopping kept whatever the first look caught
    and the grid does not resolve the trained minimum.  Such a model's NLL can confirm a trend
    it is conservative for, never refute one (a flat curve, e.g. an untrained model, is
    resolved: there is nothing between the looks to miss)."""
    vals = [c[2] for c in curve]
    return len(vals) >= 2 and vals[0] <= min(vals) and vals[1] > vals[0]


def _three_way(confirmed: bool, refuted: bool):
    """A trend check: True when the confidence bound confirms it, False when the opposite bound refutes it
    (the trend is significantly reversed), None (undecided) when neither: one training run per
    model decides only what the test prompts resolve, and an unresolved trend is no evidence
    against the paper."""
    return True if confirmed else (False if refuted else None)


def _late_gain(curve) -> float:
    """How much a model still improving at its last validation look (its best look is the last:
    the step cap, not early stopping, ended it) gained over the second half of its looks; 0 for
    a model whose best look came earlier."""
    vals = [c[2] for c in curve]
    if len(vals) < 2 or vals[-1] > min(vals):
        return 0.0
    return float(vals[len(vals) // 2 - 1] - vals[-1])


def _refutable(refuted: bool, models: dict, by: float | None = None) -> tuple[bool, str]:
    """A refutation stands only if every model it relies on (those whose under-training would
    push the statistic towards the refutation; ``models``: name → its curve, or (curve, weight):
    how much a unit of its NLL moves the statistic) resolved its early-stopping point, and —
    with ``by``, how far the refuting bound passed its threshold (NLL units) — only if no such
    model still improving at its last look gained as much (× its weight) over the second half
    of its training: another stretch of training could then close the reversal (a trend between
    trained models is not refuted by one still training)."""
    curves = {n: (c if isinstance(c, tuple) else (c, 1.0)) for n, c in models.items()}
    bad = [name for name, (curve, _) in curves.items() if _overfit_before_first_look(curve)]
    if refuted and bad:
        return False, (f"reversed in this run, but {', '.join(bad)} overfit before the first "
                       "validation look (its early-stopping minimum is not resolved): no refutation")
    if refuted and by is not None:
        still = [(name, w * _late_gain(curve)) for name, (curve, w) in curves.items() if w * _late_gain(curve) >= by]
        if still:
            return False, ("reversed in this run by " + f"{by:.3g}, but " + ", ".join(
                f"{n} was still improving at its last look ({g:.3g} over the second half of its training)"
                for n, g in still) + ": more training could close it, no refutation")
    return refuted, ""


#: independent repetitions of a trained-model comparison (fresh initialisations, minibatches and
#: training prompts; the same validation and test prompts), run when the first comparison shows a
#: trend reversed outright: a refutation must reproduce, significant at the same level, in each
REPLICATES = 2


def _learned(nll_exact: dict, uniform_nll: float, level: float) -> bool:
    """Whether any of the models (name → per-prompt exact-label NLL) is shown better than the
    uniform prediction (NLL ln C) by a one-sided bound at ``level``: when none is, none learned
    anything from its prompts (a task with almost no signal, or too few prompts) and their
    comparison refutes nothing; one that did learn against one left behind is a real reversal
    (or a broken model)."""
    for nll in nll_exact.values():
        b = mean_bounds(nll - uniform_nll, a_lower=level, a_upper=level)
        if b.ok and b.upper < 0.0:
            return True
    return False


def _nothing_learned(nll_exact: dict, uniform_nll: float) -> str:
    """Why a reversal between models that learned nothing (:func:`_learned`) refutes nothing."""
    return ("neither model is shown better than the uniform prediction (NLL "
            + " and ".join(f"{float(np.mean(v)):.4g} ({k})" for k, v in nll_exact.items())
            + f" against ln C = {uniform_nll:.4g}): they learned nothing from their prompts, so their "
              "comparison refutes nothing")


#: said of a refutation made without independent repetitions (the measurement repeats the
#: trainings only when the claim's own trend reverses in the first one: it does not see --predict)
SINGLE_TRAINING_NOTE = ("A refutation here rests on one training per model: the independent repetitions run only "
                        "when the claim's own trend reverses in the first training (the measurement does not see "
                        "a --predict value), so the stated false-fail probability covers the test prompts, not "
                        "the training's randomness.")


def _not_reproduced(r: int, n: int, bound: float) -> str:
    """Why a reversal that independent repetition ``r`` of ``n`` does not show refutes nothing."""
    return (f"reversed in the first training, but not significantly in independent repetition {r + 1} of "
            f"{n} (its bound {bound:.3g}): training randomness can explain it, no refutation")


def _tol(b, level: float = _A) -> dict:
    mo = b.moments
    return {"level_each": level, "n": mo.n, "stderr": mo.stderr, "skewness": mo.skewness,
            "kurtosis": mo.kurtosis, "corrections": list(b.corrections)}


def untrained(learner_class: str):
    """A planted measurement error: the trainer runs learners of ``learner_class`` at learning
    rate 0 (they keep their initial parameters)."""
    def wrap(orig):
        def train(learner, train_set, val_set, rng, **kw):
            if type(learner).__name__ == learner_class:
                kw = dict(kw, lr=0.0)
            return orig(learner, train_set, val_set, rng, **kw)
        return train
    return wrap


# ------------------------------------------------------------------ the trained models' settings


def step_work(s) -> float:
    """Work of one prompt's forward and backward pass through one block of the trained models
    (the estimates of the trained-model claims multiply it by blocks, steps and batch)."""
    D = s.d + 3 * s.dprime
    return (s.N + 1) * (s.N * D * 6 + D * D * 12 + s.C * D * 4) * 3


def model_blocks(K: int) -> float:
    """Blocks' worth of work in a pass of a K-block model as training and evaluation run it (the
    estimates multiply :func:`step_work` by it): the last block runs on the query row alone (its
    keys and values still on every context row), about half a block."""
    return K - 0.5


def synthetic_task(s, run) -> dict:
    """The synthetic generator's arguments for the setting ``s``: the true label embedding is
    drawn from the run's stream 1 (every trained-model claim draws it there)."""
    W_true = run.rng(1).standard_normal((s.dprime, s.C))
    return dict(d=s.d, N=s.N, W_true=W_true, amplitude=s.amplitude, x_dist=s.x_dist)

