"""The outputs of the package: one vocabulary with the command, tables that pandas
takes, JSON-safe values, booleans as booleans, figures returned, arrays as data and a
classifier's samples as layers."""

from __future__ import annotations

import json
import os
import pickle
import warnings
from pathlib import Path
from typing import Any, Dict, Iterator, Tuple

import numpy as np
import pytest

import nrpt

try:
    import pandas as pd
except ImportError:  # CI installs it (python/requirements-ci.txt): there it must be
    if os.environ.get("NRPT_REQUIRE_CLI") == "1":
        raise
    pytest.skip("pandas is not installed", allow_module_level=True)


# ---------------------------------------------------------------------------------
# Results shared by several tests (each computed once).


@pytest.fixture(scope="module")
def toy_run() -> Dict[str, Any]:
    return nrpt.run(chains=6, ensembles=2, iterations=600, seed=3, backend="cpu")


@pytest.fixture(scope="module")
def path_run() -> Dict[str, Any]:
    return nrpt.run(target="gaussian-path", dim=1, chains=5, ensembles=2, iterations=800)


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory) -> Dict[str, Any]:
    out = tmp_path_factory.mktemp("reproduce") / "folder"
    return nrpt.reproduce(iterations=200, ensembles=1, backend="cpu", out=str(out))


@pytest.fixture(scope="module")
def deep_result(tmp_path_factory) -> Dict[str, Any]:
    out = tmp_path_factory.mktemp("deep") / "folder"
    return nrpt.deep(ensembles=1, epochs=2, pretrain_epochs=1, chains=3, samples=3, hidden=[8],
                     backend="cpu", out=str(out))


@pytest.fixture(scope="module")
def scaled(tmp_path_factory) -> Dict[str, Any]:
    out = tmp_path_factory.mktemp("scale") / "folder"
    return nrpt.scale(target="bernoulli", chains=[4, 8], window=["1", "opt"], ensembles=2,
                      max_iterations=4000, warmup=100, out=str(out))


def synthetic(n: int = 160, features: int = 5, classes: int = 3, seed: int = 0) -> Tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)) * np.arange(1, features + 1) + 2.0
    w = rng.normal(size=(features, classes))
    y = np.argmax((x - 2.0) @ w + 0.3 * rng.normal(size=(n, classes)), axis=1).astype(np.int64)
    return x, y


# ---------------------------------------------------------------------------------
# One vocabulary.


def test_run_holds_summary_json_under_its_names_and_the_documented_extras(cli, tmp_path):
    out = tmp_path / "out"
    cli.run("run", "--chains", "4", "-e", "1", "-n", "300", "--seed", "1", "--backend", "cpu",
            "-o", str(out), "--quiet")
    summary = json.loads((out / "summary.json").read_text())
    r = nrpt.run(chains=4, ensembles=1, iterations=300, seed=1, backend="cpu")
    assert set(r) - set(nrpt.RUN_EXTRAS["sgd"]) == set(summary)
    assert set(nrpt.RUN_EXTRAS["sgd"]) <= set(r)
    assert not set(nrpt.RUN_EXTRAS["sgd"]) & set(summary)
    # The exact target (gaussian-path) has its own summary, and its own extras.
    out = tmp_path / "path"
    cli.run("run", "--target", "gaussian-path", "--dim", "1", "--chains", "4", "-e", "1",
            "-n", "400", "-o", str(out), "--quiet")
    summary = json.loads((out / "summary.json").read_text())
    r = nrpt.run(target="gaussian-path", dim=1, chains=4, ensembles=1, iterations=400)
    assert set(r) - set(nrpt.RUN_EXTRAS["gaussian-path"]) == set(summary)
    assert set(nrpt.RUN_EXTRAS["gaussian-path"]) <= set(r)


