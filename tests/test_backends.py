"""Backends: one array namespace; the trainer kernel written once runs on numpy and on torch."""

from __future__ import annotations

import numpy as np
import pytest

import _memo
from icltheory.backends import NumpyBackend, TorchBackend, get_backend
from icltheory.core import SettingError, get_claim
from proofs.linear_attention.experiments import _data as data
from proofs.linear_attention.experiments import _models as models
from proofs.linear_attention.experiments import _training as training


def _problem(seed=0, D=3, H=2, R=2, separate=False):
    rng = np.random.default_rng(seed)
    X, y = data.sample_sequences(400, 6, np.diag([1.0, 0.5, 0.2][:D]), rng)
    m = models.empirical_moments(X, y)
    if separate:
        model = models.SeparateHeads(H, R)
        p = {"r": 0.3 * rng.standard_normal((2, H, D + 1)), "K": 0.3 * rng.standard_normal((2, H, R, D + 1)),
             "Q": 0.3 * rng.standard_normal((2, H, R, D))}
    else:
        model = models.MergedHeads(H)
        p = {"r": 0.3 * rng.standard_normal((2, H, D + 1)), "U": 0.3 * rng.standard_normal((2, H, D + 1, D))}
    return model, m, p


def test_unknown_backend_is_a_setting_error():
    with pytest.raises(SettingError, match="valid values"):
        get_backend("jax")


def test_missing_torch_is_a_setting_error(monkeypatch):
    monkeypatch.setattr(TorchBackend, "available", classmethod(lambda cls: (False, "needs PyTorch")))
    claim = get_claim("linattn.merged.sigmoid")
    with pytest.raises(SettingError) as e:
        claim.setting({"backend": "torch"})
    assert e.value.key == "backend"


def test_numpy_namespace():
    xp = NumpyBackend()
    a = np.arange(6.0).reshape(2, 3)
    b = xp.asarray(a)
    b[0, 0] = 7.0
    assert a[0, 0] == 0.0 and b.dtype == xp.float64 and xp.device == "cpu"
    assert np.array_equal(xp.to_numpy(xp.einsum("ij,kj->ik", b, b)), b @ b.T)


