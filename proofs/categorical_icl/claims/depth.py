"""The depth trend of the synthetic experiment: GD models of every depth, each trained from scratch."""

from __future__ import annotations

import numpy as np

from icltheory.backends import get_backend
from icltheory.core import Claim, Cost, PlantedError, Plot, Prediction, Series, lazy_module, mean_bounds

from ..settings import DepthSetting
from ._common import (SINGLE_TRAINING_NOTE, _BOUNDS_WHY, EXPERIMENTS, REPLICATES, SOURCE, THEORY, _learned, _margin,
                      _not_reproduced, _nothing_learned, _refutable, _three_way, model_blocks, step_work,
                      synthetic_task)

ex = lazy_module("proofs.categorical_icl.experiments")

__all__ = ["Depth"]

#: the total false-fail probability the depth checks share (each of the 2·(K_deep − K) one-sided
#: refuting bounds gets an equal part of it, and at most 2e-4)
_FALSE_FAIL_TOTAL = 4e-4
#: the trainer: Adam from 3e-2 with a cosine decay to 0 (the last steps average out the minibatch
#: noise, so each depth ends near its own training-set minimum), batch 128, clipping at 10, and a
#: validation look every 1/20 of the steps on 2048 prompts (early stopping keeps the best look)
_TRAINER = dict(batch=128, clip=10.0, lr=3e-2, cosine=True)
_LOOKS, _VALIDATION = 20, 2048
#: a deeper model whose training loss ends above the shallower model's (whose function it
#: contains) by at most this share of what training took off the shallower model's loss fell
#: short in its optimisation: its reversal is no refutation (≈ 0.02 nats at the defaults, against
#: ≈ 0.003 between depths seen from optimisation noise; a model never trained is ≈ 1 nat short)
SHORTFALL_SHARE = 0.02

_PAPER = {"L=2048, GD NLL (K=1..4)": [1.058, 0.971, 0.943, 0.924],
          "L=2048, GD accuracy (K=1..6)": [0.702, 0.718, 0.729, 0.731, 0.728, 0.727],
          "scale": "C=25, d'=5, d=10, N=125 (code), 5000 Adam steps, batch 512, GPU"}


def _mispaired_deeper_scores(orig):
    """A planted measurement error: every model deeper than one block is scored against the test
    prompts' label distributions shifted by one prompt (each query paired with its neighbour's)."""
    def test_scores(learner, data, chunk=1024, **kw):
        if learner.K > 1:
            data = type(data)(data.X, data.labels, data.y_query, np.roll(data.p_query, 1, axis=0))
        return orig(learner, data, chunk=chunk, **kw)
    return test_scores


def _untrained_deeper(orig):
    """A planted measurement error: every model deeper than one block trains at learning rate 0."""
    def train(learner, train_set, val_set, rng, **kw):
        return orig(learner, train_set, val_set, rng, **(dict(kw, lr=0.0) if learner.K > 1 else kw))
    return train


def _level(s) -> float:
    """The level of each one-sided bound: two trends (NLL, accuracy) per consecutive pair of depths."""
    return min(2e-4, _FALSE_FAIL_TOTAL / (2 * (s.K_deep - s.K)))


