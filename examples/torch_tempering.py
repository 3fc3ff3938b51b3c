"""Tempering P small PyTorch networks with nrpt's swap controller (DEO*-mSGD).

The paper's deep experiment in miniature, in the shape a PyTorch user writes it: P
networks trained side by side with momentum SGD at P learning rates, the lowest one
sampling the posterior (SGHMC noise at temperature 1), the others exploring; after
every step each network's mini-batch energy goes to :class:`nrpt.Controller`, which
swaps neighbouring learning rates in windows of W iterations (the optimal W* for P and
the target swap rate S), adapts the ladder and the buffer C, and counts round trips.
The Bayesian model average of the networks that sat at the lowest level is scored on
a test set, beside vanilla DEO (W = 1).

What the loop does with the controller's answers (everything else is ordinary
PyTorch):

- ``lrs = ctl.ask()``: network r steps with ``lrs[r]``; the networks never move, the
  controller's permutation does (``ctl.replica_at[0]`` is the network at the target
  level, whose states are the samples);
- ``ctl.tell(energies)``: one energy per network, **by network**, in the units of the
  buffer: here the mean loss per example (mini-batch NLL + prior / N), the units of
  the learning rates too (the paper's; ``nrpt deep`` uses the same);
- ``d.momentum_reset[r]``: network r changed level, so its velocity starts again from
  zero (the authors' code re-creates both optimizers on a swap). With ``torch.optim``
  instead of the explicit update below: ``group["lr"] = lrs[r]`` for every param group,
  and ``opt.state.clear()`` on a reset.

Needs PyTorch and NumPy (not run in CI). The data is a synthetic 3-class spiral made
here, so nothing is downloaded:

    pip install ./python torch
    python examples/torch_tempering.py --chains 8 --iterations 4000
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Dict, List, Tuple

import numpy as np
import torch
from torch import nn

import nrpt


def spiral(n: int, classes: int, noise: float, rng: np.random.Generator) -> Tuple[torch.Tensor, torch.Tensor]:
    """``n`` points per class on ``classes`` interleaved spiral arms in the plane."""
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.05, 1.0, n)
        t = np.linspace(c * 4.0, (c + 1) * 4.0, n) + rng.normal(0.0, noise, n)
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
        ys.append(np.full(n, c))
    x = torch.tensor(np.concatenate(xs), dtype=torch.float32)
    y = torch.tensor(np.concatenate(ys), dtype=torch.long)
    return x, y


def network(hidden: int) -> nn.Module:
    return nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 3))


def energy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, examples: int, sigma: float) -> torch.Tensor:
    """The stochastic energy per example: mean NLL of the mini-batch plus the N(0, σ²)
    prior on every weight divided by N (U(θ)/N of the posterior)."""
    nll = nn.functional.cross_entropy(model(x), y)
    prior = sum((p * p).sum() for p in model.parameters()) / (2 * sigma * sigma)
    return nll + prior / examples


def temper(args: argparse.Namespace, window, data) -> Dict[str, float]:
    x_train, y_train, x_test, y_test = data
    n = len(x_train)
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed + 1)
    models: List[nn.Module] = [network(args.hidden) for _ in range(args.chains)]
    velocities = [[torch.zeros_like(p) for p in m.parameters()] for m in models]
    ctl = nrpt.Controller(
        args.chains,
        window=window,
        swap_rate=args.swap_rate,
        eta_min=args.eta_min,
        eta_max=args.eta_max,
        explorer="msgd",  # T = 1 at the target level (SGHMC), 0 above (momentum SGD)
        # Energies are per-example means (energy="mean", the default) over n examples:
        # the buffer starts and moves in those units (buffer="auto"), no tuning.
        n_data=n,
        seed=args.seed,
    )
    probs = torch.zeros(len(x_test), 3)
    kept = 0
    started = time.perf_counter()
    for k in range(args.iterations):
        lrs, temperatures = ctl.ask(), ctl.temperatures
        energies = np.empty(args.chains)
        for r, model in enumerate(models):
            batch = torch.randint(0, n, (args.batch,), generator=generator)
            model.zero_grad()
            energy(model, x_train[batch], y_train[batch], n, args.prior_sigma).backward()
            lr, t = float(lrs[r]), float(temperatures[r])
            # Momentum SGD, plus the SGHMC noise sqrt(2 (1 - μ) η T / N) at T > 0 (the
            # gradient is of U/N, so the sampler's step size is η/N).
            sigma = math.sqrt(2 * (1 - args.momentum) * lr * t / n)
            with torch.no_grad():
                for p, v in zip(model.parameters(), velocities[r]):
                    v.mul_(args.momentum).add_(p.grad, alpha=-lr)
                    if sigma > 0:
                        v.add_(torch.randn(p.shape, generator=generator), alpha=sigma)
                    p.add_(v)
                # The energy of the new state, on a fresh mini-batch.
                batch = torch.randint(0, n, (args.batch,), generator=generator)
                energies[r] = energy(model, x_train[batch], y_train[batch], n, args.prior_sigma).item()
        d = ctl.tell(energies)
        for r in np.flatnonzero(d.momentum_reset):
            for v in velocities[r]:
                v.zero_()
        if k >= args.iterations // 5 and k % args.thin == 0:
            with torch.no_grad():
                probs += torch.softmax(models[d.replica_at[0]](x_test), dim=1)
            kept += 1
    probs /= max(kept, 1)
    accuracy = (probs.argmax(dim=1) == y_test).float().mean().item()
    nll = -torch.log(probs[torch.arange(len(y_test)), y_test].clamp_min(1e-12)).mean().item()
    s = ctl.stats()
    return {
        "window": ctl.window,
        "round_trips": s["round_trips"],
        "authors_round_trips": s["authors_round_trips"],
        "swap_rates": s["pair_indicator_rate"],
        "ladder": ctl.ladder,
        "accuracy": accuracy,
        "nll": nll,
        "samples": kept,
        "seconds": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chains", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=4000)
    parser.add_argument("--swap-rate", type=float, default=0.2)
    parser.add_argument("--eta-min", type=float, default=0.005)
    parser.add_argument("--eta-max", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--prior-sigma", type=float, default=1.0)
    parser.add_argument("--thin", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)
    x_train, y_train = spiral(300, 3, 0.25, rng)
    x_test, y_test = spiral(150, 3, 0.25, rng)
    data = (x_train, y_train, x_test, y_test)
    w = nrpt.optimal_window(args.chains, args.swap_rate)
    print(
        f"{args.chains} networks, {args.iterations} iterations, S = {args.swap_rate}: "
        f"W* = {nrpt.w_star(args.chains, args.swap_rate):.2f}, window {w}; "
        f"Lemma 1: {1000 * nrpt.round_trip_rate(args.chains, w, args.swap_rate):.1f} round trips "
        f"per 1000 iterations at W = {w}, {1000 * nrpt.round_trip_rate(args.chains, 1, args.swap_rate):.1f} at W = 1"
    )
    for name, window in (("DEO*-mSGD", "opt"), ("DEO-mSGD (W = 1)", 1)):
        r = temper(args, window, data)
        print(
            f"{name:>17}: W = {r['window']:>2}, {r['round_trips']} round trips "
            f"({r['authors_round_trips']} in the authors' counting), swap rates "
            f"{np.round(r['swap_rates'], 2).tolist()}, BMA of {r['samples']} samples: "
            f"accuracy {100 * r['accuracy']:.1f} %, NLL {r['nll']:.3f} ({r['seconds']:.0f} s)"
        )


if __name__ == "__main__":
    main()