def test_the_kernel_matches_a_plain_numpy_loop():
    """train_quadratic (written against the namespace) = θ ← θ − η ∂L_{1/2}/∂θ spelled out."""
    model, m, p = _problem(separate=True)
    trace, final = training.train_quadratic(model, m, p, lr=0.01, steps=50, record_every=10)
    q = {k: v.copy() for k, v in p.items()}
    for _ in range(50):
        g = model.pullback(q, m.grad_half(model.theta(q)), m)
        q = {k: q[k] - 0.01 * g[k] for k in q}
    for k in q:
        assert np.allclose(final[k], q[k], rtol=1e-12, atol=1e-15)
    assert np.allclose(trace["loss"][-1], m.mse(model.theta(q)), rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("separate", [False, True])
def test_torch_matches_numpy(separate):
    tb = _torch_or_skip()
    model, m, p = _problem(separate=separate)
    a, pa = training.train_quadratic(model, m, p, lr=0.01, steps=300, record_every=10, xp=NumpyBackend())
    b, pb = training.train_quadratic(model, m, p, lr=0.01, steps=300, record_every=10, xp=tb)
    assert np.array_equal(a.steps, b.steps)
    # the same kernel in float64, different summation order: 300 steps amplify 1e-16 by ≲ 1e3
    assert np.allclose(a["loss"], b["loss"], rtol=1e-10, atol=1e-12)
    for k in p:
        assert np.allclose(pa[k], pb[k], rtol=1e-9, atol=1e-12)


@pytest.mark.slow
def test_sigmoid_with_torch_backend():
    _torch_or_skip()
    c = get_claim("linattn.merged.sigmoid")
    from icltheory.core import run_check

    v = run_check(c, c.setting({"backend": "torch", "profile": "quick"}))
    assert v.verdict == "holds" and v.measured["backend"] == "torch"


def _torch_or_skip():
    """The torch backend, or a skip: torch missing, or installed but not importable (a broken
    install raises a plain ImportError or OSError, which ``pytest.importorskip`` reports as an
    error since pytest 9, not as a skip)."""
    ok, why = TorchBackend.available()
    if not ok:
        pytest.skip(f"torch backend unavailable: {why}")
    return TorchBackend()


def test_namespace_operations_agree():
    """The protocol's reductions and softmax mean the same on both backends."""
    tb = _torch_or_skip()
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4, 5)) * 30.0  # large scores: the softmax must not overflow
    for xp in (NumpyBackend(), tb):
        b = xp.asarray(a)
        sm = xp.to_numpy(xp.softmax(b, axis=-1))
        assert np.allclose(sm.sum(-1), 1.0, atol=1e-14) and np.all(np.isfinite(sm))
        assert np.allclose(sm, np.exp(a - a.max(-1, keepdims=True))
                           / np.exp(a - a.max(-1, keepdims=True)).sum(-1, keepdims=True), rtol=1e-13)
        assert np.allclose(xp.to_numpy(xp.mean(b, axis=1)), a.mean(1), rtol=1e-14)
        assert np.array_equal(xp.to_numpy(xp.amin(b, axis=0)), a.min(0))
        assert np.array_equal(xp.to_numpy(xp.swapaxes(b, 0, 2)), np.swapaxes(a, 0, 2))
        assert xp.to_numpy(xp.zeros((2, 3))).shape == (2, 3)
        assert xp.all_finite(b) and not xp.all_finite(xp.asarray(np.where(a > 0, np.inf, a)))
        ls = xp.to_numpy(xp.log_softmax(b, axis=-1))
        assert np.all(np.isfinite(ls)) and np.allclose(np.exp(ls), sm, rtol=1e-13, atol=1e-300)
        assert np.allclose(ls, np.log(sm), rtol=1e-13, atol=1e-13)  # the same function, not just finite
        assert np.allclose(xp.to_numpy(xp.sum(b, axis=1)), a.sum(1), rtol=1e-14)
        assert xp.to_numpy(xp.sum(b, axis=-1, keepdims=True)).shape == (3, 4, 1)
        assert xp.to_numpy(xp.sum(b, keepdims=True)).shape == (1, 1, 1)
        assert np.isclose(float(xp.sum(b)), a.sum(), rtol=1e-13)
        small = a / 30.0
        assert np.allclose(xp.to_numpy(xp.exp(xp.asarray(small))), np.exp(small), rtol=1e-15)
        assert np.allclose(xp.to_numpy(xp.sqrt(xp.abs(b))), np.sqrt(np.abs(a)), rtol=1e-15)
        assert np.array_equal(xp.to_numpy(xp.sign(b)), np.sign(a))
        assert np.array_equal(xp.to_numpy(xp.diagonal(b[0])), np.diagonal(a[0]))
        assert np.array_equal(xp.to_numpy(xp.stack([b[0], b[1]], axis=1)), np.stack([a[0], a[1]], axis=1))
        assert xp.to_numpy(xp.stack([xp.sum(b), xp.sum(b)])).shape == (2,)
        assert np.array_equal(xp.to_numpy(xp.concatenate([b[0, 0], b[1, 2, :2]])),
                              np.concatenate([a[0, 0], a[1, 2, :2]]))
        rows = xp.asindex(np.array([2, 0, 2]))
        assert np.array_equal(xp.to_numpy(b[rows]), a[[2, 0, 2]])  # gather
        c = xp.zeros((3, 3))
        c[rows[:2], xp.asindex(np.array([1, 2]))] = 5.0  # scatter
        assert np.array_equal(xp.to_numpy(c), np.array([[0, 0, 5.0], [0, 0, 0], [0, 5.0, 0]]))
    from icltheory.backends import namespace_of

    assert namespace_of(tb.asarray(a)).name == "torch" and namespace_of(a).name == "numpy"


