"""A stand-in for the few parts of PyTorch that ``nrpt.torch`` and
``nrpt.distributed.torch_dist`` use, on NumPy, for machines without PyTorch (its PyPI
wheel pulls in gigabytes of CUDA libraries).

What it models, with PyTorch's semantics:

- ``Tensor``: a NumPy array with ``shape``, ``dtype``, ``device``, ``grad``,
  ``detach()`` (shares storage), ``clone()``, ``to(device, copy=True)``, ``add_(other,
  alpha=)``, ``mul_``, ``is_floating_point()``;
- ``randn(shape, generator=, dtype=, device=)``, ``Generator().manual_seed(s)``,
  ``no_grad()``;
- ``nn.Module``: ``parameters()``, ``state_dict()`` (the parameters themselves,
  detached, as PyTorch returns them), ``load_state_dict()`` (copies in place);
- ``optim.SGD``: ``param_groups`` (dicts with ``params``, ``lr``, ``momentum``,
  ``dampening``, ``nesterov``), ``state`` (a ``defaultdict(dict)`` by parameter, with
  ``momentum_buffer``), ``step()`` (``buf = momentum * buf + grad``, the first buffer
  a copy of the gradient; ``p -= lr * buf``), ``state_dict()`` / ``load_state_dict()``
  in PyTorch's format (state and groups by parameter index);
- ``distributed``: ``is_available``, ``is_initialized``, ``get_rank``,
  ``get_world_size``, ``all_gather_object``, over :func:`nrpt.distributed.thread_group`
  ranks (one per thread).

:func:`installed` puts it in ``sys.modules`` as ``torch`` for the time of a test.
"""

from __future__ import annotations

import contextlib
import copy
import sys
import threading
import types
from collections import defaultdict
from typing import Any, Dict, Iterator, List

import numpy as np


class Tensor:
    def __init__(self, data: Any, device: str = "cpu") -> None:
        self.data = np.asarray(data)
        self.device = device
        self.grad: Any = None

    @property
    def shape(self) -> tuple:
        return self.data.shape

    @property
    def dtype(self) -> Any:
        return self.data.dtype

    def detach(self) -> "Tensor":
        return Tensor(self.data, self.device)  # shares storage, as in PyTorch

    def clone(self) -> "Tensor":
        return Tensor(self.data.copy(), self.device)

    def to(self, device: Any, copy: bool = False) -> "Tensor":
        if copy or device != self.device:
            return Tensor(self.data.copy(), device)
        return self

    def add_(self, other: Any, alpha: float = 1.0) -> "Tensor":
        o = other.data if isinstance(other, Tensor) else other
        self.data += alpha * o
        return self

    def mul_(self, x: float) -> "Tensor":
        self.data *= x
        return self

    def is_floating_point(self) -> bool:
        return self.data.dtype.kind == "f"

    def numpy(self) -> np.ndarray:
        return self.data

    def __repr__(self) -> str:
        return f"fake_torch.Tensor({self.data!r})"


class Generator:
    def __init__(self, device: str = "cpu") -> None:
        self.device = device
        self.rng = np.random.default_rng(0)

    def manual_seed(self, seed: int) -> "Generator":
        self.rng = np.random.default_rng(seed)
        return self


_default = Generator()


def randn(shape: Any, generator: Any = None, dtype: Any = None, device: Any = "cpu") -> Tensor:
    g = generator if generator is not None else _default
    return Tensor(g.rng.standard_normal(shape).astype(dtype or np.float32), device)


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    yield


class Module:
    """A model of named parameters (``Tensor``)."""

    def __init__(self, **params: Any) -> None:
        self._params = {k: Tensor(np.array(v, dtype=np.float64)) for k, v in params.items()}

    def __getitem__(self, name: str) -> Tensor:
        return self._params[name]

    def parameters(self) -> List[Tensor]:
        return list(self._params.values())

    def state_dict(self) -> Dict[str, Tensor]:
        return {k: p.detach() for k, p in self._params.items()}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        for k, v in state.items():
            self._params[k].data[...] = v.data


