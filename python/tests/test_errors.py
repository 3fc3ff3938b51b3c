"""Bad input raises ValueError with the command line's message in Python's words
(keyword names, no flag syntax), or TypeError for a keyword that does not exist or a
value of the wrong type, and changes nothing."""

from __future__ import annotations

import re

import numpy as np
import pytest

import nrpt


@pytest.mark.parametrize(
    "command, kwargs, flags",
    [
        ("run", {"chains": 1}, ["--chains", "1"]),
        ("run", {"swap_rate": 1.5}, ["--swap-rate", "1.5"]),
        ("run", {"eta_min": 0.6, "eta_max": 0.003}, ["--eta-min", "0.6", "--eta-max", "0.003"]),
        ("run", {"window": 0}, ["--window", "0"]),
        ("run", {"window": "eight"}, ["--window", "eight"]),
        ("run", {"buffer": -1.0}, ["--buffer=-1.0"]),
        ("run", {"rule": "metropolis"}, ["--rule", "metropolis"]),
        ("run", {"explorer": "adam"}, ["--explorer", "adam"]),
        ("run", {"math": "fastest"}, ["--math", "fastest"]),
        ("reproduce", {"math": "approximate"}, ["--math", "approximate"]),
        ("run", {"target": "classifier", "data": "/no/such/file.csv"},
         ["--target", "classifier", "--data", "/no/such/file.csv"]),
        ("deep", {"chains": 1}, ["--chains", "1"]),
        ("deep", {"reference": "/no/such/reference"}, ["--reference", "/no/such/reference"]),
        ("reproduce", {"iterations": 10}, ["-n", "10"]),
        ("scale", {"swap_rate": "0.4,1.2"}, ["--swap-rate", "0.4,1.2"]),
    ],
)
def test_the_command_s_messages(cli, tmp_path, command, kwargs, flags):
    expected = pythonic(cli.error(command, *flags, "-o", str(tmp_path / "o")))
    function = getattr(nrpt, command)
    with pytest.raises(ValueError) as e:
        function(**kwargs)
    assert str(e.value) == expected
    assert "--" not in str(e.value)


def pythonic(message):
    """The command's message with keyword names for its flags."""
    message = re.sub(r"--([a-z][a-z0-9-]*)(?: <[^>]*>|=<[^>]*>)?", lambda m: m[1].replace("-", "_"), message)
    return re.sub(r"\b([a-z_0-9]+) \(\1\)", r"\1", message)


def test_the_controller_s_configuration_errors(cli, tmp_path):
    expected = cli.error("run", "--chains", "1", "-o", str(tmp_path / "o"))
    with pytest.raises(ValueError) as e:
        nrpt.Controller(1)
    assert str(e.value) == pythonic(expected) == "chains: must be between 2 and 65536, got 1"
    with pytest.raises(ValueError, match=r"^swap_rate: must lie strictly"):
        nrpt.Controller(16, swap_rate=0.0)
    with pytest.raises(ValueError, match="the window must be at least 1 iteration"):
        nrpt.Controller(16, window=0)


def test_rules_that_need_the_energy_function_are_refused():
    for kwargs in ({"preset": "authors-code"}, {"pair_energies": "fresh-per-test"}):
        with pytest.raises(ValueError, match=r"pair_energies: `fresh-per-test`"):
            nrpt.Controller(16, **kwargs)
    # The authors' code's other rules are fine.
    nrpt.Controller(16, preset="authors-code", pair_energies="per-level")