def test_controller_stats_use_the_command_s_names(toy_run):
    ctl = nrpt.Controller(4, window=2, buffer=0.5)
    for k in range(40):
        ctl.tell([3.0, 2.0, 1.0, 0.0] if k % 2 else [0.0, 1.0, 2.0, 3.0])
    s = ctl.stats()
    assert s["iterations_run"] == 40
    # The pooled names of summary.json and the columns of pairs.csv.
    for key in ("round_trips_per_1000", "round_trips_per_1000_authors", "restarts_per_1000",
                "nonfinite_energies", "pair_indicator_rate", "pair_executed_swap_rate",
                "iterations_run"):
        assert key in s and key in toy_run, key
    for column in ("indicator_rate", "executed_swap_rate"):
        assert column in s and column in toy_run["pairs"], column
    assert s["round_trips_per_1000_authors"] == 1000 * s["authors_round_trips"] / 40
    assert s["executed_swap_rate"] == pytest.approx(np.mean(s["pair_executed_swap_rate"]))
    assert s["restarts_per_1000"] == 1000 * s["restarts"] / 40
    # `swap_rate` is the target S everywhere: not a measured rate of stats().
    assert "swap_rate" not in s and "swap_rate" in ctl.config["config"]
    # The names before 0.2 read, with a warning, and are not keys.
    for old, new in [("swap_rate", "executed_swap_rate"), ("pair_swap_rate", "pair_executed_swap_rate"),
                     ("authors_round_trips_per_1000", "round_trips_per_1000_authors"),
                     ("iterations", "iterations_run")]:
        with pytest.warns(DeprecationWarning, match=new):
            assert s[old] == s[new]
        assert old not in s and old not in json.loads(json.dumps(s))
    with pytest.raises(KeyError):
        s["no_such_key"]
    assert pickle.loads(pickle.dumps(s)) == dict(s)


def test_controller_config_lists_only_controller_keys():
    ctl = nrpt.Controller(4, window=3, swap_rate=0.25, n_data=10, dtype="float32")
    c = ctl.config
    assert set(c) == {"config", "window", "rules"}
    keys = set(c["config"])
    for not_a_controller_key in ("out", "target", "iterations", "ensembles", "thin", "warmup",
                                 "dim", "noise", "data", "hidden", "batch", "momentum"):
        assert not_a_controller_key not in keys, not_a_controller_key
    assert {"chains", "window", "swap_rate", "eta_min", "eta_max", "buffer", "seed"} <= keys
    assert c["config"]["swap_rate"] == 0.25 and c["window"] == 3
    assert c["config"]["n_data"] == 10 and c["config"]["dtype"] == "float32"
    assert c["config"]["rules"] == "practitioner" and c["rules"]["ladder_update"] == "in-place"
    json.dumps(c)


# ---------------------------------------------------------------------------------
# Tables, JSON, booleans.


def tables(name: str, r: Dict[str, Any]) -> Iterator[Tuple[str, Any]]:
    """Every table a function returns: (its name, what pandas.DataFrame takes)."""
    if name == "run":
        for t in ("trace", "ladder", "pairs", "ensembles"):
            yield t, nrpt.flat(r[t])
    elif name == "path":
        for t in ("lambda_profile", "grid", "rounds"):
            yield t, nrpt.flat(r[t])
    elif name == "reproduce":
        for t in ("methods", "s_sweep", "w_sweep", "variants"):
            yield t, r[t]
        yield "w_sweep_columns", nrpt.flat(r["w_sweep_columns"])
    elif name == "deep":
        for t in ("methods", "eta_sweep", "swap_sweep"):
            yield t, r[t]
        yield "curve_columns", r["curve_columns"]
        yield "sample_curve_columns", r["sample_curve_columns"]
    elif name == "scale":
        for t in ("points", "fits"):
            yield t, r[t]
        yield "columns", nrpt.flat(r["columns"])


RESULTS = ["run", "path", "reproduce", "deep", "scale"]


@pytest.fixture
def result(request, toy_run, path_run, reproduced, deep_result, scaled):
    return {"run": toy_run, "path": path_run, "reproduce": reproduced, "deep": deep_result,
            "scale": scaled}[request.param]


@pytest.mark.parametrize("result", RESULTS, indirect=True, ids=RESULTS)
def test_every_table_converts_to_a_data_frame(request, result):
    name = request.node.callspec.id
    found = list(tables(name, result))
    assert found
    for t, table in found:
        frame = pd.DataFrame(table)
        rows = len(table) if isinstance(table, list) else len(next(iter(table.values()), []))
        assert len(frame) == rows, (name, t)
        if rows:
            assert len(frame.columns) > 1, (name, t)
    assert any(len(pd.DataFrame(table)) for _, table in found), name


def test_controller_stats_convert_to_a_data_frame():
    ctl = nrpt.Controller(5)
    rng = np.random.default_rng(0)
    for _ in range(30):
        ctl.tell(rng.normal(size=5))
    s = ctl.stats()
    pairs = pd.DataFrame({k: v for k, v in s.items() if k.startswith("pair_")})
    assert len(pairs) == 4 and "pair_executed_swap_rate" in pairs
    totals = pd.DataFrame([{k: v for k, v in s.items() if not k.startswith("pair_")}])
    assert totals["iterations_run"].tolist() == [30]


