"""The ask/tell loop in NumPy, and why it reproduces ``nrpt run`` exactly.

A training loop that tempers P models keeps the models where they are and asks
:class:`nrpt.Controller` which learning rate each one has; after one step of every
model it tells the controller the P energies (by replica), and the controller swaps
levels, adapts the ladder and the buffer, and counts round trips.

Here the P "models" are points in the plane, held in one NumPy array of shape (P, 2),
and one step of a model is nrpt's own SGD step on the paper's 25-mode target seen
through noisy gradients and energies (:class:`nrpt.ToyExplorer`). That step is the
Rust driver's, with the same random streams, and the controller runs the driver's
exchange: so this loop computes, bit for bit, what the command's engine computes for
the same configuration and seed, and its round-trip counts (in both countings), final
states and kept samples equal ``nrpt run``'s exactly:

    python examples/numpy_controller.py --iterations 5000 --ensembles 2 --seed 3 --check
    nrpt run -n 5000 -e 2 --seed 3 --json -o /tmp/out   # round_trips_per_1000 · 2 · 5

"Exactly" means this: ``nrpt run -e E`` runs ensembles 0 … E - 1 with Philox keys (seed,
e), in float32, with the optimal window for P and S; this script runs one controller
and one explorer per ensemble with the same keys, ``dtype="float32"`` and the same
window, so every energy, every swap and every learning rate is the same number. Swap
in your own models and losses for the explorer and everything else stays as it is
(``examples/torch_tempering.py`` does that with PyTorch networks).

Only NumPy and nrpt are needed (``pip install ./python``).
"""

from __future__ import annotations

import argparse
from typing import Any, Dict

import numpy as np

import nrpt

#: The command's defaults for keeping samples: every 10th iteration after 100.
THIN, WARMUP = 10, 100


def temper(
    chains: int = 16,
    iterations: int = 20_000,
    seed: int = 0,
    ensemble: int = 0,
    window: Any = "opt",
) -> Dict[str, Any]:
    """Runs one ensemble of the 2D toy in ask/tell form; returns the controller's
    counts, the kept target-level samples and the final states."""
    # rules="paper": the command's rules and defaults (buffer 4.0 in the toy's
    # energy units, the Jacobi ladder), so the decisions are `nrpt run`'s bit for bit.
    ctl = nrpt.Controller(
        chains, window=window, seed=seed, ensemble=ensemble, dtype="float32", rules="paper"
    )
    toy = nrpt.ToyExplorer(chains, seed=seed, ensemble=ensemble, dtype="float32")
    states = toy.initial_states()  # (P, 2): model r is states[r]; models never move
    samples = []
    for k in range(iterations):
        # Ask: each model's learning rate (and its level's temperature: 1 at the
        # target level, where the step is SGLD, 0 above, where it is SGD).
        learning_rates, temperatures = ctl.ask(), ctl.temperatures
        # Explore: one noisy gradient step of every model, and its noisy energy.
        energies = toy.step(states, learning_rates, temperatures, k)
        # Tell: swaps, ladder and buffer adaptation, round trips.
        decision = ctl.tell(energies)
        if k >= WARMUP and k % THIN == 0:
            # The model now at level 0 samples the target.
            samples.append(states[decision.replica_at[0]].copy())
    stats = ctl.stats()
    return {
        "round_trips": stats["round_trips"],
        "authors_round_trips": stats["authors_round_trips"],
        "pair_executed_swap_rate": stats["pair_executed_swap_rate"],
        "ladder": ctl.ladder,
        "buffer": ctl.buffer,
        "window": ctl.window,
        "samples": np.array(samples, dtype=np.float32).reshape(-1, 2),
        "states_by_level": states[ctl.replica_at],
    }


def main(argv: Any = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chains", type=int, default=16)
    parser.add_argument("--iterations", type=int, default=20_000)
    parser.add_argument("--ensembles", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--check",
        action="store_true",
        help="also run nrpt.run with the same configuration and compare everything",
    )
    args = parser.parse_args(argv)
    runs = [
        temper(args.chains, args.iterations, args.seed, e) for e in range(args.ensembles)
    ]
    trips = sum(r["round_trips"] for r in runs)
    authors = sum(r["authors_round_trips"] for r in runs)
    per1000 = 1000.0 * trips / (args.ensembles * args.iterations)
    print(
        f"{args.ensembles} ensemble(s) x {args.chains} chains x {args.iterations} iterations, "
        f"window {runs[0]['window']}: {trips} round trips ({per1000:.1f} per 1000 iterations "
        f"per ensemble), {authors} in the authors' counting"
    )
    out: Dict[str, Any] = {"round_trips": trips, "authors_round_trips": authors, "runs": runs}
    if args.check:
        r = nrpt.run(
            chains=args.chains,
            ensembles=args.ensembles,
            iterations=args.iterations,
            seed=args.seed,
            backend="cpu",
        )
        assert r["round_trips"] == trips, (r["round_trips"], trips)
        assert r["authors_round_trips"] == authors, (r["authors_round_trips"], authors)
        for e, run in enumerate(runs):
            assert np.array_equal(r["samples"][:, e, :], run["samples"])
            assert np.array_equal(r["ensembles"]["levels"][e], run["states_by_level"])
            assert np.array_equal(r["final_ladders"][e], run["ladder"])
        print(
            f"nrpt.run with the same configuration: {r['round_trips']} round trips, "
            f"{r['authors_round_trips']} in the authors' counting; samples, final states "
            f"and ladders equal: the same run"
        )
        out["run"] = r
    return out


if __name__ == "__main__":
    main()
