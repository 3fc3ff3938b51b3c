"""Non-reversible parallel tempering of P PyTorch models: :class:`Tempering`.

You keep P models and one ``torch.optim`` optimizer per model (any optimizer: SGD,
SGD with momentum, Adam, ...). A :class:`nrpt.Controller` gives every model a
learning rate on a ladder (level 0, the smallest rate, is the *target level*: its
model's successive states are the samples; the largest rates explore) and swaps
neighbouring levels when the buffered energy test ``e[l+1] + C < e[l]`` passes. The
models never move; the controller's permutation does. :class:`Tempering` does for
your optimizers what the controller says:

- it writes each model's learning rate into every ``param_group["lr"]`` of its
  optimizer, at construction and after every :meth:`Tempering.tell`;
- it clears the per-parameter state (momentum buffers, Adam moments and step count)
  of the optimizer of a model that moved to another level, as the paper's authors
  re-create their optimizers on a swap: the velocity built at one learning rate is
  wrong at another (``reset_state=False`` keeps it; the controller's
  ``momentum_on_swap="carry"`` also keeps it);
- it records the model at the target level: a list of copies of its ``state_dict()``
  every ``snapshot_every`` iterations after ``burn_in`` (the posterior samples, for a
  Bayesian model average of their predictions), or a running average of its weights
  (``snapshots="average"``);
- with ``langevin=True`` it adds the Gaussian noise that makes a model *sample* at
  its level's temperature rather than optimise (SGLD, or SGHMC with momentum), to the
  gradients before :meth:`Tempering.step` steps the optimizers;
- :meth:`Tempering.state_dict` holds the models, the optimizers, the controller and
  the snapshots, for one ``torch.save``.

The loop::

    models = [make_model() for _ in range(P)]
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.0, momentum=0.9) for m in models]
    ctl = nrpt.Controller(P, eta_min=1e-3, eta_max=0.1, n_data=len(dataset))
    tempering = nrpt.torch.Tempering(models, optimizers, ctl, snapshot_every=50, burn_in=1000)
    for k in range(steps):
        for model, opt in zip(models, optimizers):
            opt.zero_grad()
            loss_fn(model, next_batch()).backward()    # mean loss of a mini-batch
        tempering.step()                                # every optimizer steps
        with torch.no_grad():                           # the new states' energies
            energies = [loss_fn(m, next_batch()).item() for m in models]
        tempering.tell(energies, iteration=k)           # swaps, rates, resets, snapshots

With :class:`nrpt.distributed.DistributedController` in place of the controller, the
models are the ones this rank owns (``controller.owned``), and each rank records the
target level's model when it holds it (the samples of a run are the union of the
ranks' snapshots, ordered by :attr:`Tempering.snapshot_iterations`).

PyTorch is imported when first needed (by :meth:`Tempering.step` with
``langevin=True``), so this module imports without it; nothing else here needs more
than the objects' own methods.

A learning-rate schedule moves the ladder, not the optimizers: call
``ctl.set_ladder_ends(...)`` or ``ctl.scale_ladder(...)`` between iterations (a
``torch.optim.lr_scheduler`` would be overwritten at the next tell). A param group
with a key ``"lr_scale"`` gets ``lr_scale`` times its model's rate (a head trained
ten times faster, say).
"""

from __future__ import annotations

import copy
import importlib
import math
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from . import Decision
from ._adapters import _check_format, _Schedule, _View

__all__ = ["Tempering"]

_FORMAT = "nrpt.torch.Tempering"
_VERSION = 1


def _torch() -> Any:
    try:
        return importlib.import_module("torch")
    except ImportError as err:
        raise ImportError(
            f"nrpt.torch needs PyTorch (pip install torch; https://pytorch.org): {err}"
        ) from err


def _copy_tensor(value: Any, device: Any) -> Any:
    """A detached copy of a state-dict entry, on ``device`` (``None``: where it is)."""
    if hasattr(value, "detach"):
        t = value.detach()
        return t.clone() if device is None else t.to(device, copy=True)
    return copy.deepcopy(value)


def _copy_state(state: Mapping[str, Any], device: Any) -> Dict[str, Any]:
    return {k: _copy_tensor(v, device) for k, v in state.items()}


