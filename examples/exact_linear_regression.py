"""Exact tempering of your own model from Python: a Bayesian linear regression, its
evidence estimated by :class:`nrpt.ExactController` and compared with the closed form.

The model: ``y = X w + e`` with ``e ~ N(0, sigma**2 I)`` (sigma known) and the prior
``w ~ N(0, tau**2 I)``. Exact tempering runs P replicas at inverse temperatures
``1 = beta_0 > ... > beta_{P-1} = 0`` of

    pi_beta(w) ∝ N(w; 0, tau**2 I) · L(w)**beta,     log L(w) = sum_i log N(y_i; x_i·w, sigma**2),

which here is Gaussian at every beta:

    precision  A_beta = I / tau**2 + beta · X'X / sigma**2,
    mean       m_beta = A_beta^-1 · beta · X'y / sigma**2,

so "moving a replica at its beta" is one exact draw from N(m_beta, A_beta^-1). The
controller does the rest: swaps, the grid at equal barrier, the barrier Λ and log Z
by the stepping stone. Because the prior is normalized, log Z is the log evidence
``log p(y | X)``, and here it has a closed form: ``y ~ N(0, sigma**2 I + tau**2 X X')``.

Any sampler that leaves pi_beta invariant would do in place of the exact draw. With
BlackJAX, for example (not run here), a replica at ``beta`` could take a few NUTS steps
on the tempered log density::

    def logdensity(w, beta):
        return log_prior(w) + beta * log_likelihood(w)
    nuts = blackjax.nuts(lambda w: logdensity(w, beta), step_size, inverse_mass_matrix)
    state = nuts.init(w_r)                 # replica r's current state
    for _ in range(steps):
        state, _ = nuts.step(next_key(), state)
    w_r = state.position                   # then tell log_likelihood(w_r)

(NumPyro's ``NUTS(potential_fn=lambda w: -logdensity(w, beta))`` is the same idea.) At
beta = 0 draw from the prior exactly when you can: it is what makes the replicas
forget their modes.

    python examples/exact_linear_regression.py [--iterations N] [--chains P] [--seed S]

Only NumPy and nrpt are needed (``pip install ./python``).
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, Optional, Sequence

import numpy as np

import nrpt


class LinearRegression:
    """A Bayesian linear regression with a Gaussian prior and known noise."""

    def __init__(self, x: np.ndarray, y: np.ndarray, sigma: float, tau: float) -> None:
        self.x, self.y, self.sigma, self.tau = x, y, sigma, tau
        self.xtx = x.T @ x
        self.xty = x.T @ y
        self._cache: Dict[float, Any] = {}

    def log_likelihood(self, w: np.ndarray) -> np.ndarray:
        """log L of every row of ``w`` (shape (P, d)): a sum over the observations."""
        r = self.y[None, :] - w @ self.x.T
        n = self.y.size
        return -0.5 * np.sum(r * r, axis=1) / self.sigma**2 - 0.5 * n * np.log(
            2 * np.pi * self.sigma**2
        )

    def tempered(self, beta: float):
        """The mean and a Cholesky factor of the precision of pi_beta (cached: a grid
        has P betas, fixed for a whole round)."""
        if beta not in self._cache:
            d = self.xtx.shape[0]
            precision = np.eye(d) / self.tau**2 + beta * self.xtx / self.sigma**2
            chol = np.linalg.cholesky(precision)
            mean = np.linalg.solve(precision, beta * self.xty / self.sigma**2)
            if len(self._cache) > 256:
                self._cache.clear()
            self._cache[beta] = (mean, chol)
        return self._cache[beta]

    def draw(self, beta: float, rng: np.random.Generator) -> np.ndarray:
        """An exact draw from pi_beta: m + L^-T z with A = L L'."""
        mean, chol = self.tempered(float(beta))
        z = rng.standard_normal(mean.size)
        return mean + np.linalg.solve(chol.T, z)

    def log_evidence(self) -> float:
        """log p(y | X) = log N(y; 0, sigma**2 I + tau**2 X X')."""
        n = self.y.size
        cov = self.sigma**2 * np.eye(n) + self.tau**2 * self.x @ self.x.T
        _, logdet = np.linalg.slogdet(cov)
        quad = self.y @ np.linalg.solve(cov, self.y)
        return float(-0.5 * (n * np.log(2 * np.pi) + logdet + quad))


def make_data(n: int = 30, d: int = 4, sigma: float = 0.5, tau: float = 2.0, seed: int = 0):
    """A regression problem drawn from its own prior."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    w = tau * rng.standard_normal(d)
    y = x @ w + sigma * rng.standard_normal(n)
    return LinearRegression(x, y, sigma, tau)


def run(
    iterations: int = 4094,
    chains: int = 10,
    seed: int = 0,
    model: Optional[LinearRegression] = None,
) -> Dict[str, Any]:
    """Tempers the model for ``iterations`` iterations with exact draws at every beta;
    returns the controller's estimates beside the closed form."""
    model = model or make_data()
    rng = np.random.default_rng(seed)
    ctl = nrpt.ExactController(chains, seed=seed)
    d = model.xtx.shape[0]
    w = np.zeros((chains, d))  # replica r's state is w[r]; replicas never move
    for _ in range(iterations):
        betas = ctl.ask()  # by replica
        for r, beta in enumerate(betas):
            w[r] = model.draw(beta, rng)
        ctl.tell(model.log_likelihood(w))
    z = ctl.log_z
    truth = model.log_evidence()
    return {
        "log_z": z.value,
        "log_z_se": z.se,
        "log_z_forward": z.forward,
        "log_z_reverse": z.reverse,
        "log_evidence": truth,
        "errors_in_se": (z.value - truth) / z.se,
        "barrier": ctl.barrier(),
        "round_trips": ctl.round_trips,
        "round_trips_per_1000": ctl.round_trips_per_1000,
        "predicted_round_trips_per_1000": ctl.predicted_round_trips_per_1000,
        "recommended_chains": ctl.recommended_chains,
        "measured_iterations": ctl.last_round["iterations"],
        "warnings": ctl.warnings,
    }


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=4094)
    ap.add_argument("--chains", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    out = run(args.iterations, args.chains, args.seed)
    print(
        f"log evidence: {out['log_z']:.4f} ± {out['log_z_se']:.4f} (forward "
        f"{out['log_z_forward']:.4f}, reverse {out['log_z_reverse']:.4f}; last round of "
        f"{out['measured_iterations']} iterations); closed form {out['log_evidence']:.4f}: "
        f"{out['errors_in_se']:+.2f} standard errors"
    )
    print(
        f"barrier Λ̂ = {out['barrier']:.3f}, round trips {out['round_trips']} "
        f"({out['round_trips_per_1000']:.1f} per 1000 iterations in the last round, "
        f"{out['predicted_round_trips_per_1000']:.1f} predicted); chains recommended: "
        f"{out['recommended_chains']}"
    )
    for w in out["warnings"]:
        print(f"warning: {w}")
    return out


if __name__ == "__main__":
    main()
