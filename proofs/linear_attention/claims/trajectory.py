r"""Fig. 1 as trajectory against trajectory: the whole ATTN_M layer trained by GD and its two-layer
network trained by GD from corresponding weights have the same training loss at every step.

Measured (:mod:`..experiments._trajectory`): both models trained on one training set (sequences
drawn with Fig. 1's spectrum in a random eigenbasis, and their label-negated copies), each by
its own code — the attention layer's hand-written back-propagation through $W^VXX^\top W^{KQ}X$
on the full $(D+1)\times(D+1)$ matrices, the network on $z=\operatorname{vec}(\beta x_q^\top)$
built from the context alone.  Judged: the two loss curves and the two weight trajectories
agree to float64 rounding at every step, the entries the reduction needs at zero stay there,
and the normalisation of β that makes the network's output the attention's is the predicted
one.  Predicted (:mod:`..theory._equivalence`): the reduction and its training form (the
irrelevant blocks' gradients are odd in the labels; the relevant ones are the network's)."""

from __future__ import annotations

import numpy as np

from icltheory.core import Claim, Cost, PlantedError, Plot, Prediction, Series, lazy_module, source_edit

from ..settings import TrajectorySetting
from ._common import ARXIV, beta_divisor, max_rel_error, plot_indices
from ._planted import EXPERIMENTS, STATISTIC_SLIGHTLY_LARGE, THEORY

theory = lazy_module("proofs.linear_attention.theory")
ex = lazy_module("proofs.linear_attention.experiments")

__all__ = ["MergedTrajectory"]

#: an exact identity between two float64 computations: each step's rounding is ~1e-16 relative;
#: over the plateau (growth from the init) and the drop the two runs' differences accumulate
#: additively, ≤ steps × 1e-16 ≈ 1e-12 at 10⁴ steps
_EXACT = 1e-10
_EXACT_WHY = ("two trainings that are equal in exact arithmetic, computed by different float64 code (the attention's "
              "(D+1)×(D+1) products over all N+1 tokens against the network's D² features): each step rounds at "
              "~1e-16 relative and the differences add up over the steps (≲ steps × 1e-16); 1e-10 relative leaves "
              "two orders of margin at 10⁶ steps")


def _unpaired(orig):
    """The training set's second half is a copy of the first (labels not negated)."""
    def paired(X, y):
        return np.concatenate([X, X]), np.concatenate([y, y])

    return paired


def _transposed_features(orig):
    """The network's features vec(x_q βᵀ) (β and x_q exchanged)."""
    def features(X):
        Z = orig(X)
        D = X.shape[1] - 1
        return Z.reshape(len(X), D, D).transpose(0, 2, 1).reshape(len(X), D * D)

    return features


#: work of one GD step of either model when its arrays are small: its Python-level overhead
#: (≈ 120 µs on the reference machine, at D = 1, H = 1)
_TRAJECTORY_STEP = 3.6e5


def _lr_nudged(orig):
    """Planted measurement error: the network trained at a step 1e-9 larger than the attention's."""
    def train(Z, y, w2, W1, *, lr, **kw):
        return orig(Z, y, w2, W1, lr=lr * (1.0 + 1e-9), **kw)
    return train


def _one_copy_unflipped(orig):
    """Planted measurement error: the last sequence's copy keeps its labels (one pair of the
    training set not closed under w → −w)."""
    def pair(X, y):
        Xp, yp = orig(X, y)
        D = Xp.shape[1] - 1
        Xp, yp = Xp.copy(), yp.copy()
        Xp[-1, D, :] = -Xp[-1, D, :]
        yp[-1] = -yp[-1]
        return Xp, yp
    return pair


