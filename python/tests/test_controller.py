"""The controller against nrpt's Rust core: told the energies that the core's own
driver (``Tempering``: explore, then exchange) computed, it makes the driver's
decisions bit for bit: swaps, permutation, ladder, buffer, round trips."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

import nrpt
from nrpt.testing import record_tempering

SWAPPED, INDICATOR, ATTEMPT, NONFINITE = 4, 1, 2, 8

# (configuration of `nrpt run`, the controller's share of it, iterations)
CASES = [
    ({}, 1500),
    ({"window": 1, "seed": 1}, 1000),
    ({"window": "paper", "swap_rate": 0.3, "seed": 2}, 1000),
    ({"window": "seo", "seed": 3}, 800),
    ({"rule": "metropolis", "explorer": "sgld", "window": 4, "seed": 4}, 800),
    ({"explorer": "msgd", "eta_min": 0.001, "eta_max": 0.05, "window": 5, "seed": 5}, 800),
    ({"explorer": "msgd", "eta_min": 0.001, "eta_max": 0.05, "momentum_on_swap": "carry"}, 500),
    ({"sweep_order": "sequential", "ladder_update": "in-place", "seed": 6}, 800),
    ({"preset": "authors-code", "pair_energies": "per-level", "seed": 7}, 800),
    ({"buffer_projection": "unprojected", "ladder_decimals": 3, "buffer": 1.0}, 800),
    ({"adapt_ladder": False, "adapt_buffer": False, "chains": 6}, 500),
    ({"chains": 5, "window": 3, "buffer_scale": 2.0, "gamma_a": 20.0, "gamma_b": 100.0}, 600),
]

#: Keys of `nrpt run` that configure the toy (the controller does not take them).
TOY_ONLY = ("target", "dim", "noise", "momentum")


def controller_options(config):
    return {k: v for k, v in config.items() if k not in TOY_ONLY}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config, iterations", CASES)
def test_same_decisions_as_the_rust_driver(config, iterations, dtype):
    config = {"chains": 16, **config}
    rec = record_tempering(iterations, dtype=dtype, **config)
    ctl = nrpt.Controller(dtype=dtype, rules="paper", **controller_options(config))
    p = config["chains"]
    assert rec["energies"].shape == (iterations, p)
    assert rec["energies"].dtype == np.dtype(dtype)
    reset = config.get("momentum_on_swap", "reset") == "reset"
    for k in range(iterations):
        d = ctl.tell(rec["energies"][k])
        flags = rec["flags"][k]
        assert d.iteration == k
        np.testing.assert_array_equal(d.swapped, flags & SWAPPED != 0, err_msg=f"k={k}")
        np.testing.assert_array_equal(d.indicators, flags & INDICATOR != 0)
        np.testing.assert_array_equal(d.attempted, flags & ATTEMPT != 0)
        np.testing.assert_array_equal(d.nonfinite, flags & NONFINITE != 0)
        np.testing.assert_array_equal(d.replica_at, rec["replica_at"][k], err_msg=f"k={k}")
        # The ladder and the buffer to the bit.
        assert d.ladder.tobytes() == rec["ladder"][k].tobytes(), f"ladder at k={k}"
        assert d.buffer == rec["buffer"][k], f"buffer at k={k}"
        # Views by replica agree with the views by level.
        np.testing.assert_array_equal(d.level_of[d.replica_at], np.arange(p))
        np.testing.assert_array_equal(d.learning_rates, d.ladder[d.level_of])
        moved = np.zeros(p, dtype=bool)
        for pair in np.flatnonzero(d.swapped):
            moved[d.replica_at[pair]] = moved[d.replica_at[pair + 1]] = True
        np.testing.assert_array_equal(d.changed_level, moved)
        np.testing.assert_array_equal(d.momentum_reset, moved & reset)
        assert d.swaps == int(d.swapped.sum())
        s = ctl.stats()
        assert s["round_trips"] == rec["round_trips"][k], f"round trips at k={k}"
        assert s["authors_round_trips"] == rec["authors_round_trips"][k]
        assert s["restarts"] == rec["restarts"][k]
    s = ctl.stats()
    np.testing.assert_array_equal(s["pair_swaps"], rec["pair_swaps"])
    assert s["iterations_run"] == iterations
    assert s["swaps"] == sum(s["pair_swaps"]) == sum(rec["pair_swaps"])
    assert ctl.iteration == iterations
    # The runs did something worth comparing.
    assert sum(s["pair_swaps"]) > 0
    if iterations >= 1000 and p == 16:
        assert s["round_trips"] > 0


def test_the_ladder_starts_where_the_driver_starts():
    ctl = nrpt.Controller(16, rules="paper")
    rec = record_tempering(1, chains=16)
    assert ctl.ladder[0] == 0.003 and ctl.ladder[-1] == 0.6
    np.testing.assert_allclose(ctl.ladder, np.geomspace(0.003, 0.6, 16), rtol=1e-12)
    np.testing.assert_array_equal(ctl.replica_at, np.arange(16))
    np.testing.assert_array_equal(ctl.temperatures, [1.0] + [0.0] * 15)
    np.testing.assert_array_equal(ctl.ask(), ctl.ladder)
    assert ctl.window == 7
    assert ctl.buffer == 4.0
    # One iteration later both have adapted the same way.
    d = ctl.tell(rec["energies"][0])
    assert d.ladder.tobytes() == rec["ladder"][0].tobytes()


def test_a_python_loop_reproduces_the_driver_states():
    """Exploring with ToyExplorer and telling the controller reproduces the driver's
    final states, not only its decisions."""
    for explorer in ("sgd", "msgd"):
        extra = {"eta_min": 0.001, "eta_max": 0.05} if explorer == "msgd" else {}
        rec = record_tempering(600, chains=8, seed=11, explorer=explorer, dtype="float32", **extra)
        ctl = nrpt.Controller(8, seed=11, explorer=explorer, dtype="float32", rules="paper", **extra)
        toy = nrpt.ToyExplorer(8, seed=11, explorer=explorer, dtype="float32")
        x = toy.initial_states()
        v = np.zeros_like(x) if explorer == "msgd" else None
        for k in range(600):
            e = toy.step(x, ctl.ask(), ctl.temperatures, k, v)
            np.testing.assert_array_equal(e, rec["energies"][k])
            d = ctl.tell(e)
            if v is not None:
                v[d.momentum_reset] = 0.0
        np.testing.assert_array_equal(x, rec["states"])


def continue_with(ctl, energies):
    return [ctl.tell(e) for e in energies]


def same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        for field in ("swapped", "replica_at", "ladder", "learning_rates", "momentum_reset"):
            np.testing.assert_array_equal(getattr(x, field), getattr(y, field))
        assert (x.buffer, x.round_trips, x.iteration) == (y.buffer, y.round_trips, y.iteration)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_state_save_and_load_continue_exactly(tmp_path, dtype):
    rec = record_tempering(900, chains=12, window=5, seed=21, dtype=dtype)
    ctl = nrpt.Controller(12, window=5, seed=21, dtype=dtype, nonfinite="warn", rules="paper")
    continue_with(ctl, rec["energies"][:400])
    state = ctl.state_dict()
    assert state["progress"]["iteration"] == 400
    restored = nrpt.Controller.from_state_dict(state)
    path = tmp_path / "ctl.json"
    ctl.save(path)
    loaded = nrpt.Controller.load(path)
    pickled = pickle.loads(pickle.dumps(ctl))
    assert restored.nonfinite == loaded.nonfinite == pickled.nonfinite == "warn"
    assert restored.dtype == np.dtype(dtype)
    rest = rec["energies"][400:]
    expected = continue_with(ctl, rest)
    for other in (restored, loaded, pickled):
        same(continue_with(other, rest), expected)
        assert other.stats()["round_trips"] == rec["round_trips"][-1]
        assert other.ladder.tobytes() == rec["ladder"][-1].tobytes()


def test_a_corrupt_state_is_refused():
    ctl = nrpt.Controller(8)
    ctl.tell(np.arange(8.0))
    state = ctl.state_dict()
    state["level_of"][0], state["level_of"][1] = state["level_of"][1], state["level_of"][0]
    with pytest.raises(ValueError, match="permutation"):
        nrpt.Controller.from_state_dict(state)
    state = ctl.state_dict()
    state["ladder"] = state["ladder"][:-1]
    with pytest.raises(ValueError, match="ladder"):
        nrpt.Controller.from_state_dict(state)
    with pytest.raises(ValueError, match="not a saved nrpt controller"):
        nrpt.Controller.from_state_dict({"format": "something else"})


def test_energies_from_anything_with_array():
    class Losses:
        def __init__(self, values):
            self.values = values

        def __array__(self, dtype=None, copy=None):
            return np.asarray(self.values, dtype=dtype)

    rec = record_tempering(50, chains=4, seed=2)
    a = nrpt.Controller(4, seed=2, rules="paper")
    b = nrpt.Controller(4, seed=2, rules="paper")
    for e in rec["energies"]:
        same([a.tell(Losses(list(e)))], [b.tell(e.tolist())])


def test_stats_and_config():
    ctl = nrpt.Controller(4, window=2, swap_rate=0.3, preset="authors-code", pair_energies="per-level")
    for k in range(100):
        ctl.tell([0.0, -10.0, 0.0, -10.0] if k % 2 else [3.0, 2.0, 1.0, 0.0])
    s = ctl.stats()
    assert s["iterations_run"] == 100
    assert len(s["pair_indicator_rate"]) == 3
    np.testing.assert_allclose(s["pair_indicator_rate"], np.array(s["pair_indicators"]) / 100)
    assert s["indicator_rate"] == pytest.approx(np.mean(s["pair_indicator_rate"]))
    assert s["executed_swap_rate"] == pytest.approx(np.mean(s["pair_executed_swap_rate"]))
    json.dumps(s)
    assert s["round_trips_per_1000"] == 1000 * s["round_trips"] / 100
    c = ctl.config
    assert c["window"] == 2
    assert c["config"]["swap_rate"] == 0.3
    assert c["rules"]["sweep_order"] == "sequential"
    assert c["rules"]["pair_energies"] == "per-level"
    assert "Controller(chains=4, window=2, iteration=100" in repr(ctl)


# ---------------------------------------------------------------------------------
# The practitioner's defaults: units, order, non-finite energies, pairing.


def logistic_losses(chains, iterations, seed=0, n=512, d=10, batch=32):
    """P logistic regressions trained by SGD under a controller with the defaults,
    each told its mini-batch's per-example mean loss; returns the decisions."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = (x @ rng.normal(size=d) + 0.5 * rng.normal(size=n) > 0).astype(float)
    w = rng.normal(scale=0.1, size=(chains, d))
    ctl = nrpt.Controller(chains, n_data=n, eta_min=0.01, eta_max=1.0)
    decisions = []
    for k in range(iterations):
        lrs = ctl.ask()
        losses = np.empty(chains)
        for r in range(chains):
            i = rng.integers(0, n, size=batch)
            p = 1.0 / (1.0 + np.exp(-x[i] @ w[r]))
            w[r] -= lrs[r] * x[i].T @ (p - y[i]) / batch
            j = rng.integers(0, n, size=batch)
            z = x[j] @ w[r]
            losses[r] = np.mean(np.logaddexp(0.0, z) - y[j] * z)
        decisions.append(ctl.tell(losses, iteration=k))
    return ctl, decisions