class SGD:
    def __init__(self, params: Any, lr: float = 0.0, momentum: float = 0.0, dampening: float = 0.0,
                 nesterov: bool = False) -> None:
        self.param_groups = [
            {"params": list(params), "lr": lr, "momentum": momentum, "dampening": dampening,
             "nesterov": nesterov}
        ]
        self.state: Dict[Any, Dict[str, Any]] = defaultdict(dict)

    def zero_grad(self) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                p.grad = None

    def step(self) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                d = p.grad.data
                if g["momentum"] != 0:
                    s = self.state[p]
                    if "momentum_buffer" not in s:
                        s["momentum_buffer"] = Tensor(d.copy())
                    else:
                        buf = s["momentum_buffer"].data
                        buf *= g["momentum"]
                        buf += (1 - g["dampening"]) * d
                    d = s["momentum_buffer"].data
                p.data -= g["lr"] * d

    def _index(self) -> Dict[int, int]:
        ids: Dict[int, int] = {}
        for g in self.param_groups:
            for p in g["params"]:
                ids.setdefault(id(p), len(ids))
        return ids

    def state_dict(self) -> Dict[str, Any]:
        ids = self._index()
        state = {ids[id(p)]: {k: v.clone() for k, v in s.items()} for p, s in self.state.items()}
        groups = [{**{k: v for k, v in g.items() if k != "params"},
                   "params": [ids[id(p)] for p in g["params"]]} for g in self.param_groups]
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        params = [p for g in self.param_groups for p in g["params"]]
        self.state = defaultdict(dict)
        for i, s in state_dict["state"].items():
            self.state[params[i]] = {k: v.clone() for k, v in s.items()}
        for g, saved in zip(self.param_groups, state_dict["param_groups"]):
            for k, v in saved.items():
                if k != "params":
                    g[k] = copy.deepcopy(v)


class _Distributed:
    """``torch.distributed`` over thread ranks: each thread registers its
    :func:`nrpt.distributed.thread_group` communicator with :meth:`init_thread`."""

    def __init__(self) -> None:
        self._local = threading.local()

    def init_thread(self, comm: Any) -> None:
        self._local.comm = comm

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return getattr(self._local, "comm", None) is not None

    def get_rank(self, group: Any = None) -> int:
        return self._local.comm.rank

    def get_world_size(self, group: Any = None) -> int:
        return self._local.comm.size

    def all_gather_object(self, out: List[Any], obj: Any, group: Any = None) -> None:
        gathered = self._local.comm.allgather(obj)
        out[:] = [copy.deepcopy(x) for x in gathered]


def module() -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.Tensor = Tensor  # type: ignore[attr-defined]
    torch.Generator = Generator  # type: ignore[attr-defined]
    torch.randn = randn  # type: ignore[attr-defined]
    torch.no_grad = no_grad  # type: ignore[attr-defined]
    nn = types.ModuleType("torch.nn")
    nn.Module = Module  # type: ignore[attr-defined]
    optim = types.ModuleType("torch.optim")
    optim.SGD = SGD  # type: ignore[attr-defined]
    dist = _Distributed()
    torch.nn = nn  # type: ignore[attr-defined]
    torch.optim = optim  # type: ignore[attr-defined]
    torch.distributed = dist  # type: ignore[attr-defined]
    return torch


@contextlib.contextmanager
def installed() -> Iterator[types.ModuleType]:
    """This stand-in as ``torch`` (and ``torch.distributed``) in ``sys.modules``."""
    torch = module()
    saved = {k: sys.modules.get(k) for k in ("torch", "torch.distributed")}
    sys.modules["torch"] = torch
    sys.modules["torch.distributed"] = torch.distributed  # type: ignore[assignment]
    try:
        yield torch
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
