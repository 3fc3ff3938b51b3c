"""Tempering P small JAX networks with nrpt's swap controller (DEO*-SGHMC), optax and
``jax.vmap``.

The paper's deep experiment in miniature, in the shape a JAX user writes it: P
one-hidden-layer networks stacked on a leading axis and trained together by one jitted,
vmapped step of momentum SGD at P learning rates. The model at the lowest rate (level
0) samples the posterior (SGHMC: Langevin noise at temperature 1 in its gradient); the
others explore (momentum SGD, no noise). After every step the P mini-batch energies go
to :class:`nrpt.Controller` through :class:`nrpt.jax.Tempering`, which swaps
neighbouring learning rates in windows of W iterations, adapts the ladder and the
buffer, resets the optimizer state (momentum) of a model that changed level and keeps
the target level's parameters every few iterations. Their Bayesian model average is
scored on a test set.

The data are two interleaved half-moons generated here with NumPy (nothing is
downloaded). Needs JAX and optax (``pip install jax optax``):

    python examples/jax_tempering.py --chains 6 --iterations 3000
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

import nrpt
import nrpt.jax


def two_moons(n: int, noise: float, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
    """``n`` points on two interleaved half circles in the plane, with Gaussian noise;
    labels 0 (upper moon) and 1 (lower moon)."""
    t = rng.uniform(0.0, np.pi, n)
    y = rng.integers(0, 2, n)
    x = np.where(
        y[:, None] == 0,
        np.stack([np.cos(t), np.sin(t)], axis=1),
        np.stack([1.0 - np.cos(t), 0.5 - np.sin(t)], axis=1),
    )
    x = x + rng.normal(0.0, noise, x.shape)
    return x.astype(np.float32), y.astype(np.int32)


def init_networks(p: int, hidden: int, rng: np.random.Generator) -> Dict[str, Any]:
    """P networks' parameters, stacked on a leading axis of length P."""
    f32 = np.float32
    return {
        "w1": jnp.asarray(rng.normal(0.0, 1.0, (p, 2, hidden)).astype(f32)),
        "b1": jnp.asarray(np.zeros((p, hidden), f32)),
        "w2": jnp.asarray(rng.normal(0.0, hidden**-0.5, (p, hidden, 2)).astype(f32)),
        "b2": jnp.asarray(np.zeros((p, 2), f32)),
    }


def logits(params: Dict[str, Any], x: Any) -> Any:
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def energy(params: Dict[str, Any], x: Any, y: Any, n: int, sigma: float) -> Any:
    """The stochastic energy per example: the mini-batch's mean negative log-likelihood
    plus the N(0, sigma^2) prior on every weight divided by N (U(theta)/N)."""
    logp = jax.nn.log_softmax(logits(params, x))
    nll = -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))
    prior = sum(jnp.sum(p * p) for p in jax.tree_util.tree_leaves(params)) / (2 * sigma**2)
    return nll + prior / n


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chains", type=int, default=6)
    parser.add_argument("--iterations", type=int, default=3000)
    parser.add_argument("--window", default="opt")
    parser.add_argument("--swap-rate", type=float, default=0.2)
    parser.add_argument("--eta-min", type=float, default=0.01)
    parser.add_argument("--eta-max", type=float, default=0.3)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--prior-sigma", type=float, default=2.0)
    parser.add_argument("--thin", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    window: Any = int(args.window) if args.window.isdigit() else args.window

    rng = np.random.default_rng(args.seed)
    x_train, y_train = two_moons(500, 0.15, rng)
    x_test, y_test = two_moons(500, 0.15, rng)
    n, p = len(x_train), args.chains
    xs, ys = jnp.asarray(x_train), jnp.asarray(y_train)

    ctl = nrpt.Controller(
        p,
        window=window,
        swap_rate=args.swap_rate,
        eta_min=args.eta_min,
        eta_max=args.eta_max,
        explorer="msgd",  # T = 1 at the target level (SGHMC), 0 above (momentum SGD)
        n_data=n,  # energies are per-example means over n examples
        seed=args.seed,
    )
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=args.eta_min, momentum=args.momentum)
    burn_in = args.iterations // 4
    tempering = nrpt.jax.Tempering(tx, ctl, snapshot_every=args.thin, burn_in=burn_in)
    params = init_networks(p, args.hidden, rng)
    opt_state = tempering.init(params)

    def loss(params: Any, idx: Any) -> Any:
        return energy(params, xs[idx], ys[idx], n, args.prior_sigma)

    # Every array operation below runs inside one of two jitted functions (the step and
    # the prediction): on a CPU, compiling dominates a run this small. The random keys
    # are of XLA's "rbg" generator, which compiles several times faster than the
    # default threefry on a CPU.
    @jax.jit
    def step(params: Any, opt_state: Any, seed: Any, noise_std: Any) -> Tuple[Any, Any, Any]:
        """One SGHMC/momentum-SGD step of every model, then the energies of the new
        states on fresh mini-batches."""
        k_batch, k_noise, k_energy = jax.random.split(jax.random.key(seed, impl="rbg"), 3)
        idx = jax.random.randint(k_batch, (p, args.batch), 0, n)
        grads = jax.vmap(jax.grad(loss))(params, idx)
        grads = nrpt.jax.add_gradient_noise(grads, k_noise, noise_std)
        updates, opt_state = jax.vmap(tx.update)(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        idx = jax.random.randint(k_energy, (p, args.batch), 0, n)
        return params, opt_state, jax.vmap(loss)(params, idx)

    started = time.perf_counter()
    seeds = np.random.default_rng(args.seed).integers(0, 2**31, args.iterations)
    for k in range(args.iterations):
        noise = tempering.gradient_noise_std(args.momentum).astype(np.float32)
        params, opt_state, energies = step(params, opt_state, seeds[k], noise)
        opt_state, decision = tempering.tell(energies, params, opt_state, iteration=k)
    seconds = time.perf_counter() - started

    # The Bayesian model average of the target level's recorded networks.
    samples: List[Any] = tempering.snapshots
    predict = jax.jit(lambda s: jax.nn.softmax(logits(s, x_test)))
    probs = np.zeros((len(x_test), 2))
    for s in samples:
        probs += np.asarray(predict(s))
    probs /= max(len(samples), 1)
    accuracy = float(np.mean(probs.argmax(axis=1) == y_test))
    nll = float(-np.mean(np.log(np.clip(probs[np.arange(len(y_test)), y_test], 1e-12, None))))
    stats = ctl.stats()
    out = {
        "window": ctl.window,
        "round_trips": stats["round_trips"],
        "indicator_rates": stats["pair_indicator_rate"],
        "swaps": int(sum(stats["pair_swaps"])),
        "ladder": ctl.ladder.tolist(),
        "samples": len(samples),
        "accuracy": accuracy,
        "nll": nll,
        "seconds": seconds,
    }
    print(
        f"{p} networks, {args.iterations} iterations, window {ctl.window}: "
        f"{out['round_trips']} round trips, {out['swaps']} swaps, indicator rates "
        f"{np.round(out['indicator_rates'], 2).tolist()}; Bayesian model average of "
        f"{len(samples)} samples: accuracy {100 * accuracy:.1f} %, NLL {nll:.3f} "
        f"({seconds:.1f} s)"
    )
    return out


if __name__ == "__main__":
    main()