def test_a_per_example_mean_loss_swaps_within_50_iterations_with_the_defaults():
    for seed in range(3):
        ctl, decisions = logistic_losses(6, 50, seed=seed)
        first = next((d.iteration for d in decisions if d.swapped.any()), None)
        assert first is not None and first < 50, f"seed {seed}: no swap in 50 iterations"
        assert 0.0 < ctl.buffer < 1.0, ctl.buffer  # in the loss's units, not 4.0
        assert ctl.config["config"]["buffer_scale"] > 1.0


def test_the_practitioner_ladder_stays_ordered_and_the_paper_s_is_one_keyword_away():
    rng = np.random.default_rng(1)
    practitioner = nrpt.Controller(10, eta_min=0.01, eta_max=0.6, window=1)
    paper = nrpt.Controller(10, eta_min=0.01, eta_max=0.6, window=1, rules="paper")
    assert practitioner.config["rules"]["ladder_update"] == "in-place"
    assert paper.config["rules"]["ladder_update"] == "jacobi"
    for k in range(300):
        e = rng.normal(size=10) * (1.0 if k % 3 else 50.0)
        for ctl in (practitioner, paper):
            ctl.tell(e)
        lad = practitioner.ladder
        assert np.all(np.diff(lad) >= 0) and lad[0] == 0.01 and lad[-1] == 0.6, lad


