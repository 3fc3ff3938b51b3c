"""The engines from Python against the command line: the same outputs for the same
flags and seed, as dicts and NumPy arrays instead of files."""

from __future__ import annotations

import csv
import faulthandler
import os
import signal
import threading
import time
from typing import Any

import numpy as np
import pytest

import nrpt

# Fields that differ between two runs of the same computation: timings, the date, and the
# command line (the command's has `-o`, Python's has no output folder).
TIMING = {"seconds", "chain_steps_per_sec", "figures", "peak_memory_bytes", "date", "command"}


def assert_same(py: Any, cli: Any, path: str = "") -> None:
    """`py` (with arrays) equals the command's JSON value `cli`, floats to the bit,
    timing fields aside."""
    if isinstance(cli, dict):
        assert isinstance(py, dict), path
        for key, value in cli.items():
            if key in TIMING:
                continue
            assert key in py, f"{path}.{key} missing"
            assert_same(py[key], value, f"{path}.{key}")
    elif isinstance(cli, list):
        py = py.tolist() if isinstance(py, np.ndarray) else py
        assert len(py) == len(cli), path
        for i, (a, b) in enumerate(zip(py, cli)):
            assert_same(a, b, f"{path}[{i}]")
    elif isinstance(py, np.ndarray):
        assert_same(py.tolist(), cli, path)
    else:
        assert py == cli, f"{path}: {py!r} != {cli!r}"


def test_the_precision_keyword_is_the_gpus_storage():
    """``precision=`` is ``--precision``: on the CPU engine only ``"f32"`` runs; the others
    are refused with the command's message, naming the flag."""
    kw = dict(target="sum-modes", dim=4, chains=4, ensembles=2, iterations=50, warmup=0, backend="cpu")
    for p in ("bf16", "f16"):
        with pytest.raises(ValueError, match=r"precision: bf16/f16 state storage is a GPU option; the CPU engine keeps f32 states"):
            nrpt.run(precision=p, **kw)
    r = nrpt.run(precision="f32", **kw)
    assert "precision" not in r["config"]


def test_the_math_keyword(cli, tmp_path):
    """``math=`` is ``--math``: it reaches the configuration and ``summary.json`` (on the
    CPU ``fma`` computes exactly, ``fast`` is the lane groups' fast math)."""
    kw = dict(chains=8, ensembles=16, iterations=300, seed=3, backend="cpu")
    exact = nrpt.run(**kw)
    fast = nrpt.run(math="fast", **kw)
    fma = nrpt.run(math="fma", **kw)
    assert exact["math"] == "exact" and fast["math"] == "fast" and fma["math"] == "exact"
    assert fast["config"]["math"] == "fast" and "math" not in exact["config"]
    # Fast mode is not exact mode's bits on the lane groups; fma is, on the CPU.
    assert fast["samples"].tobytes() != exact["samples"].tobytes()
    assert fma["samples"].tobytes() == exact["samples"].tobytes()
    report = cli.json("run", "--chains", "8", "-e", "16", "-n", "300", "--seed", "3",
                      "--backend", "cpu", "--math", "fast", "-o", str(tmp_path / "o"))
    assert report["config"]["math"] == "fast" and report["math"] == "fast"
    assert np.load(tmp_path / "o" / "samples.npy").tobytes() == fast["samples"].tobytes()


def without_out(config: dict) -> dict:
    return {k: v for k, v in config.items() if k != "out"}