class Depth(Claim):
    id = "catgd.depth"
    #: its estimate ÷ the work measured on the reference machine (benchmarks/bench_estimates.py)
    work_calibration = 4.4
    title = "More layers help: GD models of each depth trained from scratch, test NLL and accuracy (scaled down)"
    source = SOURCE + ", §5 (synthetic experiments, depth table); numbers from the authors' notebooks"
    provenance = "summary's claim"
    setting_type = DepthSetting
    backends = ("numpy", "torch")
    statement = (r"\mathrm{NLL}_{\rm GD}^{(k+1)}<\mathrm{NLL}_{\rm GD}^{(k)},\ "
                 r"\mathrm{acc}_{\rm GD}^{(k+1)}>\mathrm{acc}_{\rm GD}^{(k)}\quad(K\le k<K_{\rm deep},\ \text{same }L)")
    explanation = r"""
The GD model (the construction with learned $W_e$, diagonal steps $\alpha_k$ and kernel scale;
exact δ erase, exact cross-attention) is trained **from scratch at every depth** from `K` to
`K_deep` blocks, as the paper trains each depth: the same `L` prompts of the synthetic RBF-bump
generator, the same initial $W_e$ and kernel scale (every step $\alpha_k$ starts at 1), the same
minibatch order; Adam from 3e-2 with a cosine decay to 0, early stopping on 2048 validation
prompts. Each trained model is scored on the same test prompts against each query's exact label
distribution: the NLL, and the expected top-1 accuracy (the probability that the model's top
class is the sampled label, the 0/1 accuracy averaged over the label's draw: same mean, smaller
variance). Paper ($N=125$, $L=2048$, GPU): GD NLL 1.058, 0.971, 0.943, 0.924 for $K=1..4$,
accuracy 0.702, 0.718, 0.729, 0.731, 0.728, 0.727 for $K=1..6$ (the table notes say both keep
improving from 2 to 6 blocks; the accuracies do not after 4).

Judged for each consecutive pair of depths, NLL and accuracy separately, by two one-sided paired
confidence bounds over the test prompts (Cornish–Fisher quantiles of the studentized mean; the
levels share a false-fail probability of 4e-4): **holds** when every gain is confirmed, **fails**
when a deeper model is significantly worse, otherwise inconclusive. The bounds cover the test
prompts given the trained models. Training's own randomness is controlled by repetition: when
the first comparison shows a depth step not helping at all, the whole comparison is repeated
with 2 independent trainings (fresh initial $W_e$, minibatches and training prompts), and a
refutation must reproduce, significant at the same level, in each. A reversal is not taken as a
refutation when neither model is shown better than predicting every class with probability
$1/C$ (they learned nothing: a task with almost no signal), nor when the deeper model
ended with a training loss (the sampled-label loss the
optimiser minimises, on the training prompts) above the shallower model's by at most 2 % of what
training took off the shallower model's loss: with its extra steps at 0 it computes the
shallower model's function, so its training found a little less than its depth can represent
(an optimisation shortfall, not an effect of depth). A larger shortfall is a failed training and
stays a refutation. Nor is a reversal a refutation when either model overfit before its first
validation look (its early-stopping minimum is not resolved), or when either was still improving
at its last look by at least the reversal's size over the second half of its looks (more
training could close it).
"""
    predictions = {
        "min_depth_nll_gain": Prediction("lower bound on the test-NLL gain of each extra block "
                                         "(more layers help)", kind="lower_bound", wrong=[1.0]),
        "min_depth_accuracy_gain": Prediction("lower bound on the top-1 accuracy gain of each extra block",
                                              kind="lower_bound", wrong=[0.5]),
    }
    planted_errors = (
        PlantedError("theory", "the depth gain bound set to 1 nat", f"{THEORY}._paper:TRAINING_TRENDS",
                     lambda orig: dict(orig, min_depth_nll_gain=1.0)),
        PlantedError("theory", "the accuracy gain bound set to 0.5", f"{THEORY}._paper:TRAINING_TRENDS",
                     lambda orig: dict(orig, min_depth_accuracy_gain=0.5)),
        # bounds about twice what the checks resolve at the quick profile (0.086 nat, 0.044)
        PlantedError("theory", "the depth gain bound set to 0.2 nat", f"{THEORY}._paper:TRAINING_TRENDS",
                     lambda orig: dict(orig, min_depth_nll_gain=0.2)),
        PlantedError("theory", "the accuracy gain bound set to 0.1", f"{THEORY}._paper:TRAINING_TRENDS",
                     lambda orig: dict(orig, min_depth_accuracy_gain=0.1)),
        PlantedError("measurement", "the deeper models scored against their neighbouring prompts' labels",
                     f"{EXPERIMENTS}._training:test_scores", _mispaired_deeper_scores),
        PlantedError("measurement", "the deeper models are never trained (learning rate 0)",
                     f"{EXPERIMENTS}._training:train", _untrained_deeper),
    )

    def constants(self, s):
        from importlib import import_module

        trends = import_module(f"{THEORY}._paper").TRAINING_TRENDS
        return {k: trends[k] for k in ("min_depth_nll_gain", "min_depth_accuracy_gain")}

    def estimate(self, s):
        blocks = sum(model_blocks(K) for K in range(s.K, s.K_deep + 1))
        # training (forward and backward of 128 prompts a step) and the forward-only scoring of the
        # validation looks, the test and the training prompts, per block
        passes = s.steps * 128 + (_LOOKS * _VALIDATION + s.prompts + s.L) / 3
        return Cost(work=0.25 * blocks * passes * step_work(s),
                    memory=8.0 * max(s.L, s.prompts) * (s.N + 1) * (s.d + s.C) * 3)

    def measure(self, s, run):
        tr = ex.training
        lay = ex.model.layout(s.d, s.dprime)
        gen = synthetic_task(s, run)
        val = ex.data.synthetic_dataset(run.rng(2), _VALIDATION, **gen)
        test = ex.data.synthetic_dataset(run.rng(3), s.prompts, **gen)
        xp = get_backend(s.backend)
        cfg = dict(_TRAINER, steps=s.steps, eval_every=max(1, s.steps // _LOOKS), xp=xp)
        out: dict = {"learners": {}, "generator": gen, "uniform_nll": float(np.log(s.C))}  # learners: for re-evaluation
        depths = range(s.K, s.K_deep + 1)

        def trained(streams, what, learners=None):
            train = ex.data.synthetic_dataset(run.rng(*streams[0]), s.L, **gen)
            res = {}
            for j, K in enumerate(depths):
                # from scratch: the same initial W_e and kernel scale, every step at 1, and the
                # same minibatches at every depth
                g = tr.GDLearner(run.rng(*streams[1]), lay, s.C, K, s.kernel)
                # the loss the optimiser minimises (sampled labels) on the training prompts,
                # before training and at the kept parameters
                start = float(tr.evaluate(g, train, xp=xp)[0].mean())
                curve = tr.train(g, train, val, run.rng(*streams[2]), **cfg)
                nll, acc = tr.test_scores(g, test, xp=xp)
                res[f"K={K}"] = {"nll_exact": nll, "accuracy": acc, "curve": curve, "train_loss_start": start,
                                 "train_loss": float(tr.evaluate(g, train, xp=xp)[0].mean()),
                                 "alpha": g.params["alpha"].mean(axis=1).tolist()}
                if learners is not None:
                    learners[f"K={K}"] = g
                run.tick((j + 1) / len(depths) if learners is not None else None,
                         f"{what} the GD model with {K} blocks")
            return res

        out.update(trained(((4,), (5,), (7,)), "training", out["learners"]))
        # A single training run per depth leaves its randomness (initialisation order of the
        # minibatches, the training prompts) uncontrolled.  Where this run shows any depth step
        # not helping at all (a mean NLL or accuracy gain ≤ 0), the comparison is repeated with
        # independent trainings, so that a refutation has to reproduce
        out["replicates"] = []
        reversed_ = any(float(np.mean(out[f"K={k}"]["nll_exact"] - out[f"K={k1}"]["nll_exact"])) <= 0.0
                        or float(np.mean(out[f"K={k1}"]["accuracy"] - out[f"K={k}"]["accuracy"])) <= 0.0
                        for k, k1 in zip(depths, list(depths)[1:]))
        if reversed_:
            for r in range(REPLICATES):
                out["replicates"].append(trained(((52, r), (50, r), (51, r)),
                                                 f"repetition {r + 1} of {REPLICATES}:"))
        return out

    def judge(self, s, predicted, m, ctx):
        ctx.note(self.explanation.strip())
        depths = list(range(s.K, s.K_deep + 1))
        a_each = _level(s)
        ctx.measure("nll", {f"K={K}": float(m[f"K={K}"]["nll_exact"].mean()) for K in depths})
        ctx.measure("accuracy", {f"K={K}": float(m[f"K={K}"]["accuracy"].mean()) for K in depths})
        ctx.measure("train_loss", {f"K={K}": m[f"K={K}"]["train_loss"] for K in depths})
        ctx.evidence["paper"] = _PAPER
        gains: dict = {}
        reps = m.get("replicates") or []
        if reps:
            ctx.evidence["replicates"] = [{f"K={K}": {"nll": float(rep[f"K={K}"]["nll_exact"].mean()),
                                                      "accuracy": float(rep[f"K={K}"]["accuracy"].mean())}
                                           for K in depths} for rep in reps]
        for k, k1 in zip(depths, depths[1:]):
            lo, hi = m[f"K={k}"], m[f"K={k1}"]
            pair = {f"{k} blocks": lo["nll_exact"], f"{k1} blocks": hi["nll_exact"]}
            learned = _learned(pair, m["uniform_nll"], a_each)
            short = hi["train_loss"] - lo["train_loss"]
            progress = lo["train_loss_start"] - lo["train_loss"]
            shortfall = 0 < short <= SHORTFALL_SHARE * progress
            curves = {f"the {K}-block model": r["curve"] for K, r in ((k, lo), (k1, hi))}
            for what, key, gain in (("NLL", "min_depth_nll_gain", lo["nll_exact"] - hi["nll_exact"]),
                                    ("accuracy", "min_depth_accuracy_gain", hi["accuracy"] - lo["accuracy"])):
                pred = float(predicted[key])
                bd = mean_bounds(gain, a_lower=a_each, a_upper=a_each)
                gains[f"{what} K={k}→{k1}"] = {"mean": float(gain.mean()), "lower": bd.lower, "upper": bd.upper}
                confirmed, refuted = bd.lower > pred, bd.upper < pred
                detail = bd.reason
                if refuted and shortfall:
                    refuted, detail = False, (
                        f"reversed, but the {k1}-block model ended with a training loss {short:.3g} above the "
                        f"{k}-block model's ({hi['train_loss']:.4f} against {lo['train_loss']:.4f}), whose "
                        "function it computes with its extra step at 0: an optimisation shortfall (within "
                        f"{SHORTFALL_SHARE:.0%} of the {progress:.3g} training took off the {k}-block "
                        "model's loss), so this is no evidence against depth")
                elif refuted:
                    # a reversal between models still improving at their last look is no evidence
                    # when one of them was still gaining as much over the second half of its looks
                    # (more training could close it): the reversal's size, in NLL (for accuracy its
                    # size in accuracy, set against the same NLL gain: a model whose validation NLL
                    # still falls by that much is not done)
                    by = pred - bd.upper
                    refuted, why = _refutable(True, curves, by=by)
                    detail = why or detail
                    if refuted and short > 0:
                        detail = (f"the {k1}-block model's training loss is {short:.3g} above the {k}-block model's, "
                                  f"more than {SHORTFALL_SHARE:.0%} of the {progress:.3g} training took off the "
                                  f"{k}-block model's loss: its training failed, or the comparison is broken")
                if refuted and not learned:
                    refuted, detail = False, "reversed, but " + _nothing_learned(pair, m["uniform_nll"])
                for r, rep in enumerate(reps):
                    if not refuted:
                        break
                    rl, rh = rep[f"K={k}"], rep[f"K={k1}"]
                    g_r = (rl["nll_exact"] - rh["nll_exact"]) if what == "NLL" else (rh["accuracy"] - rl["accuracy"])
                    b_r = mean_bounds(g_r, a_lower=a_each, a_upper=a_each)
                    if not (b_r.ok and b_r.upper < pred):
                        refuted, detail = False, _not_reproduced(r, len(reps), b_r.upper)
                better = "below" if what == "NLL" else "above"
                ctx.condition(
                    f"{what} with {k1} blocks {better} {k} blocks (gain > {pred:g})",
                    _three_way(confirmed, refuted) if bd.ok else None, key=key,
                    measured=gains[f"{what} K={k}→{k1}"],
                    why=f"one-sided paired confidence bounds ({a_each:g} each) over {len(gain)} test prompts; "
                        f"{_BOUNDS_WHY}", false_fail=a_each, detail=detail,
                    margin=_margin(bd.upper, float(gain.mean()), pred),
                    tolerance={"level_each": a_each, "n": bd.moments.n, "stderr": bd.moments.stderr})
        if not reps and any(c.passed is False for c in ctx.checks):
            ctx.note(SINGLE_TRAINING_NOTE)
        ctx.measure("depth_gains", gains)
        ctx.note(f"Scale: N={s.N}, L={s.L}, d={s.d}, d'={s.dprime}, C={s.C}, at most {s.steps} Adam steps "
                 "(batch 128) per depth, against the paper's N=125, L=2048, 5000 steps, batch 512 (GPU). "
                 "Compare trends, not numbers.")
        nll = [float(m[f"K={K}"]["nll_exact"].mean()) for K in depths]
        ctx.plot(Plot(f"Test scores against depth (N={s.N}, L={s.L})", "blocks K", "exact-label test NLL",
                      series=[Series(depths, nll, "test NLL", "dotted"), Series(depths, nll, None, "points")],
                      caption="Each depth trained from scratch on the same prompts; expected top-1 accuracy: "
                              + ", ".join(f"K={K}: {float(m[f'K={K}']['accuracy'].mean()):.4f}" for K in depths)))
        ctx.plot(Plot(f"GD model training (validation NLL), N={s.N}, L={s.L}", "Adam step", "validation NLL",
                      series=[Series([c[0] for c in m[f"K={K}"]["curve"]], [c[2] for c in m[f"K={K}"]["curve"]],
                                     f"K={K}", "line") for K in depths]))
