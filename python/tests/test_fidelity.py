"""Your own predictive against a reference posterior (``nrpt.fidelity``) and the bundled
data sets as arrays (``nrpt.dataset``): the reference against itself, scores computed
again here with NumPy, and the refusals of another model, another split, another shape
and rows that are not distributions."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import nrpt

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "data" / "reference" / "digits-mlp64"
MODEL = {"dataset": "digits", "layers": [64, 64, 10], "prior_sigma": 1.0}


@pytest.fixture(scope="module")
def digits():
    return nrpt.dataset("digits")


@pytest.fixture(scope="module")
def q():
    """The bundled reference's predictive, read from its file."""
    return np.load(BUNDLED / "reference.npy")


def score(probs, labels, **changes):
    return nrpt.fidelity(probs, labels=labels, **{**MODEL, **changes})


def test_the_digits_are_the_file_s_counts_over_16_split_every_fourth(digits):
    with gzip.open(REPO / "data" / "digits.csv.gz", "rt") as f:
        table = np.loadtxt(f, delimiter=",")
    test = np.arange(len(table)) % 4 == 3
    assert digits["data"].dtype == np.float32 and digits["test_labels"].dtype == np.int64
    np.testing.assert_array_equal(digits["data"], table[~test, :-1] / 16)
    np.testing.assert_array_equal(digits["labels"], table[~test, -1])
    np.testing.assert_array_equal(digits["test_data"], table[test, :-1] / 16)
    np.testing.assert_array_equal(digits["test_labels"], table[test, -1])
    assert (digits["features"], digits["classes"], digits["name"]) == (64, 10, "digits")
    meta = json.loads((BUNDLED / "reference.json").read_text())
    assert digits["data_sha256"] == meta["model"]["data_sha256"]


def test_mnist1d_and_unknown_names():
    m = nrpt.dataset("mnist1d")
    assert m["data"].shape == (12_800, 40) and m["test_data"].shape == (3_200, 40)
    assert m["test_labels"].shape == (3_200,) and m["classes"] == 10
    with pytest.raises(ValueError, match="`cifar` is not a bundled data set: digits or mnist1d"):
        nrpt.dataset("cifar")


def test_the_reference_against_itself(digits, q):
    r = score(q, digits["test_labels"])
    assert (r["agreement"], r["agreement_ci"]) == (1.0, [1.0, 1.0])
    assert (r["total_variation"], r["total_variation_ci"]) == (0.0, [0.0, 0.0])
    meta = json.loads((BUNDLED / "reference.json").read_text())
    assert r["accuracy"] == pytest.approx(meta["accuracy"], abs=1e-15)
    assert r["nll"] == pytest.approx(meta["nll"], abs=1e-12)
    assert r["reference"]["source"] == "bundled digits-mlp64"
    assert r["reference"]["model"] == meta["model"]
    assert (r["test_examples"], r["level"], r["resamples"], r["seed"]) == (449, 0.95, 1000, 0)
    for key in ("accuracy", "nll", "ece"):
        low, high = r[f"{key}_ci"]
        assert low <= r[key] <= high and low < high, key


def test_scores_computed_again_with_numpy(digits, q):
    """The uniform predictive: top class 0 (ties to the lower class), NLL ln 10, every
    confidence 0.1 in one bin; agreement and total variation from the reference's file."""
    y = digits["test_labels"]
    uniform = np.full((449, 10), 0.1)
    r = score(uniform, y)
    accuracy = np.mean(y == 0)
    assert r["accuracy"] == pytest.approx(accuracy, abs=1e-15)
    assert r["nll"] == pytest.approx(np.log(10), abs=1e-12)
    assert r["nll_sum"] == pytest.approx(449 * np.log(10), abs=1e-9)
    assert r["ece"] == pytest.approx(abs(accuracy - 0.1), abs=1e-12)
    assert r["agreement"] == pytest.approx(np.mean(np.argmax(q, axis=1) == 0), abs=1e-15)
    tv = np.mean(0.5 * np.abs(uniform - q).sum(axis=1))
    assert r["total_variation"] == pytest.approx(tv, abs=1e-12)
    # Another seed: other resamples, the same values.
    other = score(uniform, y, seed=1)
    assert other["accuracy"] == r["accuracy"] and other["accuracy_ci"] != r["accuracy_ci"]