def test_run_equals_nrpt_run(cli, tmp_path):
    out = tmp_path / "out"
    flags = ["--chains", "8", "-e", "2", "-n", "1500", "--seed", "5", "--window", "4"]
    report = cli.json("run", *flags, "--backend", "cpu", "-o", str(out))
    r = nrpt.run(chains=8, ensembles=2, iterations=1500, seed=5, window=4, backend="cpu")
    assert_same(without_out(r["config"]), without_out(report["config"]))
    report.pop("config")
    assert_same(r, report)
    # The round-trip count itself, and the totals behind the rates.
    e, n = 2, 1500
    assert r["round_trips"] == round(report["round_trips_per_1000"] * e * n / 1000)
    assert r["round_trips"] == int(r["ensembles"]["round_trips"].sum()) > 0
    # samples.npy, bit for bit; (samples, ensembles, D).
    samples = np.load(out / "samples.npy")
    assert r["samples"].dtype == np.float32 and r["samples"].shape == samples.shape
    assert r["samples"].tobytes() == samples.tobytes()
    assert r["sample_iterations"][0] == 100 and np.all(np.diff(r["sample_iterations"]) == 10)
    # Every table of the folder is a dict of its columns (rounded in the files: 4 to 6
    # decimals, or 6 significant digits), a
    # column of several CSV columns (NAME_0, NAME_1, ...) a 2-D array.
    for name, vectors in [("trace", ["indicator_rate"]), ("ladder", ["eta_mean", "eta_sd"]),
                          ("pairs", [])]:
        with open(out / f"{name}.csv") as f:
            rows = list(csv.DictReader(f))
        t = r[name]
        for column, values in t.items():
            assert len(values) == len(rows), (name, column)
            for i, row in enumerate(rows):
                cells = ([float(row[f"{column}_{j}"]) for j in range(values.shape[1])]
                         if column in vectors else [float(row[column])])
                got = values[i] if column in vectors else [values[i]]
                assert cells == pytest.approx(list(got), rel=1e-5, abs=6e-5), (name, column, i)
    # nrpt.flat: the same table with the CSV's columns, each 1-D (what pandas takes).
    for name in ["trace", "ladder", "pairs"]:
        with open(out / f"{name}.csv") as f:
            header = next(csv.reader(f))
        flat = nrpt.flat(r[name])
        assert list(flat) == header, name
        assert all(v.ndim == 1 and len(v) == len(r[name][next(iter(r[name]))]) for v in flat.values())
    np.testing.assert_array_equal(nrpt.flat(r["trace"])["indicator_rate_6"], r["trace"]["indicator_rate"][:, 6])
    with pytest.raises(ValueError, match="rows"):
        nrpt.flat({"a": np.zeros(3), "b": np.zeros((2, 2))})
    with pytest.raises(TypeError):
        nrpt.flat([1, 2])
    assert r["trace"]["indicator_rate"].shape[1] == 7
    assert r["ladder"]["eta_mean"].shape[1] == 8
    assert r["final_ladders"].shape == (2, 8)
    assert r["ensembles"]["levels"].shape == (2, 8, 2)
    assert r["ensembles"]["pair_swaps"].shape == (2, 7)


def test_run_of_a_data_target_equals_the_command(cli, tmp_path):
    flags = dict(target="classifier", chains=4, ensembles=1, iterations=60, hidden=[8],
                 thin=20, warmup=0, seed=2, backend="cpu")
    argv = ["--target", "classifier", "--chains", "4", "-e", "1", "-n", "60", "--hidden", "8",
            "--thin", "20", "--warmup", "0", "--seed", "2", "--backend", "cpu"]
    report = cli.json("run", *argv, "-o", str(tmp_path / "out"))
    r = nrpt.run(**flags)
    report.pop("config")
    assert_same(r, report)
    assert r["classifier"]["samples"] == 3
    d = r["samples"].shape[2]
    assert d == 65 * 8 + 9 * 10


def test_run_of_the_gaussian_path_equals_the_command(cli, tmp_path):
    argv = ["--target", "gaussian-path", "--dim", "1", "--chains", "6", "-e", "2", "-n", "3000"]
    report = cli.json("run", *argv, "-o", str(tmp_path / "out"))
    r = nrpt.run(target="gaussian-path", dim=1, chains=6, ensembles=2, iterations=3000)
    report.pop("config")
    assert_same(r, report)
    prof = r["lambda_profile"]
    assert prof["beta"].shape == prof["lambda_estimated"].shape == (101,)
    assert prof["cumulative_closed_form"][-1] == pytest.approx(r["closed_form"]["lambda"])
    # The tables of lambda.csv, grid.csv and rounds.csv, column for column.
    out = tmp_path / "out"
    for name, file in [("lambda_profile", "lambda.csv"), ("grid", "grid.csv"), ("rounds", "rounds.csv")]:
        lines = (out / file).read_text().splitlines()
        header = lines[0].split(",")
        assert list(r[name]) == header, name
        assert all(len(r[name][c]) == len(lines) - 1 for c in header), name
    assert r["rounds"]["grid_adapted"].dtype == bool and not r["rounds"]["grid_adapted"][-1]
    assert r["grid"]["level"].tolist() == list(range(6))


