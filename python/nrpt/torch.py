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
  Bayesian model average of their *predictions*: :func:`model_average`), or a running
  average of its *weights* (``snapshots="average"``, for models that all started from
  the same weights: see below);
- with ``langevin=True`` it adds the Gaussian noise that makes a model *sample* at
  its level's temperature rather than optimise (SGLD, or SGHMC with momentum), to the
  gradients before :meth:`Tempering.step` steps the optimizers, from a random generator
  whose state :meth:`Tempering.state_dict` saves;
- :meth:`Tempering.state_dict` holds the models, the optimizers, the controller, the
  noise generator and the snapshots, for one ``torch.save``.

The loop (the paper's swap energies: each model's loss at its new state, after the
step, on a fresh mini-batch; ``swap_energy="fresh"``, the default)::

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
            energies = [loss_fn(m, next_batch()) for m in models]
        tempering.tell(energies, iteration=k)           # swaps, rates, resets, snapshots

The authors' swap energies (``swap_energy="step"``): the loss each model computed for
its own step *is* its swap energy, so one forward pass per model serves both (pass the
same batch to every model to have the authors' rule exactly: one shared batch, the loss
before the step)::

    tempering = nrpt.torch.Tempering(models, optimizers, ctl, swap_energy="step")
    for k in range(steps):
        batch = next_batch()
        losses = []
        for model, opt in zip(models, optimizers):
            opt.zero_grad()
            loss = loss_fn(model, batch)
            loss.backward()
            losses.append(loss)
        tempering.step(losses)                          # the losses are the energies
        tempering.tell(iteration=k)

With :class:`nrpt.distributed.DistributedController` in place of the controller, the
models are the ones this rank owns (``controller.owned``), and each rank records the
target level's model when it holds it (the samples of a run are the union of the
ranks' snapshots, ordered by :attr:`Tempering.snapshot_iterations`).

PyTorch is imported when first needed (by :meth:`Tempering.step` with
``langevin=True``, or to read tensors), so this module imports without it.

**Learning rates belong to the controller.** A learning-rate schedule moves the
ladder, not the optimizers: call ``ctl.set_ladder_ends(...)`` or
``ctl.scale_ladder(...)`` between iterations. A ``torch.optim.lr_scheduler`` (or any
code) that writes ``param_group["lr"]`` after the adapter set it is detected:
:meth:`Tempering.step` and :meth:`Tempering.tell` raise ``ValueError`` rather than let
it silently replace the controller's rate. A param group with a key ``"lr_scale"``
gets ``lr_scale`` times its model's rate (a head trained ten times faster, say).

**Averaging weights.** ``snapshots="average"`` averages the weights of whichever model
sits at the target level. Models initialised independently are different networks
(their hidden units in another order): averaging them gives a network that predicts at
chance, so the adapter refuses them; start every model from the same weights
(``m.load_state_dict(models[0].state_dict())``) or record ``snapshots="list"`` and
average the predictions (:func:`model_average`).

**Energies** are what :meth:`Tempering.tell` takes: Python numbers, NumPy arrays, or
PyTorch tensors of any floating type (``bfloat16`` and ``float16`` too), on any
device, with or without ``requires_grad`` (detached; one copy to the CPU per tell).
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import math
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence

import numpy as np

from . import Decision
from ._adapters import _check_format, _Schedule, _View

__all__ = ["Tempering", "model_average"]

_FORMAT = "nrpt.torch.Tempering"
_VERSION = 2
_SWAP_ENERGIES = ("fresh", "step")


def _torch() -> Any:
    try:
        return importlib.import_module("torch")
    except ImportError as err:
        raise ImportError(
            f"nrpt.torch needs PyTorch (pip install torch; https://pytorch.org): {err}"
        ) from err


def _is_tensor(value: Any) -> bool:
    """A PyTorch tensor, told from its methods (no import of torch)."""
    return callable(getattr(value, "detach", None)) and hasattr(value, "dtype") and hasattr(value, "device")


def _copy_tensor(value: Any, device: Any) -> Any:
    """A detached copy of a state-dict entry, on ``device`` (``None``: where it is)."""
    if hasattr(value, "detach"):
        t = value.detach()
        return t.clone() if device is None else t.to(device, copy=True)
    return copy.deepcopy(value)