def test_unknown_and_refused_keywords():
    with pytest.raises(TypeError, match="unexpected keyword argument 'windw'"):
        nrpt.Controller(16, windw=3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'noise'"):
        nrpt.Controller(16, noise=1.0)  # the controller is told energies: no noise
    with pytest.raises(TypeError, match="nothing is written"):
        nrpt.run(out="somewhere")
    with pytest.raises(TypeError, match="nothing is written"):
        nrpt.run(checkpoint_every=10)
    with pytest.raises(TypeError, match="unexpected keyword argument 'chians'"):
        nrpt.run(chians=8)
    with pytest.raises(TypeError, match="quick must be True or False"):
        nrpt.reproduce(quick="yes")
    with pytest.raises(TypeError):
        nrpt.Controller("16")
    with pytest.raises(ValueError, match="dtype must be"):
        nrpt.Controller(16, dtype="int8")
    with pytest.raises(ValueError, match="nonfinite must be one of"):
        nrpt.Controller(16, nonfinite="ignore")


def test_energies_of_the_wrong_length_change_nothing():
    ctl = nrpt.Controller(4)
    ctl.tell([3.0, 2.0, 1.0, 0.0])
    before = ctl.state_dict()
    for bad in ([1.0, 2.0, 3.0], np.zeros(5), np.zeros((2, 4)), 7.0, []):
        with pytest.raises(ValueError, match=r"one number per replica: expected shape \(4,\)"):
            ctl.tell(bad)
    for bad in (["a", "b", "c", "d"], None, [True, False, True, False], np.ones(4, complex),
                np.array([1.0, None, 2.0, 3.0], dtype=object)):
        with pytest.raises(TypeError, match="energies must be 4 real numbers"):
            ctl.tell(bad)
    assert ctl.state_dict() == before


def test_pythonic_words():
    with pytest.raises(ValueError) as e:
        nrpt.Controller(4, adapt_ladder="maybe")
    assert "'adapt_ladder'" in str(e.value) and "--" not in str(e.value)
    for dtype in (np.float32, np.dtype("float32"), "float32", "f32"):
        assert nrpt.Controller(4, dtype=dtype).dtype == np.float32
    assert nrpt.Controller(4, dtype=float).dtype == np.float64
    with pytest.raises(ValueError, match="dtype must be"):
        nrpt.Controller(4, dtype=np.int8)
    with pytest.raises(TypeError, match="dtype must be"):
        nrpt.Controller(4, dtype="no such type")
    with pytest.raises(ValueError, match="rules must be one of"):
        nrpt.Controller(4, rules="mine")
    with pytest.raises(ValueError, match="energy must be one of"):
        nrpt.Controller(4, energy="median")


def test_nonfinite_energies():
    # raise (default): nothing changes, the message names the chains.
    ctl = nrpt.Controller(4)
    with pytest.raises(ValueError, match=r"replica 1: nan, replica 3: inf.*nonfinite=\"raise\""):
        ctl.tell([0.0, np.nan, 0.0, np.inf])
    assert ctl.iteration == 0
    # warn: the command line's policy, with a warning; skip: the same, silently.
    policies = {}
    for policy in ("warn", "skip"):
        c = nrpt.Controller(4, window=1, nonfinite=policy, rules="paper")
        energies = [[3.0, np.nan, 1.0, 0.0], [3.0, 2.0, 1.0, 0.0]] * 20
        if policy == "warn":
            with pytest.warns(RuntimeWarning, match="replica 1: nan"):
                ds = [c.tell(e) for e in energies]
        else:
            ds = [c.tell(e) for e in energies]
        # The pairs of the replica with a NaN never swap while it is NaN.
        first = ds[0]
        assert first.nonfinite.tolist() == [True, True, False]
        assert not first.swapped[:2].any()
        policies[policy] = c.stats()
    assert policies["warn"]["nonfinite_energies"] == 20
    assert policies["warn"]["pair_nonfinite"] == [20, 20, 0]
    for key, value in policies["warn"].items():
        np.testing.assert_array_equal(value, policies["skip"][key], err_msg=key)


def test_toy_explorer_checks_its_arrays():
    toy = nrpt.ToyExplorer(4, dtype="float32")
    x = toy.initial_states()
    assert x.shape == (4, 2) and x.dtype == np.float32
    with pytest.raises(ValueError, match=r"states must be a C-contiguous, writable float32 array of shape \(4, 2\)"):
        toy.step(x.astype(np.float64), np.ones(4), np.zeros(4), 0)
    with pytest.raises(ValueError, match="learning_rates must have length 4"):
        toy.step(x, np.ones(3), np.zeros(4), 0)
    msgd = nrpt.ToyExplorer(4, explorer="msgd")
    with pytest.raises(ValueError, match="pass momenta"):
        msgd.step(msgd.initial_states(), np.ones(4), np.zeros(4), 0)
    with pytest.raises(ValueError, match="toy explorer runs the synthetic targets"):
        nrpt.ToyExplorer(4, target="classifier")
