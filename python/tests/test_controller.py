"""The controller against nrpt's Rust core: told the energies that the core's own
driver (``Tempering``: explore, then exchange) computed, it makes the driver's
decisions bit for bit: swaps, permutation, ladder, buffer, round trips."""

from __future__ import annotations

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
    ctl = nrpt.Controller(dtype=dtype, **controller_options(config))
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
    assert s["iterations"] == iterations
    assert ctl.iteration == iterations
    # The runs did something worth comparing.
    assert s["pair_swaps"].sum() > 0
    if iterations >= 1000 and p == 16:
        assert s["round_trips"] > 0


def test_the_ladder_starts_where_the_driver_starts():
    ctl = nrpt.Controller(16)
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
        ctl = nrpt.Controller(8, seed=11, explorer=explorer, dtype="float32", **extra)
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
    ctl = nrpt.Controller(12, window=5, seed=21, dtype=dtype, nonfinite="warn")
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
    a = nrpt.Controller(4, seed=2)
    b = nrpt.Controller(4, seed=2)
    for e in rec["energies"]:
        same([a.tell(Losses(list(e)))], [b.tell(e.tolist())])


def test_stats_and_config():
    ctl = nrpt.Controller(4, window=2, swap_rate=0.3, preset="authors-code", pair_energies="per-level")
    for k in range(100):
        ctl.tell([0.0, -10.0, 0.0, -10.0] if k % 2 else [3.0, 2.0, 1.0, 0.0])
    s = ctl.stats()
    assert s["iterations"] == 100
    assert s["pair_indicator_rate"].shape == (3,)
    np.testing.assert_allclose(s["pair_indicator_rate"], s["pair_indicators"] / 100)
    assert s["round_trips_per_1000"] == 1000 * s["round_trips"] / 100
    c = ctl.config
    assert c["window"] == 2
    assert c["config"]["swap_rate"] == 0.3
    assert c["rules"]["sweep_order"] == "sequential"
    assert c["rules"]["pair_energies"] == "per-level"
    assert "Controller(chains=4, window=2, iteration=100" in repr(ctl)
