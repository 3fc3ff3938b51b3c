"""Tempering P small PyTorch networks with nrpt's swap controller (DEO*-mSGD).

The paper's deep experiment in miniature, in the shape a PyTorch user writes it: P
networks trained side by side with momentum SGD at P learning rates, the lowest one
sampling the posterior (SGHMC noise at temperature 1), the others exploring; after
every step each network's mini-batch energy goes to :class:`nrpt.Controller`, which
swaps neighbouring learning rates in windows of W iterations (the optimal W* for P and
the target swap rate S), adapts the ladder and the buffer C, and counts round trips.
The Bayesian model average of the networks that sat at the lowest level is scored on
a test set, beside vanilla DEO (W = 1).

The loop is ordinary PyTorch around :class:`nrpt.torch.Tempering`, which does what
the controller says with the optimizers (one ``torch.optim.SGD`` with momentum per
network):

- it writes each network's learning rate into its optimizer's param groups; the
  networks never move, the controller's permutation does (``ctl.replica_at[0]`` is
  the network at the target level, whose states are the samples);
- ``tempering.step()`` steps every optimizer after adding the SGHMC noise to the
  gradients (``langevin=True``: temperature 1 at the target level, 0 above with the
  ``"msgd"`` explorer);
- ``tempering.tell(energies)``: one energy per network, **by network**, in the units
  of the buffer: here the mean loss per example (mini-batch NLL + prior / N), the
  units of the learning rates too (the paper's; ``nrpt deep`` uses the same). It
  clears the momentum of a network that changed level (the authors' code re-creates
  both optimizers on a swap) and keeps a copy of the target level's network every
  ``--thin`` iterations after the burn-in.

Needs PyTorch and NumPy (its test in ``python/tests/test_examples.py`` runs a shortened
version; CI installs PyTorch for it). The data is a synthetic 3-class spiral made
here, so nothing is downloaded:

    pip install ./python torch
    python examples/torch_tempering.py --chains 8 --iterations 4000
"""

from __future__ import annotations

import argparse
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import nn

import nrpt
import nrpt.torch


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
    optimizers = [torch.optim.SGD(m.parameters(), lr=args.eta_min, momentum=args.momentum) for m in models]
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
    tempering = nrpt.torch.Tempering(
        models,
        optimizers,
        ctl,
        snapshot_every=args.thin,
        burn_in=args.iterations // 5,
        langevin=True,  # SGHMC noise sqrt(2 (1 - mu) eta T / N) in each velocity
        generator=generator,
    )
    started = time.perf_counter()
    for k in range(args.iterations):
        for model, opt in zip(models, optimizers):
            batch = torch.randint(0, n, (args.batch,), generator=generator)
            opt.zero_grad()
            energy(model, x_train[batch], y_train[batch], n, args.prior_sigma).backward()
        tempering.step()
        energies = np.empty(args.chains)
        with torch.no_grad():
            for r, model in enumerate(models):
                # The energy of the new state, on a fresh mini-batch.
                batch = torch.randint(0, n, (args.batch,), generator=generator)
                energies[r] = energy(model, x_train[batch], y_train[batch], n, args.prior_sigma).item()
        tempering.tell(energies, iteration=k)
    # The Bayesian model average of the target level's recorded networks.
    scratch = network(args.hidden)
    probs = torch.zeros(len(x_test), 3)
    with torch.no_grad():
        for state in tempering.snapshots:
            scratch.load_state_dict(state)
            probs += torch.softmax(scratch(x_test), dim=1)
    kept = len(tempering.snapshots)
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


def main(argv: Optional[Sequence[str]] = None) -> List[Dict[str, float]]:
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
    args = parser.parse_args(argv)
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
    results = []
    for name, window in (("DEO*-mSGD", "opt"), ("DEO-mSGD (W = 1)", 1)):
        r = temper(args, window, data)
        results.append(r)
        print(
            f"{name:>17}: W = {r['window']:>2}, {r['round_trips']} round trips "
            f"({r['authors_round_trips']} in the authors' counting), swap rates "
            f"{np.round(r['swap_rates'], 2).tolist()}, BMA of {r['samples']} samples: "
            f"accuracy {100 * r['accuracy']:.1f} %, NLL {r['nll']:.3f} ({r['seconds']:.0f} s)"
        )
    return results


if __name__ == "__main__":
    main()
