"""One rank of the MPI check of ``nrpt.distributed`` (``test_distributed.py`` launches
it with ``mpirun -n 4``; not a test file itself).

Every rank owns some of the P models and computes only their energies, which depend
on the model, the iteration and the model's current learning rate (so a wrong decision
on one rank would change every later energy). Each rank writes what its controller
decided at every iteration to ``OUT/rank{r}.npz``; the test compares them with one
process's :class:`nrpt.Controller` told the same energies. Last, a controller built
with another seed on one rank must make every rank raise ``DivergenceError``.

    mpirun -n 4 python mpi_ranks.py OUT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import nrpt
from nrpt.distributed import DistributedController, DivergenceError, mpi

ITERATIONS = 300

#: (name, P, the controller's options, owned by rank: None for the default split)
SCENARIOS = [
    ("one_per_rank", 4, {"window": 3, "seed": 5, "eta_min": 0.01, "eta_max": 0.5}),
    ("blocks", 10, {"seed": 6, "swap_rate": 0.3, "eta_min": 0.001, "eta_max": 0.3, "dtype": "float32"}),
]


def energy(replica: int, iteration: int, lr: float) -> float:
    """A stochastic energy: a noisy level that grows with the learning rate (hot
    models sit higher), seeded by (replica, iteration) alone."""
    rng = np.random.default_rng([replica, iteration])
    return float(1.0 + 3.0 * lr + 0.5 * np.sin(0.05 * iteration + replica) + 0.3 * rng.normal())


def record(decisions):
    return {
        "level_of": np.array([d.level_of for d in decisions]),
        "learning_rates": np.array([d.learning_rates for d in decisions]),
        "swapped": np.array([d.swapped for d in decisions]),
        "buffer": np.array([d.buffer for d in decisions]),
    }


def reference(p, options, iterations=ITERATIONS):
    """One process, one controller, all P energies."""
    ctl = nrpt.Controller(p, **options)
    out = []
    for k in range(iterations):
        lrs = ctl.ask()
        out.append(ctl.tell([energy(r, k, lrs[r]) for r in range(p)], iteration=k))
    return record(out)


def distributed(comm, p, options, iterations=ITERATIONS):
    dc = DistributedController(comm, p, **options)
    out = []
    for k in range(iterations):
        lrs = dc.ask()
        local = [energy(int(r), k, lr) for r, lr in zip(dc.owned, lrs)]
        out.append(dc.tell(local, iteration=k))
    return record(out), dc.owned


def main(out: Path) -> None:
    comm = mpi()
    result = {}
    for name, p, options in SCENARIOS:
        rec, owned = distributed(comm, p, options)
        for key, value in rec.items():
            result[f"{name}/{key}"] = value
        result[f"{name}/owned"] = owned
    np.savez(out / f"rank{comm.rank}.npz", **result)
    # Another seed on rank 2: every rank must stop with DivergenceError.
    options = dict(SCENARIOS[0][2], seed=99 if comm.rank == 2 else 5)
    try:
        DistributedController(comm, 4, **options)
        verdict = "no error"
    except DivergenceError as err:
        verdict = f"DivergenceError: {err}"
    (out / f"rank{comm.rank}.json").write_text(json.dumps({"divergence": verdict, "size": comm.size}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