def test_nonlinear_prompt_trainer_torch_matches_numpy():
    """Model B's full-batch GD (the nonlinear paper's finite-prompt trainer) on both backends."""
    tb = _torch_or_skip()
    from proofs.nonlinear_regression.experiments import prompts, tasks

    rng = np.random.default_rng(3)
    V = tasks.random_unit_features(4, 8, rng)
    batch = prompts.make_prompts(V, 60, 16, 0.02, "sin", rng)
    a = prompts.run_prompts(batch, [1.0, 2.0], [20.0, 5.0], 200, record_every=10, level=0.5)
    b = prompts.run_prompts(batch, [1.0, 2.0], [20.0, 5.0], 200, record_every=10, level=0.5, xp=tb)
    assert np.array_equal(a.steps, b.steps)
    # float64 on both, different reduction orders: 200 steps amplify ~1e-16 by far less than 1e4
    for key in ("attn", "attn_min", "loss"):
        assert np.allclose(a[key], b[key], rtol=1e-11, atol=1e-13), key
    assert np.array_equal(a["frac"], b["frac"])
    assert np.allclose(a.extra["Q"], b.extra["Q"], rtol=1e-10, atol=1e-12)
    assert a["attn"][-1, 0] > a["attn"][0, 0]  # the run learned something (not a trivial match)


def test_linear_attention_softmax_trainer_torch_matches_numpy():
    """The softmax-attention variants (merged and separate) on both backends."""
    tb = _torch_or_skip()
    from proofs.linear_attention.experiments import _softmax as sm

    rng = np.random.default_rng(4)
    X, y = data.sample_sequences(120, 8, np.diag([0.6, 0.3, 0.1]), rng)
    for model in (sm.SoftmaxAttention(3, merged=True), sm.SoftmaxAttention(2, merged=False, R=2)):
        p = sm.softmax_init(model, 3, 0.3, rng)
        ka, la, pa = sm.softmax_train(model, p, X, y, lr=0.5, steps=150, record_every=5)
        kb, lb, pb = sm.softmax_train(model, p, X, y, lr=0.5, steps=150, record_every=5, xp=tb)
        assert np.array_equal(ka, kb)
        assert np.allclose(la, lb, rtol=1e-11, atol=1e-14)
        for k in pa:
            assert np.allclose(pa[k], pb[k], rtol=1e-10, atol=1e-13), k
        assert la[-1] < la[0]


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", ["nonlinear.rescaling", "nonlinear.final-attention"])
def test_nonlinear_claims_same_verdict_on_torch(claim_id):
    _torch_or_skip()
    from icltheory.core import run_check

    c = get_claim(claim_id)
    vn = _memo.default_run(claim_id)[3]  # numpy: the session's shared default run
    vt = run_check(c, c.setting({"profile": "quick", "backend": "torch"}))
    assert vn.verdict == vt.verdict == "holds"
    for k, x in vn.measured.items():
        if isinstance(x, float):
            assert np.isclose(vt.measured[k], x, rtol=1e-9, atol=1e-12), k


@pytest.mark.slow
def test_torch_backend_refused_where_nothing_uses_it():
    c = get_claim("nonlinear.rescaling")
    with pytest.raises(SettingError) as e:
        c.setting({"backend": "torch", "model": "A"})
    assert e.value.key == "backend"


def test_empirical_moments_torch_matches_numpy():
    """Simulator (b)'s O(P F²) moments — the part that grows with data — on both backends."""
    tb = _torch_or_skip()
    rng = np.random.default_rng(5)
    X, y = data.sample_sequences(9000, 6, np.diag([1.0, 0.5, 0.2]), rng)  # > one 4096 chunk
    a = models.empirical_moments(X, y)
    b = models.empirical_moments(X, y, xp=tb)
    assert np.allclose(a.C, b.C, rtol=1e-12, atol=1e-14) and np.allclose(a.g, b.g, rtol=1e-12, atol=1e-14)
    assert a.s == b.s and (a.A, a.B, a.D) == (b.A, b.B, b.D)


