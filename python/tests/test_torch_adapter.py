"""``nrpt.torch.Tempering`` against the plain controller, on a stand-in for PyTorch
(``fake_torch``: NumPy tensors, ``torch.optim.SGD``'s update and state-dict format):
the same decisions as a hand-written loop, learning rates in the param groups, the
optimizer state cleared exactly where the controller says, snapshots, a resume that
continues bit for bit, and Langevin noise that samples the right temperature."""

from __future__ import annotations

import copy
import pickle
import sys

import numpy as np
import pytest

import fake_torch
import nrpt
import nrpt.torch

P = 4
N_DATA = 1000


@pytest.fixture
def torch():
    with fake_torch.installed() as t:
        yield t


def make_models(seed=0, dim=3):
    rng = np.random.default_rng(seed)
    return [fake_torch.Module(w=rng.normal(size=dim), b=rng.normal(size=1)) for _ in range(P)]


def controller(**kw):
    opts = dict(window=2, swap_rate=0.3, eta_min=0.01, eta_max=0.2, explorer="msgd",
                n_data=N_DATA, seed=3)
    opts.update(kw)
    return nrpt.Controller(P, **opts)


def grads_and_energies(models, k):
    """A noisy quadratic: gradient ``theta + noise``, energy ``|theta|^2 / 2 + noise``
    (noise seeded by iteration and model, so any two loops see the same)."""
    energies = []
    for r, m in enumerate(models):
        rng = np.random.default_rng([k, r])
        for p in m.parameters():
            p.grad = fake_torch.Tensor(p.data + 0.3 * rng.normal(size=p.shape))
        energies.append(sum(0.5 * float(p.data @ p.data) for p in m.parameters()) + 0.2 * rng.normal())
    return energies


def run_adapter(tempering, models, iterations, start=0):
    out = []
    for k in range(start, start + iterations):
        energies = grads_and_energies(models, k)
        tempering.step()
        d = tempering.tell(energies, iteration=k)
        out.append(d)
    return out


def test_same_decisions_and_rates_as_a_hand_written_loop(torch):
    # The adapter's loop ...
    models = make_models()
    opts = [fake_torch.SGD(m.parameters(), momentum=0.9) for m in models]
    ctl = controller()
    t = nrpt.torch.Tempering(models, opts, ctl)
    for o, lr in zip(opts, ctl.learning_rates):
        assert o.param_groups[0]["lr"] == lr
    # ... and the loop of the controller's documentation, by hand.
    ref_models = make_models()
    ref_opts = [fake_torch.SGD(m.parameters(), momentum=0.9) for m in ref_models]
    ref = controller()
    cleared = 0
    for k in range(300):
        for o, lr in zip(ref_opts, ref.ask()):
            o.param_groups[0]["lr"] = float(lr)
        e_ref = grads_and_energies(ref_models, k)
        for o in ref_opts:
            o.step()
        d_ref = ref.tell(e_ref, iteration=k)
        for r in np.flatnonzero(d_ref.momentum_reset):
            ref_opts[r].state.clear()

        energies = grads_and_energies(models, k)
        t.step()
        # The states that the tell must clear are there before it.
        assert all(len(o.state) == 2 for o in opts)
        d = t.tell(energies, iteration=k)
        np.testing.assert_array_equal(d.replica_at, d_ref.replica_at)
        np.testing.assert_array_equal(d.learning_rates, d_ref.learning_rates)
        assert d.buffer == d_ref.buffer
        for r in range(P):
            assert opts[r].param_groups[0]["lr"] == d.learning_rates[r]
            assert (len(opts[r].state) == 0) == bool(d.momentum_reset[r])
            for p, q in zip(models[r].parameters(), ref_models[r].parameters()):
                np.testing.assert_array_equal(p.data, q.data)
        cleared += int(d.momentum_reset.sum())
    assert cleared > 20  # the test saw swaps


