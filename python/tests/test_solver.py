"""The optimal window and Lemma 1: reference numbers and the command's answers."""

from __future__ import annotations

import math

import pytest

import nrpt


def test_the_issue_s_check():
    assert nrpt.optimal_window(16, 0.4) == 7
    assert nrpt.w_star(16, 0.4) == pytest.approx(7.413386, abs=1e-6)
    assert nrpt.paper_window(16, 0.4) == 8


def test_reference_numbers_of_the_design():
    # DESIGN.md: P = 10, S = 0.005 (the paper's ResNets): asymptotic 626, exact ≈ 603.8.
    assert nrpt.paper_window(10, 0.005) == 626
    assert nrpt.w_star(10, 0.005) == pytest.approx(603.8, abs=0.05)


def test_lemma_1():
    # E[T] = 2WP (1 + (P − 1) r^W / (1 − r^W)); W = 1, P = 16, r = 0.6: 32 · 23.5.
    assert nrpt.expected_round_trip(16, 1, 0.4) == pytest.approx(752.0, rel=1e-14)
    assert nrpt.round_trip_rate(16, 1, 0.4) == pytest.approx(16 / 752, rel=1e-14)
    r = 0.6**7.5
    exact = 2 * 7.5 * 16 * (1 + 15 * r / (1 - r))
    assert nrpt.expected_round_trip(16, 7.5, 0.4) == pytest.approx(exact, rel=1e-12)
    # W⋆ minimizes E[T] over real windows.
    w = nrpt.w_star(16, 0.4)
    t = nrpt.expected_round_trip(16, w, 0.4)
    assert t < nrpt.expected_round_trip(16, w - 0.01, 0.4)
    assert t < nrpt.expected_round_trip(16, w + 0.01, 0.4)
    # x⋆ = r^W⋆ depends on P alone; none for P ≤ 3.
    assert nrpt.x_star(16) == pytest.approx(0.6**w, rel=1e-9)
    assert nrpt.x_star(3) is None


def test_window_report_is_the_command_s(cli):
    for p, s in [(16, 0.4), (10, 0.005), (3, 0.5), (1024, 0.1)]:
        assert nrpt.window(p, s) == cli.json("window", "-p", str(p), "-s", str(s))


def test_window_report_fields():
    w = nrpt.window(16, 0.4)
    assert (w["w_opt"], w["w_paper"]) == (7, 8)
    assert w["w_exact"] == nrpt.w_star(16, 0.4)
    assert w["expected_round_trip_w1"] == pytest.approx(752.0)
    assert w["round_trips_per_1000_w1"] == pytest.approx(1000 * 16 / 752)
    assert math.isclose(w["round_trips_per_1000_opt"], 49.88, abs_tol=0.01)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: nrpt.optimal_window(1, 0.4), "need at least 2 chains, got 1"),
        (lambda: nrpt.w_star(16, 1.5), "must lie strictly between 0 and 1, got 1.5"),
        (lambda: nrpt.paper_window(16, 0.0), "must lie strictly between 0 and 1, got 0"),
        (lambda: nrpt.expected_round_trip(16, float("nan"), 0.4), "window"),
        (lambda: nrpt.window(0, 0.4), "chains"),
    ],
)
def test_bad_inputs_are_value_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