# ------------------------------------------------------------------ categorical ICL: model and trainer

from dataclasses import replace  # noqa: E402

from proofs.categorical_icl.experiments import _data as cat_data  # noqa: E402
from proofs.categorical_icl.experiments import _model as cat_model  # noqa: E402
from proofs.categorical_icl.experiments import _training as cat_training  # noqa: E402


def _catgd_random_model(rng, kinds, lay, C, r=3):
    """Blocks with one head per kind in ``kinds[b]`` and a free cross-attention (numpy)."""
    D = lay.D
    blocks = []
    for pair in kinds:
        heads = [cat_model.Head(0.3 * rng.standard_normal((r, D)), 0.3 * rng.standard_normal((r, D)),
                                0.3 * rng.standard_normal((D, D)), kind) for kind in pair]
        cross = cat_model.Cross(0.3 * rng.standard_normal((4, D)), 0.3 * rng.standard_normal((4, lay.dp)),
                                0.3 * rng.standard_normal((D, lay.dp)))
        blocks.append(cat_model.Block(heads, cross))
    return cat_model.Model(lay, *(rng.standard_normal((lay.dp, C)) for _ in range(4)), blocks)


def _catgd_on(xp, model):
    """``model`` with every parameter array moved onto the namespace ``xp``."""
    a = xp.asarray
    blocks = [cat_model.Block([replace(h, Q=a(h.Q), K=a(h.K), V=a(h.V)) for h in blk.heads],
                              replace(blk.cross, Qc=a(blk.cross.Qc), Kc=a(blk.cross.Kc), Vc=a(blk.cross.Vc)))
              for blk in model.blocks]
    return replace(model, W_u=a(model.W_u), W_v=a(model.W_v), W_x=a(model.W_x), W_ro=a(model.W_ro),
                   blocks=blocks)


def _flat_grads(g, xp):
    """name → numpy array for every per-prompt gradient of :func:`cat_model.backward`."""
    out = {k: xp.to_numpy(g[k]) for k in ("W_u", "W_v", "W_x", "W_ro", "X")}
    for b, gb in enumerate(g["blocks"]):
        for h, gh in enumerate(gb["heads"]):
            out.update({f"b{b}h{h}{m}": xp.to_numpy(v) for m, v in gh.items()})
        out.update({f"b{b}c{m}": xp.to_numpy(v) for m, v in gb["cross"].items()})
    return out


def _catgd_case(seed: int, kinds):
    """A random categorical-ICL model with the given head kinds per block (d = 3, d' = 2,
    C = 5), 4 prompts of N = 6 context tokens, their labels and target distributions."""
    rng = np.random.default_rng(seed)
    lay, C, N, B = cat_model.layout(3, 2), 5, 6, 4
    model = _catgd_random_model(rng, kinds, lay, C)
    X = rng.standard_normal((B, N + 1, lay.d))
    y = rng.integers(0, C, (B, N))
    return model, X, y, cat_model.softmax(rng.standard_normal((B, C)), -1)


@pytest.mark.parametrize("kinds", [(("linear", "softmax"), ("exp", "softmax_negsq")),
                                   (("rbf", "laplacian"), ("softmax", "delta"))])
