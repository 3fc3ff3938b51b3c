"""nrpt.ExactController: the Rust core's exact tempering told the log-likelihoods by a
sampler written in NumPy.

- Bit for bit: told the log-likelihoods that nrpt-core's own run (MALA on the Gaussian
  path, ``nrpt.testing.record_exact``) computed, it reaches that run's grids,
  permutations and round reports exactly, for DEO, a window of 3 and SEO.
- Saving: ``state_dict``, JSON files and pickling continue a run with the same bits.
- Closed forms: the log evidence of a Bayesian linear regression (exact draws at every
  beta) and log Z of a bimodal posterior (a random-walk sampler) within 3 standard errors.
- Input: ask/tell pairing, lengths, dtypes, non-finite values, settings; pythonic errors.
"""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pytest

import nrpt
from nrpt.testing import record_exact

# ---------------------------------------------------------------------------------------
# The same bits as the Rust core.


@pytest.mark.parametrize("scheme,window", [("deo", 1), ("deo", 3), ("seo", 1)])
def test_told_the_cores_log_likelihoods_it_makes_the_cores_run(scheme, window):
    n, p = 510, 6  # rounds of 2, 4, ..., 256 iterations
    rec = record_exact(n, chains=p, dim=3, seed=5, window=window, scheme=scheme, ensemble=1)
    assert rec["log_likelihoods"].shape == (n, p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the window's bias
        ctl = nrpt.ExactController(p, seed=5, scheme=scheme, window=window, ensemble=1)
    rounds = []
    for k in range(n):
        ctl.ask()
        step = ctl.tell(rec["log_likelihoods"][k])
        assert step.iteration == k
        np.testing.assert_array_equal(ctl.betas, rec["betas"][k])
        np.testing.assert_array_equal(ctl.replica_at, rec["replica_at"][k])
        if step.round is not None:
            rounds.append(step.round)
    assert len(rounds) == 8
    assert rounds == rec["rounds"]  # every field, exactly (None where not finite)
    last = rounds[-1]
    assert ctl.last_round == last
    z = ctl.log_z
    assert (z.value, z.se, z.forward, z.reverse) == (
        last["log_z"],
        last["log_z_se"],
        last["log_z_forward"],
        last["log_z_reverse"],
    )
    assert ctl.barrier() == last["lambda"]
    if scheme == "deo" and window == 1:
        # The core's run is a sound sampler: its estimates near the closed forms.
        assert abs(z.value - rec["log_evidence"]) < 4 * z.se + 0.05
        assert abs(ctl.barrier() - rec["global_barrier"]) < 0.25 * rec["global_barrier"]
        assert ctl.round_trips > 0


# ---------------------------------------------------------------------------------------
# Closed forms, with samplers written in NumPy.


def regression(n=30, d=4, sigma=0.5, tau=2.0, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    y = x @ (tau * rng.standard_normal(d)) + sigma * rng.standard_normal(n)
    cov = sigma**2 * np.eye(n) + tau**2 * x @ x.T
    evidence = -0.5 * (n * np.log(2 * np.pi) + np.linalg.slogdet(cov)[1] + y @ np.linalg.solve(cov, y))

    def loglik(w):
        r = y[None, :] - w @ x.T
        return -0.5 * np.sum(r * r, axis=1) / sigma**2 - 0.5 * n * np.log(2 * np.pi * sigma**2)

    def draw(beta, rng):
        # pi_beta is N(A^-1 beta X'y / sigma², A^-1), A = I/tau² + beta X'X/sigma².
        a = np.eye(d) / tau**2 + beta * x.T @ x / sigma**2
        chol = np.linalg.cholesky(a)
        mean = np.linalg.solve(a, beta * x.T @ y / sigma**2)
        return mean + np.linalg.solve(chol.T, rng.standard_normal(d))

    return loglik, draw, float(evidence), d


def test_the_evidence_of_a_linear_regression_within_three_standard_errors():
    loglik, draw, evidence, d = regression()
    p, n = 10, 4094
    rng = np.random.default_rng(1)
    ctl = nrpt.ExactController(p, seed=1)
    w = np.zeros((p, d))
    for _ in range(n):
        for r, beta in enumerate(ctl.ask()):
            w[r] = draw(beta, rng)  # a fresh exact draw of pi_beta
        ctl.tell(loglik(w))
    z = ctl.log_z
    assert ctl.last_round["iterations"] == 2048
    assert abs(z.value - evidence) < 3 * z.se, (z, evidence)
    assert 0 < z.se < 0.2
    assert ctl.round_trips > 50
    assert ctl.warnings == [], ctl.warnings
    s = ctl.summary()
    json.dumps(s)  # plain Python values
    assert s["log_z"] == z.value and s["iteration"] == n and s["warnings"] == []
    assert s["recommended_chains"]["cost_optimal"] >= 2


S0, M, S = 3.0, 4.0, 0.5  # prior sd; two likelihood bumps at ±M of width S


def bimodal_loglik(x):
    a, b = -0.5 * ((x + M) / S) ** 2, -0.5 * ((x - M) / S) ** 2
    top = np.maximum(a, b)
    return top + np.log(0.5 * np.exp(a - top) + 0.5 * np.exp(b - top)) - 0.5 * np.log(2 * np.pi * S**2)


def rwm(x, betas, rng, steps=5):
    """Exact prior draws at beta = 0, else random-walk Metropolis on the tempered density."""
    zero = betas == 0.0
    x[zero] = S0 * rng.standard_normal(int(zero.sum()))
    scale = 2.4 / np.sqrt(1 / S0**2 + betas / S**2)
    ell = bimodal_loglik(x)
    target = -0.5 * (x / S0) ** 2 + betas * ell
    for _ in range(steps):
        y = x + scale * rng.standard_normal(x.size)
        ell_y = bimodal_loglik(y)
        target_y = -0.5 * (y / S0) ** 2 + betas * ell_y
        ok = ~zero & (np.log(rng.uniform(size=x.size)) < target_y - target)
        x[ok], ell[ok], target[ok] = y[ok], ell_y[ok], target_y[ok]
    return ell


def test_a_bimodal_posterior_mixes_and_its_log_z_is_within_three_standard_errors():
    truth = -0.5 * M**2 / (S0**2 + S**2) - 0.5 * np.log(2 * np.pi * (S0**2 + S**2))
    p, n = 10, 4094
    rng = np.random.default_rng(2)
    ctl = nrpt.ExactController(p, seed=2)
    x = S0 * rng.standard_normal(p)
    top = []
    for _ in range(n):
        step = ctl.tell(rwm(x, ctl.ask(), rng))
        top.append(x[step.replica_at[0]])
    z = ctl.log_z
    assert abs(z.value - truth) < 3 * z.se, (z, truth)
    # The posterior level visits both modes (a random walk at beta = 1 would not).
    last = np.asarray(top[-2048:])
    assert 0.35 < np.mean(last > 0) < 0.65
    assert ctl.round_trips > 20
    # λ̂(β) piles up at small β and integrates to Λ̂.
    grid = np.linspace(0, 1, 2001)
    lam = ctl.lambda_profile(grid)
    assert lam[grid < 0.2].mean() > lam[grid > 0.5].mean()
    integral = np.sum(0.5 * (lam[1:] + lam[:-1]) * np.diff(grid))
    assert abs(integral - ctl.barrier()) < 0.02 * ctl.barrier()
    np.testing.assert_allclose(ctl.cumulative_barrier([1.0]), [ctl.barrier()], rtol=1e-12)


# ---------------------------------------------------------------------------------------
# Saving: state_dict, files and pickles continue with the same bits.


def told(ctl, k):
    """A deterministic stream of log-likelihoods for iteration k."""
    ctl.ask()
    return ctl.tell(-np.abs(np.sin(np.arange(ctl.chains) * 1.7 + k * 0.31)) * 3.0)


def test_state_dict_and_pickling_continue_exactly(tmp_path):
    whole = nrpt.ExactController(5, seed=3, first_round=3)
    for k in range(200):
        told(whole, k)
    for cut in (0, 1, 44, 45, 137):
        a = nrpt.ExactController(5, seed=3, first_round=3)
        for k in range(cut):
            told(a, k)
        b = pickle.loads(pickle.dumps(a))
        c = nrpt.ExactController.from_state_dict(json.loads(json.dumps(a.state_dict())))
        a.save(tmp_path / "ctl.json")
        d = nrpt.ExactController.load(tmp_path / "ctl.json")
        e = nrpt.ExactController(2)
        e.load_state_dict(a.state_dict())
        for ctl in (b, c, d, e):
            for k in range(cut, 200):
                told(ctl, k)
            assert ctl.state_dict() == whole.state_dict(), cut
            assert ctl.summary() == whole.summary()
    assert whole.round > 3


def test_a_pickle_between_ask_and_tell_keeps_the_pairing():
    ctl = nrpt.ExactController(3)
    betas = ctl.ask()
    again = pickle.loads(pickle.dumps(ctl))
    np.testing.assert_array_equal(again.ask(), betas)
    again.tell([0.0, -1.0, -2.0])
    fresh = pickle.loads(pickle.dumps(again))
    with pytest.raises(RuntimeError, match="ask"):
        fresh.tell([0.0, -1.0, -2.0])


def test_bad_states_are_refused_and_change_nothing():
    ctl = nrpt.ExactController(4)
    told(ctl, 0)
    state = ctl.state_dict()
    before = ctl.state_dict()
    with pytest.raises(ValueError, match="not a state"):
        ctl.load_state_dict({**state, "format": "something else"})
    with pytest.raises(ValueError, match="hex"):
        ctl.load_state_dict({**state, "state": "xyz"})
    with pytest.raises(ValueError, match="saved nrpt exact controller"):
        ctl.load_state_dict({**state, "state": state["state"][: len(state["state"]) // 4 * 2]})
    with pytest.raises(TypeError):
        ctl.load_state_dict("not a dict")
    assert ctl.state_dict() == before


# ---------------------------------------------------------------------------------------
# Input and settings.


def test_tell_needs_an_ask_and_ask_is_idempotent():
    ctl = nrpt.ExactController(4, seed=9)
    with pytest.raises(RuntimeError, match=r"tell\(\) without ask\(\)"):
        ctl.tell([0.0] * 4)
    a, b = ctl.ask(), ctl.ask()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, [1.0, 2 / 3, 1 / 3, 0.0])  # uniform, by replica
    step = ctl.tell([-1.0, -2.0, -3.0, -4.0])
    assert step.iteration == 0 and ctl.iteration == 1
    with pytest.raises(RuntimeError, match="ask"):
        ctl.tell([-1.0, -2.0, -3.0, -4.0])
    assert ctl.iteration == 1
    # The betas follow the permutation: replica r is at level level_of[r].
    np.testing.assert_array_equal(ctl.ask(), ctl.betas[ctl.level_of])
    assert list(ctl.replica_at[ctl.level_of]) == [0, 1, 2, 3]


def test_log_likelihoods_of_any_real_dtype_give_the_same_run():
    values = [-1, -4, -2, -8]
    runs = []
    for form in (
        values,
        np.array(values, dtype=np.int32),
        np.array(values, dtype=np.int16),
        np.array(values, dtype=np.float32),
        np.array(values, dtype=np.float64),
        tuple(float(v) for v in values),
        np.array(values, dtype=object),
    ):
        ctl = nrpt.ExactController(4, seed=1)
        for _ in range(9):
            ctl.ask()
            ctl.tell(form)
        runs.append(ctl.state_dict()["state"])
    assert len(set(runs)) == 1


@pytest.mark.parametrize(
    "bad,error,match",
    [
        (None, TypeError, "got None"),
        ([True, False, True, True], TypeError, "booleans"),
        (np.ones(4, dtype=complex), TypeError, "complex"),
        (["a", "b", "c", "d"], TypeError, "real numbers"),
        ([1.0, "x", 2.0, 3.0], TypeError, "real numbers"),
        ([0.0, 1.0, 2.0], ValueError, r"expected shape \(4,\), got \(3,\)"),
        (np.zeros((2, 2)), ValueError, "expected shape"),
        (3.0, ValueError, "expected shape"),
        ([0.0, np.nan, 1.0, 2.0], ValueError, "NaN or \\+inf"),
        ([0.0, np.inf, 1.0, 2.0], ValueError, "NaN or \\+inf"),
    ],
)
def test_bad_log_likelihoods_raise_and_change_nothing(bad, error, match):
    ctl = nrpt.ExactController(4)
    ctl.ask()
    before = ctl.state_dict()
    with pytest.raises(error, match=match) as info:
        ctl.tell(bad)
    assert "--" not in str(info.value)
    assert ctl.state_dict() == before
    ctl.tell([0.0, -1.0, -2.0, -3.0])  # the ask still stands


def test_nonfinite_policies():
    ctl = nrpt.ExactController(4, nonfinite="warn")
    ctl.ask()
    with pytest.warns(RuntimeWarning, match="non-finite"):
        step = ctl.tell([0.0, np.nan, -1.0, -2.0])
    assert ctl.stats()["nonfinite_energies"] >= 1
    assert step.nonfinite_pairs >= 1
    quiet = nrpt.ExactController(4, nonfinite="skip")
    quiet.ask()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet.tell([0.0, np.inf, -1.0, -2.0])
    # -inf is a likelihood of zero: accepted under every policy.
    strict = nrpt.ExactController(4)
    strict.ask()
    strict.tell([0.0, -np.inf, -1.0, -2.0])


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(chains=1), ValueError, "chains must be at least 2"),
        (dict(chains=True), TypeError, "chains must be an int"),
        (dict(chains=4.0), TypeError, "chains must be an int"),
        (dict(chains=4, seed=-1), ValueError, "seed must be between"),
        (dict(chains=4, seed=2**32), ValueError, "seed must be between"),
        (dict(chains=4, scheme="deo7"), ValueError, "scheme must be"),
        (dict(chains=4, scheme=None), TypeError, "scheme must be a str"),
        (dict(chains=4, window=0), ValueError, "window must be between"),
        (dict(chains=4, window=3, scheme="seo"), ValueError, "window applies to scheme='deo'"),
        (dict(chains=4, first_round=0), ValueError, "first_round must be"),
        (dict(chains=4, adapt_grid="yes"), TypeError, "adapt_grid must be a bool"),
        (dict(chains=4, betas=[1.0, 0.5, 0.0]), ValueError, "expected shape"),
        (dict(chains=4, betas=[1.0, 0.2, 0.5, 0.0]), ValueError, "betas must be strictly decreasing"),
        (dict(chains=4, betas=[0.9, 0.5, 0.2, 0.0]), ValueError, "betas must be strictly decreasing"),
        (dict(chains=4, nonfinite="ignore"), ValueError, "nonfinite must be one of"),
        (dict(chains=10**9), ValueError, "chains"),
    ],
)
def test_bad_settings_are_pythonic_errors(kwargs, error, match):
    with pytest.raises(error, match=match) as info:
        nrpt.ExactController(**kwargs)
    assert "--" not in str(info.value)


def test_settings_and_the_window_warning():
    with pytest.warns(RuntimeWarning, match="window=1"):
        ctl = nrpt.ExactController(4, window=4)
    assert (ctl.scheme, ctl.window) == ("deo", 4)
    assert any("window 4" in w for w in ctl.warnings)
    seo = nrpt.ExactController(4, scheme="seo", seed=7, ensemble=2, first_round=5)
    assert (seo.scheme, seo.window, seo.seed, seo.ensemble, seo.first_round) == ("seo", 1, 7, 2, 5)
    assert seo.round_length == 5
    kept = nrpt.ExactController(4, betas=[1.0, 0.3, 0.05, 0.0], adapt_grid=False)
    np.testing.assert_array_equal(kept.betas, [1.0, 0.3, 0.05, 0.0])
    for k in range(30):
        told(kept, k)
    np.testing.assert_array_equal(kept.betas, [1.0, 0.3, 0.05, 0.0])
    kept.adapt_grid = True
    assert kept.adapt_grid
    with pytest.raises(TypeError):
        kept.adapt_grid = 1
    # Before a round ends there are no estimates.
    fresh = nrpt.ExactController(4)
    assert fresh.log_z is None and fresh.barrier() is None and fresh.last_round is None
    assert fresh.lambda_profile([0.5]) is None and fresh.equal_barrier_grid(6) is None
    assert fresh.recommended_chains == {
        "cost_optimal": None, "near_limit_5_percent": None, "lower_bound": False}
    assert fresh.summary()["iteration"] == 0
    assert "ExactController(chains=4" in repr(fresh)


def test_an_equal_barrier_grid_starts_another_controller():
    ctl = nrpt.ExactController(6, seed=4)
    for k in range(126):
        told(ctl, k)
    grid = ctl.equal_barrier_grid(9)
    assert grid[0] == 1.0 and grid[-1] == 0.0 and np.all(np.diff(grid) < 0)
    other = nrpt.ExactController(9, betas=grid)
    np.testing.assert_array_equal(other.betas, grid)
    stats = ctl.stats()
    assert len(stats["pair_rejection_rate"]) == 5
    json.dumps(stats)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ctl.lambda_profile([1.5])


# ---------------------------------------------------------------------------------------
# A variational reference (Surjanovic et al., NeurIPS 2022): a Gaussian fitted to the
# posterior level. The model: pi_0 = N(0, I_4) and an unnormalized posterior
# gamma_1(x) = exp(C) N(x; MU, diag SIGMA²) far from pi_0 and narrow, so that log Z = C.
# Every tempered density (from pi_0 before the first fit, from q = N(m, diag s²) after) is
# a product of Gaussians, drawn exactly.

MU = np.array([3.0, -2.0, 4.0, 1.0])
SIGMA = np.array([0.1, 0.2, 0.15, 0.3])
C = 1.7


def log_normal(x, mean, scale):
    z = (x - mean) / scale
    return np.sum(-0.5 * z * z - np.log(scale) - 0.5 * np.log(2 * np.pi), axis=-1)


def gaussian_step(ctl, k, seed=0):
    """One iteration of the model with fresh exact draws (the rng of iteration k, so that
    copies of a controller continue alike); returns the step."""
    rng = np.random.default_rng([seed, k])
    beta = ctl.ask()[:, None]
    q = ctl.reference
    m, s = (np.zeros(MU.size), np.ones(MU.size)) if q is None else (q.mean, q.scale)
    # q(x)^(1 - beta) gamma_1(x)^beta ∝ N(mean, 1/precision), precision-weighted.
    precision = (1 - beta) / s**2 + beta / SIGMA**2
    mean = ((1 - beta) * m / s**2 + beta * MU / SIGMA**2) / precision
    x = mean + rng.standard_normal(mean.shape) / np.sqrt(precision)
    log_gamma = C + log_normal(x, MU, SIGMA)
    if q is None:
        ell = log_gamma - log_normal(x, 0.0, 1.0)  # log L, tempering from pi_0
    else:
        ell = log_gamma - np.array([q.log_density(xr) for xr in x])  # log gamma_1 - log q
    if ctl.reference_kind == "variational":
        return ctl.tell(ell, states=x)
    return ctl.tell(ell)


def test_a_variational_reference_recovers_log_z_with_a_short_path():
    p, n = 8, 2046  # rounds of 2, 4, ..., 1024 iterations
    fixed = nrpt.ExactController(p, seed=3)
    ctl = nrpt.ExactController(p, seed=3, reference="variational", dim=4)
    assert ctl.reference is None and ctl.reference_fits == 0
    fits_at = []
    for k in range(n):
        gaussian_step(fixed, k)
        step = gaussian_step(ctl, k)
        if step.round is not None and ctl.reference_fits > len(fits_at):
            fits_at.append(step.round["round"])
    # 2 + 4 + 8 = 14 states are fewer than a fit needs (16): the first fit ends round 3
    # (30 states), then one per round.
    assert fits_at == [3, 4, 5, 6, 7, 8, 9]
    z = ctl.log_z
    assert abs(z.value - C) < 3 * z.se, (z, C)
    assert 0 < z.se < 0.05
    # From pi_0 the path is long (Λ̂ saturates); from q fitted to the 512 states of round
    # 8 it is nearly flat: ℓ_q varies only by the fit's errors, about 1/√n in each mean
    # (in units of σ) and 1/√(2n) in each relative scale, so Var ℓ_q ≈ 2D/n = 1/64 and
    # Λ ≈ sd(ℓ_q)/√π ≈ 0.07.
    assert fixed.barrier() > 1.0
    assert ctl.barrier() < 0.2, ctl.barrier()
    assert ctl.round_trips_per_1000 > 4 * fixed.round_trips_per_1000
    # The last fit (the 1024 states of round 9): the mean within 4/√1024 σ, the scale
    # within 4/√2048 of σ.
    q = ctl.reference
    assert q.fits == 7 and q.dim == 4
    assert np.all(np.abs(q.mean - MU) < 4 * SIGMA / np.sqrt(1024)), q
    assert np.all(np.abs(q.scale / SIGMA - 1) < 4 / np.sqrt(2048)), q
    # log q and its gradient from Rust, against the formula.
    x = MU + 0.3
    value, grad = q.log_density(x, gradient=True)
    assert value == pytest.approx(log_normal(x, q.mean, q.scale), rel=1e-12)
    np.testing.assert_allclose(grad, -(x - q.mean) / q.scale**2, rtol=1e-12)
    draws = q.sample(np.random.default_rng(0), size=4000)
    assert draws.shape == (4000, 4)
    assert np.all(np.abs(draws.mean(axis=0) - q.mean) < 4 * q.scale / np.sqrt(4000))
    s = ctl.summary()
    assert (s["reference"], s["reference_fits"]) == ("variational", 7)
    assert fixed.summary()["reference"] == "fixed" and fixed.reference is None
    assert "reference='variational', dim=4, fits=7" in repr(ctl)


def test_a_fitted_variational_controller_saves_and_continues_exactly(tmp_path):
    def start():
        return nrpt.ExactController(4, seed=6, reference="variational", dim=4)

    whole = start()
    for k in range(130):
        gaussian_step(whole, k)
    cut = start()
    for k in range(70):
        gaussian_step(cut, k)
    assert cut.reference_fits == 2  # after rounds 3 and 4 (iterations 30 and 62)
    ref = cut.reference
    state = cut.state_dict()
    cut.save(tmp_path / "ctl.json")
    copies = [
        pickle.loads(pickle.dumps(cut)),
        nrpt.ExactController.from_state_dict(json.loads(json.dumps(cut.state_dict()))),
        nrpt.ExactController.load(tmp_path / "ctl.json"),
    ]
    assert cut.state_dict()["reference"] == "variational"
    for ctl in copies + [cut]:
        np.testing.assert_array_equal(ctl.reference.mean, ref.mean)
        for k in range(70, 130):
            gaussian_step(ctl, k)
        assert ctl.state_dict() == whole.state_dict()
        assert ctl.summary() == whole.summary()
    # The reference read before a later fit is out of date.
    with pytest.raises(RuntimeError, match="read ExactController.reference again"):
        ref.log_density(MU)
    with pytest.raises(ValueError, match="encoded state holds 'variational'"):
        nrpt.ExactController.from_state_dict({**whole.state_dict(), "reference": "fixed"})
    # The encoding ends with the fit: its buffer (mean, scale, moments, scratch: 5 · 4
    # floats), the states gathered since the last fit (70 - 62 = 8, one byte) and the fits
    # (2, one byte). A negative scale, or more fits than completed rounds, is refused.
    raw = bytearray.fromhex(state["state"])
    assert (raw[-2], raw[-1]) == (8, 2)
    negative = raw.copy()
    negative[-2 - 160 + 4 * 8 + 7] ^= 0x80  # the sign of the first scale
    with pytest.raises(ValueError, match="finite, positive scale"):
        nrpt.ExactController.from_state_dict({**state, "state": negative.hex()})
    many = raw.copy()
    many[-1] = 50
    with pytest.raises(ValueError, match="50 fits of the variational reference in 5 completed rounds"):
        nrpt.ExactController.from_state_dict({**state, "state": many.hex()})


def test_states_are_checked_against_the_reference():
    ctl = nrpt.ExactController(3, reference="variational", dim=2)
    ctl.ask()
    before = ctl.state_dict()
    ell = [0.0, -1.0, -2.0]
    for bad in (None, np.zeros((3, 3)), np.zeros((2, 2)), np.zeros(6), 1.0):
        with pytest.raises(ValueError, match=r"states must be .* expected shape \(3, 2\)") as info:
            ctl.tell(ell, states=bad)
        assert "--" not in str(info.value)
    with pytest.raises(TypeError, match="booleans"):
        ctl.tell(ell, states=np.ones((3, 2), dtype=bool))
    assert ctl.state_dict() == before
    # A row with NaN is accepted (and not gathered for the fit).
    ctl.tell(ell, states=[[np.nan, 0.0], [1.0, 2.0], [3.0, 4.0]])
    assert ctl.iteration == 1 and ctl.reference is None
    fixed = nrpt.ExactController(3)
    fixed.ask()
    with pytest.raises(ValueError, match="only with reference='variational'"):
        fixed.tell(ell, states=np.zeros((3, 2)))


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(reference="variational"), ValueError, "needs dim=D"),
        (dict(reference="variational", dim=0), ValueError, "dim must be between 1 and"),
        (dict(reference="variational", dim=2.0), TypeError, "dim must be an int"),
        (dict(reference="fixed", dim=3), ValueError, "dim applies to reference='variational'"),
        (dict(dim=3), ValueError, "dim applies to reference='variational'"),
        (dict(reference="stabilized"), ValueError, "available in `nrpt run` only"),
        (dict(reference="gaussian"), ValueError, "reference must be 'fixed' or 'variational'"),
        (dict(reference=None), TypeError, "reference must be a str"),
    ],
)
def test_bad_references_are_pythonic_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        nrpt.ExactController(4, **kwargs)