@pytest.mark.parametrize("result", RESULTS, indirect=True, ids=RESULTS)
def test_every_result_is_json_safe_through_jsonable(result):
    plain = nrpt.jsonable(result)
    text = json.dumps(plain, allow_nan=False)
    assert json.loads(text) == plain


def test_non_finite_numbers_round_trip_through_nrpts_json(tmp_path):
    """NaN and infinities are written as the command writes them ("NaN", "inf", "-inf"),
    and read back as the same floats; the columns of rows hold them as floats."""
    value = {"a": float("nan"), "b": [1.5, float("inf"), float("-inf")], "c": np.float32("nan"),
             "d": {"e": None, "f": "label"}}
    plain = nrpt.jsonable(value)
    assert plain == {"a": "NaN", "b": [1.5, "inf", "-inf"], "c": "NaN", "d": {"e": None, "f": "label"}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(plain, allow_nan=False))
    back = nrpt.read_json(path)
    assert np.isnan(back["a"]) and np.isnan(back["c"])
    assert back["b"] == [1.5, float("inf"), float("-inf")]
    assert back["d"] == {"e": None, "f": "label"}
    cols = nrpt._columns([{"x": 1.0, "y": "inf"}, {"x": "NaN", "y": 2}])
    assert cols["x"].dtype == float and np.isnan(cols["x"][1])
    np.testing.assert_array_equal(cols["y"], [np.inf, 2.0])