def test_reproduce_equals_the_command(cli, tmp_path):
    report = cli.json("reproduce", "-n", "400", "-e", "1", "--backend", "cpu", "-o", str(tmp_path / "o"))
    r = nrpt.reproduce(iterations=400, ensembles=1, backend="cpu")
    assert_same(r, report)
    assert [m["name"] for m in r["methods"]][2:] == ["DEO-SGD×P16", "DEO⋆-SGD×P16"]
    np.testing.assert_array_equal(r["w_sweep_columns"]["window"], [1, 2, 4, 8, 16, 32])
    assert r["figures"] == {} and r["out"] is None  # nothing written without out=


def test_a_reproduction_shard_equals_the_command_s(cli, tmp_path):
    # The keyword reaches `--shard`: the results of seeds 1..2 of 2, marked as shard 1/2.
    report = cli.json("reproduce", "-n", "400", "-e", "2", "--backend", "cpu", "--shard", "1/2",
                      "-o", str(tmp_path / "o"))
    r = nrpt.reproduce(iterations=400, ensembles=2, backend="cpu", shard="1/2")
    assert_same(r, report)
    assert r["shard"]["shard"] == "1/2" and r["shard"]["seeds"] == [1, 2]


def test_a_deep_shard_equals_the_command_s_and_writes_its_records(cli, tmp_path):
    # The keyword reaches `--shard`: the results of seed 1 of 2, marked as shard 1/2; a
    # written shard holds what `nrpt deep merge` reads.
    argv = ["-e", "2", "--epochs", "3", "--pretrain-epochs", "1", "--chains", "3",
            "--samples", "4", "--hidden", "8", "--backend", "cpu", "--shard", "1/2"]
    report = cli.json("deep", *argv, "-o", str(tmp_path / "o"))
    r = nrpt.deep(ensembles=2, epochs=3, pretrain_epochs=1, chains=3, samples=4, hidden=[8],
                  backend="cpu", shard="1/2", out=tmp_path / "p")
    assert_same(r, report)
    assert r["shard"]["shard"] == "1/2" and r["shard"]["seeds"] == [1, 2]
    for name in ("shard.json", "records.json"):
        assert (tmp_path / "p" / name).read_bytes() != b""


def test_deep_equals_the_command(cli, tmp_path):
    argv = ["-e", "1", "--epochs", "3", "--pretrain-epochs", "1", "--chains", "3",
            "--samples", "4", "--hidden", "8", "--backend", "cpu"]
    report = cli.json("deep", *argv, "-o", str(tmp_path / "o"))
    r = nrpt.deep(ensembles=1, epochs=3, pretrain_epochs=1, chains=3, samples=4, hidden=[8],
                  backend="cpu")
    assert_same(r, report)
    names = [m["name"] for m in r["methods"]]
    assert len(names) == 9 and names[0].startswith("pre-trained") and names[1].startswith("DEO⋆")
    assert names[6:] == ["DEO⋆-SGHMC×P3", "cycSGHMC×P3", "MultiSWAG×P3"]
    assert r["command"].startswith("nrpt deep --ensembles=1 --epochs=3 ")
    curve = r["curves"][0]
    assert curve["ladder"].shape == (len(curve["epochs"]), 3)


