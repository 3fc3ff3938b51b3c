"""``nrpt.jax.Tempering`` with optax under ``jax.vmap``: the learning rates land in the
stacked optimizer state, the state of exactly the models that changed level is reset,
the target level's parameters are recorded, a resume continues bit for bit, and
``examples/jax_tempering.py`` trains a tempered ensemble whose model average
classifies its test set. Skipped without JAX and optax."""

from __future__ import annotations

import importlib.util
import pickle
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="JAX is not installed (pip install -r python/requirements-ci.txt)")
optax = pytest.importorskip("optax", reason="optax is not installed")
jnp = jax.numpy

import nrpt  # noqa: E402
import nrpt.jax  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
P, DIM, N_DATA = 4, 3, 500


def controller(**kw):
    opts = dict(window=2, swap_rate=0.3, eta_min=0.01, eta_max=0.2, explorer="msgd", n_data=N_DATA, seed=3)
    opts.update(kw)
    return nrpt.Controller(P, **opts)


TX = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1, momentum=0.9)


def loss(w, target):
    return 0.5 * jnp.sum((w - target) ** 2)


@jax.jit
def step(params, opt_state, targets):
    """One momentum-SGD step of every model towards its (noisy) target, and the
    energies of the new states."""
    def one(w, s, t):
        g = jax.grad(loss)(w, t)
        u, s = TX.update(g, s, w)
        w = optax.apply_updates(w, u)
        return w, s, loss(w, t)

    return jax.vmap(one)(params, opt_state, targets)


def targets(k):
    return np.random.default_rng(k).normal(0.0, 0.5, (P, DIM)).astype(np.float32)


def initial_params():
    return jnp.asarray(np.random.default_rng(0).normal(size=(P, DIM)).astype(np.float32))


def trace_of(opt_state):
    return np.asarray(opt_state.inner_state[0].trace)


def lr_of(opt_state):
    return np.asarray(opt_state.hyperparams["learning_rate"])


def run(t, params, opt_state, start, iterations):
    decisions = []
    for k in range(start, start + iterations):
        params, opt_state, energies = step(params, opt_state, targets(k))
        opt_state, d = t.tell(energies, params, opt_state, iteration=k)
        decisions.append(d)
    return params, opt_state, decisions


def test_rates_resets_and_snapshots():
    ctl = controller()
    t = nrpt.jax.Tempering(TX, ctl, snapshot_every=5, burn_in=10)
    params = initial_params()
    opt_state = t.init(params)
    np.testing.assert_array_equal(lr_of(opt_state), ctl.learning_rates.astype(np.float32))
    resets = 0
    recorded = []
    for k in range(120):
        params, stepped, energies = step(params, opt_state, targets(k))
        before = trace_of(stepped)
        opt_state, d = t.tell(energies, params, stepped, iteration=k)
        after = trace_of(opt_state)
        np.testing.assert_array_equal(lr_of(opt_state), d.learning_rates.astype(np.float32))
        for r in range(P):
            if d.momentum_reset[r]:
                assert np.all(after[r] == 0.0)
            else:
                np.testing.assert_array_equal(after[r], before[r])
        resets += int(d.momentum_reset.sum())
        if k >= 10 and (k - 10) % 5 == 0:
            assert t.target_index == d.replica_at[0]
            recorded.append(np.asarray(params[d.replica_at[0]]))
    assert resets > 20
    assert t.snapshot_iterations == list(range(10, 120, 5))
    for snap, want in zip(t.snapshots, recorded):
        np.testing.assert_array_equal(snap, want)

    # The running average, of models from one start: the mean of the states a list keeps.
    same = jnp.broadcast_to(initial_params()[:1], (P, DIM))
    t1 = nrpt.jax.Tempering(TX, controller(), snapshot_every=5, burn_in=10)
    run(t1, same, t1.init(same), 0, 120)
    t2 = nrpt.jax.Tempering(TX, controller(), snapshot_every=5, burn_in=10, snapshots="average")
    run(t2, same, t2.init(same), 0, 120)
    assert t2.snapshots == [] and t2.average_count == len(t1.snapshots) == len(recorded)
    np.testing.assert_allclose(t2.average, np.mean(t1.snapshots, axis=0), rtol=1e-5)
    # Independently initialised models cannot be averaged.
    with pytest.raises(ValueError, match=r"do not start from the same parameters"):
        t2.init(initial_params())