#: what linattn.merged.trajectory runs (the report's "What was run")
_TRAJECTORY_RUN = (
    "One training set: `pairs` sequences drawn with $\\Lambda$'s eigenvalues `lambdas` in a Haar-random eigenbasis, "
    "and their label-negated copies ($w\\to-w$). From random weights of standard deviation `w_init` (the value's "
    "input→label entries and the key-query's label row set to 0), two models are trained on it by full-batch GD at "
    "step `lr` for `steps` steps, each by its own numpy code (no theory): the whole ATTN_M layer, every entry of "
    "$W^V_i,W^{KQ}_i$, its gradient back-propagated by hand through $W^VXX^\\top W^{KQ}X$; and the two-layer network "
    "$w_2^\\top W_1z$ on $z=\\operatorname{vec}(\\beta x_q^\\top)$, its weights read off the attention's. Compared: "
    "the two training-loss curves at every step and the two weight trajectories at about 300 evenly spaced steps "
    "(predicted equal), and the zeroed entries (predicted to stay 0), to $10^{-10}$ relative, over a run that must "
    "end below half its initial loss; at the initial weights, the network on the unnormalised $\\sum_ny_nx_n$ over "
    "the attention's output against the predicted normalisation $d$, the zeroed entries' gradient on the drawn "
    "sequences alone (it must not vanish), and the network's input width and hidden units against $D^2$ and $H$.")