def test_keeping_the_optimizer_state(torch):
    for kw, tempering_kw in (({"momentum_on_swap": "carry"}, {}), ({}, {"reset_state": False})):
        models = make_models()
        opts = [fake_torch.SGD(m.parameters(), momentum=0.9) for m in models]
        ctl = controller(**kw)
        t = nrpt.torch.Tempering(models, opts, ctl, **tempering_kw)
        changed = 0
        for d in run_adapter(t, models, 200):
            changed += int(d.changed_level.sum())
            assert all(len(o.state) == 2 for o in opts)
        assert changed > 20


def test_lr_scale_of_a_param_group(torch):
    models = make_models()
    opts = [fake_torch.SGD(m.parameters(), momentum=0.9) for m in models]
    for o in opts:
        o.param_groups[0]["lr_scale"] = 10.0
    ctl = controller()
    t = nrpt.torch.Tempering(models, opts, ctl)
    run_adapter(t, models, 20)
    for o, lr in zip(opts, ctl.learning_rates):
        assert o.param_groups[0]["lr"] == 10.0 * lr


def test_snapshots_of_the_target_level(torch):
    models = make_models()
    opts = [fake_torch.SGD(m.parameters(), momentum=0.9) for m in models]
    ctl = controller()
    t = nrpt.torch.Tempering(models, opts, ctl, snapshot_every=7, burn_in=30)
    expected = []
    for k in range(120):
        energies = grads_and_energies(models, k)
        t.step()
        d = t.tell(energies, iteration=k)
        if k >= 30 and (k - 30) % 7 == 0:
            target = models[d.replica_at[0]]
            assert t.target_model is target
            expected.append({n: v.data.copy() for n, v in target.state_dict().items()})
    assert t.snapshot_iterations == list(range(30, 120, 7))
    assert len(t.snapshots) == len(expected)
    # Copies, not views of the models that went on training.
    for snap, want in zip(t.snapshots, expected):
        for name in want:
            np.testing.assert_array_equal(snap[name].data, want[name])
    # At most max_snapshots, the last ones; and the running average of the same states.
    for kw in ({"max_snapshots": 3}, {"snapshots": "average"}):
        models = make_models()
        opts = [fake_torch.SGD(m.parameters(), momentum=0.9) for m in models]
        t2 = nrpt.torch.Tempering(models, opts, controller(), snapshot_every=7, burn_in=30, **kw)
        run_adapter(t2, models, 120)
        if "max_snapshots" in kw:
            assert t2.snapshot_iterations == list(range(30, 120, 7))[-3:]
            for snap, want in zip(t2.snapshots, expected[-3:]):
                np.testing.assert_array_equal(snap["w"].data, want["w"])
        else:
            assert t2.snapshots == [] and t2.average_count == len(expected)
            mean = np.mean([e["w"] for e in expected], axis=0)
            np.testing.assert_allclose(t2.average["w"].data, mean, rtol=1e-12)