def test_non_finite_energies_leave_the_adaptation_alone_and_are_counted():
    ctl = nrpt.Controller(5, nonfinite="skip", buffer=4.0)
    ctl.tell([3.0, 2.0, 1.0, 0.5, 0.0])
    ladder, buffer = ctl.ladder.copy(), ctl.buffer
    for _ in range(50):
        d = ctl.tell([np.nan] * 5)
        assert d.nonfinite.all() and not d.swapped.any()
    assert ctl.buffer == buffer
    assert ctl.ladder.tobytes() == ladder.tobytes()
    s = ctl.stats()
    assert s["pair_nonfinite"] == [50] * 4 and s["nonfinite_energies"] == 250
    # The paper's rules (the command line's policy) let them push the buffer down.
    paper = nrpt.Controller(5, nonfinite="skip", rules="paper")
    for _ in range(50):
        paper.tell([np.nan] * 5)
    assert paper.buffer < 4.0
    # Saved and restored, the policy holds.
    again = pickle.loads(pickle.dumps(ctl))
    again.tell([np.nan] * 5)
    assert again.buffer == buffer


def test_tell_checks_the_iteration_and_stats_are_json():
    ctl = nrpt.Controller(3)
    ctl.tell([1.0, 2.0, 3.0], iteration=0)
    with pytest.raises(ValueError, match="controller is at iteration 1"):
        ctl.tell([1.0, 2.0, 3.0], iteration=0)
    assert ctl.iteration == 1
    json.dumps(ctl.stats())
    json.dumps(ctl.state_dict())


