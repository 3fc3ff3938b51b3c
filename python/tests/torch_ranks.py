"""One rank of the ``torchrun`` check of ``nrpt.distributed.torch_dist`` and
``nrpt.torch.Tempering`` across processes (``test_distributed.py`` launches it with
``torchrun --standalone --nproc-per-node 2``, backend gloo; not a test file itself).

Each rank owns two of P = 4 small networks and a ``Tempering`` over them; the energies
are ``mpi_ranks.energy`` (a function of the replica, the iteration and its learning
rate, so a wrong decision on one rank changes every later one). Each rank writes its
decisions and recorded iterations to ``OUT/rank{r}.npz``, then the verdicts of three
faults to ``OUT/rank{r}.json``: a rank that skips a tell, a rank told without
``iteration=``, a rank with another seed (every rank must raise), and the measured
seconds per tell of the tensor all-gather against ``all_gather_object``.

    torchrun --standalone --nproc-per-node 2 torch_ranks.py OUT
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

import mpi_ranks
import nrpt.torch
from nrpt.distributed import DistributedController, torch_dist

P = 4
ITERATIONS = 150
OPTIONS = {"seed": 8, "window": 2, "eta_min": 0.01, "eta_max": 0.3}


def tempered() -> dict:
    dc = DistributedController(torch_dist(), P, **OPTIONS)
    torch.manual_seed(0)
    models = [torch.nn.Linear(2, 2) for _ in dc.owned]
    opts = [torch.optim.SGD(m.parameters(), lr=0.0, momentum=0.5) for m in models]
    t = nrpt.torch.Tempering(models, opts, dc, snapshot_every=10)
    out = []
    for k in range(ITERATIONS):
        energies = [torch.tensor(mpi_ranks.energy(int(r), k, lr), dtype=torch.float64)
                    for r, lr in zip(dc.owned, t.learning_rates)]
        out.append(t.tell(energies, iteration=k))
        for o, lr in zip(opts, t.learning_rates):
            assert o.param_groups[0]["lr"] == lr
    rec = mpi_ranks.record(out)
    rec["snapshot_iterations"] = np.array(t.snapshot_iterations, dtype=np.int64)
    rec["owned"] = dc.owned
    return rec


def verdict(body) -> str:
    try:
        body()
        return "no error"
    except Exception as err:  # noqa: BLE001 - the verdict is what the test reads
        return f"{type(err).__name__}: {err}"


def skipped_tell(rank: int) -> None:
    dc = DistributedController(torch_dist(), P, **OPTIONS)
    for k in range(6):
        if rank == 1 and k == 2:
            continue
        dc.tell([1.0, 2.0], iteration=k)


def seconds_per_tell(tells: int = 300) -> dict:
    """The wall time of a tell (tensor all-gather, checks, the controller), and of the
    all-gather alone both ways, per call, as the slowest rank saw it."""
    dc = DistributedController(torch_dist(), P, **OPTIONS)
    dist.barrier()
    started = time.perf_counter()
    for k in range(tells):
        dc.tell([1.0, 2.0], iteration=k)
    tell = (time.perf_counter() - started) / tells
    message = np.zeros(8)
    dist.barrier()
    started = time.perf_counter()
    for _ in range(tells):
        out = [None] * dist.get_world_size()
        dist.all_gather_object(out, message)
    gather_object = (time.perf_counter() - started) / tells
    tensor = torch.from_numpy(message)
    dist.barrier()
    started = time.perf_counter()
    for _ in range(tells):
        parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, tensor)
    gather_tensor = (time.perf_counter() - started) / tells
    return {"tell": tell, "all_gather_object": gather_object, "all_gather": gather_tensor}


def main(out: Path) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    rec = tempered()
    np.savez(out / f"rank{rank}.npz", **rec)
    faults = {
        "skipped": verdict(lambda: skipped_tell(rank)),
        "no_iteration": verdict(lambda: DistributedController(torch_dist(), P, **OPTIONS).tell([1.0, 2.0])),
        "seed": verdict(lambda: DistributedController(torch_dist(), P, **dict(OPTIONS, seed=8 + rank))),
    }
    report = {"size": dist.get_world_size(), "torch": torch.__version__, **faults,
              "seconds": seconds_per_tell()}
    (out / f"rank{rank}.json").write_text(json.dumps(report))
    dist.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