def test_state_dict_resumes_bit_for_bit(torch):
    def fresh():
        models = make_models()
        opts = [fake_torch.SGD(m.parameters(), momentum=0.9) for m in models]
        return models, opts, nrpt.torch.Tempering(models, opts, controller(), snapshot_every=5)

    models, opts, t = fresh()
    run_adapter(t, models, 100)
    saved = pickle.loads(pickle.dumps(t.state_dict()))  # as torch.save would
    straight = run_adapter(t, models, 100, start=100)

    models2, opts2, t2 = fresh()
    ctl2 = t2.controller
    t2.load_state_dict(saved)
    assert t2.controller is ctl2 and ctl2.iteration == 100  # restored in place
    resumed = run_adapter(t2, models2, 100, start=100)
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a.replica_at, b.replica_at)
        np.testing.assert_array_equal(a.learning_rates, b.learning_rates)
    for m, m2 in zip(models, models2):
        for p, q in zip(m.parameters(), m2.parameters()):
            np.testing.assert_array_equal(p.data, q.data)
    assert t.snapshot_iterations == t2.snapshot_iterations
    np.testing.assert_array_equal(t.snapshots[-1]["w"].data, t2.snapshots[-1]["w"].data)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_langevin_noise_samples_the_target_temperature(torch, momentum):
    """SGLD / SGHMC on the mean energy |theta|^2 / 2 of N examples at the target
    level (T = 1): the posterior exp(-N |theta|^2 / 2) has variance 1 / N per
    coordinate; at a hot level of the "msgd" explorer (T = 0) there is no noise."""
    dim = 4000
    models = [fake_torch.Module(w=np.zeros(dim)) for _ in range(2)]
    opts = [fake_torch.SGD(m.parameters(), momentum=momentum) for m in models]
    ctl = nrpt.Controller(2, eta_min=0.05, eta_max=0.1, explorer="msgd", n_data=N_DATA)
    t = nrpt.torch.Tempering(models, opts, ctl, langevin=True, generator=fake_torch.Generator().manual_seed(1))
    std = t.gradient_noise_std()
    eta = ctl.learning_rates
    assert std[1] == [0.0]
    assert std[0][0] == pytest.approx(np.sqrt(2 * (1 - momentum) / (N_DATA * eta[0])))
    variances = []
    for k in range(400):
        for m in models:
            w = m["w"]
            w.grad = fake_torch.Tensor(w.data.copy())  # the exact gradient of the energy
        t.step()
        if k >= 200:
            variances.append(np.var(models[0]["w"].data))
    assert np.all(models[1]["w"].data == 0.0)
    # Discretization: the chain's variance is (1/N) / (1 - eta/2) for plain SGLD; with
    # momentum the same to first order in eta. 4000 coordinates x 200 steps: 2 %.
    ratio = np.mean(variances) * N_DATA
    assert 0.95 < ratio < 1.15, ratio


def test_errors(torch):
    models = make_models()
    opts = [fake_torch.SGD(m.parameters(), momentum=0.9) for m in models]
    ctl = controller()
    with pytest.raises(ValueError, match="one model and one optimizer per replica"):
        nrpt.torch.Tempering(models[:3], opts[:3], ctl)
    with pytest.raises(TypeError, match="not a torch.optim optimizer"):
        nrpt.torch.Tempering(models, [object()] * P, ctl)
    with pytest.raises(TypeError, match="not a model"):
        nrpt.torch.Tempering([object()] * P, opts, ctl)
    with pytest.raises(ValueError, match="each model needs its own optimizer"):
        nrpt.torch.Tempering(models, [opts[0]] * P, ctl)
    with pytest.raises(TypeError, match="nrpt.Controller"):
        nrpt.torch.Tempering(models, opts, "controller")
    with pytest.raises(ValueError, match="snapshot_every"):
        nrpt.torch.Tempering(models, opts, ctl, snapshot_every=0)
    with pytest.raises(ValueError, match="snapshots must be one of"):
        nrpt.torch.Tempering(models, opts, ctl, snapshots="median")
    with pytest.raises(ValueError, match="n_data"):
        nrpt.torch.Tempering(models, opts, nrpt.Controller(P), langevin=True)
    nesterov = [fake_torch.SGD(m.parameters(), momentum=0.9, nesterov=True) for m in models]
    with pytest.raises(ValueError, match="Nesterov"):
        nrpt.torch.Tempering(models, nesterov, ctl, langevin=True)
    t = nrpt.torch.Tempering(models, opts, ctl)
    with pytest.raises(ValueError, match="not a state of nrpt.torch.Tempering"):
        t.load_state_dict({"format": "something else"})
    with pytest.raises(ValueError, match="energies must hold one number per replica"):
        t.tell([1.0, 2.0])


def test_without_torch_the_import_error_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # "import torch" raises ImportError
    models = make_models()
    opts = [fake_torch.SGD(m.parameters()) for m in models]
    t = nrpt.torch.Tempering(models, opts, controller(), langevin=True)
    with pytest.raises(ImportError, match="nrpt.torch needs PyTorch"):
        t.step()