def test_a_folder_and_a_float32_softmax(digits, q, tmp_path):
    folder = tmp_path / "ref"
    shutil.copytree(BUNDLED, folder)
    y = digits["test_labels"]
    bundled = score(q, y)
    for given in (folder, str(folder)):
        r = score(q, y, reference=given)
        assert r["reference"]["source"] == str(folder)
        assert {k: v for k, v in r.items() if k != "reference"} == {
            k: v for k, v in bundled.items() if k != "reference"
        }
    # A float32 softmax sums to 1 within float32's rounding: accepted.
    logits = np.log(q).astype(np.float32)
    soft = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    assert score(soft, y)["agreement"] == 1.0


def refused(probs, labels, **changes):
    with pytest.raises(ValueError) as e:
        score(probs, labels, **changes)
    return str(e.value)


def test_another_model_is_refused(digits, q):
    y = digits["test_labels"]
    for change, words in [
        ({"layers": [64, 32, 10]}, "layers [64, 64, 10] against the predictive's [64, 32, 10]"),
        ({"prior_sigma": 0.5}, "prior_sigma 1.0 against the predictive's 0.5"),
        ({"dataset": "mnist1d"}, "data `digits` against the predictive's `mnist1d`"),
    ]:
        text = refused(q, y, **change)
        assert text.startswith(
            "the reference bundled digits-mlp64 is of another model than the predictive: "
        ), text
        assert words in text, text


def test_another_split_is_refused(digits, q):
    y = digits["test_labels"]
    train = digits["labels"][:449]
    differing = int(np.sum(train != y))
    text = refused(q, train)
    assert f"at {differing} of 449 positions" in text, text
    assert "i % 4 == 3" in text and 'nrpt.dataset("digits")' in text, text
    # The right labels in another order.
    order = np.random.default_rng(0).permutation(449)
    text = refused(q[order], y[order])
    assert f"at {int(np.sum(y[order] != y))} of 449 positions" in text, text
    # Every label of the data set.
    text = refused(q, np.concatenate([digits["labels"], y]))
    assert text.startswith("1797 labels, but the reference bundled digits-mlp64 has 449 test"), text


def test_another_shape_and_non_distributions_are_refused(digits, q):
    y = digits["test_labels"]
    text = refused(q[:, :9], y)
    assert "shape [449, 9]" in text and "needs [449, 10]" in text, text
    # Logits, not probabilities.
    text = refused(np.log(q), y)
    assert text.startswith("row 0 of the predictive is not a distribution"), text
    bad = q.copy()
    bad[7, 2] = np.nan
    assert "row 7 " in refused(bad, y) and "NaN" in refused(bad, y)
    bad = q.copy()
    bad[3] *= 1.01
    assert "row 3 " in refused(bad, y) and "sums to" in refused(bad, y)
    with pytest.raises(ValueError, match=r"^probs must be 2-D"):
        score(q.ravel(), y)


def test_references_and_labels_that_cannot_be_used(digits, q, tmp_path):
    y = digits["test_labels"]
    assert refused(q, y, reference="digits-mlp46") == (
        "reference: `digits-mlp46` is neither a bundled reference (digits-mlp64) nor a folder"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "reference.json" in refused(q, y, reference=empty)
    with pytest.raises(TypeError, match="integer class labels"):
        score(q, y.astype(float))
    negative = y.copy()
    negative[4] = -1
    with pytest.raises(ValueError, match=r"^labels: -1 at position 4 is not a class label"):
        score(q, negative)