class MergedTrajectory(Claim):
    id = "linattn.merged.trajectory"
    title = ("Fig. 1: ATTN_M trained by GD and its two-layer network trained by GD from corresponding weights have "
             "the same loss curve")
    source = f"{ARXIV}, §3 and Fig. 1 (ATTN_M and the equivalent two-layer network, trained)"
    provenance = "third-party summary of the paper"
    statement = (
        r"\theta^{\rm ATTN}_{k+1}=\theta^{\rm ATTN}_k-\eta\nabla L^{\rm ATTN}_{1/2},\ "
        r"\theta^{\rm net}_{k+1}=\theta^{\rm net}_k-\eta\nabla L^{\rm net}_{1/2},\ "
        r"(w_2)_i=(W^V_i)_{D+1,D+1},\ (W_1)_{i,:}=\operatorname{vec}\big((W^{KQ}_i)_{1:D,1:D}\big)\text{ at }k=0"
        r"\ \Rightarrow\ L^{\rm ATTN}(\theta_k)=L^{\rm net}(\theta_k)\ \forall k,"
        r"\quad\text{when }(W^V_i)_{D+1,1:D}=(W^{KQ}_i)_{D+1,1:D}=0\text{ at }k=0\text{ and the training set is "
        r"closed under }w\to-w"
    )
    setting_type = TrajectorySetting
    predictions = {
        "loss_gap": Prediction("largest relative difference of the two training-loss curves over all steps: 0"),
        "weight_gap": Prediction("largest difference of ATTN_M's (v_i, U_i) from the network's (w₂, W₁) over the run, "
                                 "relative to the weights' size: 0"),
        "irrelevant_drift": Prediction("largest value of the value's input→label entries and the key-query's label "
                                       "row over the run, relative to the weights' size: 0 (they stay at zero)"),
        "beta_divisor": Prediction("the normalisation d of β = Σ_n y_n x_n / d that makes the network the attention "
                                   "(d = N)", wrong=lambda v: [v + 1, 2 * v]),
        "hidden_units": Prediction("hidden units of the two-layer network: one per head (H)", kind="count"),
        "feature_dim": Prediction("width of the network's input z = vec(β x_qᵀ): D²", kind="count"),
    }
    planted_errors = (
        PlantedError("theory", "β normalised by N + 1 in the symbolic reduction",
                     f"{THEORY}._equivalence:context_statistic",
                     lambda orig: (lambda x, y, n: orig(x, y, n) * n / (n + 1))),
        PlantedError("theory", "the label flip of the training derivation leaves the labels as they are",
                     f"{THEORY}._equivalence:label_flip", lambda orig: (lambda expr, labels: expr)),
        # an error three times what the 1e-10 β-normalisation check resolves
        STATISTIC_SLIGHTLY_LARGE,
        PlantedError("measurement", "the attention trainer's key-query gradient misses the layer's 1/N",
                     f"{EXPERIMENTS}._trajectory:attention_grad", source_edit("(1, 0, 2)) / N", "(1, 0, 2))")),
        PlantedError("measurement", "the network's features are vec(x_q βᵀ) (β and x_q exchanged)",
                     f"{EXPERIMENTS}._trajectory:network_features", _transposed_features),
        PlantedError("measurement", "the training set's second half repeats the first (labels not negated)",
                     f"{EXPERIMENTS}._trajectory:sign_paired", _unpaired),
        # errors of the size the 1e-10 tolerances resolve, not only gross ones
        PlantedError("measurement", "the network trained at a step 1e-9 larger than the attention's",
                     f"{EXPERIMENTS}._trajectory:train_network", _lr_nudged),
        PlantedError("measurement", "one sequence's label-negated copy keeps its labels",
                     f"{EXPERIMENTS}._trajectory:sign_paired", _one_copy_unflipped),
    )

    def constants(self, s) -> dict:
        return {"loss_gap": 0.0, "weight_gap": 0.0, "irrelevant_drift": 0.0, "beta_divisor": beta_divisor(s.N),
                "hidden_units": s.H, "feature_dim": s.D * s.D}

    def derive(self, s):
        p = theory.paper()
        return p.view("ATTN_M and its two-layer network, trained", p.equivalence.merged, p.equivalence.training)

    def estimate(self, s) -> Cost:
        P, D1, F = 2 * s.pairs, s.D + 1, s.D * s.D
        # per step and model (units of WORK_RATE, measured on the reference machine): the
        # gradient's products, or ≈ 120 µs of Python-level work (tensordots and reshapes of the
        # per-head arrays), whichever is more
        attention = s.steps * max(3.3 * P * s.H * D1 * D1, _TRAJECTORY_STEP)
        network = s.steps * max(2.0 * P * s.H * F, _TRAJECTORY_STEP)
        setup = 4.0 * P * D1 * D1 * (s.N + 1)
        kept = 2 * (s.steps // s.keep_every + 2) * s.H * (2 * D1 * D1 + F + 1)
        return Cost(work=attention + network + setup,
                    memory=8.0 * (P * D1 * (s.N + 1) * 2 + P * (D1 * D1 * 3 + 3 * s.H * D1) + kept + 2 * s.steps),
                    what=f"{s.steps} GD steps of ATTN_M and of its two-layer network on {P} sequences")

    def measure(self, s, run) -> dict:
        D, H, w = s.D, s.H, s.w_init
        Lam = ex.data.covariance(s.lambdas, ex.data.haar_rotation(D, run.rng(0)))
        X0, y0 = ex.data.sample_sequences(s.pairs, s.N, Lam, run.rng(1))
        X, y = ex.trajectory.sign_paired(X0, y0)
        rng = run.rng(2)
        WV = w * rng.standard_normal((H, D + 1, D + 1))
        WKQ = w * rng.standard_normal((H, D + 1, D + 1))
        WV[:, D, :D] = 0.0  # the value's input→label entries
        WKQ[:, D, :D] = 0.0  # the key-query's label row
        w2, W1 = ex.trajectory.network_from_attention(WV, WKQ)
        run.tick(0.02, "training sequences")
        A = ex.trajectory.train_attention(X, y, WV, WKQ, lr=s.lr, steps=s.steps, keep_every=s.keep_every,
                                          tick=lambda f, what: run.tick(0.02 + 0.8 * f, what))
        B = ex.trajectory.train_network(ex.trajectory.network_features(X), y, w2, W1, lr=s.lr, steps=s.steps,
                                        keep_every=s.keep_every, tick=lambda f, what: run.tick(0.82 + 0.15 * f, what))
        # the normalisation of β: the network on the unnormalised Σ_n y_n x_n against the attention at init
        ctx = X[:, :D, :s.N]
        raw = np.einsum("pdn,pn->pd", ctx, X[:, D, :s.N])
        z_raw = (raw[:, :, None] * X[:, None, :D, s.N]).reshape(len(X), D * D)
        net_raw = z_raw @ W1.T @ w2
        att0 = ex.models.attn_merged_predict(X, WV, WKQ)
        return {"A": A, "B": B, "label_mean_square": float(np.mean(y * y)),
                "divisor": float(net_raw @ att0 / (att0 @ att0)), "divisor_fit": max_rel_error(
                    net_raw, att0 * float(net_raw @ att0 / (att0 @ att0))),
                "hidden_units": int(W1.shape[0]), "feature_dim": int(W1.shape[1]),
                "ratio_paired": ex.trajectory.irrelevant_gradient_ratio(X, y, WV, WKQ),
                "ratio_unpaired": ex.trajectory.irrelevant_gradient_ratio(X0, y0, WV, WKQ)}

    def judge(self, s, pred, m, ctx) -> None:
        ctx.note(_TRAJECTORY_RUN)
        A, B = m["A"], m["B"]
        D = s.D
        La, Lb = np.asarray(A["loss"], float), np.asarray(B["loss"], float)
        if La.shape != Lb.shape or not (np.all(np.isfinite(La)) and np.all(np.isfinite(Lb))):
            ctx.inconclusive("the two trainings did not both run every step with finite losses")
            return
        # each step's gap relative to ATTN_M's loss there, or, once the loss has fallen below the
        # labels' mean square, to √(L · mean y²): what a difference of the predictions at 1e-10 of
        # the labels' scale moves the loss by (a loss near 0 keeps only its residual's rounding,
        # which is relative to the predictions, not to the loss)
        floor = np.sqrt(np.abs(La) * float(m["label_mean_square"]))
        gaps = np.abs(La - Lb) / np.maximum(np.maximum(np.abs(La), floor), 1e-300)
        gap = float(np.max(gaps))
        # the zeroed blocks have zero gradient only in exact arithmetic: where GD at this η is
        # unstable along them, their rounding (~1e-16) grows geometrically and the runs part
        # although the identity holds.  Recognised by its signature: zero drift at the first
        # compared step (the pairing cancelled the gradient), then growth, with the loss curves
        # exact until the drift passed 1e-10.  A wrong trainer or unpaired data part from the
        # first step instead.
        # every compared step's weights: the relevant ones (value label→label entries and key-query input
        # blocks) and the zeroed blocks' drift relative to the largest relevant weight there
        wA = np.concatenate([A["WV"][:, :, D, D][:, :, None], A["WKQ"][:, :, :D, :D].reshape(len(A["k"]), s.H, -1)],
                            axis=2)
        scale = np.maximum(np.max(np.abs(wA), axis=(1, 2)), 1e-300)
        irr = np.maximum(np.max(np.abs(A["WV"][:, :, D, :D]), axis=(1, 2)),
                         np.max(np.abs(A["WKQ"][:, :, D, :D]), axis=(1, 2)))
        rel_k = irr / scale
        over = np.flatnonzero(rel_k > _EXACT)
        if over.size and len(rel_k) > 1 and rel_k[1] <= 1e-13 and over[0] > 1:
            k_bad = int(A["k"][over[0]])
            if float(np.max(gaps[:k_bad])) <= _EXACT:
                ctx.measure("loss_gap_before_instability", float(np.max(gaps[:k_bad])))
                ctx.inconclusive(
                    f"GD at η = {s.lr:.3g} is unstable along the zeroed blocks: their rounding grew from "
                    f"{rel_k[1]:.1e} to {rel_k[over[0]]:.1e} of the weights by step {k_bad}, and the two runs "
                    f"part after it (the loss curves agree to {float(np.max(gaps[:k_bad])):.1e} before); "
                    "the identity is one of exact arithmetic — lower lr to compare the whole run")
                return
        ctx.close("training loss: ATTN_M = its two-layer network at every step", key="loss_gap", measured=gap,
                  atol=_EXACT, why=_EXACT_WHY + f"; {La.size} steps compared, each relative to ATTN_M's loss there "
                                   "or, where that loss is below the labels' mean square, to √(loss × mean y²) "
                                   "(a prediction difference of 1e-10 of the labels' scale)")
        wB = np.concatenate([B["w2"][:, :, None], B["W1"]], axis=2)
        wgap = float(np.max(np.max(np.abs(wA - wB), axis=(1, 2)) / scale)) if np.array_equal(A["k"], B["k"]) else np.inf
        ctx.close("weights: ATTN_M's (v_i, U_i) = the network's (w₂, W₁) at every compared step", key="weight_gap",
                  measured=wgap, atol=_EXACT,
                  why=_EXACT_WHY + f"; {len(A['k'])} steps compared (every {s.keep_every}), each relative to the "
                                   "largest weight there")
        drift = float(np.max(rel_k))
        ctx.close("the value's input→label entries and the key-query's label row stay 0", key="irrelevant_drift",
                  measured=drift, atol=_EXACT,
                  why="their gradients are odd in the labels and cancel over each sequence and its label-negated copy, "
                      "up to rounding (~1e-16 of the relevant gradients per step); relative to the largest weight")
        ctx.condition("non-vacuous: without the label-negated copies those entries' gradient is not zero",
                      True if m["ratio_unpaired"] > 1e-6 else None, predicted="> 1e-6 of the relevant gradients",
                      measured={"drawn sequences only": m["ratio_unpaired"], "with their copies": m["ratio_paired"]},
                      why="at the initial weights, on the drawn sequences alone, the largest gradient entry of the "
                          "zeroed blocks over the relevant ones' (a sampling-size number); with the copies it is "
                          "rounding: the pairing is what the identity needs")
        ctx.close("β's normalisation: the network on Σ_n y_n x_n ÷ the attention's output at init", key="beta_divisor",
                  measured=m["divisor"], rtol=_EXACT,
                  why="least-squares ratio over the training sequences of the network on the unnormalised statistic "
                      f"to the attention's prediction (their largest misfit after scaling: {m['divisor_fit']:.1e}); "
                      "an exact identity in float64")
        ctx.close("β's normalisation: one ratio fits every sequence", predicted=0.0, measured=m["divisor_fit"],
                  atol=_EXACT, why="the two outputs are proportional sequence by sequence (exact identity)")
        ctx.close("hidden units = heads", key="hidden_units", measured=m["hidden_units"], atol=0.5,
                  why="integer count of the network built")
        ctx.close("feature dimension D²", key="feature_dim", measured=m["feature_dim"], atol=0.5,
                  why="integer count of the network built")
        fall = float(La[-1] / La[0])
        ctx.condition("the compared run covers the drop (final loss ≤ ½ the initial)", True if fall <= 0.5 else None,
                      predicted="≤ 0.5", measured=fall,
                      why="the identity is compared through the plateau and the drop, not only on the plateau")
        if fall > 0.5:
            ctx.inconclusive(f"the run ended at {fall:.3g} of its initial loss, before the drop: the trajectories were "
                             "compared on the plateau only (raise steps or code_init)")
        ctx.measure("loss_gap", gap)
        ctx.measure("weight_gap", wgap)
        ctx.measure("irrelevant_drift", drift)
        ctx.measure("loss_initial", float(La[0]))
        ctx.measure("loss_final", float(La[-1]))
        t = np.arange(La.size) * s.lr
        idx = plot_indices(La.size)
        ctx.plot(Plot(
            title=f"Fig. 1: ATTN_M and its two-layer network, D={D}, N={s.N}, H={s.H}, {2 * s.pairs} sequences",
            xlabel="t / τ (η × step)", ylabel="training loss (plain MSE)",
            series=[Series(t[idx], La[idx], "ATTN_M (whole layer)"),
                    Series(t[idx], Lb[idx], "two-layer network", "dashed", color="k")],
            caption=f"GD at η = {s.lr:.4g} τ/step from corresponding weights (w_init = {s.w_init:.3g}); largest "
                    f"relative difference of the curves {gap:.1e}."))
