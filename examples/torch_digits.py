"""The model of nrpt's bundled reference posterior, trained in PyTorch under
:class:`nrpt.torch.Tempering`, and its posterior scored against the truth.

The bundled reference (``data/reference/digits-mlp64``) is full-batch Hamiltonian Monte
Carlo on one model: an MLP with one hidden layer of 64 ReLU units, a N(0, 1) prior on
every weight, the UCI digits (8x8 images, pixel counts / 16) and their fixed split
(example i is a test example when i % 4 == 3: 1,348 training and 449 test examples).
This script trains that model the way a PyTorch user would: P networks side by side
with momentum SGD at P learning rates, DEO* swaps from :class:`nrpt.Controller`, SGHMC
noise at the target level (temperature 1, the posterior) and none above (the
``"msgd"`` explorer), and keeps ``--samples`` states of the target level after a
quarter of the run. Their Bayesian model average is then scored by
:func:`nrpt.fidelity` against the reference: accuracy, NLL, calibration, and how close
it is to the exact posterior predictive (agreement of the top class, total variation),
with 95 % intervals over the test examples.

Both routes to the swap energies run (``--swap-energy``, default both):

- ``fresh``, the paper's: after the step, each network's loss on a fresh mini-batch of
  its own (a second forward pass per network);
- ``step``, the authors' code: one mini-batch shared by all networks, and the loss each
  computed for its own step is its energy (one forward pass).

``--compare-deep`` also runs ``nrpt deep --quick`` and prints its rows beside (about a
minute on two cores).

    pip install ./python torch
    python examples/torch_digits.py                    # both routes, about 2 minutes
    python examples/torch_digits.py --compare-deep
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import torch
from torch import nn

import nrpt
import nrpt.torch

#: The reference's model: layers and prior (its reference.json's "model").
LAYERS = [64, 64, 10]
PRIOR_SIGMA = 1.0


def digits() -> Dict[str, torch.Tensor]:
    """The digits as the reference's model sees them (``nrpt.dataset``: pixel counts / 16,
    the reference's split), in float64."""
    d = nrpt.dataset("digits")
    return {
        "train_x": torch.as_tensor(np.asarray(d["data"], dtype=np.float64)),
        "train_y": torch.as_tensor(np.asarray(d["labels"], dtype=np.int64)),
        "test_x": torch.as_tensor(np.asarray(d["test_data"], dtype=np.float64)),
        "test_y": torch.as_tensor(np.asarray(d["test_labels"], dtype=np.int64)),
    }


def network() -> nn.Module:
    return nn.Sequential(nn.Linear(LAYERS[0], LAYERS[1]), nn.ReLU(), nn.Linear(LAYERS[1], LAYERS[2])).double()


def energy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, n: int) -> torch.Tensor:
    """The posterior's energy per example on a mini-batch: mean NLL + |theta|^2 / (2 sigma^2 N)."""
    nll = nn.functional.cross_entropy(model(x), y)
    prior = sum((p * p).sum() for p in model.parameters()) / (2 * PRIOR_SIGMA**2)
    return nll + prior / n