def test_scale_equals_the_command(cli, tmp_path):
    argv = ["--target", "bernoulli", "--chains", "8,16", "--window", "1,opt", "-e", "4",
            "--max-iterations", "20000", "--warmup", "500"]
    report = cli.json("scale", *argv, "-o", str(tmp_path / "o"))
    r = nrpt.scale(target="bernoulli", chains=[8, 16], window=["1", "opt"], ensembles=4,
                   max_iterations=20000, warmup=500)
    assert_same(r, report)
    c = r["columns"]
    np.testing.assert_array_equal(c["chains"], [8, 8, 16, 16])
    assert np.all(np.abs(c["ratio"] - 1) < 0.3)
    # Booleans stay booleans, counts stay integers.
    assert c["capped"].dtype == bool and c["round_trips"].dtype.kind in "iu"


def test_old_keywords_of_scale_warn_and_run_as_the_new_ones():
    """``model`` and ``shard`` (now ``target`` and ``part``) still work, with a
    DeprecationWarning naming today's keyword, and give the same sweep."""
    kw = dict(chains=[4, 8], window=["1"], ensembles=2, max_iterations=2000, warmup=100)
    new = nrpt.scale(target="bernoulli", part="1/2", **kw)
    with pytest.warns(DeprecationWarning) as caught:
        old = nrpt.scale(model="bernoulli", shard="1/2", **kw)
    said = [str(w.message) for w in caught]
    assert any(s.startswith("scale(model=...) is now scale(target=...)") for s in said), said
    assert any(s.startswith("scale(shard=...) is now scale(part=...)") for s in said), said
    assert old["part"] == new["part"] == {"index": 1, "count": 2}
    assert_same(old, {k: v for k, v in new.items() if k not in ("columns", "points")})
    for a, b in zip(old["points"], new["points"]):
        assert_same(a, b)
    with pytest.raises(TypeError, match="both 'model' and 'target'"):
        nrpt.scale(model="bernoulli", target="bernoulli", **kw)


def test_runs_release_the_gil():
    """While a run computes, other Python threads run."""
    done = threading.Event()
    out = {}

    def work():
        start = time.perf_counter()
        out["r"] = nrpt.run(chains=16, ensembles=8, iterations=100_000, thin=1000, warmup=0, threads=1,
                            backend="cpu")
        out["seconds"] = time.perf_counter() - start
        done.set()

    worker = threading.Thread(target=work)
    ticks = 0
    worker.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    worker.join()
    assert out["r"]["round_trips"] > 0
    # Holding the GIL would leave this thread a tick or two; free, it ticks every
    # millisecond or so (allow 10 ms a tick on a busy machine).
    assert ticks >= out["seconds"] / 0.01, (ticks, out["seconds"])


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="POSIX signals")
def test_ctrl_c_stops_a_run_and_the_next_one_runs():
    """Ctrl-C (SIGINT to the process) stops a run that would take hours, raising
    KeyboardInterrupt as soon as the engine has stopped; the next run is not affected."""
    # Python raises KeyboardInterrupt only where SIGINT was not ignored when it started;
    # a process started in the background by a non-interactive shell (as CI may) ignores
    # it. Here SIGINT gets Python's own handler, as in any interactive session.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    # Should the interrupt not stop the run, end the process with every thread's stack
    # rather than leave the suite waiting for hours.
    faulthandler.dump_traceback_later(120, exit=True)
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            # About 1.6e10 chain-steps: hours on one thread.
            nrpt.run(chains=16, ensembles=1, iterations=10**9, thin=10**8, warmup=0, threads=1,
                     backend="cpu")
        timer.join()
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGINT, previous)
    # Stopped, not finished: the bound is a thousand times below the run's length.
    assert time.monotonic() - started < 60
    after = nrpt.run(chains=4, iterations=200, backend="cpu")
    assert after["iterations_run"] == 200


def test_warnings_and_strict():
    with pytest.warns(RuntimeWarning, match="no samples were kept"):
        r = nrpt.run(chains=4, ensembles=1, iterations=50, warmup=100)
    assert r["samples"].shape == (0, 1, 2)
    with pytest.raises(ValueError, match="strict: the run gave 1 warning"):
        nrpt.run(chains=4, ensembles=1, iterations=50, warmup=100, strict=True)
