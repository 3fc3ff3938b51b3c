"""Non-reversible parallel tempering of P JAX models stacked on a leading axis (optax):
:class:`Tempering`.

The P models are one pytree whose every leaf has a leading axis of length P (the
shape ``jax.vmap`` maps over), trained by one optax optimizer under ``jax.vmap``. The
learning rate must be an *injected hyperparameter*, so that each model can get its own
as an array entry of the optimizer state::

    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=1e-3, momentum=0.9)

A :class:`nrpt.Controller` gives every model a learning rate on a ladder (level 0, the
smallest rate, is the *target level*: its model's successive states are the samples;
the largest rates explore) and swaps neighbouring levels when the buffered energy test
``e[l+1] + C < e[l]`` passes. The models never move; the controller's permutation
does. :class:`Tempering` does for the optimizer state what the controller says:

- :meth:`Tempering.init` builds the stacked optimizer state (``jax.vmap(tx.init)``)
  with each model's learning rate in it; :meth:`Tempering.tell` writes the new rates
  after every iteration (a float32 array of P rates, by default);
- it resets the optimizer state (momentum, Adam moments, counts) of a model that moved
  to another level to the state of a fresh ``tx.init``, as the paper's authors
  re-create their optimizers on a swap (``reset_state=False`` keeps it; the
  controller's ``momentum_on_swap="carry"`` also keeps it);
- it records the parameters of the model at the target level (a host copy, NumPy
  arrays) every ``snapshot_every`` iterations after ``burn_in``, or a running average
  of them (``snapshots="average"``);
- :meth:`Tempering.gradient_noise_std` and :func:`add_gradient_noise` give the
  Langevin noise that makes a model *sample* at its level's temperature (SGLD, or
  SGHMC with momentum), for your jitted step;
- :meth:`Tempering.state_dict` is one pytree of NumPy arrays and plain values (the
  parameters, the optimizer state, the controller, the snapshots) for ``pickle``.

The loop::

    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=1e-3, momentum=0.9)
    ctl = nrpt.Controller(P, eta_min=1e-3, eta_max=0.1, n_data=n)
    tempering = nrpt.jax.Tempering(tx, ctl, snapshot_every=20, burn_in=500)
    params = jax.vmap(init_model)(jax.random.split(key, P))   # leading axis P
    opt_state = tempering.init(params)

    @jax.jit
    def step(params, opt_state, batch):                        # all P models at once
        def one(p, s, b):
            loss, g = jax.value_and_grad(loss_fn)(p, b)
            updates, s = tx.update(g, s, p)
            return optax.apply_updates(p, updates), s
        return jax.vmap(one)(params, opt_state, batch)

    for k in range(steps):
        params, opt_state = step(params, opt_state, batches(k))
        energies = jax.vmap(loss_fn)(params, batches(k + 1))   # the new states' energies
        opt_state, decision = tempering.tell(energies, params, opt_state, iteration=k)

:meth:`Tempering.tell` runs on the host (the controller is not traced): the P
energies come back from the device every iteration, a few bytes. With
:class:`nrpt.distributed.DistributedController` in place of the controller, the leading
axis holds the models this process owns (``controller.owned``).

JAX and optax are imported when a :class:`Tempering` is made, so this module imports
without them.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from . import Decision
from ._adapters import _check_format, _Schedule, _View

__all__ = ["Tempering", "add_gradient_noise"]

_FORMAT = "nrpt.jax.Tempering"
_VERSION = 1


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise ImportError(f"nrpt.jax needs JAX (pip install jax optax): {err}") from err


def _set_hyperparam(state: Any, name: str, value: np.ndarray, jnp: Any) -> Tuple[Any, int]:
    """``state`` with every injected hyperparameter ``name`` (an optax
    ``inject_hyperparams`` state, wherever it sits in a chain) set to ``value``; and
    how many were found."""
    hyper = getattr(state, "hyperparams", None)
    if isinstance(hyper, dict) and name in hyper and hasattr(state, "_replace"):
        old = jnp.asarray(hyper[name])
        if old.shape != value.shape:
            raise ValueError(
                f"the optimizer state's {name!r} has shape {old.shape}, expected "
                f"{value.shape} (one per model): make the state with Tempering.init(params) "
                f"(jax.vmap(tx.init)) from parameters stacked on a leading axis"
            )
        hp = dict(hyper)
        # Converted on the host: a transfer of P numbers, no program to dispatch.
        hp[name] = jnp.asarray(np.asarray(value, dtype=old.dtype))
        return state._replace(hyperparams=hp), 1
    if isinstance(state, tuple) and hasattr(state, "_fields"):
        named: Any = state  # a NamedTuple: optax's states
        found = 0
        fields = {}
        for f in named._fields:
            fields[f], n = _set_hyperparam(getattr(named, f), name, value, jnp)
            found += n
        return (named._replace(**fields) if found else state), found
    if isinstance(state, (tuple, list)):
        items = [_set_hyperparam(s, name, value, jnp) for s in state]
        found = sum(n for _, n in items)
        return (type(state)(s for s, _ in items) if found else state), found
    if isinstance(state, dict):
        pairs = {k: _set_hyperparam(v, name, value, jnp) for k, v in state.items()}
        found = sum(n for _, n in pairs.values())
        return ({k: s for k, (s, _) in pairs.items()} if found else state), found
    return state, 0


def add_gradient_noise(grads: Any, key: Any, std: Any) -> Any:
    """``grads`` (stacked: every leaf has a leading axis of P models) plus Gaussian
    noise of standard deviation ``std[m]`` for model m (an array of P, from
    :meth:`Tempering.gradient_noise_std`). Pure and jittable: call it inside your
    step, between ``jax.grad`` and ``tx.update``, with a fresh ``key`` each step."""
    jax = _import("jax")
    jnp = _import("jax.numpy")
    leaves, tree = jax.tree_util.tree_flatten(grads)
    keys = jax.random.split(key, max(len(leaves), 1))
    std = jnp.asarray(std)
    noisy = []
    for g, k in zip(leaves, keys):
        s = std.astype(g.dtype).reshape(std.shape + (1,) * (g.ndim - 1))
        noisy.append(g + s * jax.random.normal(k, g.shape, g.dtype))
    return jax.tree_util.tree_unflatten(tree, noisy)


class Tempering:
    """Drives the optimizer state of P stacked JAX models from a controller (see the
    module's documentation for the loop).

    Parameters
    ----------
    optimizer
        The optax ``GradientTransformation`` of one model, its learning rate injected
        (``optax.inject_hyperparams(optax.adam)(learning_rate=...)``; inside an
        ``optax.chain`` too).
    controller
        An :class:`nrpt.Controller` or a
        :class:`nrpt.distributed.DistributedController`.
    reset_state
        Reset the optimizer state of a model that changed level to a fresh
        ``tx.init`` (default ``True``). Follows the controller's ``momentum_on_swap``
        (``"carry"``: never reset).
    snapshot_every, burn_in, max_snapshots
        Record the target level's parameters after the tell of every iteration
        ``k >= burn_in`` with ``(k - burn_in) % snapshot_every == 0`` (default
        ``None``: never); keep at most the last ``max_snapshots`` (default all).
    snapshots
        ``"list"`` (default): :attr:`snapshots` holds the recorded parameters
        (pytrees of NumPy arrays, one model each); ``"average"``: :attr:`average`
        holds their running mean, for models that all start from the same
        parameters (:meth:`init` raises ``ValueError`` otherwise: the average of
        independently initialised networks predicts at chance).
    hyperparam
        The name of the injected learning rate (default ``"learning_rate"``).
    """

    def __init__(
        self,
        optimizer: Any,
        controller: Any,
        *,
        reset_state: bool = True,
        snapshot_every: Optional[int] = None,
        burn_in: int = 0,
        snapshots: str = "list",
        max_snapshots: Optional[int] = None,
        hyperparam: str = "learning_rate",
    ) -> None:
        self._view = _View(controller)
        if not (callable(getattr(optimizer, "init", None)) and callable(getattr(optimizer, "update", None))):
            raise TypeError(f"optimizer must be an optax GradientTransformation (init, update), got {optimizer!r}")
        if not isinstance(reset_state, bool):
            raise TypeError(f"reset_state must be a bool, got {reset_state!r}")
        if not isinstance(hyperparam, str):
            raise TypeError(f"hyperparam must be a string, got {hyperparam!r}")
        self._schedule = _Schedule(snapshot_every, burn_in, snapshots, max_snapshots)
        self._jax = _import("jax")
        self._jnp = _import("jax.numpy")
        self.optimizer = optimizer
        self.reset_state = reset_state
        self.hyperparam = hyperparam
        self.snapshots: List[Any] = []
        """The recorded target-level parameters (``snapshots="list"``)."""
        self.snapshot_iterations: List[int] = []
        """The iteration of each recorded state (list or average)."""
        self.average: Any = None
        """The running mean of the recorded parameters (``snapshots="average"``)."""
        self.average_count = 0
        """How many states :attr:`average` holds."""
        jax, jnp = self._jax, self._jnp

        def reset(params: Any, opt_state: Any, mask: Any) -> Any:
            fresh = jax.vmap(optimizer.init)(params)

            def pick(old: Any, new: Any) -> Any:
                m = mask.reshape(mask.shape + (1,) * (jnp.ndim(old) - 1))
                return jnp.where(m, new, old)

            return jax.tree_util.tree_map(pick, opt_state, fresh)

        self._reset = jax.jit(reset)
        self._init = jax.jit(jax.vmap(optimizer.init))
        # One model out of the stack (one compiled program, not one per leaf).
        self._take = jax.jit(lambda tree, i: jax.tree_util.tree_map(lambda x: x[i], tree))

    # -- the controller's decisions -------------------------------------------------

    @property
    def controller(self) -> Any:
        """The controller given."""
        return self._view.source

    @property
    def owned(self) -> np.ndarray:
        """The replica index of each model on the leading axis."""
        return self._view.owned

    @property
    def learning_rates(self) -> np.ndarray:
        """The learning rate of each model (leading axis) for its next step."""
        return self._view.learning_rates()

    @property
    def levels(self) -> np.ndarray:
        """The level of each model (0: the target level)."""
        return self._view.full.level_of[self._view.owned]

    @property
    def target_index(self) -> Optional[int]:
        """The index on the leading axis of the model at the target level, or
        ``None`` when another rank holds it."""
        return self._view.target_index()

    def _check_stacked(self, params: Any) -> None:
        n = self._view.owned.size
        leaves = self._jax.tree_util.tree_leaves(params)
        if not leaves:
            raise ValueError("params has no arrays")
        for leaf in leaves:
            shape = np.shape(leaf)
            if len(shape) == 0 or shape[0] != n:
                raise ValueError(
                    f"every leaf of params must have a leading axis of {n} models, got a "
                    f"leaf of shape {shape}"
                )

    def _with_rates(self, opt_state: Any) -> Any:
        rates = np.asarray(self.learning_rates, dtype=np.float64)
        state, found = _set_hyperparam(opt_state, self.hyperparam, rates, self._jnp)
        if not found:
            raise ValueError(
                f"the optimizer state has no injected hyperparameter {self.hyperparam!r}: "
                f"build the optimizer with optax.inject_hyperparams, e.g. "
                f"optax.inject_hyperparams(optax.sgd)(learning_rate=1e-3)"
            )
        return state

    def init(self, params: Any) -> Any:
        """The optimizer state of the stacked models (``jax.vmap(tx.init)(params)``)
        with each model's learning rate in it."""
        self._check_stacked(params)
        if self._schedule.kind == "average":
            self._check_one_start(params)
        return self._with_rates(self._init(params))

    def _check_one_start(self, params: Any) -> None:
        """``snapshots="average"`` averages the parameters of whichever model sits at
        the target level: only models that start from the same parameters can be
        averaged (independently initialised networks are different networks)."""
        leaves = self._jax.tree_util.tree_leaves_with_path(params)
        for path, leaf in leaves:
            a = np.asarray(leaf)
            if a.shape[0] > 1 and not np.array_equal(a, np.broadcast_to(a[:1], a.shape)):
                name = self._jax.tree_util.keystr(path)
                raise ValueError(
                    f"snapshots=\"average\" averages the parameters of whichever model sits at "
                    f"the target level, but the models do not start from the same parameters "
                    f"(they differ in {name}): independently initialised networks are "
                    f"different networks, and their average predicts at chance. Start every "
                    f"model from the same parameters (jnp.broadcast_to of one model's), or keep "
                    f"snapshots=\"list\" and average predictions"
                )

    def tell(self, energies: Any, params: Any, opt_state: Any, iteration: Optional[int] = None) -> Tuple[Any, Decision]:
        """Tells the controller the energies of the models (one per model on the
        leading axis, a JAX or NumPy array; see :meth:`nrpt.Controller.tell`), then
        resets the optimizer state of the models that changed level, writes the
        learning rates of the next step and records the target level's parameters
        when due. Returns the new optimizer state and the controller's
        :class:`nrpt.Decision` (for all P models)."""
        d = self._view.tell(np.asarray(energies), iteration)
        reset = np.asarray(d.momentum_reset[self._view.owned])
        if self.reset_state and reset.any():
            opt_state = self._reset(params, opt_state, reset)
        opt_state = self._with_rates(opt_state)
        if self._schedule.due(d.iteration):
            self._record(params, d.iteration)
        return opt_state, d

    def target_params(self, params: Any) -> Any:
        """The parameters of the model at the target level (a pytree of NumPy arrays,
        copied to the host), or ``None`` when another rank holds it."""
        i = self._view.target_index()
        if i is None:
            return None
        return self._jax.device_get(self._take(params, i))

    def _record(self, params: Any, iteration: int) -> None:
        state = self.target_params(params)
        if state is None:
            return
        state = self._jax.tree_util.tree_map(np.array, state)
        self.snapshot_iterations.append(int(iteration))
        if self._schedule.kind == "list":
            self.snapshots.append(state)
            if self._schedule.max is not None and len(self.snapshots) > self._schedule.max:
                del self.snapshots[0]
                del self.snapshot_iterations[0]
            return
        self.average_count += 1
        n = self.average_count
        if self.average is None:
            self.average = state
        else:
            self.average = self._jax.tree_util.tree_map(
                lambda a, x: a + (x - a) / n if np.issubdtype(a.dtype, np.floating) else x,
                self.average,
                state,
            )

    def gradient_noise_std(self, momentum: float = 0.0) -> np.ndarray:
        """By model (leading axis): the standard deviation of the Gaussian noise to
        add to each gradient entry, ``sqrt(2 (1 - momentum) T / (N eta))`` at the
        model's learning rate eta and temperature T (N = ``n_data`` for mean
        energies, 1 for summed ones). With it in the gradient, an SGD step (``optax.sgd``,
        ``momentum`` its momentum, no Nesterov) puts ``N(0, 2 (1 - momentum) eta T / N)``
        into its velocity: SGLD (momentum 0) and SGHMC at the level's temperature;
        with adaptive optimizers (Adam, ...) the noise is preconditioned like the
        gradient and the model does not sample a known temperature. Zero at T = 0
        (the hot levels of the ``"sgd"``/``"msgd"`` explorers). Pass it to
        :func:`add_gradient_noise` in your step."""
        full = self._view.full
        owned = self._view.owned
        sigma = full.noise_scales(momentum)[owned]
        eta = full.learning_rates[owned]
        return np.where(sigma > 0, sigma / eta, 0.0)

    # -- saving ---------------------------------------------------------------------

    def state_dict(self, params: Any, opt_state: Any) -> Dict[str, Any]:
        """Everything to continue the run, as one pytree of NumPy arrays and plain
        values (``pickle.dump`` it): the parameters, the optimizer state, the
        controller, the snapshots or the average. (With a distributed controller
        every rank saves its own.)"""
        get = self._jax.device_get
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "owned": self._view.owned.tolist(),
            "controller": self._view.full.state_dict(),
            "params": get(params),
            "opt_state": get(opt_state),
            "snapshots": list(self.snapshots),
            "snapshot_iterations": list(self.snapshot_iterations),
            "average": self.average,
            "average_count": self.average_count,
            "options": {**self._schedule.config(), "reset_state": self.reset_state},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> Tuple[Any, Any]:
        """Continues from :meth:`state_dict`: restores the controller (in place: the
        object you hold continues) and the snapshots, and returns ``(params,
        opt_state)`` as JAX arrays. With a distributed controller this is a
        collective call."""
        _check_format(state, _FORMAT, self._view.owned)
        jnp = self._jnp
        params = self._jax.tree_util.tree_map(jnp.asarray, state["params"])
        self._check_stacked(params)
        self._view.load_controller(state["controller"])
        opt_state = self._jax.tree_util.tree_map(jnp.asarray, state["opt_state"])
        self.snapshots = list(state.get("snapshots", []))
        self.snapshot_iterations = [int(k) for k in state.get("snapshot_iterations", [])]
        self.average = state.get("average")
        self.average_count = int(state.get("average_count", 0))
        return params, self._with_rates(opt_state)

    def __repr__(self) -> str:
        return (
            f"nrpt.jax.Tempering({self._view.owned.size} models, iteration="
            f"{self._view.full.iteration}, snapshots={len(self.snapshot_iterations)})"
        )