def temper(args: argparse.Namespace, data: Dict[str, torch.Tensor], route: str) -> Dict[str, Any]:
    x, y = data["train_x"], data["train_y"]
    n = len(x)
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed + 1)
    models: List[nn.Module] = [network() for _ in range(args.chains)]
    if args.same_start:
        for m in models[1:]:
            m.load_state_dict(models[0].state_dict())
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.0, momentum=args.momentum) for m in models]
    ctl = nrpt.Controller(args.chains, swap_rate=args.swap_rate, eta_min=args.eta_min,
                          eta_max=args.eta_max, explorer="msgd", n_data=n, seed=args.seed)
    burn_in = args.iterations // 4
    every = max(1, (args.iterations - burn_in) // args.samples)
    tempering = nrpt.torch.Tempering(models, optimizers, ctl, snapshot_every=every, burn_in=burn_in,
                                     max_snapshots=args.samples, langevin=True, generator=generator,
                                     swap_energy=route)
    started = time.perf_counter()
    for k in range(args.iterations):
        shared = torch.randint(0, n, (args.batch,), generator=generator)
        losses = []
        for model, opt in zip(models, optimizers):
            batch = shared if route == "step" else torch.randint(0, n, (args.batch,), generator=generator)
            opt.zero_grad()
            loss = energy(model, x[batch], y[batch], n)
            loss.backward()
            losses.append(loss)
        if route == "step":
            tempering.step(losses)
            tempering.tell(iteration=k)
        else:
            tempering.step()
            with torch.no_grad():
                energies = []
                for model in models:
                    batch = torch.randint(0, n, (args.batch,), generator=generator)
                    energies.append(energy(model, x[batch], y[batch], n))
            tempering.tell(energies, iteration=k)
    seconds = time.perf_counter() - started
    probs = nrpt.torch.model_average(network(), tempering.snapshots, data["test_x"])
    # What snapshots="average" would hold: the same states' weights averaged.
    averaged = network()
    averaged.load_state_dict({k: torch.stack([s[k] for s in tempering.snapshots]).mean(0)
                              for k in tempering.snapshots[0]})
    with torch.no_grad():
        weight_accuracy = (averaged(data["test_x"]).argmax(1) == data["test_y"]).double().mean().item()
    s = ctl.stats()
    return {
        "route": route,
        "probs": probs.numpy(),
        "samples": len(tempering.snapshots),
        "round_trips": s["round_trips"],
        "swap_rates": s["pair_indicator_rate"],
        "ms_per_iteration": 1000 * seconds / args.iterations,
        "weight_average_accuracy": weight_accuracy,
    }


def score(probs: np.ndarray, data: Dict[str, torch.Tensor]) -> Dict[str, Any]:
    """The predictive scored against the bundled reference posterior (nrpt.fidelity)."""
    return nrpt.fidelity(probs, labels=data["test_y"].numpy(), dataset="digits", layers=LAYERS,
                         prior_sigma=PRIOR_SIGMA, reference="digits-mlp64")


def cell(result: Dict[str, Any], key: str, scale: float = 1.0, digits: int = 4) -> str:
    value = result.get(key)
    if value is None:
        return "—"
    ci = result.get(f"{key}_ci")
    text = f"{scale * value:.{digits}f}"
    if ci is not None:
        text += f" [{scale * ci[0]:.{digits}f}, {scale * ci[1]:.{digits}f}]"
    return text


def main(argv: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chains", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=2100, help="100 epochs of N/B = 21")
    parser.add_argument("--swap-rate", type=float, default=0.1)
    parser.add_argument("--eta-min", type=float, default=0.046, help="per example (nrpt deep's temperature rule)")
    parser.add_argument("--eta-max", type=float, default=0.185)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=1,
                        help="runs per route, seeds SEED, SEED + 1, ...; the routes alternate, "
                             "so that a change in the machine's load hits both alike")
    parser.add_argument("--swap-energy", choices=["fresh", "step", "both"], default="both")
    parser.add_argument("--same-start", action="store_true",
                        help="every network starts from the same weights (else each from its own)")
    parser.add_argument("--compare-deep", action="store_true", help="also run nrpt deep --quick")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    data = digits()
    routes = ["fresh", "step"] if args.swap_energy == "both" else [args.swap_energy]
    results = []
    print(f"{args.chains} networks, {args.iterations} iterations, S = {args.swap_rate}, "
          f"rates {args.eta_min}-{args.eta_max} per example, SGHMC at the target level")
    print("| run | accuracy (%) | NLL / example | agreement with HMC (%) | total variation to HMC "
          "| round trips | pair indicator rates | ms / iteration | weights averaged: accuracy (%) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for seed in range(args.seed, args.seed + args.seeds):
        for route in routes:
            r = temper(argparse.Namespace(**{**vars(args), "seed": seed}), data, route)
            r.update(score(r.pop("probs"), data))
            r["seed"] = seed
            results.append(r)
            rates = ", ".join(f"{v:.2f}" for v in r["swap_rates"])
            print(f"| nrpt.torch, swap_energy=\"{route}\", seed {seed} | {cell(r, 'accuracy', 100, 2)} "
                  f"| {cell(r, 'nll')} | {cell(r, 'agreement', 100, 2)} | {cell(r, 'total_variation')} "
                  f"| {r['round_trips']} | {rates} | {r['ms_per_iteration']:.1f} "
                  f"| {100 * r['weight_average_accuracy']:.1f} |", flush=True)
    if args.seeds > 1:
        for route in routes:
            rows = [r for r in results if r["route"] == route]

            def ms(key: str, scale: float = 1.0, digits: int = 4) -> str:
                values = [scale * r[key] for r in rows if r.get(key) is not None]
                if not values:
                    return "—"
                return f"{np.mean(values):.{digits}f} ± {np.std(values, ddof=1):.{digits}f}"

            rates = np.mean([r["swap_rates"] for r in rows], axis=0)
            print(f"| mean ± sd over {len(rows)} seeds: swap_energy=\"{route}\" | {ms('accuracy', 100, 2)} "
                  f"| {ms('nll')} | {ms('agreement', 100, 2)} | {ms('total_variation')} "
                  f"| {ms('round_trips', 1, 1)} | {', '.join(f'{v:.2f}' for v in rates)} "
                  f"| {ms('ms_per_iteration', 1, 1)} | {ms('weight_average_accuracy', 100, 1)} |")
    if args.compare_deep:
        deep = nrpt.deep(quick=True)
        for row in deep["methods"]:
            print(f"| nrpt deep --quick: {row['name']} | {cell(row, 'accuracy', 100, 2)} | {cell(row, 'nll')} "
                  f"| {cell(row, 'agreement', 100, 2)} | {cell(row, 'total_variation')} | — | — | — | — |")
    return results


if __name__ == "__main__":
    main()