def test_catgd_forward_backward_torch_matches_numpy(kinds):
    """One forward pass and the hand-written backprop of the categorical-ICL model, every head
    kind, on both backends: the same logits, loss and per-prompt gradients."""
    tb = _torch_or_skip()
    nb = NumpyBackend()
    model, X, y, target = _catgd_case(8, kinds)
    res = []
    for xp in (nb, tb):
        m, Xb, yb, tg = _catgd_on(xp, model), xp.asarray(X), xp.asindex(y), xp.asarray(target)
        logits, hidden, cache = cat_model.forward(m, Xb, yb, xp=xp)
        loss = xp.to_numpy(cat_model.query_loss(logits, tg, xp))
        res.append((xp.to_numpy(logits), loss, _flat_grads(cat_model.backward(m, Xb, yb, tg, logits, cache, xp), xp)))
    (la, lossa, ga), (lb, lossb, gb) = res
    # one pass in float64 that differs only in summation order (BLAS/einsum/softmax reductions):
    # a few ulps times a few hundred operations per entry, ≲ 1e-13 of the array's scale
    assert np.allclose(la, lb, rtol=1e-12, atol=1e-13 * np.abs(la).max())
    assert np.allclose(lossa, lossb, rtol=1e-12, atol=1e-13)
    assert ga.keys() == gb.keys() and len(ga) == 5 + 2 * (2 * 3) + 2 * 3
    for k in ga:
        scale = max(np.abs(ga[k]).max(), 1e-300)
        assert np.allclose(ga[k], gb[k], rtol=1e-12, atol=1e-12 * scale), k
    assert np.abs(ga["b0h0Q"]).max() > 0 and np.abs(ga["W_u"]).max() > 0  # a real gradient, not zeros


@pytest.mark.parametrize("kind", cat_model.HEAD_KINDS)
@pytest.mark.parametrize("mean", [False, True])
def test_catgd_query_row_block_torch_matches_numpy(kind, mean):
    """The last block on the query row alone (what training and evaluation run), with ``kind``
    as its first head, on both backends: the same logits and gradients, per prompt and averaged."""
    tb = _torch_or_skip()
    nb = NumpyBackend()
    model, X, y, target = _catgd_case(9, (("softmax", "rbf"), (kind, "softmax")))
    res = []
    for xp in (nb, tb):
        m, Xb, yb, tg = _catgd_on(xp, model), xp.asarray(X), xp.asindex(y), xp.asarray(target)
        logits, _, cache = cat_model.forward(m, Xb, yb, logits_only=True, xp=xp)
        g = cat_model.backward(m, Xb, yb, tg, logits, cache, xp, mean=mean)
        res.append((xp.to_numpy(logits), _flat_grads(g, xp)))
    (la, ga), (lb, gb) = res
    assert np.allclose(la, lb, rtol=1e-12, atol=1e-13 * np.abs(la).max())
    assert ga.keys() == gb.keys()
    for k in ga:
        scale = max(np.abs(ga[k]).max(), 1e-300)
        assert np.allclose(ga[k], gb[k], rtol=1e-12, atol=1e-12 * scale), (kind, k)


def _catgd_problem():
    rng = np.random.default_rng(0)
    lay = cat_model.layout(3, 2)
    gen = dict(d=3, N=6, W_true=rng.standard_normal((2, 5)), amplitude=10.0)
    return lay, cat_data.synthetic_dataset(rng, 400, **gen), cat_data.synthetic_dataset(rng, 64, **gen)


_CATGD_STEPS = 100