def test_keeping_the_state():
    t = nrpt.jax.Tempering(TX, controller(), reset_state=False)
    params = initial_params()
    opt_state = t.init(params)
    changed = 0
    for k in range(60):
        params, stepped, energies = step(params, opt_state, targets(k))
        opt_state, d = t.tell(energies, params, stepped, iteration=k)
        np.testing.assert_array_equal(trace_of(opt_state), trace_of(stepped))
        changed += int(d.changed_level.sum())
    assert changed > 5


def test_state_dict_resumes_bit_for_bit():
    t = nrpt.jax.Tempering(TX, controller(), snapshot_every=4)
    params = initial_params()
    params, opt_state, _ = run(t, params, t.init(params), 0, 40)
    saved = pickle.loads(pickle.dumps(t.state_dict(params, opt_state)))
    straight_params, _, straight = run(t, params, opt_state, 40, 40)

    ctl2 = controller()
    t2 = nrpt.jax.Tempering(TX, ctl2, snapshot_every=4)
    params2, opt_state2 = t2.load_state_dict(saved)
    assert ctl2.iteration == 40
    params2, _, resumed = run(t2, params2, opt_state2, 40, 40)
    np.testing.assert_array_equal(np.asarray(params2), np.asarray(straight_params))
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a.replica_at, b.replica_at)
    assert t2.snapshot_iterations == t.snapshot_iterations


def test_gradient_noise():
    ctl = controller(explorer="sgld")
    t = nrpt.jax.Tempering(TX, ctl)
    std = t.gradient_noise_std(momentum=0.9)
    want = np.sqrt(2 * 0.1 * ctl.temperatures / (N_DATA * ctl.learning_rates))
    np.testing.assert_allclose(std, want, rtol=1e-12)
    grads = {"a": jnp.zeros((P, 20000)), "b": jnp.zeros((P, 2, 10000))}
    noisy = jax.jit(nrpt.jax.add_gradient_noise)(grads, jax.random.key(0, impl="rbg"), std)  # rbg: compiles fast on a CPU
    for leaf in jax.tree_util.tree_leaves(noisy):
        sample = np.asarray(leaf).reshape(P, -1).std(axis=1)
        np.testing.assert_allclose(sample, std, rtol=0.03)


def test_errors():
    ctl = controller()
    with pytest.raises(TypeError, match="optax GradientTransformation"):
        nrpt.jax.Tempering(object(), ctl)
    with pytest.raises(TypeError, match="nrpt.Controller"):
        nrpt.jax.Tempering(TX, object())
    t = nrpt.jax.Tempering(optax.sgd(0.1), ctl)
    with pytest.raises(ValueError, match="inject_hyperparams"):
        t.init(initial_params())
    t = nrpt.jax.Tempering(TX, ctl)
    with pytest.raises(ValueError, match="leading axis of 4 models"):
        t.init(jnp.zeros((3, DIM)))
    with pytest.raises(ValueError, match="not a state of nrpt.jax.Tempering"):
        t.load_state_dict({"format": "nrpt.torch.Tempering"})


def test_example_trains_a_tempered_ensemble():
    spec = importlib.util.spec_from_file_location("jax_tempering", EXAMPLES / "jax_tempering.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = example.main(["--iterations", "800"])
    assert out["accuracy"] > 0.9, out
    assert out["samples"] == len(range(200, 800, 10))
    assert out["round_trips"] >= 1 and out["swaps"] > 50, out
    assert all(0.1 < r < 0.3 for r in out["indicator_rates"]), out  # S = 0.2