@pytest.mark.parametrize("result", RESULTS, indirect=True, ids=RESULTS)
def test_flags_are_booleans(result):
    # Known flags, wherever they are, hold booleans (never 0/1 or "true").
    flags = {"capped", "grid_adapted", "inclusive_iterations", "adapt_ladder", "adapt_buffer",
             "converged", "quick"}

    def walk(value: Any, path: str = "") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k in flags and v is not None:
                    ok = isinstance(v, bool) or (isinstance(v, np.ndarray) and v.dtype == bool) or (
                        isinstance(v, list) and all(isinstance(b, bool) for b in v))
                    assert ok, f"{path}.{k} = {v!r}"
                walk(v, f"{path}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")

    walk(result)

    # No flag is written as text either.
    def texts(value: Any, path: str = "") -> Iterator[Tuple[str, str]]:
        if isinstance(value, dict):
            for k, v in value.items():
                yield from texts(v, f"{path}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                yield from texts(v, f"{path}[{i}]")
        elif isinstance(value, str):
            yield path, value

    for path, v in texts(nrpt.jsonable(result)):
        assert v.lower() not in ("true", "false"), path


# ---------------------------------------------------------------------------------
# Figures.


@pytest.mark.parametrize("name", ["reproduce", "deep", "scale"])
def test_figures_written_are_returned(name, reproduced, deep_result, scaled, tmp_path):
    r = {"reproduce": reproduced, "deep": deep_result, "scale": scaled}[name]
    folder = Path(r["out"])
    assert folder.is_dir() and (folder / "results.json").is_file()
    assert r["figures"], name
    for stem, files in r["figures"].items():
        assert Path(files["svg"]).is_file() and Path(files["png"]).is_file(), stem
        assert Path(files["svg"]).read_text().lstrip().startswith("<"), stem
        assert files["csv"] is None or Path(files["csv"]).is_file()
    svgs = sorted(p.stem for p in folder.glob("*.svg"))
    assert sorted(r["figures"]) == svgs
    if name == "reproduce":
        written = json.loads((folder / "results.json").read_text())
        assert list(r["figures"]) == written["figures"]
    json.dumps(nrpt.jsonable(r), allow_nan=False)


def test_without_out_nothing_is_written_and_figures_is_empty(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = nrpt.scale(target="bernoulli", chains=[4], window=["1"], ensembles=2, max_iterations=2000,
                   warmup=100)
    assert r["figures"] == {} and r["out"] is None
    assert list(tmp_path.iterdir()) == []


def test_out_refuses_a_folder_nrpt_did_not_write(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="force"):
        nrpt.scale(target="bernoulli", chains=[4], window=["1"], ensembles=2, max_iterations=2000,
                   warmup=100, out=str(mine))
    assert (mine / "notes.txt").read_text() == "keep me"


# ---------------------------------------------------------------------------------
# Arrays as data.


def test_arrays_as_data_equal_the_same_data_in_files(tmp_path):
    x, y = synthetic()
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    flags = dict(target="classifier", chains=3, ensembles=1, iterations=40, hidden=[6], thin=10,
                 warmup=0, seed=4, backend="cpu")
    from_files = nrpt.run(data=str(tmp_path / "x.npy"), labels=str(tmp_path / "y.npy"), **flags)
    from_arrays = nrpt.run(data=x, labels=y, **flags)
    assert from_arrays["samples"].tobytes() == from_files["samples"].tobytes()
    assert from_arrays["classifier"] == from_files["classifier"]
    assert from_arrays["config"]["data"] == "<data: array 160x5 float64>"
    assert from_arrays["config"]["labels"] == "<labels: array 160 int64>"
    # float32 features and a test split as arrays too; lists of lists are arrays.
    r = nrpt.run(data=x[:120].astype(np.float32), labels=y[:120], test_data=x[120:].tolist(),
                 test_labels=list(y[120:]), **flags)
    assert r["classifier"]["samples"] == 4
    assert "nrpt-arrays-" not in json.dumps(nrpt.jsonable(r))


def test_deep_takes_arrays():
    x, y = synthetic(n=400)
    r = nrpt.deep(data=x, labels=y, ensembles=1, epochs=3, pretrain_epochs=1, chains=3, samples=2,
                  hidden=[4], batch=32, backend="cpu")
    assert r["layers"] == [5, 4, 3]
    assert "nrpt-arrays-" not in json.dumps(nrpt.jsonable(r))


@pytest.mark.parametrize(
    "data, labels, error, match",
    [
        ("x", np.zeros(8, dtype=float), TypeError, "integer class labels.*astype"),
        ("x", np.zeros(8, dtype=bool), TypeError, "integer class labels"),
        (np.array([["a", "b"]] * 8), "y", TypeError, "real numbers"),
        (np.zeros(8), "y", ValueError, r"2-D .*shape \(8,\)"),
        (np.zeros((0, 3)), np.zeros(0, dtype=int), ValueError, "no examples"),
        (np.zeros((8, 0)), "y", ValueError, "no features"),
        ("nan", "y", ValueError, "finite.*row 2, column 1"),
        ("x", np.arange(7), ValueError, "7 labels for the 8 examples"),
        ("x", np.zeros((8, 1), dtype=int), ValueError, "1-D"),
        ("x", np.array([0, 1, -1, 0, 1, 0, 1, 0]), ValueError, "0 or more, got -1 .at index 2"),
        ("x", np.array([0, 1, 70000, 0, 1, 0, 1, 0]), ValueError, "at most 65535"),
        ("x", np.zeros(8, dtype=int), ValueError, "at least 2 classes"),
        ("x", None, ValueError, "give labels as an array too"),
        (None, "y", ValueError, "give data as an array too"),
        ("x3", np.array([0, 1, 1]), ValueError, "at least 4 are needed"),
    ],
)
def test_bad_arrays_raise_in_python_s_words(data, labels, error, match):
    x = np.random.default_rng(0).normal(size=(8, 3))
    y = np.array([0, 1] * 4)
    if isinstance(data, str):
        data = {"x": x, "nan": np.where(np.arange(24).reshape(8, 3) == 7, np.nan, x), "x3": x[:3]}[data]
    if isinstance(labels, str):
        labels = y
    with pytest.raises(error, match=match):
        nrpt.run(target="classifier", data=data, labels=labels, iterations=10)


def test_test_arrays_must_match_the_training_features():
    x, y = synthetic()
    with pytest.raises(ValueError, match="test_data has 4 features, data 5"):
        nrpt.run(target="classifier", data=x, labels=y, test_data=x[:, :4], test_labels=y,
                 iterations=10)


# ---------------------------------------------------------------------------------
# A classifier's samples as layers.


def test_unflatten_follows_the_engine_s_layout_a_forward_pass_scores_as_the_engine():
    x, y = synthetic(n=200)
    r = nrpt.run(target="classifier", data=x, labels=y, hidden=[7], chains=3, ensembles=2,
                 iterations=80, thin=20, warmup=20, seed=9, backend="cpu")
    layers = [5, *r["config"]["hidden"], 3]
    samples = r["samples"]  # (S, E, D)
    w = nrpt.unflatten(samples, layers)
    assert [k for k in w] == ["W1", "b1", "W2", "b2"]
    assert w["W1"].shape == samples.shape[:2] + (5, 7) and w["b2"].shape == samples.shape[:2] + (3,)
    # The engine standardizes user features with the training split's mean and sd
    # (divisor n); without a test file, example i is a test example when i % 4 == 3.
    test = np.arange(len(y)) % 4 == 3
    mean, sd = x[~test].mean(axis=0), x[~test].std(axis=0)
    xt = ((x[test] - mean) / sd).astype(np.float64)
    probs = np.zeros((test.sum(), 3))
    count = 0
    for i in range(samples.shape[0]):
        for e in range(samples.shape[1]):
            h = np.maximum(xt @ w["W1"][i, e] + w["b1"][i, e], 0.0)
            z = h @ w["W2"][i, e] + w["b2"][i, e]
            z -= z.max(axis=1, keepdims=True)
            p = np.exp(z)
            probs += p / p.sum(axis=1, keepdims=True)
            count += 1
    probs /= count
    scores = r["classifier"]
    assert scores["samples"] == count
    assert np.mean(probs.argmax(axis=1) == y[test]) == pytest.approx(scores["accuracy"], abs=1e-12)
    nll = -np.mean(np.log(np.maximum(probs[np.arange(test.sum()), y[test]], 1e-12)))
    assert nll == pytest.approx(scores["nll"], rel=1e-4)
    # One vector at a time, and a view of it.
    one = nrpt.unflatten(samples[0, 0], layers)
    np.testing.assert_array_equal(one["W2"], w["W2"][0, 0])
    assert np.shares_memory(one["W1"], samples)
    with pytest.raises(ValueError, match=r"sum\(\(in \+ 1\) \* out\) = 66"):
        nrpt.unflatten(np.zeros(10), [5, 7, 3])


# ---------------------------------------------------------------------------------
# buffer="auto" over the first tells.


def test_auto_buffer_calibrates_over_the_first_tells_and_resumes_bit_for_bit():
    rng = np.random.default_rng(5)
    energies = rng.normal(size=(30, 6)) * np.linspace(1.0, 3.0, 6)
    ctl = nrpt.Controller(6, window=2)
    gaps = []
    for k in range(nrpt.AUTO_BUFFER_ITERATIONS):
        e = energies[k]
        by_level = e[ctl.replica_at]
        gaps.extend(by_level[:-1] - by_level[1:])
        d = ctl.tell(e)
        # Before the tell, C was the 1 - S quantile of the gaps so far: the tell then
        # adapted it once, by gamma_k * G per unit of rate error.
        g = np.asarray(gaps)
        c0 = max(0.0, float(np.quantile(g, 1 - 0.4)))
        assert ctl.config["config"]["buffer"] == c0, k
        assert ctl.config["config"]["buffer_scale"] == 1.0 / float(np.median(np.abs(g)))
        assert d.buffer == ctl.buffer
    # From the fifth tell on, the calibration stays (C0 and the gain) and C adapts.
    calibrated = dict(ctl.config["config"])
    buffers = set()
    for k in range(nrpt.AUTO_BUFFER_ITERATIONS, 30):
        buffers.add(ctl.tell(energies[k]).buffer)
    assert ctl.config["config"]["buffer_scale"] == calibrated["buffer_scale"]
    assert ctl.config["config"]["buffer"] == calibrated["buffer"]
    assert len(buffers) > 5

    # A save and a load in the middle of the calibration go on bit for bit.
    for cut in (1, 3):
        a = nrpt.Controller(6, window=2)
        for k in range(cut):
            a.tell(energies[k])
        b = nrpt.Controller.from_state_dict(json.loads(json.dumps(a.state_dict())))
        c = pickle.loads(pickle.dumps(a))
        for k in range(cut, 30):
            da, db, dc = a.tell(energies[k]), b.tell(energies[k]), c.tell(energies[k])
            assert da.buffer == db.buffer == dc.buffer, (cut, k)
            assert da.ladder.tobytes() == db.ladder.tobytes() == dc.ladder.tobytes()
            np.testing.assert_array_equal(da.swapped, db.swapped)
        assert a.state_dict() == b.state_dict() == c.state_dict()


def test_a_tell_without_finite_gaps_does_not_count_towards_the_calibration():
    ctl = nrpt.Controller(3, nonfinite="skip")
    ctl.tell([np.nan, np.nan, 1.0])
    assert ctl.state_dict()["python"]["calibrate"]["tells"] == 0
    ctl.tell([2.0, 1.0, 0.0])
    assert ctl.state_dict()["python"]["calibrate"]["tells"] == 1