def _copy_state(state: Mapping[str, Any], device: Any) -> Dict[str, Any]:
    return {k: _copy_tensor(v, device) for k, v in state.items()}


def _energies(values: Any) -> Any:
    """``values`` with its PyTorch tensors as float64 NumPy values: a tensor, or a
    sequence of one-number tensors (any floating dtype, ``bfloat16`` and ``float16``
    too, any device, with or without ``requires_grad``: detached), in one copy to the
    CPU. Anything else passes as it is: the controller checks the count and the type
    (a distributed controller on every rank at once, so nothing is refused here)."""
    if _is_tensor(values):
        return values.detach().to(dtype=_torch().float64).cpu().numpy()
    if isinstance(values, (list, tuple)) and any(_is_tensor(v) for v in values):
        torch = _torch()
        if not all(_is_tensor(v) and v.numel() == 1 for v in values):
            # Mixed or multi-number entries: each as NumPy, for the controller to judge.
            return [v.detach().to(dtype=torch.float64).cpu().numpy() if _is_tensor(v) else v for v in values]
        rows = [v.detach().reshape(()).to(dtype=torch.float64) for v in values]
        device = rows[0].device
        # One copy to the CPU for all of them (one synchronization with a GPU).
        return torch.stack([r.to(device) for r in rows]).cpu().numpy()
    return values


def _different_weights(models: Sequence[Any]) -> Optional[str]:
    """The first floating-point entry of the models' state dicts that is not the same
    in every model (``None`` when all hold the same weights)."""
    first = models[0].state_dict()
    for j, m in enumerate(models[1:], start=1):
        other = m.state_dict()
        for key, value in first.items():
            if not (callable(getattr(value, "is_floating_point", None)) and value.is_floating_point()):
                continue
            theirs = other.get(key)
            same = (
                theirs is not None
                and tuple(theirs.shape) == tuple(value.shape)
                and bool((theirs.detach().to(value.device) == value.detach()).all())
            )
            if not same:
                return f"models[0] and models[{j}] differ in {key!r}"
    return None