@pytest.mark.slow
@pytest.mark.parametrize("learner", ["GD", "TF"])
def test_catgd_trainer_torch_matches_numpy(learner):
    """The catgd trainer (Adam, clipping, early stopping) on both backends: the same loss
    trajectory and the same kept parameters.  Two blocks; the GD model and the free Transformer."""
    tb = _torch_or_skip()
    lay, train_set, val_set = _catgd_problem()
    runs = []
    for xp in (NumpyBackend(), tb):
        if learner == "GD":
            lrn, lr = cat_training.GDLearner(np.random.default_rng(5), lay, 5, 2, "softmax"), 1e-2
        else:
            lrn, lr = cat_training.TFLearner(np.random.default_rng(5), lay, 5, 2), 1e-3
        curve = cat_training.train(lrn, train_set, val_set, np.random.default_rng(6), steps=_CATGD_STEPS,
                                   batch=32, lr=lr, clip=10.0, eval_every=10, xp=xp)
        runs.append((np.array(curve), lrn.params, cat_training.evaluate(lrn, val_set, xp=xp), lr))
    (ca, pa, ea, lr), (cb, pb, eb, _) = runs
    assert np.array_equal(ca[:, 0], cb[:, 0])
    # the losses: float64 on both, different summation orders; 100 Adam steps amplify the
    # ~1e-16 per-step differences by far less than 1e4 (observed ≈ 2e-16)
    assert np.allclose(ca[:, 1:], cb[:, 1:], rtol=1e-12, atol=0.0)
    # the kept parameters: the same relative agreement, plus an absolute allowance for the
    # directions whose exact gradient is 0 (the softmax is invariant to a score shift common to
    # all keys, e.g. the keys' weights on the v-slot, which every context token shares): there
    # the computed gradient is round-off (~1e-16 of the gradient scale ~1), which Adam turns
    # into steps of at most lr·1e-16/eps = lr·1e-8 each (eps = 1e-8), different on the two
    # backends; over the run at most steps·lr·1e-8 (observed ≈ 1e-12·lr/1e-3)
    noise = _CATGD_STEPS * lr * 1e-8
    assert pa.keys() == pb.keys()
    for k in pa:
        assert np.allclose(pa[k], pb[k], rtol=1e-10, atol=noise), k
    assert np.allclose(ea[0], eb[0], rtol=1e-12) and np.allclose(ea[2], eb[2], rtol=1e-12)
    assert np.array_equal(ea[1], eb[1])
    # the runs learned something (not a trivial match of untrained models): the kept
    # validation loss is below the first look's
    assert ca[:, 2].min() < ca[0, 2] and int(ca[np.argmin(ca[:, 2]), 0]) > 10