class Tempering:
    """Drives P PyTorch models and their optimizers from a controller (see the
    module's documentation for the loop).

    Parameters
    ----------
    models
        The models held by this process, by replica (``len(models)`` is P for an
        :class:`nrpt.Controller`, ``len(controller.owned)`` for a
        :class:`nrpt.distributed.DistributedController`): anything with
        ``state_dict()`` and ``load_state_dict()`` (an ``nn.Module``).
    optimizers
        One optimizer per model, in the same order (a ``torch.optim.Optimizer``:
        ``param_groups``, ``state``, ``state_dict()``, ``load_state_dict()``). Their
        parameters must be their model's.
    controller
        An :class:`nrpt.Controller` or a
        :class:`nrpt.distributed.DistributedController`.
    reset_state
        Clear the optimizer state of a model that changed level (default ``True``;
        see the module's documentation). Follows the controller's
        ``momentum_on_swap`` (``"carry"``: never cleared).
    snapshot_every, burn_in, max_snapshots
        Record the target level's model after the tell of every iteration
        ``k >= burn_in`` with ``(k - burn_in) % snapshot_every == 0`` (default
        ``None``: never); keep at most the last ``max_snapshots`` (default all).
    snapshots
        ``"list"`` (default): :attr:`snapshots` holds copies of ``state_dict()``;
        ``"average"``: :attr:`average` holds the running mean of the recorded
        states (floating-point entries; other entries are the last recorded).
    snapshot_device
        Where the copies go (default ``"cpu"``, so that samples do not fill the GPU;
        ``None``: beside the model).
    langevin
        Add Gaussian noise to the gradients in :meth:`step`
        (:meth:`add_gradient_noise`) so that each model samples ``exp(-E/T)`` at its
        level's temperature T; needs the controller's ``n_data`` for mean energies.
    generator
        A ``torch.Generator`` for that noise (on the parameters' device), for
        reproducible runs.

    Raises ``TypeError`` for objects that are not models, optimizers or a
    controller, ``ValueError`` for mismatched counts or an optimizer that steps
    parameters of another model.
    """

    def __init__(
        self,
        models: Sequence[Any],
        optimizers: Sequence[Any],
        controller: Any,
        *,
        reset_state: bool = True,
        snapshot_every: Optional[int] = None,
        burn_in: int = 0,
        snapshots: str = "list",
        max_snapshots: Optional[int] = None,
        snapshot_device: Any = "cpu",
        langevin: bool = False,
        generator: Any = None,
    ) -> None:
        self._view = _View(controller)
        models = list(models)
        optimizers = list(optimizers)
        n = self._view.owned.size
        if len(models) != n or len(optimizers) != n:
            where = "P" if self._view.distributed is None else "the rank's owned models"
            raise ValueError(
                f"Tempering needs one model and one optimizer per replica held here "
                f"({where}: {n}), got {len(models)} models and {len(optimizers)} optimizers"
            )
        for i, m in enumerate(models):
            if not (callable(getattr(m, "state_dict", None)) and callable(getattr(m, "load_state_dict", None))):
                raise TypeError(f"models[{i}] is not a model (no state_dict/load_state_dict): {m!r}")
        for i, opt in enumerate(optimizers):
            groups = getattr(opt, "param_groups", None)
            if not isinstance(groups, list) or not all(isinstance(g, dict) and "lr" in g for g in groups):
                raise TypeError(
                    f"optimizers[{i}] is not a torch.optim optimizer (param_groups: a list "
                    f"of dicts with \"lr\"): {opt!r}"
                )
            if not hasattr(opt, "state") or not callable(getattr(opt, "state_dict", None)):
                raise TypeError(f"optimizers[{i}] has no state / state_dict(): {opt!r}")
        for i, (m, opt) in enumerate(zip(models, optimizers)):
            if callable(getattr(m, "parameters", None)):
                mine = {id(p) for p in m.parameters()}
                foreign = sum(1 for g in opt.param_groups for p in g["params"] if id(p) not in mine)
                if foreign:
                    raise ValueError(
                        f"optimizers[{i}] steps {foreign} parameter(s) that are not "
                        f"models[{i}]'s: each model needs its own optimizer"
                    )
        if not isinstance(reset_state, bool):
            raise TypeError(f"reset_state must be a bool, got {reset_state!r}")
        if not isinstance(langevin, bool):
            raise TypeError(f"langevin must be a bool, got {langevin!r}")
        self._schedule = _Schedule(snapshot_every, burn_in, snapshots, max_snapshots)
        self.models = models
        self.optimizers = optimizers
        self.reset_state = reset_state
        self.langevin = langevin
        self.snapshot_device = snapshot_device
        self.generator = generator
        self.snapshots: List[Dict[str, Any]] = []
        """Copies of the target level's ``state_dict()`` (``snapshots="list"``)."""
        self.snapshot_iterations: List[int] = []
        """The iteration of each recorded state (list or average)."""
        self.average: Optional[Dict[str, Any]] = None
        """The running mean of the recorded states (``snapshots="average"``)."""
        self.average_count = 0
        """How many states :attr:`average` holds."""
        if langevin:
            self.gradient_noise_std()  # checks n_data and the optimizers now
        self._apply_learning_rates()

    # -- the controller's decisions -------------------------------------------------

    @property
    def controller(self) -> Any:
        """The controller given (an :class:`nrpt.Controller` or a
        :class:`nrpt.distributed.DistributedController`)."""
        return self._view.source

    @property
    def owned(self) -> np.ndarray:
        """The replica index of each model held here (``0 .. P - 1`` locally)."""
        return self._view.owned

    @property
    def learning_rates(self) -> np.ndarray:
        """The learning rate of each model held here for its next step."""
        return self._view.learning_rates()

    @property
    def levels(self) -> np.ndarray:
        """The level of each model held here (0: the target level)."""
        return self._view.full.level_of[self._view.owned]

    @property
    def target_model(self) -> Any:
        """The model at the target level, or ``None`` when another rank holds it."""
        i = self._view.target_index()
        return None if i is None else self.models[i]

    def _apply_learning_rates(self) -> None:
        for opt, lr in zip(self.optimizers, self.learning_rates):
            for group in opt.param_groups:
                group["lr"] = float(lr) * float(group.get("lr_scale", 1.0))

    def tell(self, energies: Any, iteration: Optional[int] = None) -> Decision:
        """Tells the controller this iteration's energies (one per model held here,
        in order; see :meth:`nrpt.Controller.tell`), then clears the optimizer state
        of the models that changed level, sets every optimizer's learning rates for
        the next step and records the target level's model when due. Returns the
        controller's :class:`nrpt.Decision` (for all P models)."""
        d = self._view.tell(energies, iteration)
        owned = self._view.owned
        if self.reset_state:
            for i in np.flatnonzero(d.momentum_reset[owned]):
                self.optimizers[i].state.clear()
        self._apply_learning_rates()
        if self._schedule.due(d.iteration):
            self._record(d.iteration)
        return d

    def _record(self, iteration: int) -> None:
        i = self._view.target_index()
        if i is None:
            return
        state = _copy_state(self.models[i].state_dict(), self.snapshot_device)
        self.snapshot_iterations.append(int(iteration))
        if self._schedule.kind == "list":
            self.snapshots.append(state)
            if self._schedule.max is not None and len(self.snapshots) > self._schedule.max:
                del self.snapshots[0]
                del self.snapshot_iterations[0]
            return
        self.average_count += 1
        if self.average is None:
            self.average = state
            return
        n = self.average_count
        for key, value in state.items():
            old = self.average.get(key)
            floating = callable(getattr(value, "is_floating_point", None)) and value.is_floating_point()
            if floating and old is not None:
                old.mul_((n - 1) / n).add_(value, alpha=1.0 / n)
            else:
                self.average[key] = value

    # -- stepping and noise ---------------------------------------------------------

    def step(self) -> None:
        """Steps every optimizer (``optimizer.step()``), after adding the Langevin
        noise to the gradients when ``langevin=True``. Call it after the backward
        passes and before :meth:`tell`."""
        if self.langevin:
            self.add_gradient_noise()
        for opt in self.optimizers:
            opt.step()

    def gradient_noise_std(self) -> List[List[float]]:
        """By model held here, by param group: the standard deviation of the Gaussian
        noise :meth:`add_gradient_noise` adds to each gradient entry,
        ``sqrt(2 (1 - mu) T / (N eta))`` for a group of learning rate eta and
        momentum mu at temperature T (N = ``n_data`` for mean energies, 1 for
        summed ones). A plain or momentum-SGD step with this noise in its gradient
        puts ``N(0, 2 (1 - mu) eta T / N)`` into its velocity: SGLD (mu = 0) and
        SGHMC (mu > 0) at the level's temperature. Zero at T = 0 (the hot levels of
        the ``"sgd"``/``"msgd"`` explorers). Groups with Nesterov momentum or
        dampening raise ``ValueError`` (the formula does not hold there); with other
        optimizers (Adam, ...) the noise is preconditioned like the gradient and the
        model does not sample a known temperature."""
        full = self._view.full
        owned = self._view.owned
        base = full.noise_scales(0.0)[owned] ** 2 / 2.0  # eta * T / N by model
        out: List[List[float]] = []
        for i, opt in enumerate(self.optimizers):
            row = []
            for group in opt.param_groups:
                if group.get("nesterov", False) or float(group.get("dampening", 0.0) or 0.0) != 0.0:
                    raise ValueError(
                        "Langevin noise needs plain momentum (no Nesterov, dampening 0): "
                        f"optimizers[{i}] has nesterov={group.get('nesterov')}, "
                        f"dampening={group.get('dampening')}"
                    )
                mu = float(group.get("momentum", 0.0) or 0.0)
                if not 0.0 <= mu < 1.0:
                    raise ValueError(f"optimizers[{i}]: momentum must lie in [0, 1), got {mu}")
                lr = float(group["lr"])
                # eta T / N for the model's rate, times lr_scale: the group's eta T / N.
                scale = float(group.get("lr_scale", 1.0))
                eta_t_n = base[i] * scale
                row.append(math.sqrt(2.0 * (1.0 - mu) * eta_t_n) / lr if eta_t_n > 0 and lr > 0 else 0.0)
            out.append(row)
        return out

    def add_gradient_noise(self) -> None:
        """Adds the Langevin noise of :meth:`gradient_noise_std` to the gradient of
        every parameter of every model held here (call it between ``backward()`` and
        ``optimizer.step()``; :meth:`step` does, with ``langevin=True``)."""
        torch = _torch()
        stds = self.gradient_noise_std()
        with torch.no_grad():
            for opt, row in zip(self.optimizers, stds):
                for group, std in zip(opt.param_groups, row):
                    if std == 0.0:
                        continue
                    for p in group["params"]:
                        if p.grad is None:
                            continue
                        noise = torch.randn(
                            p.shape, generator=self.generator, dtype=p.dtype, device=p.device
                        )
                        p.grad.add_(noise, alpha=std)

    # -- saving ---------------------------------------------------------------------

    def state_dict(self) -> Dict[str, Any]:
        """Everything to continue the run, for ``torch.save``: the models', the
        optimizers' and the controller's states, the snapshots or the average, and
        the options. (With a distributed controller, every rank saves its own: its
        models and snapshots differ, the controller is the same.)"""
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "owned": self._view.owned.tolist(),
            "controller": self._view.full.state_dict(),
            "models": [m.state_dict() for m in self.models],
            "optimizers": [o.state_dict() for o in self.optimizers],
            "snapshots": list(self.snapshots),
            "snapshot_iterations": list(self.snapshot_iterations),
            "average": self.average,
            "average_count": self.average_count,
            "options": {**self._schedule.config(), "reset_state": self.reset_state, "langevin": self.langevin},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continues from :meth:`state_dict`: loads the models and optimizers (with
        their own ``load_state_dict``), the controller (in place: the object you
        hold continues) and the snapshots. The options are this object's. With a
        distributed controller this is a collective call."""
        _check_format(state, _FORMAT, self._view.owned)
        models, optimizers = state["models"], state["optimizers"]
        if len(models) != len(self.models) or len(optimizers) != len(self.optimizers):
            raise ValueError(
                f"the state has {len(models)} models and {len(optimizers)} optimizers, "
                f"this object {len(self.models)} and {len(self.optimizers)}"
            )
        self._view.load_controller(state["controller"])
        for m, s in zip(self.models, models):
            m.load_state_dict(s)
        for o, s in zip(self.optimizers, optimizers):
            o.load_state_dict(s)
        self.snapshots = list(state.get("snapshots", []))
        self.snapshot_iterations = [int(k) for k in state.get("snapshot_iterations", [])]
        self.average = state.get("average")
        self.average_count = int(state.get("average_count", 0))
        self._apply_learning_rates()

    def __repr__(self) -> str:
        return (
            f"nrpt.torch.Tempering({len(self.models)} models, iteration="
            f"{self._view.full.iteration}, snapshots={len(self.snapshot_iterations)})"
        )
