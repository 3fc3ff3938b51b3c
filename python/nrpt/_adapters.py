"""What the framework adapters (:mod:`nrpt.torch`, :mod:`nrpt.jax`) share: the view of
a controller, local or distributed, from the models this process holds, and the
schedule of the target level's snapshots."""

from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np

from . import Controller, Decision
from .distributed import DistributedController

_SNAPSHOTS = ("list", "average")


class _View:
    """A :class:`Controller` (this process holds all P models, replica r is model r)
    or a :class:`DistributedController` (this process holds the models ``owned``), seen
    by index into the models this process holds."""

    def __init__(self, controller: Any) -> None:
        if isinstance(controller, DistributedController):
            self.distributed: Optional[DistributedController] = controller
            self.local: Optional[Controller] = None
        elif isinstance(controller, Controller):
            self.distributed = None
            self.local = controller
        else:
            raise TypeError(
                "controller must be an nrpt.Controller or an "
                f"nrpt.distributed.DistributedController, got {controller!r}"
            )
        self.source = controller

    @property
    def full(self) -> Controller:
        """The controller of all P models (this rank's copy when distributed)."""
        if self.distributed is not None:
            return self.distributed.controller
        assert self.local is not None
        return self.local

    @property
    def owned(self) -> np.ndarray:
        """The chains held here, in the order of the adapter's models."""
        if self.distributed is not None:
            return self.distributed.owned
        return np.arange(self.full.chains, dtype=np.int64)

    def tell(self, energies: Any, iteration: Optional[int]) -> Decision:
        return self.source.tell(energies, iteration=iteration)

    def learning_rates(self) -> np.ndarray:
        return self.full.learning_rates[self.owned]

    def target_index(self) -> Optional[int]:
        """The index among the local models of the one at the target level (level 0),
        or ``None`` when it is held by another rank."""
        hits = np.flatnonzero(self.owned == self.full.replica_at[0])
        return int(hits[0]) if hits.size else None

    def load_controller(self, state: Mapping[str, Any]) -> None:
        """Continues the controller from ``state``, in place (the caller's object
        keeps working; a callback is kept)."""
        if self.distributed is not None:
            self.distributed.load_state_dict(state)
            return
        ctl = self.full
        restored = Controller.from_state_dict(state)
        if restored.chains != ctl.chains:
            raise ValueError(f"the state has P = {restored.chains} models, this controller {ctl.chains}")
        callback = getattr(ctl, "_callback", None)
        ctl.__setstate__(state)
        setattr(ctl, "_callback", callback)


class _Schedule:
    """When the target level's model is recorded: every ``every`` iterations from
    ``burn_in`` on (the iteration counted as the controller's, 0-based, after its tell)."""

    def __init__(self, every: Optional[int], burn_in: int, snapshots: str, max_snapshots: Optional[int]) -> None:
        if every is not None:
            if isinstance(every, bool) or not isinstance(every, (int, np.integer)):
                raise TypeError(f"snapshot_every must be an int or None, got {every!r}")
            if every < 1:
                raise ValueError(f"snapshot_every must be at least 1, got {every}")
        if isinstance(burn_in, bool) or not isinstance(burn_in, (int, np.integer)):
            raise TypeError(f"burn_in must be an int, got {burn_in!r}")
        if burn_in < 0:
            raise ValueError(f"burn_in must be >= 0, got {burn_in}")
        if not isinstance(snapshots, str):
            raise TypeError(f"snapshots must be one of {_SNAPSHOTS}, got {snapshots!r}")
        if snapshots not in _SNAPSHOTS:
            raise ValueError(f"snapshots must be one of {_SNAPSHOTS}, got {snapshots!r}")
        if max_snapshots is not None:
            if isinstance(max_snapshots, bool) or not isinstance(max_snapshots, (int, np.integer)):
                raise TypeError(f"max_snapshots must be an int or None, got {max_snapshots!r}")
            if max_snapshots < 1:
                raise ValueError(f"max_snapshots must be at least 1, got {max_snapshots}")
        self.every = None if every is None else int(every)
        self.burn_in = int(burn_in)
        self.kind = snapshots
        self.max = None if max_snapshots is None else int(max_snapshots)

    def due(self, iteration: int) -> bool:
        """A snapshot is taken after the tell of ``iteration``."""
        if self.every is None or iteration < self.burn_in:
            return False
        return (iteration - self.burn_in) % self.every == 0

    def config(self) -> dict:
        return {
            "snapshot_every": self.every,
            "burn_in": self.burn_in,
            "snapshots": self.kind,
            "max_snapshots": self.max,
        }


def _check_format(state: Mapping[str, Any], name: str, owned: np.ndarray) -> None:
    if not isinstance(state, Mapping):
        raise TypeError(f"load_state_dict takes a dict from {name}.state_dict(), got {type(state).__name__}")
    if state.get("format") != name:
        raise ValueError(f"not a state of {name} (format {state.get('format')!r})")
    if [int(x) for x in state.get("owned", [])] != owned.tolist():
        raise ValueError(
            f"the state holds the models {list(state.get('owned', []))}, this process "
            f"{owned.tolist()}"
        )