def _assert_close_tree(a, b, path=""):
    """Every float of two measured dicts (and of their lists) within rtol 1e-10; everything else equal."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _assert_close_tree(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_close_tree(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert np.isclose(a, b, rtol=1e-10, atol=1e-13), (path, a, b)
    else:
        assert a == b, path


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", ["catgd.training", "catgd.depth"])
def test_catgd_claims_same_verdict_on_torch(claim_id):
    """The two training claims at --profile quick on numpy and on torch: the same verdict and the
    same measured numbers.  Tolerance 1e-10: float64 on both, summation orders differ; four (three)
    runs of 150 Adam steps move the test NLLs by ~1e-16 relative (observed), and the directions Adam
    drives with round-off (see the trainer test) do not change the loss."""
    _torch_or_skip()
    from icltheory.core import run_check

    c = get_claim(claim_id)
    vn = _memo.default_run(claim_id)[3]  # numpy: the session's shared default run
    vt = run_check(c, c.setting({"profile": "quick", "backend": "torch"}))
    assert vn.verdict == vt.verdict == "holds"
    assert vt.setting["backend"] == "torch" and vn.setting["backend"] == "numpy"
    _assert_close_tree(vn.measured, vt.measured)
    assert [ch.passed for ch in vn.checks] == [ch.passed for ch in vt.checks]


@pytest.mark.slow
def test_tf_parameters_same_readings_on_torch():
    """catgd.tf-parameters' 14 Transformer runs (quick sizes, 100 Adam steps each: the step cap,
    so the verdict is not the point) on numpy and on torch: the same readings of every run to
    1e-10 and the same check outcomes."""
    _torch_or_skip()
    from icltheory.core import run_check

    c = get_claim("catgd.tf-parameters")
    vn, vt = (run_check(c, c.setting({"profile": "quick", "steps": 100, "backend": b})) for b in ("numpy", "torch"))
    assert vn.verdict == vt.verdict
    _assert_close_tree(vn.measured, vt.measured)
    assert [ch.passed for ch in vn.checks] == [ch.passed for ch in vt.checks]


@pytest.mark.parametrize("claim_id", ["catgd.training", "catgd.depth", "catgd.data-thresholds",
                                      "catgd.tf-parameters"])
def test_catgd_missing_torch_is_one_line_exit_2(claim_id, monkeypatch, capsys):
    monkeypatch.setattr(TorchBackend, "available", classmethod(lambda cls: (False, "needs PyTorch")))
    from icltheory._cli import main as cli

    code = cli(["check", claim_id, "--set", "backend=torch", "--profile", "quick"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "backend" in err and "needs PyTorch" in err


# ------------------------------------------------------------------ linear attention: rank R > 1


def test_separate_finite_sample_rank_2_torch_matches_numpy():
    """Simulator (b) of linattn.separate.saddle-to-saddle (empirical moments, then full-batch GD
    of the whole ATTN_S model) at rank R = 2 on both backends; a second seed row of rank 1 (its
    padded pair must stay exactly zero on both)."""
    tb = _torch_or_skip()
    lam, N, H, steps, lr = [1.0, 0.5, 0.2], 6, 2, 300, 0.05
    X, y = data.sample_sequences(600, N, np.diag(lam), np.random.default_rng(11))
    p = training.init_separate(np.random.default_rng(12), 2, H, [2, 1], len(lam), 0.3, full=True)
    assert p["K"].shape[2] == 2
    runs = []
    for xp in (NumpyBackend(), tb):
        mom = models.empirical_moments(X, y, chunk=256, xp=xp)  # three chunks
        runs.append((mom, training.finite_sample_separate(mom, p, lam, N, H=H, lr=lr, steps=steps, xp=xp)))
    (ma, a), (mb, b) = runs
    # moments: sums of 600 products in float64, chunked the same way, summed in different orders
    assert np.allclose(ma.C, mb.C, rtol=1e-12, atol=1e-14) and np.allclose(ma.g, mb.g, rtol=1e-12, atol=1e-14)
    assert np.array_equal(a.t, b.t) and a.steps == b.steps == steps
    # 300 GD steps on a quadratic-feature model amplify ~1e-16 differences by ≲ 1e3 (observed 4e-16)
    assert np.allclose(a.loss, b.loss, rtol=1e-11, atol=0.0)
    assert np.allclose(a.train_loss, b.train_loss, rtol=1e-11, atol=0.0)
    assert np.allclose(a.M, b.M, rtol=1e-10, atol=1e-13)
    for k in a.params:
        assert np.allclose(a.params[k], b.params[k], rtol=1e-10, atol=1e-13), k
    for run in (a, b):  # the rank-1 row's second pair is exactly zero (∂K_r ∝ Q_r, ∂Q_r ∝ K_r)
        assert not np.any(run.params["K"][1, :, 1]) and not np.any(run.params["Q"][1, :, 1])
        assert np.all(run.train_loss[:, -1] < 0.7 * run.train_loss[:, 0])  # both rows learned


def test_numpy_softmax_is_scipys():
    """The numpy backend's softmax (computed in place on one new array) gives SciPy's values bit
    for bit, along any axis, for float64, float32 and integer scores, and leaves its input as
    it was."""
    from scipy.special import softmax

    from icltheory.backends import NumpyBackend

    xp = NumpyBackend()
    rng = np.random.default_rng(3)
    for shape, axis in (((64, 11, 25), -1), ((64, 11, 25), 1), ((7, 5), 0), ((4,), -1)):
        for a in (5.0 * rng.standard_normal(shape), (5.0 * rng.standard_normal(shape)).astype(np.float32),
                  rng.integers(-9, 9, shape)):
            before = a.copy()
            got, ref = xp.softmax(a, axis=axis), softmax(a, axis=axis)
            assert got.dtype == ref.dtype and np.array_equal(got, ref), (shape, axis, a.dtype)
            assert np.array_equal(a, before)