def test_units_noise_and_ladder_ends():
    ctl = nrpt.Controller(4, explorer="sgld", n_data=100)
    t = ctl.temperatures
    np.testing.assert_allclose(ctl.noise_scales(), np.sqrt(2 * ctl.learning_rates * t / 100))
    np.testing.assert_allclose(ctl.noise_scales(0.9), np.sqrt(0.2 * ctl.learning_rates * t / 100))
    summed = nrpt.Controller(4, explorer="sgld", energy="sum")
    np.testing.assert_allclose(summed.noise_scales(), np.sqrt(2 * summed.learning_rates * t))
    with pytest.raises(ValueError, match="n_data"):
        nrpt.Controller(4).noise_scales()
    with pytest.raises(ValueError, match="n_data"):
        nrpt.Controller(4, rule="metropolis", explorer="sgld")
    before = ctl.ladder
    ctl.set_ladder_ends(0.0003, 0.06)
    np.testing.assert_allclose(ctl.ladder, before / 10, rtol=1e-12)
    np.testing.assert_allclose(ctl.temperature_ladder, ctl.ladder / ctl.ladder[0], rtol=1e-12)
    ctl.scale_ladder(2.0)
    assert ctl.ladder[0] == pytest.approx(0.0006) and ctl.ladder[-1] == pytest.approx(0.12)
    with pytest.raises(ValueError, match="eta_min < eta_max"):
        ctl.set_ladder_ends(0.1, 0.01)
    seen = []
    cb = nrpt.Controller(3, callback=seen.append)
    cb.tell([0.0, 1.0, 2.0])
    assert [d.iteration for d in seen] == [0]
