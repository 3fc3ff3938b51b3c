"""The examples run: the NumPy example reproduces the command line's round-trip count
exactly; the exact-tempering examples recover their closed-form log Z."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from needs import need

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_numpy_example_reproduces_nrpt_run(cli, tmp_path):
    example = load("numpy_controller")
    n, e, seed = 3000, 2, 4
    out = example.main(["--iterations", str(n), "--ensembles", str(e), "--seed", str(seed), "--check"])
    report = cli.json("run", "-n", str(n), "-e", str(e), "--seed", str(seed), "--backend", "cpu",
                      "-o", str(tmp_path / "out"))
    # The command reports rates per 1000 iterations per ensemble: back to counts.
    assert out["round_trips"] == round(report["round_trips_per_1000"] * e * n / 1000)
    assert out["authors_round_trips"] == round(report["round_trips_per_1000_authors"] * e * n / 1000)
    assert out["round_trips"] > 50


def test_numpy_example_runs_as_a_script():
    p = subprocess.run(
        [sys.executable, str(EXAMPLES / "numpy_controller.py"), "--iterations", "500", "--check"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "the same run" in p.stdout, p.stdout


def test_exact_linear_regression_example_recovers_the_evidence():
    example = load("exact_linear_regression")
    out = example.main(["--iterations", "2046", "--chains", "10", "--seed", "3"])
    assert abs(out["errors_in_se"]) < 3, out
    assert out["round_trips"] > 20 and out["warnings"] == []


def test_exact_bimodal_example_mixes_and_recovers_log_z():
    example = load("exact_bimodal")
    out = example.main(["--iterations", "2046", "--chains", "10", "--seed", "3"])
    assert abs(out["errors_in_se"]) < 3, out
    assert 0.3 < out["upper_mode_share"] < 0.7, out
    assert out["round_trips"] > 10


def test_exact_examples_run_as_scripts():
    for name, expect in (("exact_linear_regression", "log evidence"), ("exact_bimodal", "log Z")):
        p = subprocess.run(
            [sys.executable, str(EXAMPLES / f"{name}.py"), "--iterations", "254"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert expect in p.stdout, p.stdout


def test_torch_example_runs():
    """PyTorch's spiral example, shortened (CI installs PyTorch: NRPT_REQUIRE_TORCH=1)."""
    need("torch")
    example = load("torch_tempering")
    results = example.main(["--chains", "4", "--iterations", "300", "--thin", "10"])
    for r in results:
        assert r["samples"] == len(range(60, 300, 10))
        assert 0.0 <= r["accuracy"] <= 1.0 and r["nll"] > 0


def test_torch_digits_example_runs_both_swap_energy_routes():
    """The reference's model in PyTorch, shortened: both routes train (the full run's
    figures are in the PyTorch guide), and their model averages beat chance by far."""
    need("torch")
    example = load("torch_digits")
    results = example.main(["--chains", "4", "--iterations", "200", "--samples", "10"])
    assert [r["route"] for r in results] == ["fresh", "step"]
    for r in results:
        assert r["samples"] == 10
        assert r["accuracy"] > 0.8, r
        assert len(r["swap_rates"]) == 3