def _derived_seed(seed: int, owned: np.ndarray) -> int:
    """The seed of the adapter's own noise generator: a function of the controller's
    seed and of the models held here (ranks that hold different models draw
    different noise)."""
    h = hashlib.blake2b(digest_size=8, person=b"nrpt.torch")
    h.update(np.int64(seed).tobytes())
    h.update(np.ascontiguousarray(owned, dtype=np.int64).tobytes())
    return int.from_bytes(h.digest(), "little") & ((1 << 63) - 1)


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
        ``"list"`` (default): :attr:`snapshots` holds copies of ``state_dict()``
        (average their predictions: :func:`model_average`); ``"average"``:
        :attr:`average` holds the running mean of the recorded states
        (floating-point entries; other entries are the last recorded). Weights can
        be averaged only between models that started from the same weights: with
        ``"average"``, models that do not all hold the same floating-point weights
        at construction raise ``ValueError`` (with a distributed controller, the
        check covers the models of this rank).
    snapshot_device
        Where the copies go (default ``"cpu"``, so that samples do not fill the GPU;
        ``None``: beside the model).
    langevin
        Add Gaussian noise to the gradients in :meth:`step`
        (:meth:`add_gradient_noise`) so that each model samples ``exp(-E/T)`` at its
        level's temperature T; needs the controller's ``n_data`` for mean energies.
    generator
        A ``torch.Generator`` for that noise (on the parameters' device). Default: a
        generator of the adapter's own on the device of the first parameter, seeded
        from the controller's seed and the models held here. Either way its state is
        in :meth:`state_dict`, so that a resumed run draws the same noise.
    swap_energy
        Where the swap energies come from: ``"fresh"`` (default, the paper's: you
        compute each model's loss at its new state, after :meth:`step`, and pass them
        to :meth:`tell`) or ``"step"`` (the authors' code: the loss each model
        computed for its own step, passed to :meth:`step`, is its swap energy, so one
        forward pass per model serves both; :meth:`tell` then takes no energies).
        ``docs/src/reference/rules.md`` compares them.

    Raises ``TypeError`` for objects that are not models, optimizers or a
    controller, ``ValueError`` for mismatched counts, an optimizer that steps
    parameters of another model, or models that cannot be averaged.
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
        swap_energy: str = "fresh",
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
        if not isinstance(swap_energy, str) or swap_energy not in _SWAP_ENERGIES:
            raise ValueError(f"swap_energy must be one of {_SWAP_ENERGIES}, got {swap_energy!r}")
        self._schedule = _Schedule(snapshot_every, burn_in, snapshots, max_snapshots)
        if self._schedule.kind == "average" and len(models) > 1:
            differ = _different_weights(models)
            if differ is not None:
                raise ValueError(
                    f"snapshots=\"average\" averages the weights of whichever model sits at "
                    f"the target level, but the models do not start from the same weights "
                    f"({differ}): independently initialised networks are different networks, "
                    f"and their average predicts at chance. Start every model from the same "
                    f"weights (m.load_state_dict(models[0].state_dict())), or keep "
                    f"snapshots=\"list\" and average predictions with nrpt.torch.model_average"
                )
        self.models = models
        self.optimizers = optimizers
        self.reset_state = reset_state
        self.langevin = langevin
        self.swap_energy = swap_energy
        self.snapshot_device = snapshot_device
        self.generator = generator
        self._own_generator = generator is None
        self._generator_state: Any = None  # a loaded state, set on the generator once made
        self._losses: Any = None
        self._written: List[List[float]] = []
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
        self._written = []
        for opt, lr in zip(self.optimizers, self.learning_rates):
            row = []
            for group in opt.param_groups:
                group["lr"] = float(lr) * float(group.get("lr_scale", 1.0))
                row.append(group["lr"])
            self._written.append(row)

    def _check_learning_rates(self, where: str) -> None:
        """Raises when a param group's learning rate is not the one the adapter wrote
        (a scheduler or other code wrote it since)."""
        for i, (opt, row) in enumerate(zip(self.optimizers, self._written)):
            groups = opt.param_groups
            if len(groups) != len(row):
                raise ValueError(
                    f"optimizers[{i}] has {len(groups)} param groups, {len(row)} when the "
                    f"learning rates were set: add groups before constructing Tempering"
                )
            for j, (group, lr) in enumerate(zip(groups, row)):
                if float(group["lr"]) != lr:
                    raise ValueError(
                        f"{where}: optimizers[{i}].param_groups[{j}][\"lr\"] is "
                        f"{float(group['lr'])!r}, but the controller set {lr!r}: a learning-rate "
                        f"scheduler or other code wrote it. The controller owns the learning "
                        f"rates: schedule the ladder with ctl.scale_ladder(factor) or "
                        f"ctl.set_ladder_ends(eta_min, eta_max) between iterations, and give a "
                        f"group a multiple of its model's rate with the group key \"lr_scale\""
                    )

    def tell(self, energies: Any = None, iteration: Optional[int] = None) -> Decision:
        """Tells the controller this iteration's energies (one per model held here,
        in order; numbers, a NumPy array or PyTorch tensors of any floating type and
        device; see :meth:`nrpt.Controller.tell`), then clears the optimizer state
        of the models that changed level, sets every optimizer's learning rates for
        the next step and records the target level's model when due. Returns the
        controller's :class:`nrpt.Decision` (for all P models).

        With ``swap_energy="step"`` leave ``energies`` out: the losses given to
        :meth:`step` since the last tell are the energies."""
        self._check_learning_rates("tell")
        if self.swap_energy == "step":
            if energies is not None:
                raise ValueError(
                    "swap_energy=\"step\": the energies are the losses given to step(); "
                    "call tell(iteration=k) without energies"
                )
            if self._losses is None:
                raise ValueError(
                    "swap_energy=\"step\": no losses since the last tell: call "
                    "step(losses) before tell()"
                )
            values = self._losses
        else:
            if energies is None:
                raise TypeError(
                    "tell() needs the energies of the models' new states (one per model "
                    "held here), or swap_energy=\"step\" with the losses given to step()"
                )
            values = _energies(energies)
        d = self._view.tell(values, iteration)
        self._losses = None
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

    def step(self, losses: Any = None) -> None:
        """Steps every optimizer (``optimizer.step()``), after adding the Langevin
        noise to the gradients when ``langevin=True``. Call it after the backward
        passes and before :meth:`tell`.

        ``losses``: with ``swap_energy="step"``, the loss each model computed for
        this step (one per model held here, tensors or numbers; detached, never
        back-propagated through), kept as the swap energies of the next
        :meth:`tell`. Leave it out with ``swap_energy="fresh"``."""
        self._check_learning_rates("step")
        if self.swap_energy == "step":
            if losses is None:
                raise ValueError(
                    "swap_energy=\"step\": step(losses) needs the loss of each model's step "
                    "(they are the swap energies)"
                )
            self._losses = _energies(losses)
        elif losses is not None:
            raise ValueError(
                "step(losses) takes losses only with swap_energy=\"step\"; with the default "
                "\"fresh\", pass the energies of the new states to tell()"
            )
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

    def _noise_generator(self, device: Any) -> Any:
        """The generator of the noise: the one given, else the adapter's own, made on
        ``device`` at the first draw (with a loaded state, if any)."""
        if self.generator is None:
            torch = _torch()
            seed = _derived_seed(int(self._view.full.config["config"].get("seed", 0) or 0), self._view.owned)
            self.generator = torch.Generator(device=device).manual_seed(seed)
        if self._generator_state is not None:
            self.generator.set_state(self._generator_state)
            self._generator_state = None
        return self.generator

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
                        gen = self._noise_generator(p.device)
                        noise = torch.randn(p.shape, generator=gen, dtype=p.dtype, device=gen.device)
                        p.grad.add_(noise.to(p.device), alpha=std)

    # -- saving ---------------------------------------------------------------------

    def state_dict(self) -> Dict[str, Any]:
        """Everything to continue the run, for ``torch.save``: the models', the
        optimizers' and the controller's states, the noise generator's state, the
        snapshots or the average, and the options. (With a distributed controller,
        every rank saves its own: its models and snapshots differ, the controller is
        the same.)"""
        if self.generator is not None:
            generator = self.generator.get_state()
        else:
            generator = self._generator_state
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "owned": self._view.owned.tolist(),
            "controller": self._view.full.state_dict(),
            "models": [m.state_dict() for m in self.models],
            "optimizers": [o.state_dict() for o in self.optimizers],
            "generator": generator,
            "losses": copy.deepcopy(self._losses),
            "snapshots": list(self.snapshots),
            "snapshot_iterations": list(self.snapshot_iterations),
            "average": self.average,
            "average_count": self.average_count,
            "options": {
                **self._schedule.config(),
                "reset_state": self.reset_state,
                "langevin": self.langevin,
                "swap_energy": self.swap_energy,
            },
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continues from :meth:`state_dict`: loads the models and optimizers (with
        their own ``load_state_dict``), the controller (in place: the object you
        hold continues), the noise generator's state and the snapshots. The options
        are this object's. With a distributed controller this is a collective call."""
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
        generator = state.get("generator")
        if generator is not None:
            if self.generator is not None:
                self.generator.set_state(generator)
            else:
                self._generator_state = generator  # set on the adapter's own at its first draw
        self._losses = copy.deepcopy(state.get("losses"))
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


def model_average(
    model: Any,
    snapshots: Iterable[Mapping[str, Any]],
    inputs: Any,
    *,
    predict: Optional[Callable[[Any, Any], Any]] = None,
    batch_size: Optional[int] = None,
) -> Any:
    """The Bayesian model average of recorded states: the mean over ``snapshots`` of
    ``softmax(model(inputs))`` (or of ``predict(model, inputs)``), with each state
    loaded into ``model`` in turn (in ``eval()`` mode, without gradients; the model's
    own state and mode are restored afterwards). Returns a tensor of the predictive
    probabilities, examples × classes, in float64 on the inputs' device.
    ``batch_size`` splits the inputs (default: all at once). Raises ``ValueError``
    when there is no state to average."""
    torch = _torch()
    states = list(snapshots)
    if not states:
        raise ValueError("model_average needs at least one recorded state (Tempering.snapshots is empty)")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError(f"batch_size must be a positive int or None, got {batch_size!r}")
    forward = predict or (lambda m, x: torch.softmax(m(x), dim=-1))
    saved = _copy_state(model.state_dict(), None)
    training = bool(getattr(model, "training", False))
    total: Any = 0.0
    try:
        model.eval()
        with torch.no_grad():
            for state in states:
                model.load_state_dict(state)
                step = len(inputs) if batch_size is None else batch_size
                parts = [forward(model, inputs[i : i + step]) for i in range(0, len(inputs), step)]
                probs = torch.cat(parts).to(torch.float64)
                total = total + probs
    finally:
        model.load_state_dict(saved)
        model.train(training)
    return total / len(states)
