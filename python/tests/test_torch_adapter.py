"""``nrpt.torch.Tempering`` on real PyTorch (``torch.nn`` modules, ``torch.optim.SGD``):
the same decisions as a hand-written loop, learning rates in the param groups, the
optimizer state cleared exactly where the controller says, snapshots, a resume that
continues bit for bit (Langevin noise included), Langevin noise that samples the right
temperature, the swap energies of the step route (one forward pass per model), and the
traps refused in nrpt's words: weights averaged over unrelated networks, a scheduler
that overrides the controller's learning rate, energies that are tensors.

Skipped where PyTorch is not installed, unless ``NRPT_REQUIRE_TORCH=1`` (CI)."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest

from needs import need

torch = need("torch")
from torch import nn  # noqa: E402

torch.set_num_threads(1)  # tiny tensors: threads only wait on each other

import nrpt  # noqa: E402
import nrpt.torch  # noqa: E402

P = 4
N_DATA = 1000


class Quadratic(nn.Module):
    """Parameters ``w`` (3) and ``b`` (1) in float64."""

    def __init__(self, rng: np.random.Generator, dim: int = 3) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor(rng.normal(size=dim)))
        self.b = nn.Parameter(torch.tensor(rng.normal(size=1)))


def make_models(seed=0, same=False):
    rng = np.random.default_rng(seed)
    models = [Quadratic(rng) for _ in range(P)]
    if same:
        for m in models[1:]:
            m.load_state_dict(models[0].state_dict())
    return models


def sgd(models, **kw):
    kw.setdefault("momentum", 0.9)
    return [torch.optim.SGD(m.parameters(), lr=0.0, **kw) for m in models]


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
            p.grad = p.detach() + torch.tensor(0.3 * rng.normal(size=tuple(p.shape)))
        energies.append(sum(0.5 * float(p.detach() @ p.detach()) for p in m.parameters()) + 0.2 * rng.normal())
    return energies


def run_adapter(tempering, models, iterations, start=0):
    out = []
    for k in range(start, start + iterations):
        energies = grads_and_energies(models, k)
        tempering.step()
        out.append(tempering.tell(energies, iteration=k))
    return out


def weights(models):
    return [torch.cat([p.detach().reshape(-1) for p in m.parameters()]) for m in models]


def test_same_decisions_and_rates_as_a_hand_written_loop():
    models = make_models()
    opts = sgd(models)
    ctl = controller()
    t = nrpt.torch.Tempering(models, opts, ctl)
    for o, lr in zip(opts, ctl.learning_rates):
        assert o.param_groups[0]["lr"] == lr
    # The loop of the controller's documentation, by hand.
    ref_models = make_models()
    ref_opts = sgd(ref_models)
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
        for a, b in zip(weights(models), weights(ref_models)):
            assert torch.equal(a, b)
        cleared += int(d.momentum_reset.sum())
    assert cleared > 20  # the test saw swaps


def test_keeping_the_optimizer_state():
    for kw, tempering_kw in (({"momentum_on_swap": "carry"}, {}), ({}, {"reset_state": False})):
        models = make_models()
        opts = sgd(models)
        t = nrpt.torch.Tempering(models, opts, controller(**kw), **tempering_kw)
        changed = 0
        for d in run_adapter(t, models, 200):
            changed += int(d.changed_level.sum())
            assert all(len(o.state) == 2 for o in opts)
        assert changed > 20


def test_lr_scale_of_a_param_group():
    models = make_models()
    opts = [torch.optim.SGD([{"params": [m.w], "lr_scale": 10.0}, {"params": [m.b]}], lr=0.0,
                            momentum=0.9) for m in models]
    ctl = controller()
    t = nrpt.torch.Tempering(models, opts, ctl)
    run_adapter(t, models, 20)
    for o, lr in zip(opts, ctl.learning_rates):
        assert o.param_groups[0]["lr"] == 10.0 * lr and o.param_groups[1]["lr"] == lr


def test_snapshots_of_the_target_level():
    models = make_models()
    t = nrpt.torch.Tempering(models, sgd(models), controller(), snapshot_every=7, burn_in=30)
    expected = []
    for k in range(120):
        energies = grads_and_energies(models, k)
        t.step()
        d = t.tell(energies, iteration=k)
        if k >= 30 and (k - 30) % 7 == 0:
            target = models[d.replica_at[0]]
            assert t.target_model is target
            expected.append({n: v.detach().clone() for n, v in target.state_dict().items()})
    assert t.snapshot_iterations == list(range(30, 120, 7))
    # Copies, not views of the models that went on training.
    for snap, want in zip(t.snapshots, expected, strict=True):
        for name in want:
            assert torch.equal(snap[name], want[name])
    models = make_models()
    t2 = nrpt.torch.Tempering(models, sgd(models), controller(), snapshot_every=7, burn_in=30,
                              max_snapshots=3)
    run_adapter(t2, models, 120)
    assert t2.snapshot_iterations == list(range(30, 120, 7))[-3:]
    for snap, want in zip(t2.snapshots, expected[-3:], strict=True):
        assert torch.equal(snap["w"], want["w"])


def test_weights_are_averaged_only_between_models_of_one_start():
    # Models from one start: the running mean of the target level's recorded states.
    models = make_models(same=True)
    t = nrpt.torch.Tempering(models, sgd(models), controller(), snapshot_every=7, burn_in=30,
                             snapshots="average")
    recorded = []
    for k in range(120):
        energies = grads_and_energies(models, k)
        t.step()
        d = t.tell(energies, iteration=k)
        if k >= 30 and (k - 30) % 7 == 0:
            recorded.append(models[d.replica_at[0]].w.detach().clone())
    assert t.snapshots == [] and t.average_count == len(recorded) == 13
    torch.testing.assert_close(t.average["w"], torch.stack(recorded).mean(0), rtol=1e-12, atol=0)
    # Independently initialised models: refused, with what to do instead.
    models = make_models()
    with pytest.raises(ValueError, match=r"do not start from the same weights \(models\[0\] and "
                       r"models\[1\] differ in 'w'\).*model_average"):
        nrpt.torch.Tempering(models, sgd(models), controller(), snapshot_every=7,
                             snapshots="average")


def test_model_average_averages_predictions():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.5), nn.Linear(8, 4))
    states = []
    for _ in range(3):
        for p in net.parameters():
            p.data.normal_()
        states.append({k: v.clone() for k, v in net.state_dict().items()})
    x = torch.randn(10, 3)
    net.train()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    probs = nrpt.torch.model_average(net, states, x, batch_size=4)
    want = torch.zeros(10, 4, dtype=torch.float64)
    for s in states:
        net.load_state_dict(s)
        net.eval()
        with torch.no_grad():
            want += torch.softmax(net(x), dim=-1).double() / 3
    # A float32 network: batches of 4 against all at once round its products differently.
    torch.testing.assert_close(probs, want, rtol=1e-5, atol=1e-7)
    # The model's own weights and mode come back.
    net.load_state_dict(before)
    net.train()
    nrpt.torch.model_average(net, states, x)
    assert net.training and all(torch.equal(v, before[k]) for k, v in net.state_dict().items())
    with pytest.raises(ValueError, match="at least one recorded state"):
        nrpt.torch.model_average(net, [], x)


@pytest.mark.parametrize("langevin, given", [(False, False), (True, False), (True, True)])
def test_state_dict_resumes_bit_for_bit(langevin, given):
    def fresh():
        models = make_models()
        generator = torch.Generator().manual_seed(11) if given else None
        t = nrpt.torch.Tempering(models, sgd(models), controller(), snapshot_every=5,
                                 langevin=langevin, generator=generator)
        return models, t

    models, t = fresh()
    run_adapter(t, models, 100)
    buffer = io.BytesIO()
    torch.save(t.state_dict(), buffer)
    straight = run_adapter(t, models, 100, start=100)

    models2, t2 = fresh()
    ctl2 = t2.controller
    buffer.seek(0)
    t2.load_state_dict(torch.load(buffer, weights_only=False))
    assert t2.controller is ctl2 and ctl2.iteration == 100  # restored in place
    resumed = run_adapter(t2, models2, 100, start=100)
    for a, b in zip(straight, resumed, strict=True):
        np.testing.assert_array_equal(a.replica_at, b.replica_at)
        np.testing.assert_array_equal(a.learning_rates, b.learning_rates)
    for a, b in zip(weights(models), weights(models2)):
        assert torch.equal(a, b)
    assert t.snapshot_iterations == t2.snapshot_iterations
    assert torch.equal(t.snapshots[-1]["w"], t2.snapshots[-1]["w"])
    if langevin:
        # The noise mattered: without the generator's state the resumed run differs.
        models3, t3 = fresh()
        state = t.state_dict()
        run_adapter(t, models, 10, start=200)
        t3.load_state_dict({**state, "generator": None})
        run_adapter(t3, models3, 10, start=200)
        assert not all(torch.equal(a, b) for a, b in zip(weights(models), weights(models3)))


def test_the_adapter_s_own_noise_depends_on_the_seed():
    runs = []
    for seed in (3, 3, 4):
        models = make_models(same=True)
        t = nrpt.torch.Tempering(models, sgd(models), controller(seed=seed), langevin=True)
        run_adapter(t, models, 5)
        runs.append(weights(models)[0])
    assert torch.equal(runs[0], runs[1]) and not torch.equal(runs[0], runs[2])


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_langevin_noise_samples_the_target_temperature(momentum):
    """SGLD / SGHMC on the mean energy |theta|^2 / 2 of N examples at the target
    level (T = 1): the posterior exp(-N |theta|^2 / 2) has variance 1 / N per
    coordinate; at a hot level of the "msgd" explorer (T = 0) there is no noise."""
    dim = 4000
    models = [nn.ParameterDict({"w": nn.Parameter(torch.zeros(dim, dtype=torch.float64))})
              for _ in range(2)]
    opts = [torch.optim.SGD(m.parameters(), lr=0.0, momentum=momentum) for m in models]
    ctl = nrpt.Controller(2, eta_min=0.05, eta_max=0.1, explorer="msgd", n_data=N_DATA)
    t = nrpt.torch.Tempering(models, opts, ctl, langevin=True,
                             generator=torch.Generator().manual_seed(1))
    std = t.gradient_noise_std()
    eta = ctl.learning_rates
    assert std[1] == [0.0]
    assert std[0][0] == pytest.approx(np.sqrt(2 * (1 - momentum) / (N_DATA * eta[0])))
    variances = []
    for k in range(400):
        for m in models:
            m["w"].grad = m["w"].detach().clone()  # the exact gradient of the energy
        t.step()
        if k >= 200:
            variances.append(float(models[0]["w"].detach().var()))
    assert bool((models[1]["w"] == 0).all())
    # Discretization: the chain's variance is (1/N) / (1 - eta/2) for plain SGLD; with
    # momentum the same to first order in eta. 4000 coordinates x 200 steps: 2 %.
    ratio = np.mean(variances) * N_DATA
    assert 0.95 < ratio < 1.15, ratio


def test_a_scheduler_that_overrides_the_controller_is_refused():
    models = make_models()
    opts = sgd(models)
    t = nrpt.torch.Tempering(models, opts, controller())
    run_adapter(t, models, 3)
    # Constructing the schedulers leaves the rates (StepLR's first factor is 1) ...
    schedulers = [torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5) for o in opts]
    run_adapter(t, models, 1, start=3)
    # ... stepping them after the tell, as a training loop does, halves them.
    for s in schedulers:
        s.step()
    grads_and_energies(models, 4)
    with pytest.raises(ValueError, match=r"step: optimizers\[0\].param_groups\[0\]\[\"lr\"\] is .* "
                       r"a learning-rate scheduler or other code wrote it.*scale_ladder"):
        t.step()
    # Stepping the optimizers directly: caught at the tell.
    opts[2].param_groups[0]["lr"] = 1.0
    with pytest.raises(ValueError, match=r"tell: optimizers\[0\]"):
        t.tell([1.0] * P, iteration=4)


def test_energies_as_tensors():
    """Tensors that require grad, bfloat16 and float16, one tensor of P: the same
    decisions as the float64 numbers they hold."""
    rng = np.random.default_rng(5)
    values = [rng.normal(size=P).astype(np.float32) for _ in range(60)]
    forms = {
        "floats": lambda v: [float(x) for x in v],
        "requires_grad": lambda v: [torch.tensor(float(x), requires_grad=True) * 1.0 for x in v],
        "one_tensor": lambda v: torch.tensor(v),
        "bfloat16": lambda v: [torch.tensor(float(x)).to(torch.bfloat16) for x in v],
        "float16": lambda v: torch.tensor(v).to(torch.float16),
    }
    decisions = {}
    for name, form in forms.items():
        models = make_models()
        t = nrpt.torch.Tempering(models, sgd(models), controller())
        decisions[name] = [t.tell(form(v), iteration=k).replica_at for k, v in enumerate(values)]
    for name in ("requires_grad", "one_tensor"):
        np.testing.assert_array_equal(decisions[name], decisions["floats"], err_msg=name)
    # The low-precision ones: the decisions of the float64 numbers they round to.
    for name, dtype in (("bfloat16", torch.bfloat16), ("float16", torch.float16)):
        models = make_models()
        t = nrpt.torch.Tempering(models, sgd(models), controller())
        rounded = [t.tell(torch.tensor(v).to(dtype).double().numpy(), iteration=k).replica_at
                   for k, v in enumerate(values)]
        np.testing.assert_array_equal(decisions[name], rounded, err_msg=name)
    models = make_models()
    t = nrpt.torch.Tempering(models, sgd(models), controller())
    with pytest.raises(ValueError, match="energies must hold one number per replica"):
        t.tell([torch.ones(3)] * P)
    with pytest.raises(ValueError, match="energies must hold one number per replica"):
        t.tell(torch.ones(P + 1))


def spiral(n=200, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, 3 * np.pi, n)
    c = rng.integers(0, 2, n)
    r = t / (3 * np.pi)
    x = np.stack([r * np.cos(t + np.pi * c), r * np.sin(t + np.pi * c)], 1) + 0.05 * rng.normal(size=(n, 2))
    return torch.tensor(x, dtype=torch.float32), torch.tensor(c)


def test_step_energies_take_one_forward_pass_and_swap_at_the_target_rate():
    """``swap_energy="step"``: the loss of each model's step is its energy. A forward
    hook counts the passes: one per model per iteration. The pairs' indicator rates
    still reach the target S."""
    x, y = spiral()
    n = len(x)
    torch.manual_seed(0)
    models = [nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2)) for _ in range(P)]
    passes = [0] * P
    for r, m in enumerate(models):
        m.register_forward_hook(lambda mod, inp, out, r=r: passes.__setitem__(r, passes[r] + 1))
    opts = [torch.optim.SGD(m.parameters(), lr=0.0, momentum=0.9) for m in models]
    s = 0.3
    ctl = nrpt.Controller(P, window=1, swap_rate=s, eta_min=0.002, eta_max=0.05, n_data=n, seed=1)
    t = nrpt.torch.Tempering(models, opts, ctl, swap_energy="step")
    generator = torch.Generator().manual_seed(2)
    iterations = 1000
    for k in range(iterations):
        batch = torch.randint(0, n, (32,), generator=generator)  # one batch for every model
        losses = []
        for m, o in zip(models, opts):
            o.zero_grad()
            loss = nn.functional.cross_entropy(m(x[batch]), y[batch])
            loss.backward()
            losses.append(loss)
        t.step(losses)
        t.tell(iteration=k)
    assert passes == [iterations] * P
    stats = ctl.stats()
    # The buffer steers the pairs' mean indicator rate to S; the ladder's two inner
    # rates share it out between the pairs (measured: 0.255, 0.268, 0.362 over the
    # whole run, warm-up included).
    rates = np.asarray(stats["pair_indicator_rate"])
    assert abs(rates.mean() - s) < 0.02 and np.all(np.abs(rates - s) < 0.1), rates
    assert stats["swaps"] > 100
    # The energies told were the losses of the steps: the route refuses the other's calls.
    with pytest.raises(ValueError, match="no losses since the last tell"):
        t.tell(iteration=iterations)
    with pytest.raises(ValueError, match="step\\(losses\\) needs the loss of each model's step"):
        t.step()
    t.step([1.0] * P)
    with pytest.raises(ValueError, match="call tell\\(iteration=k\\) without energies"):
        t.tell([1.0] * P)
    fresh = nrpt.torch.Tempering(models, opts, nrpt.Controller(P, n_data=n))
    with pytest.raises(ValueError, match="takes losses only with swap_energy=\"step\""):
        fresh.step([1.0] * P)
    with pytest.raises(TypeError, match="tell\\(\\) needs the energies"):
        fresh.tell()


def test_errors():
    models = make_models()
    opts = sgd(models)
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
    with pytest.raises(ValueError, match="swap_energy must be one of"):
        nrpt.torch.Tempering(models, opts, ctl, swap_energy="shared")
    with pytest.raises(ValueError, match="n_data"):
        nrpt.torch.Tempering(models, opts, nrpt.Controller(P), langevin=True)
    nesterov = sgd(models, nesterov=True)
    with pytest.raises(ValueError, match="Nesterov"):
        nrpt.torch.Tempering(models, nesterov, ctl, langevin=True)
    t = nrpt.torch.Tempering(models, opts, ctl)
    with pytest.raises(ValueError, match="not a state of nrpt.torch.Tempering"):
        t.load_state_dict({"format": "something else"})
    with pytest.raises(ValueError, match="energies must hold one number per replica"):
        t.tell([1.0, 2.0])


def test_without_torch_the_import_error_says_so(monkeypatch):
    models = make_models()
    t = nrpt.torch.Tempering(models, sgd(models), controller(), langevin=True)
    monkeypatch.setitem(sys.modules, "torch", None)  # "import torch" raises ImportError
    with pytest.raises(ImportError, match="nrpt.torch needs PyTorch"):
        t.step()
