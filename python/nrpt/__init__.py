"""nrpt: non-reversible parallel tempering for deep posteriors, from Python.

Deng, Zhang, Feng, Liang and Lin, *Non-reversible Parallel Tempering for Deep
Posterior Approximation* (AAAI 2023): P chains at P learning rates (level 0 samples
the target, level P - 1 explores boldly) swap neighbouring states in windows of W
iterations with the buffered rule ``e[l+1] + C < e[l]``, while a stochastic
approximation tunes the learning-rate ladder and the buffer C towards a target swap
rate S.

- :class:`Controller`: the swap controller for your own training loop (ask/tell):
  tell it the P energies (losses) your models computed, it says which levels swapped,
  which model sits at which level, each model's learning rate and whether a model must
  reset its momentum. The same decisions, bit for bit, as nrpt's Rust core.
- :func:`optimal_window`, :func:`w_star`, :func:`paper_window`, :func:`window`,
  :func:`expected_round_trip`, :func:`round_trip_rate`: the optimal window W* and the
  round-trip model of the paper's Lemma 1.
- :func:`run`, :func:`reproduce`, :func:`deep`, :func:`scale`: the engines of the
  ``nrpt`` command (built-in targets and data targets) with dictionaries of NumPy arrays
  in place of output folders (``out=`` writes the command's folder too, figures
  included); the GIL is released while they run, and Ctrl-C stops them with
  ``KeyboardInterrupt``. Their keys are the command's names; :func:`flat` makes any
  table 1-D for ``pandas.DataFrame``, :func:`jsonable` any result plain JSON, and
  :func:`unflatten` a classifier's sample its layers.
- :func:`fidelity`: your own predictive (the model of a reference posterior, trained
  your way) scored against that reference as :func:`deep` scores its methods;
  :func:`dataset`: a bundled data set and its split as arrays, as the models see them.
- :class:`ToyExplorer`: the exploration step of the built-in toy targets over NumPy
  states, so a Python loop around a :class:`Controller` reproduces ``nrpt run``.
- :class:`ExactController`: exact tempering around your own model and sampler
  (ask/tell): it gives the inverse temperature of each replica, you move each replica
  with any exact sampler of ``prior · likelihood**beta`` and tell it the
  log-likelihoods; it swaps (DEO), adapts the grid, and estimates the communication
  barrier and log Z, with the command's warnings (``docs/exact-tempering-your-model.md``).
- :mod:`nrpt.torch` and :mod:`nrpt.jax` (imported on their own; they import their
  framework only when used): ``Tempering`` drives P PyTorch optimizers, or the stacked
  optax state of P models under ``jax.vmap``, from a controller: learning rates,
  optimizer state cleared on a change of level, the target level's snapshots,
  Langevin noise, one state dict.
- :mod:`nrpt.distributed`: ``DistributedController``, one copy of the controller per
  process fed by one all-gather of the energies per iteration (MPI,
  ``torch.distributed`` or your own), checked for agreement across ranks.

Every keyword argument of a configuration is a flag of the command line (``swap_rate``
is ``--swap-rate``), parsed and checked by the command's own code: the defaults and
the error messages are the command's. Bad input raises ``ValueError``.
"""

from __future__ import annotations

import contextlib
import json
import operator
import os
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from . import _nrpt, _statefile
from ._exact import ExactController, ExactStep, GaussianReference, LogZ
from ._flags import argv as _argv
from ._nrpt import (
    expected_round_trip,
    optimal_window,
    paper_window,
    round_trip_rate,
    w_star,
    x_star,
)

__version__: str = _nrpt.__version__

__all__ = [
    "AUTO_BUFFER_ITERATIONS",
    "Controller",
    "Decision",
    "ExactController",
    "ExactStep",
    "GaussianReference",
    "LogZ",
    "RUN_EXTRAS",
    "Stats",
    "ToyExplorer",
    "dataset",
    "deep",
    "expected_round_trip",
    "fidelity",
    "flat",
    "jsonable",
    "optimal_window",
    "paper_window",
    "read_json",
    "reproduce",
    "round_trip_rate",
    "run",
    "scale",
    "unflatten",
    "w_star",
    "window",
    "x_star",
]


def flat(table: Mapping[str, Any]) -> Dict[str, np.ndarray]:
    """A table of a result (``r["trace"]``, ``r["pairs"]``, ...) with every column 1-D,
    named as in the command's CSV file: a column of a vector per row (a 2-D array
    ``NAME``) becomes ``NAME_0``, ``NAME_1``, ...; a block per row ``NAME_i_j``, ...

    So ``pandas.DataFrame(nrpt.flat(r["trace"]))`` is ``pandas.read_csv("trace.csv")``
    with the full precision of the arrays.

    Raises ``ValueError`` when the columns do not have one row count, and ``TypeError``
    for something that is not a mapping of arrays.
    """
    if not isinstance(table, Mapping):
        raise TypeError(f"flat() takes a table (a dict of columns), got {type(table).__name__}")
    out: Dict[str, np.ndarray] = {}
    rows = None
    for name, values in table.items():
        a = np.asarray(values)
        if a.ndim == 0:
            raise TypeError(f"flat(): column {name!r} is a single value, not a column")
        if rows is None:
            rows = a.shape[0]
        elif a.shape[0] != rows:
            raise ValueError(f"flat(): column {name!r} has {a.shape[0]} rows, the first column {rows}")
        if a.ndim == 1:
            out[str(name)] = a
            continue
        for index in np.ndindex(*a.shape[1:]):
            label = "_".join(str(i) for i in index)
            out[f"{name}_{label}"] = a[(slice(None),) + index]
    return out


def window(chains: int, swap_rate: float) -> Dict[str, Any]:
    """The optimal window and Lemma 1's round-trip times, as ``nrpt window --json``.

    Keys: ``chains``, ``swap_rate``, ``w_exact`` (the exact W*), ``w_opt`` (the best
    integer window, what ``window="opt"`` runs), ``w_paper`` (the paper's asymptotic
    formula), ``x_star``, ``expected_round_trip_w1`` / ``_opt`` / ``_paper`` (E[T] in
    iterations) and ``round_trips_per_1000_w1`` / ``_opt`` (P / E[T] per 1000
    iterations of one ensemble).

    >>> window(16, 0.4)["w_opt"]
    7
    """
    return _nrpt.window_report(chains, swap_rate)


_NO_FILES = "the results are returned, nothing is written"


RUN_EXTRAS: Dict[str, "tuple[str, ...]"] = {
    "sgd": (
        # What `nrpt run --json` adds to summary.json.
        "seconds",
        "chain_steps_per_sec",
        "memory_estimate_bytes",
        "peak_memory_bytes",
        # What the folder's other files hold (pairs.csv, trace.csv, ladder.csv,
        # samples.npy), every ensemble's counts, and the totals behind the rates.
        "pairs",
        "trace",
        "ladder",
        "samples",
        "sample_iterations",
        "ensembles",
        "round_trips",
        "authors_round_trips",
        "restarts",
    ),
    "gaussian-path": ("seconds", "lambda_profile", "grid", "rounds"),
}
"""The keys of :func:`run`'s dict beyond the fields of the command's ``summary.json``
(which it holds under the same names), for the SGD targets and for the exact
gaussian-path target."""

# Names of Controller.stats() before 0.2, which now uses the command's vocabulary.
_RENAMED_STATS = {
    "iterations": "iterations_run",
    "authors_round_trips_per_1000": "round_trips_per_1000_authors",
    "pair_swap_rate": "pair_executed_swap_rate",
    "swap_rate": "executed_swap_rate",
}


class Stats(dict):  # type: ignore[type-arg]
    """The dict of :meth:`Controller.stats`: a plain ``dict`` (JSON-ready) whose
    names before 0.2 still read, with a ``DeprecationWarning`` (``s["swap_rate"]`` is
    ``s["executed_swap_rate"]``: ``swap_rate`` names the target S everywhere else)."""

    def __missing__(self, key: Any) -> Any:
        new = _RENAMED_STATS.get(key) if isinstance(key, str) else None
        if new is None or new not in self:
            raise KeyError(key)
        warnings.warn(
            f"stats()[{key!r}] is now stats()[{new!r}] (the command's name)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self[new]

    def __reduce__(self) -> Any:
        # Pickled as the plain dict it holds.
        return (dict, (dict(self),))


# ---------------------------------------------------------------------------------
# The controller.

_CONTROLLER_KEYS = (
    "chains",
    "window",
    "swap_rate",
    "eta_min",
    "eta_max",
    "rule",
    "explorer",
    "buffer",
    "adapt_ladder",
    "adapt_buffer",
    "gamma_a",
    "gamma_alpha",
    "gamma_b",
    "buffer_scale",
    "seed",
    "preset",
    "pair_energies",
    "sweep_order",
    "ladder_update",
    "buffer_projection",
    "momentum_on_swap",
    "ladder_decimals",
)

_NONFINITE = ("raise", "warn", "skip")
_RULES = ("practitioner", "paper")
_ENERGY = ("mean", "sum")


def _dtype_name(dtype: Any) -> str:
    """``"float32"`` or ``"float64"`` from a NumPy dtype, a type or a string."""
    if isinstance(dtype, str) and dtype in ("f32", "f64"):
        return "float" + dtype[1:]
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise TypeError(
            f"dtype must be float32 or float64 (a NumPy dtype, a type or a string), got {dtype!r}"
        ) from None
    if name not in ("float32", "float64"):
        raise ValueError(f"dtype must be \"float32\" or \"float64\", got {name!r}")
    return name


AUTO_BUFFER_ITERATIONS = 5
"""How many tells ``buffer="auto"`` calibrates from (those with a finite gap)."""


def _auto_buffer(gaps: np.ndarray, magnitudes: np.ndarray, swap_rate: float) -> "tuple[float, float]":
    """The ``buffer="auto"`` calibration from the gaps ``e[l] - e[l+1]`` between
    adjacent levels' energies (finite ones, pooled over the tells seen) and the sizes
    ``|e[l]|`` of the finite energies: C0, the ``1 - S`` quantile of the gaps (the
    buffer at which a fraction S of those pairs would have passed
    ``e[l+1] + C < e[l]``), at least 0, and the scale G, the median of ``|gaps|``
    (the buffer then moves by gamma * G per unit of swap-rate error); when every gap
    is 0, a thousandth of the median energy size, else 1."""
    d = gaps
    scale = float(np.median(np.abs(d))) if d.size else 0.0
    if not (np.isfinite(scale) and scale > 0.0):
        scale = float(np.median(magnitudes)) * 1e-3 if magnitudes.size else 0.0
        if not (np.isfinite(scale) and scale > 0.0):
            scale = 1.0
    c0 = max(0.0, float(np.quantile(d, 1.0 - swap_rate))) if d.size else 0.0
    return c0, scale


@dataclass(frozen=True, repr=False)
class Decision:
    """What one :meth:`Controller.tell` decided. Arrays by *pair* have length P - 1
    (pair l is levels l and l + 1), by *level* or *replica* length P; replica r is the
    caller's model r, which never moves: the permutation does."""

    iteration: int
    """The iteration k (0-based) that this tell completed."""
    swapped: np.ndarray
    """By pair: the pair swapped its chains (bool)."""
    indicators: np.ndarray
    """By pair: the swap indicator (``e[l+1] + C < e[l]`` for the buffered rule), which
    feeds the adaptation whether or not the pair could swap (bool)."""
    attempted: np.ndarray
    """By pair: the pair was eligible in this window with its gate open (bool)."""
    nonfinite: np.ndarray
    """By pair: one of its two energies was not finite, so it could not swap (bool)."""
    replica_at: np.ndarray
    """By level: the replica now at each level (int64)."""
    level_of: np.ndarray
    """By replica: the level of each replica now (int64)."""
    ladder: np.ndarray
    """By level: the learning rates after this iteration's adaptation (float64)."""
    learning_rates: np.ndarray
    """By replica: the learning rate of each model for its next step (float64)."""
    temperatures: np.ndarray
    """By replica: the temperature of each model's level (SGLD noise; float64)."""
    changed_level: np.ndarray
    """By replica: the model moved to another level (bool)."""
    momentum_reset: np.ndarray
    """By replica: the model moved and the rules reset momentum on a swap (the
    default): zero its optimizer's velocity before its next step (bool)."""
    buffer: float
    """The correction buffer C after this iteration's adaptation."""
    round_trips: int
    """Standard round trips (0 -> P - 1 -> 0) completed **at this iteration** (usually
    0; ``stats()["round_trips"]`` is the total so far)."""
    swaps: int
    """Swaps executed at this iteration."""
    indicator_count: int
    """Pairs whose indicator was 1 at this iteration (what the adaptation steers to
    a share S of the pairs; a pair may pass its indicator without swapping)."""
    nonfinite_pairs: int
    """Pairs with a non-finite energy."""

    def __repr__(self) -> str:
        pairs = np.flatnonzero(self.swapped).tolist()
        return (
            f"Decision(iteration={self.iteration}, swapped pairs={pairs}, "
            f"round_trips={self.round_trips}, buffer={self.buffer:.6g})"
        )


class Controller:
    """The swap controller of non-reversible parallel tempering for your own loop.

    Keep P chains (your models, one per chain; chain r is "replica r" in the by-replica
    views) that never move; the controller permutes them over the
    levels of a learning-rate ladder. Each iteration: step every model r with
    ``learning_rates[r]`` (:meth:`ask`), compute its stochastic energy (a mini-batch
    loss), and :meth:`tell` the P energies **by replica**. The controller then runs
    what nrpt's Rust driver runs after its exploration step: the swap indicators,
    the windowed even-odd swaps (DEO_W), the stochastic approximation of the ladder
    and of the buffer C towards the target swap rate S, and the round-trip counts in
    both countings. With ``rules="paper"`` its decisions for the same energies and
    seed are the Rust core's (``nrpt run``), bit for bit.

    **Units.** Tell the energy your training loop computes: with ``energy="mean"``
    (default) the per-example mean loss of a mini-batch, with ``energy="sum"`` the
    loss summed over the data set (N times the mean). The buffer C is in the same
    units. By default (``buffer="auto"``) nothing needs choosing: over the first
    ``nrpt.AUTO_BUFFER_ITERATIONS`` (5) tells the controller calibrates from the
    energy gaps between adjacent levels, pooled over those tells: before each of
    them it sets C to the ``1 - S`` quantile of the gaps ``e[l] - e[l+1]`` seen so
    far (at least 0) and measures their scale G (the median of ``|e[l+1] - e[l]|``);
    from the fifth on, the buffer adapts from there, moving by ``gamma_k * G`` per
    unit of swap-rate error (``buffer_scale = 1/G``), so one set of defaults fits a
    per-example loss of any model. A tell with no finite gap does not count. ``n_data`` (N) is needed for
    :meth:`noise_scales` with mean energies and for ``rule="metropolis"`` (which
    multiplies mean energies by N: its acceptance needs the whole-data energy).

    **Temperatures and noise.** ``explorer`` only sets the temperature T of each
    level (the controller does not step your models): ``"sgd"`` (the default) and ``"msgd"``
    give the same temperatures, T = 1 at level 0 and T = 0 above (the paper's SGD explorers: the
    hot levels explore through large learning rates and gradient noise alone);
    ``"sgld"`` gives every level ``T_l = eta_l / eta_0``. To sample the posterior at
    level 0 rather than optimise, add Gaussian noise of standard deviation
    ``sqrt(2 (1 - mu) eta T / N)`` to each parameter after the step of learning rate
    eta and momentum mu on a mean loss over N examples (``sqrt(2 (1 - mu) eta T)`` on
    a summed loss): :meth:`noise_scales` gives it by replica. A plain SGD loop that
    adds no noise is an optimiser ensemble with swaps; the controller works the same.

    **Rules.** ``rules="practitioner"`` (default) differs from the paper in three
    named ways, each in the deviations table of the book (``reference/rules.md``):
    the in-place ladder update (``ladder_update="in-place"``: the ladder stays
    ordered and within its ends, where the paper's Jacobi update can cross
    neighbours and step below ``eta_min``), the buffer in the energy's units
    (``buffer="auto"`` above), and non-finite pairs left out of the adaptation
    (below). ``rules="paper"`` runs the command's defaults (the paper's rules,
    ``buffer=4.0``, ``buffer_scale=1``); any key given explicitly wins over either.

    Parameters are the keys of ``nrpt run`` (``None``: the default of ``rules``):

    chains
        P, the number of chains (>= 2): the models you keep, one per chain.
    window
        The swap window W: a number of iterations, ``"opt"`` (the best integer
        window by Lemma 1 for P and S; default), ``"paper"`` (the paper's formula) or
        ``"seo"`` (the reversible baseline).
    swap_rate
        Target rate S of the swap *indicator* of every adjacent pair (default 0.4):
        the share of iterations at which ``e[l+1] + C < e[l]`` holds, eligible or not.
        Executed swaps are rarer (a pair may swap only in its half of the window):
        ``stats()`` reports both, ``indicator_rate`` and ``executed_swap_rate``.
    eta_min, eta_max
        Learning rates of the target level and of the hottest level (defaults 0.003
        and 0.6); the inner rates start geometric and adapt. :meth:`set_ladder_ends`
        moves them later (warm-up, decay).
    rule
        ``"buffered"`` (default: swap when ``e[l+1] + C < e[l]``) or ``"metropolis"``
        (exact energies at known temperatures; needs ``explorer="sgld"``).
    explorer
        ``"sgd"`` (default), ``"msgd"`` or ``"sgld"``: the temperatures of the
        levels (see above); in a controller ``"sgd"`` and ``"msgd"`` are the same.
    buffer
        Initial correction buffer C in the energy's units, or ``"auto"`` (the
        practitioner default; the paper's default is 4.0).
    adapt_ladder, adapt_buffer
        Adapt the inner learning rates and the buffer (default ``True``).
    gamma_a, gamma_alpha, gamma_b
        Step sizes ``a / (k**alpha + b)`` of the adaptation (defaults 50, 0.8, 500).
    buffer_scale
        The buffer moves by gamma / buffer_scale per unit of swap-rate error
        (practitioner default: 1/G from the first five tells' energies; the
        paper's: 1.0).
    seed, ensemble
        Philox key of the random draws (the Metropolis rule and SEO draw); ensemble e
        of ``nrpt run`` uses (seed, e).
    preset, sweep_order, ladder_update, buffer_projection, momentum_on_swap, ladder_decimals
        The rules, one by one (a ``preset`` sets them all, and the practitioner's
        ladder update then does not apply). Fresh energies per pair test cannot be
        told as P energies and are refused.
    rules
        ``"practitioner"`` (default) or ``"paper"`` (above).
    energy, n_data
        ``"mean"`` (the practitioner default) or ``"sum"`` (the paper's: the
        target's whole energy, as ``nrpt run`` computes it): the units of the
        energies told; N, the number of training examples.
    dtype
        ``np.float64`` (default) or ``np.float32`` (a NumPy dtype, a type or a
        string): the type of the energies and of the swap rule's comparison. The
        command line's engines compute in float32: use it to reproduce them bit for
        bit.
    nonfinite
        What a NaN or infinite energy does: ``"raise"`` (default) a ``ValueError``
        before anything changes; ``"warn"`` a ``RuntimeWarning``, then that model's
        pairs do not swap and are counted (``stats()["pair_nonfinite"]``,
        ``stats()["nonfinite_energies"]``); ``"skip"`` the same without a warning.
        With ``rules="practitioner"`` those pairs are also left out of the
        adaptation (no rate error for them: a diverged model moves neither the
        buffer nor the ladder); with ``rules="paper"`` they count as indicator 0, as
        in the command line.
    callback
        Called with every :class:`Decision` after its :meth:`tell` (progress bars,
        logging); not saved by :meth:`state_dict`.

    Example::

        ctl = nrpt.Controller(4, window=8, eta_min=1e-3, eta_max=1e-1, n_data=len(x))
        for k in range(steps):
            lrs = ctl.ask()                      # by replica
            losses = [train_step(m, lr) for m, lr in zip(models, lrs)]  # batch means
            d = ctl.tell(losses, iteration=k)
            for r in np.flatnonzero(d.momentum_reset):
                reset_momentum(models[r])
        samples_from = models[ctl.replica_at[0]]  # the model at the target level
    """

    def __init__(
        self,
        chains: int,
        *,
        window: Union[int, str, None] = None,
        swap_rate: Optional[float] = None,
        eta_min: Optional[float] = None,
        eta_max: Optional[float] = None,
        rule: Optional[str] = None,
        explorer: Optional[str] = None,
        adapt_ladder: Optional[bool] = None,
        adapt_buffer: Optional[bool] = None,
        gamma_a: Optional[float] = None,
        gamma_alpha: Optional[float] = None,
        gamma_b: Optional[float] = None,
        buffer_scale: Optional[float] = None,
        seed: Optional[int] = None,
        preset: Optional[str] = None,
        pair_energies: Optional[str] = None,
        sweep_order: Optional[str] = None,
        ladder_update: Optional[str] = None,
        buffer_projection: Optional[str] = None,
        momentum_on_swap: Optional[str] = None,
        ladder_decimals: Optional[int] = None,
        buffer: Union[float, str, None] = None,
        ensemble: int = 0,
        dtype: Any = "float64",
        nonfinite: str = "raise",
        rules: str = "practitioner",
        energy: Optional[str] = None,
        n_data: Optional[int] = None,
        callback: Optional[Callable[["Decision"], Any]] = None,
    ) -> None:
        options = dict(
            chains=chains,
            window=window,
            swap_rate=swap_rate,
            eta_min=eta_min,
            eta_max=eta_max,
            rule=rule,
            explorer=explorer,
            buffer=buffer,
            adapt_ladder=adapt_ladder,
            adapt_buffer=adapt_buffer,
            gamma_a=gamma_a,
            gamma_alpha=gamma_alpha,
            gamma_b=gamma_b,
            buffer_scale=buffer_scale,
            seed=seed,
            preset=preset,
            pair_energies=pair_energies,
            sweep_order=sweep_order,
            ladder_update=ladder_update,
            buffer_projection=buffer_projection,
            momentum_on_swap=momentum_on_swap,
            ladder_decimals=ladder_decimals,
        )
        if isinstance(chains, bool) or not isinstance(chains, (int, np.integer)):
            raise TypeError(f"chains must be an int, got {chains!r}")
        _check_nonfinite(nonfinite)
        _check_choice("rules", rules, _RULES)
        if energy is None:
            energy = "mean" if rules == "practitioner" else "sum"
        _check_choice("energy", energy, _ENERGY)
        if n_data is not None:
            if isinstance(n_data, bool) or not isinstance(n_data, (int, np.integer)):
                raise TypeError(f"n_data must be an int, got {n_data!r}")
            if not 1 <= n_data <= _MAX_N_DATA:
                raise ValueError(f"n_data must be between 1 and 2**53, got {n_data}")
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable, got {callback!r}")
        practitioner = rules == "practitioner"
        if isinstance(buffer, str) and buffer != "auto":
            raise ValueError(f"buffer must be a number or \"auto\", got {buffer!r}")
        auto_buffer = buffer == "auto" or (buffer is None and practitioner)
        auto_scale = practitioner and buffer_scale is None
        if auto_buffer:
            options["buffer"] = 0.0
        if practitioner and preset is None and ladder_update is None:
            options["ladder_update"] = "in-place"
        argv = _argv("run", "Controller", options, allowed=_CONTROLLER_KEYS)
        self._native = _nrpt.NativeController(argv, int(ensemble), _dtype_name(dtype))
        self._native.exclude_nonfinite = practitioner
        self._nonfinite = nonfinite
        self._dtype = np.dtype(self._native.dtype)
        self._rules = rules
        self._energy = energy
        self._n_data = None if n_data is None else int(n_data)
        self._calibrate = _calibration(auto_buffer, auto_scale)
        self._callback = callback
        rule_name = self._native.describe()["config"]["rule"]
        self._metropolis = rule_name == "metropolis"
        if self._metropolis and energy == "mean" and self._n_data is None:
            raise ValueError(
                "rule=\"metropolis\" with energy=\"mean\" needs n_data (the Metropolis "
                "acceptance compares whole-data energies: N times the mean)"
            )

    # -- ask/tell -------------------------------------------------------------------

    def ask(self) -> np.ndarray:
        """The learning rate of each model (by replica) for its next step."""
        return self._native.learning_rates

    def tell(self, energies: Any, iteration: Optional[int] = None) -> Decision:
        """One iteration's swaps, adaptation and counts, given the stochastic energy of
        every model at its new state, **by replica** (a sequence, a NumPy array or
        anything with ``__array__``, of P real numbers, in the units of ``energy``).

        ``iteration``, when given, must equal :attr:`iteration` (the iteration this
        tell completes, 0-based): a loop that tells twice or skips a tell raises
        ``ValueError`` instead of silently moving on. Energies that are not real
        numbers (``None``, bool, complex, strings, objects) raise ``TypeError``; a
        wrong length, or (with ``nonfinite="raise"``) a NaN, ``ValueError``. Either
        changes nothing."""
        if iteration is not None:
            if isinstance(iteration, bool) or not isinstance(iteration, (int, np.integer)):
                raise TypeError(f"iteration must be an int, got {iteration!r}")
            if int(iteration) != self.iteration:
                raise ValueError(
                    f"tell(iteration={int(iteration)}) but the controller is at iteration "
                    f"{self.iteration}: each iteration is told exactly once"
                )
        e = self._energies(energies)
        if self._nonfinite != "skip":
            bad = np.flatnonzero(~np.isfinite(e))
            if bad.size:
                which = ", ".join(f"replica {r}: {e[r]}" for r in bad[:8])
                more = f" and {bad.size - 8} more" if bad.size > 8 else ""
                if self._nonfinite == "raise":
                    raise ValueError(
                        f"energies must be finite, got {which}{more} (nonfinite=\"raise\"; "
                        f"with \"warn\" or \"skip\" those chains do not swap and are "
                        f"counted)"
                    )
                warnings.warn(
                    f"non-finite energies at iteration {self.iteration}: {which}{more}; "
                    f"those chains do not swap",
                    RuntimeWarning,
                    stacklevel=2,
                )
        if self._metropolis and self._energy == "mean":
            e = np.ascontiguousarray(e * self._n_data, dtype=self._dtype)
        if self._calibrate["buffer"] or self._calibrate["scale"]:
            self._calibrate_buffer(e)
        decision = Decision(**self._native.tell(e))
        if self._callback is not None:
            self._callback(decision)
        return decision

    def _energies(self, energies: Any) -> np.ndarray:
        """The energies as a contiguous 1-D array of the dtype, checked."""
        if energies is None:
            raise TypeError(f"energies must be {self.chains} real numbers, got None")
        try:
            raw = np.asarray(energies)
        except (TypeError, ValueError) as err:
            raise TypeError(f"energies must be {self.chains} real numbers: {err}") from None
        if raw.dtype.kind not in "fiu":
            what = {"b": "bool", "c": "complex", "O": "object", "U": "str", "S": "bytes"}
            kind = what.get(raw.dtype.kind, raw.dtype.name)
            raise TypeError(
                f"energies must be {self.chains} real numbers, one per replica, got an "
                f"array of {kind} ({raw.dtype})"
            )
        if raw.ndim != 1 or raw.shape[0] != self.chains:
            raise ValueError(
                f"energies must hold one number per replica: expected shape "
                f"({self.chains},), got {raw.shape}"
            )
        return np.ascontiguousarray(raw, dtype=self._dtype)

    def _calibrate_buffer(self, e: np.ndarray) -> None:
        """``buffer="auto"`` (and the buffer's scale) over the first
        ``AUTO_BUFFER_ITERATIONS`` tells with a finite gap: before each of them, C and
        the scale are set from the gaps of all of them so far (this one included);
        from the last one on, C adapts from there with that scale."""
        by_level = np.asarray(e, dtype=np.float64)[self.replica_at]
        d = by_level[:-1] - by_level[1:]
        d = d[np.isfinite(d)]
        if d.size == 0:
            return  # try again at the next tell
        cal = self._calibrate
        cal["gaps"].extend(d.tolist())
        cal["magnitudes"].extend(np.abs(by_level[np.isfinite(by_level)]).tolist())
        cal["tells"] += 1
        config = self._native.describe()["config"]
        c0, scale = _auto_buffer(
            np.asarray(cal["gaps"]), np.asarray(cal["magnitudes"]), float(config["swap_rate"])
        )
        buffer = c0 if cal["buffer"] else self.buffer
        buffer_scale = 1.0 / scale if cal["scale"] else float(config["buffer_scale"])
        self._native.calibrate_buffer(buffer, buffer_scale)
        if cal["tells"] >= AUTO_BUFFER_ITERATIONS:
            self._calibrate = _calibration(False, False)

    def noise_scales(self, momentum: float = 0.0) -> np.ndarray:
        """By replica: the standard deviation of the Gaussian noise to add to each
        parameter after a step, for the model to sample ``exp(-E/T)`` at its level's
        temperature: ``sqrt(2 (1 - momentum) * eta * T / N)`` for mean energies
        (``N = n_data``), ``sqrt(2 (1 - momentum) * eta * T)`` for summed ones. Zero
        where T = 0 (the SGD explorers above level 0)."""
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must lie in [0, 1), got {momentum}")
        if self._energy == "mean":
            if self._n_data is None:
                raise ValueError("noise_scales needs n_data with energy=\"mean\"")
            n = float(self._n_data)
        else:
            n = 1.0
        return np.sqrt(2.0 * (1.0 - momentum) * self.learning_rates * self.temperatures / n)

    def set_ladder_ends(self, eta_min: float, eta_max: float) -> None:
        """Moves the ladder's ends to ``eta_min`` and ``eta_max`` (a warm-up or decay
        schedule calls it between iterations): each inner rate keeps its place on the
        log scale between the ends, temperatures that follow the ladder follow, and
        the adaptation goes on from there. ``0 < eta_min < eta_max``, else
        ``ValueError``."""
        self._native.set_ladder_ends(float(eta_min), float(eta_max))

    def scale_ladder(self, factor: float) -> None:
        """Multiplies every learning rate by ``factor`` (> 0): a learning-rate
        schedule's hook (``set_ladder_ends`` with both ends scaled)."""
        if not (np.isfinite(factor) and factor > 0):
            raise ValueError(f"factor must be finite and > 0, got {factor}")
        ladder = self.ladder
        self.set_ladder_ends(ladder[0] * factor, ladder[-1] * factor)

    # -- where it stands ------------------------------------------------------------

    @property
    def chains(self) -> int:
        """P, the number of chains."""
        return self._native.chains

    @property
    def iteration(self) -> int:
        """Iterations told so far."""
        return self._native.iteration

    @property
    def buffer(self) -> float:
        """The correction buffer C."""
        return self._native.buffer

    @property
    def window(self) -> int:
        """The swap window W that runs (0 for SEO)."""
        return self._native.window

    @property
    def dtype(self) -> np.dtype:
        """The type of the energies."""
        return self._dtype

    @property
    def ensemble(self) -> int:
        """The ensemble index (second word of the Philox key)."""
        return self._native.ensemble

    @property
    def nonfinite(self) -> str:
        """The policy for non-finite energies."""
        return self._nonfinite

    @property
    def rules(self) -> str:
        """``"practitioner"`` or ``"paper"``."""
        return self._rules

    @property
    def energy(self) -> str:
        """The units of the energies told: ``"mean"`` or ``"sum"``."""
        return self._energy

    @property
    def n_data(self) -> Optional[int]:
        """N, the number of training examples (``None`` if not given)."""
        return self._n_data

    @property
    def ladder(self) -> np.ndarray:
        """By level: the learning rates."""
        return self._native.ladder

    @property
    def temperature_ladder(self) -> np.ndarray:
        """By level: the temperatures."""
        return self._native.temperature_ladder

    @property
    def replica_at(self) -> np.ndarray:
        """By level: the replica (model) at each level; ``replica_at[0]`` samples the
        target."""
        return self._native.replica_at

    @property
    def level_of(self) -> np.ndarray:
        """By replica: the level of each model."""
        return self._native.level_of

    @property
    def learning_rates(self) -> np.ndarray:
        """By replica: the learning rate of each model (same as :meth:`ask`)."""
        return self._native.learning_rates

    @property
    def temperatures(self) -> np.ndarray:
        """By replica: the temperature of each model's level."""
        return self._native.temperatures

    def stats(self) -> Dict[str, Any]:
        """Counts so far, named as in the command's ``summary.json``, ``pairs.csv`` and
        ``trace.csv`` (``docs/src/reference/outputs.md``):

        - ``iterations_run``: iterations told;
        - ``round_trips`` (standard: 0 -> P - 1 -> 0), ``authors_round_trips`` (the
          paper's code's counting), ``restarts``, ``nonfinite_energies``: totals;
        - ``round_trips_per_1000``, ``round_trips_per_1000_authors``,
          ``restarts_per_1000``: the totals per 1000 iterations;
        - ``swaps``: the swaps executed so far, over all pairs (the sum of
          ``pair_swaps``; :attr:`Decision.swaps` is one iteration's);
        - by pair (lists of P - 1): the counts ``pair_indicators``, ``pair_attempts``,
          ``pair_swaps``, ``pair_nonfinite``, and the rates ``pair_indicator_rate``
          (what ``swap_rate`` S targets) and ``pair_executed_swap_rate`` (executed
          swaps per iteration, lower: a pair may swap only in its half of the window);
        - ``indicator_rate`` and ``executed_swap_rate``: those two rates' means over
          the pairs.

        Plain Python values (lists, ints, floats): ``json.dumps`` takes it as it is,
        and the ``pair_`` keys are one table
        (``pandas.DataFrame({k: v for k, v in s.items() if k.startswith("pair_")})``).
        The names before 0.2 (``iterations``, ``authors_round_trips_per_1000``,
        ``pair_swap_rate``, ``swap_rate``) still read, with a ``DeprecationWarning``;
        they are not keys of the dict."""
        s = self._native.stats()
        n = max(s["iterations"], 1)
        out: Dict[str, Any] = {"iterations_run": s.pop("iterations")}
        out.update(s)
        out["round_trips_per_1000"] = 1000.0 * s["round_trips"] / n
        out["round_trips_per_1000_authors"] = 1000.0 * s["authors_round_trips"] / n
        out["restarts_per_1000"] = 1000.0 * s["restarts"] / n
        out["pair_executed_swap_rate"] = out.pop("pair_swap_rate")
        out["swaps"] = int(np.sum(s["pair_swaps"]))
        out["indicator_rate"] = float(np.mean(s["pair_indicator_rate"]))
        out["executed_swap_rate"] = float(np.mean(out["pair_executed_swap_rate"]))
        return Stats(
            (k, v.tolist() if isinstance(v, (np.ndarray, np.generic)) else v)
            for k, v in out.items()
        )

    @property
    def config(self) -> Dict[str, Any]:
        """The settings of this controller: ``config``, the keys of ``nrpt run`` that
        apply to a controller (no ``target``, ``out``, ``iterations``, ...; a rule key
        only where it was set) with their values, plus ``rules``, ``energy``,
        ``n_data``, ``dtype``, ``ensemble`` and ``nonfinite``; ``window``, the window
        that runs (0 for SEO); and ``rules``, the rules that run, one by one."""
        d = self._native.describe()
        full = d["config"]
        config = {k: full[k] for k in _CONTROLLER_KEYS if k in full}
        config.update(
            rules=self._rules,
            energy=self._energy,
            n_data=self._n_data,
            dtype=self._dtype.name,
            ensemble=self.ensemble,
            nonfinite=self._nonfinite,
        )
        return {"config": config, "window": d["window"], "rules": d["rules"]}

    # -- saving ---------------------------------------------------------------------

    def state_dict(self) -> Dict[str, Any]:
        """The whole state as plain Python values (JSON-ready, floats exact): the
        configuration, the counters, the buffer, the ladder, the permutation, the
        gates and the counts, the ``nonfinite`` policy and (under ``python``) the
        rules, units and what ``buffer="auto"`` has seen so far.
        :meth:`from_state_dict` continues it exactly. It carries no checksum (a
        pickle or ``torch.save`` keeps it as it is); :meth:`save` adds one."""
        state = json.loads(self._native.state_json())
        state["nonfinite"] = self._nonfinite
        state["python"] = {
            "rules": self._rules,
            "energy": self._energy,
            "n_data": self._n_data,
            "calibrate": {k: (list(v) if isinstance(v, list) else v) for k, v in self._calibrate.items()},
        }
        return state

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any]) -> "Controller":
        """A controller continuing a :meth:`state_dict`, checked first: every field's
        type (``TypeError``) and value (``ValueError``), unknown or missing keys, and
        the invariants every state of a controller keeps: ``replica_at`` a permutation
        of the P chains and ``level_of`` its inverse, every length, learning rates
        finite and > 0 with the target level's below the hottest level's, the ends
        where the configuration puts them, and (in-place ladder update, the
        practitioner rules) the whole ladder non-decreasing; the temperatures those of
        the ladder; the buffer finite (and >= 0 unless ``buffer_projection=
        "unprojected"``); the iteration at most 2**53 (so the next tell cannot wrap);
        the counts within what that many iterations allow; ``buffer="auto"``'s
        calibration consistent. A dict of another layout or version raises
        ``ValueError``."""
        state = _statefile.mapping(state, "state")
        nonfinite = state.pop("nonfinite", "raise")
        _check_nonfinite(nonfinite)
        # Dicts of the first versions have no "python" entry: the paper's rules.
        extra = state.pop("python", None)
        extra = _statefile.mapping({"rules": "paper"} if extra is None else extra, "state['python']")
        _statefile.keys(extra, "state['python']", (), ("rules", "energy", "n_data", "calibrate"))
        rules = extra.get("rules", "paper")
        _check_choice("rules", rules, _RULES)
        energy = extra.get("energy", "mean")
        _check_choice("energy", energy, _ENERGY)
        n_data = extra.get("n_data")
        if n_data is not None:
            n_data = _statefile.integer(n_data, "state['python']['n_data']", 1, _MAX_N_DATA)
        calibrate = _saved_calibration(extra.get("calibrate"))
        try:
            text = json.dumps(state, allow_nan=False)
        except TypeError as err:
            raise TypeError(f"state must hold plain JSON values, as state_dict() returns: {err}") from None
        except (ValueError, RecursionError) as err:
            raise ValueError(f"not a saved nrpt controller: {err}") from None
        self = cls.__new__(cls)
        self._native = _nrpt.NativeController.from_state_json(text)
        _check_calibration(calibrate, self._native.iteration, self._native.chains)
        self._native.exclude_nonfinite = rules == "practitioner"
        self._nonfinite = nonfinite
        self._dtype = np.dtype(self._native.dtype)
        self._rules = rules
        self._energy = energy
        self._n_data = n_data
        self._calibrate = calibrate
        self._callback = None
        self._metropolis = self._native.describe()["config"]["rule"] == "metropolis"
        if self._metropolis and energy == "mean" and n_data is None:
            raise ValueError(
                "not a saved nrpt controller: rule=\"metropolis\" with energy=\"mean\" "
                "needs n_data, and state['python'] has none"
            )
        return self

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the state to ``path`` as JSON (file format 2):
        ``{"format": 2, "kind": "nrpt.Controller", "sha256": ..., "state": ...}``,
        ``state`` being :meth:`state_dict` and ``sha256`` the SHA-256 of its canonical
        JSON (sorted keys, no spaces), so that :meth:`load` finds any change. The
        file holds at most a few tens of MB (65,536 chains). The file is
        written whole or not at all (a temporary file beside it, renamed into place):
        an interrupted save leaves the previous file as it was."""
        _statefile.write(path, "nrpt.Controller", self.state_dict())

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"]) -> "Controller":
        """A controller from a file written by :meth:`save`. Refused with
        ``ValueError``: what is not a regular file (a device such as ``/dev/zero``, a
        FIFO, a folder: not read at all), a file over 128 MiB (more than any
        controller's state; never read past that), a file that is not JSON of
        :meth:`save`'s layout, of another format or kind, whose checksum does not
        match its state (any edit that changes a value), and then everything
        :meth:`from_state_dict` refuses. A file of an earlier version (format 1, the state dict
        without a checksum) is refused with a message saying so: if you trust it,
        ``Controller.from_state_dict(json.load(open(path)))`` loads it with every
        check but the checksum, and :meth:`save` writes it again in format 2."""
        return cls.from_state_dict(_statefile.read(path, "nrpt.Controller"))

    def __getstate__(self) -> Dict[str, Any]:
        return self.state_dict()

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        other = Controller.from_state_dict(state)
        self.__dict__.update(other.__dict__)

    def __repr__(self) -> str:
        return (
            f"nrpt.Controller(chains={self.chains}, window={self.window}, "
            f"iteration={self.iteration}, buffer={self.buffer:.4g}, dtype={self._dtype.name!r})"
        )


def _calibration(buffer: bool, scale: bool) -> Dict[str, Any]:
    """What ``buffer="auto"`` still calibrates, and the gaps it has seen."""
    return {"buffer": buffer, "scale": scale, "gaps": [], "magnitudes": [], "tells": 0}


_MAX_N_DATA = 2**53
"""The most training examples ``n_data`` may give (a float64 holds every count up
to it)."""


def _saved_calibration(saved: Any) -> Dict[str, Any]:
    """``state["python"]["calibrate"]`` of a state dict, each field checked (the
    counts against the controller in :func:`_check_calibration`)."""
    if saved is None:
        return _calibration(False, False)
    where = "state['python']['calibrate']"
    saved = _statefile.mapping(saved, where)
    _statefile.keys(saved, where, (), ("buffer", "scale", "gaps", "magnitudes", "tells"))
    cal = _calibration(
        _statefile.boolean(saved.get("buffer", False), f"{where}['buffer']"),
        _statefile.boolean(saved.get("scale", False), f"{where}['scale']"),
    )
    # Mid-calibration (saved by 0.2 on): the gaps seen so far.
    cal["gaps"] = _statefile.finite_floats(saved.get("gaps", []), f"{where}['gaps']")
    cal["magnitudes"] = _statefile.finite_floats(
        saved.get("magnitudes", []), f"{where}['magnitudes']", low=0.0
    )
    cal["tells"] = _statefile.integer(
        saved.get("tells", 0), f"{where}['tells']", 0, AUTO_BUFFER_ITERATIONS - 1
    )
    return cal


def _check_calibration(cal: Mapping[str, Any], iteration: int, chains: int) -> None:
    """What ``buffer="auto"`` keeps: nothing once it is done; while it runs, each
    calibrating tell (at most one per iteration) adds at least one finite gap and at
    most P - 1, and at least two finite magnitudes and at most P."""
    where = "state['python']['calibrate']"
    tells, gaps, mags = cal["tells"], len(cal["gaps"]), len(cal["magnitudes"])
    if not (cal["buffer"] or cal["scale"]):
        if tells or gaps or mags:
            _statefile.fail(where, "holds gaps of a calibration that is not running")
        return
    if tells > iteration:
        _statefile.fail(where, f"counts {tells} tells, more than the {iteration} iterations")
    if not (tells <= gaps <= tells * (chains - 1) and 2 * tells <= mags <= tells * chains):
        _statefile.fail(
            where,
            f"holds {gaps} gaps and {mags} magnitudes for {tells} tells of {chains} chains",
        )


def _check_nonfinite(policy: Any) -> None:
    _check_choice("nonfinite", policy, _NONFINITE)


def _check_choice(name: str, value: Any, choices: Sequence[str]) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {tuple(choices)}, got {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")


# ---------------------------------------------------------------------------------
# The toy targets' exploration.

_TOY_KEYS = ("chains", "target", "dim", "noise", "explorer", "momentum", "seed")


class ToyExplorer:
    """The exploration step of nrpt's toy targets over NumPy states: the paper's
    25-mode 2D target (``target="modes2d"``) or the D-dimensional ``"sum-modes"``,
    seen through noisy gradients and energies (``noise``, default 2.0). It is the Rust
    driver's own step, with the same random streams, so a Python loop that explores
    with it and tells a :class:`Controller` of the same configuration reproduces
    ``nrpt run`` (ensemble ``ensemble``, ``dtype="float32"``) bit for bit.

    Parameters are the keys of ``nrpt run``: ``chains``, ``target``, ``dim``,
    ``noise``, ``explorer`` (``"sgd"``, ``"sgld"``, ``"msgd"``), ``momentum``,
    ``seed``; and ``ensemble``, ``dtype``.
    """

    def __init__(
        self,
        chains: Optional[int] = None,
        *,
        target: Optional[str] = None,
        dim: Optional[int] = None,
        noise: Optional[float] = None,
        explorer: Optional[str] = None,
        momentum: Optional[float] = None,
        seed: Optional[int] = None,
        ensemble: int = 0,
        dtype: str = "float64",
    ) -> None:
        options = dict(
            chains=chains,
            target=target,
            dim=dim,
            noise=noise,
            explorer=explorer,
            momentum=momentum,
            seed=seed,
        )
        argv = _argv("run", "ToyExplorer", options, allowed=_TOY_KEYS)
        self._native = _nrpt.NativeToyExplorer(argv, int(ensemble), _dtype_name(dtype))
        self._dtype = np.dtype(self._native.dtype)

    @property
    def chains(self) -> int:
        """P."""
        return self._native.chains

    @property
    def dim(self) -> int:
        """D, the dimension of a state."""
        return self._native.dim

    @property
    def dtype(self) -> np.dtype:
        """The type of states and energies."""
        return self._dtype

    def initial_states(self) -> np.ndarray:
        """The states the Rust driver starts from, by replica: shape (P, D), uniform
        in [-1, 1)."""
        return self._native.initial_states()

    def step(
        self,
        states: np.ndarray,
        learning_rates: Any,
        temperatures: Any,
        iteration: int,
        momenta: Optional[np.ndarray] = None,
    ) -> np.ndarray:
        """Steps every replica r in place, ``states[r]`` (and ``momenta[r]`` for
        ``"msgd"``; C-contiguous (P, D) arrays of the explorer's dtype), at iteration
        ``iteration`` with ``learning_rates[r]`` and ``temperatures[r]``; returns the
        stochastic energy of every replica at its new state (by replica)."""
        lr = np.ascontiguousarray(learning_rates, dtype=np.float64)
        t = np.ascontiguousarray(temperatures, dtype=np.float64)
        return self._native.step(states, lr, t, int(iteration), momenta)


# ---------------------------------------------------------------------------------
# The engines.


def _emit(result: Dict[str, Any], strict: bool, what: str) -> Dict[str, Any]:
    found = list(result.get("warnings") or [])
    if strict and found:
        raise ValueError(
            f"strict: the {what} gave {len(found)} warning(s): " + "; ".join(found)
        )
    for w in found:
        warnings.warn(w, RuntimeWarning, stacklevel=3)
    return result


_NAMED_NUMBERS = {"NaN": float("nan"), "inf": float("inf"), "-inf": float("-inf")}
"""How nrpt's JSON writes the numbers JSON has no literal for (the book's outputs
chapter), and the floats they stand for."""


def _is_named(value: Any) -> bool:
    return isinstance(value, str) and value in _NAMED_NUMBERS


def _columns(rows: Sequence[Mapping[str, Any]]) -> Dict[str, np.ndarray]:
    """Rows of dicts as a dict of arrays (one per key of the first row): booleans as a
    bool array, numbers as numbers (``"NaN"``, ``"inf"`` and ``"-inf"`` as the floats
    they name, NaN for a missing one), anything else as objects."""
    if not rows:
        return {}
    out: Dict[str, np.ndarray] = {}
    for key in rows[0]:
        values = [r.get(key) for r in rows]
        if all(isinstance(v, bool) for v in values):
            out[key] = np.asarray(values, dtype=bool)
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            out[key] = np.asarray(values)
        elif all(v is None or _is_named(v) or isinstance(v, (int, float)) for v in values):
            out[key] = np.asarray(
                [np.nan if v is None else _NAMED_NUMBERS[v] if _is_named(v) else v for v in values],
                dtype=float,
            )
        else:
            out[key] = np.asarray(values, dtype=object)
    return out


# -- arrays as data -------------------------------------------------------------------

_DATA_PAIRS = (("data", "labels"), ("test_data", "test_labels"))


def _is_array(value: Any) -> bool:
    """An in-memory table (NumPy array, anything with ``__array__``, a list), not a
    path."""
    if value is None or isinstance(value, (str, bytes, os.PathLike)):
        return False
    return isinstance(value, (np.ndarray, list, tuple)) or hasattr(value, "__array__")


def _features(key: str, value: Any) -> np.ndarray:
    try:
        x = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{key} must be an array of real numbers (features): {err}") from None
    if x.dtype.kind not in "fiu":
        raise TypeError(
            f"{key} must be an array of real numbers (examples x features), got an array "
            f"of {x.dtype}"
        )
    if x.ndim != 2:
        raise ValueError(f"{key} must be 2-D (examples x features), got shape {x.shape}")
    if x.shape[0] == 0:
        raise ValueError(f"{key} has no examples (shape {x.shape})")
    if x.shape[1] == 0:
        raise ValueError(f"{key} has no features (shape {x.shape})")
    if x.shape[1] > 65_536:
        raise ValueError(f"{key} has {x.shape[1]} features, at most 65536 are accepted")
    if x.dtype.kind == "f":
        bad = ~np.isfinite(x)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise ValueError(
                f"{key} must be finite: {int(bad.sum())} value(s) are NaN or infinite "
                f"(the first at row {row}, column {col}: {x[row, col]})"
            )
        if x.dtype not in (np.float32, np.float64):
            x = x.astype(np.float64)
    else:
        x = x.astype(np.float64)
    return np.ascontiguousarray(x)


def _integer_labels(key: str, value: Any) -> np.ndarray:
    """``value`` as a NumPy array of integers, or ``TypeError`` naming ``key``."""
    try:
        y = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{key} must be an array of integer class labels: {err}") from None
    if y.dtype.kind not in "iu":
        hint = " (convert with .astype(int))" if y.dtype.kind == "f" else ""
        raise TypeError(
            f"{key} must be an array of integer class labels 0, 1, ..., got an array of "
            f"{y.dtype}{hint}"
        )
    return y


def _labels(key: str, value: Any, examples: int, features_key: str) -> np.ndarray:
    y = _integer_labels(key, value)
    if y.ndim != 1:
        raise ValueError(f"{key} must be 1-D (one label per example), got shape {y.shape}")
    if y.shape[0] != examples:
        raise ValueError(
            f"{key} has {y.shape[0]} labels for the {examples} examples of {features_key}"
        )
    if y.min() < 0:
        i = int(np.argmin(y))
        raise ValueError(f"{key} must be 0 or more, got {y[i]} (at index {i})")
    if y.max() > 65_535:
        i = int(np.argmax(y))
        raise ValueError(f"{key} must be at most 65535, got {y[i]} (at index {i})")
    return np.ascontiguousarray(y, dtype=np.int64)


def _checked_arrays(options: Mapping[str, Any]) -> Dict[str, np.ndarray]:
    """The data keys given as arrays, checked (``TypeError``/``ValueError`` in Python's
    words): features 2-D and finite, labels 1-D integers in 0..65535, one per example,
    the test features as wide as the training ones, at least two classes."""
    out: Dict[str, np.ndarray] = {}
    for xk, yk in _DATA_PAIRS:
        x, y = options.get(xk), options.get(yk)
        if not (_is_array(x) or _is_array(y)):
            continue
        if not (_is_array(x) and _is_array(y)):
            given, other = (xk, yk) if _is_array(x) else (yk, xk)
            raise ValueError(
                f"{given} is an array: give {other} as an array too (features "
                f"{xk} and integer labels {yk}; a file pair takes two paths)"
            )
        out[xk] = _features(xk, x)
        out[yk] = _labels(yk, y, out[xk].shape[0], xk)
    if "data" in out and "test_data" in out and out["test_data"].shape[1] != out["data"].shape[1]:
        raise ValueError(
            f"test_data has {out['test_data'].shape[1]} features, data "
            f"{out['data'].shape[1]}: they must match"
        )
    if "labels" in out and options.get("test_data") is None and out["labels"].shape[0] < 4:
        raise ValueError(
            f"data has {out['labels'].shape[0]} examples: without test_data every fourth "
            f"example (i % 4 == 3) is a test example, so at least 4 are needed"
        )
    test_labels_in_a_file = options.get("test_labels") is not None and "test_labels" not in out
    if "labels" in out and not test_labels_in_a_file:
        ys = [out[k] for k in ("labels", "test_labels") if k in out]
        if max(int(y.max()) for y in ys) == 0:
            raise ValueError("labels: every label is 0; a classifier needs at least 2 classes")
    return out


@contextlib.contextmanager
def _array_files(options: Dict[str, Any]) -> Iterator[Dict[str, str]]:
    """Replaces the data keys given as arrays in ``options`` by ``.npy`` files in a
    temporary folder this package owns and deletes when the block ends; yields each
    file's path with what to call it in the results."""
    arrays = _checked_arrays(options)
    if not arrays:
        yield {}
        return
    with tempfile.TemporaryDirectory(prefix="nrpt-arrays-") as folder:
        names: Dict[str, str] = {}
        for key, a in arrays.items():
            path = os.path.join(folder, f"{key}.npy")
            np.save(path, a, allow_pickle=False)
            options[key] = path
            shape = "x".join(str(n) for n in a.shape)
            names[path] = f"<{key}: array {shape} {a.dtype}>"
        yield names


def _renamed_paths(value: Any, names: Mapping[str, str]) -> Any:
    """``value`` with the temporary files' paths in its strings replaced by their
    names (the results then say which array, not a deleted file)."""
    if not names:
        return value
    if isinstance(value, str):
        for path, name in names.items():
            value = value.replace(path, name)
        return value
    if isinstance(value, dict):
        for k in list(value):
            value[k] = _renamed_paths(value[k], names)
        return value
    if isinstance(value, list):
        return [_renamed_paths(v, names) for v in value]
    return value


# -- results as plain values, tables and networks ---------------------------------------


def jsonable(value: Any) -> Any:
    """A result (of :func:`run`, :func:`reproduce`, :func:`deep`, :func:`scale`, or any
    dict of them) as plain Python values, as the command's JSON writes them: arrays as
    (nested) lists, NumPy scalars as ``int``/``float``/``bool``, NaN and infinities as
    the strings ``"NaN"``, ``"inf"`` and ``"-inf"``. ``json.dumps(nrpt.jsonable(r),
    allow_nan=False)`` then works, and :func:`read_json` reads it back."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "b":
            return value.tolist()
        return jsonable(value.tolist())
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float) and not np.isfinite(value):
        return "NaN" if value != value else "inf" if value > 0 else "-inf"
    return value


def read_json(path: Union[str, "os.PathLike[str]"]) -> Any:
    """A JSON file nrpt wrote (``results.json``, ``summary.json``, ``reference.json``,
    a ``--json`` line saved to a file, :func:`jsonable`'s output) as Python values,
    with the strings ``"NaN"``, ``"inf"`` and ``"-inf"``, nrpt's names for the numbers
    JSON has no literal for, read as those floats. (nrpt writes these three strings only
    where a number stands.)"""
    with open(path, encoding="utf-8") as f:
        return _numbers(json.load(f))


def _numbers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if _is_named(value):
        return _NAMED_NUMBERS[value]
    return value


def unflatten(theta: Any, layers: Sequence[int]) -> Dict[str, np.ndarray]:
    """A classifier's parameter vector θ (a sample of ``run(target="classifier")``,
    ``r["samples"][i, e]``) as its layers: ``{"W1": (F, H1), "b1": (H1,), "W2": ...,
    "bL": (C,)}`` for layer sizes ``layers = [F, H1, ..., C]`` (features, hidden
    widths, classes; ``r["config"]["hidden"]`` gives the hidden ones).

    The engine's layout (nrpt-core's ``Architecture``): layer after layer, the
    weights W (inputs x outputs, row-major: ``W[i, j]`` connects input i to output j)
    and then the biases. The network is ``h = relu(x @ W + b)`` for hidden layers and
    ``softmax(h @ WL + bL)`` at the end, on features standardized with the training
    split's mean and standard deviation (user data; the bundled data sets are used as
    they are). Leading dimensions are kept: ``unflatten(r["samples"], layers)["W1"]``
    has shape ``(S, E, F, H1)``. The arrays are views of ``theta`` where it is an
    array. ``ValueError`` when the length of θ is not ``sum((in + 1) * out)``."""
    sizes = [int(n) for n in layers]
    if len(sizes) < 2 or any(n < 1 for n in sizes):
        raise ValueError(f"layers must be [features, hidden..., classes], each >= 1, got {list(layers)}")
    theta = np.asarray(theta)
    if theta.ndim == 0:
        raise ValueError("theta must be a parameter vector (or an array of them), got a scalar")
    need = sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))
    if theta.shape[-1] != need:
        raise ValueError(
            f"theta has {theta.shape[-1]} parameters, layers {sizes} need "
            f"sum((in + 1) * out) = {need}"
        )
    lead = theta.shape[:-1]
    out: Dict[str, np.ndarray] = {}
    offset = 0
    for l, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
        out[f"W{l}"] = theta[..., offset : offset + a * b].reshape(*lead, a, b)
        offset += a * b
        out[f"b{l}"] = theta[..., offset : offset + b]
        offset += b
    return out


def _stacked(curves: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> Dict[str, np.ndarray]:
    """Curves (each a dict with ``name`` and columns ``keys`` of one length) as one
    long table: ``name`` repeated on each row, then the columns one after the other
    (a missing column as NaN), each 1-D as :func:`flat` names them."""
    if not curves:
        return {}
    parts = []
    for c in curves:
        n = len(c[keys[0]])
        table: Dict[str, Any] = {"name": np.asarray([c["name"]] * n, dtype=object)}
        for k in keys:
            v = c.get(k)
            if v is None:
                table[k] = np.full(n, np.nan)
                continue
            a = np.asarray(v)
            table[k] = a if a.dtype.kind in "iub" else np.asarray(v, dtype=float)
        parts.append(flat(table))
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _figures(result: Dict[str, Any]) -> None:
    """``figures``: ``{stem: {"svg": path, "png": path, "csv": path or None}}`` of the
    folder written (``out``), in the order the command lists them; ``{}`` when nothing
    was written."""
    folder = result.get("out")
    listed = result.get("figures") if isinstance(result.get("figures"), list) else []
    figures: Dict[str, Dict[str, Optional[str]]] = {}
    if folder is not None:
        stems = [str(f) for f in listed]
        found = sorted(n[: -len(".svg")] for n in os.listdir(folder) if n.endswith(".svg"))
        stems += [f for f in found if f not in stems]
        for stem in stems:
            files: Dict[str, Optional[str]] = {}
            for ext in ("svg", "png", "csv"):
                path = os.path.join(folder, f"{stem}.{ext}")
                files[ext] = path if os.path.exists(path) else None
            figures[stem] = files
    result["figures"] = figures


def run(*, progress: bool = False, strict: bool = False, **options: Any) -> Dict[str, Any]:
    """``nrpt run``: one configuration of the sampler, E ensembles in parallel, with
    the outputs as a dict instead of a folder.

    Keyword arguments are the keys of ``nrpt run`` (its flags with underscores):
    ``target`` (``"modes2d"``, ``"sum-modes"``, ``"classifier"``,
    ``"gaussian-path"``), ``chains``, ``ensembles``, ``iterations``, ``window``,
    ``swap_rate``, ``eta_min``, ``eta_max``, ``explorer``, ``buffer``, ``noise``,
    ``seed``, ``preset`` and the rule keys, ``data``/``labels``/``test_data``/
    ``test_labels``/``hidden``/``batch``/``prior_sigma`` for classifiers (``data``
    and ``labels``, ``test_data`` and ``test_labels``: paths, or NumPy arrays of
    features (examples x features, real) and integer labels 0, 1, ...), ``thin``,
    ``warmup``, ``config`` (a TOML file), ``threads``, ``backend``, ``device``,
    ``math`` (the CUDA kernels' floating-point mode: ``"exact"``, the default and the
    CPU's bits, ``"fma"`` or ``"fast"``, the GPU's hardware log/sin/cos with the same
    statistics but not the same bits; the CPU computes exactly), ``precision`` (how
    the GPU stores the states: ``"f32"``, the default, ``"bf16"`` or ``"f16"``; the
    CPU keeps f32 states and refuses the others with a ``ValueError``). The
    defaults are the command's. ``progress=True`` shows its progress bar on stderr;
    warnings become ``RuntimeWarning`` (``strict=True``: a ``ValueError``).

    The dict holds every field of ``summary.json`` under its name there
    (``round_trips_per_1000``,
    ``final_ladders``, ``pair_indicator_rate``, ...; vectors as arrays) and
    ``round_trips``, ``authors_round_trips``, ``restarts`` (totals over ensembles),
    ``samples`` (the kept target-level samples, shape (S, E, D), float32, as
    ``samples.npy``), ``sample_iterations``, ``pairs``, ``trace`` and ``ladder`` (each
    a dict of the columns of ``pairs.csv``, ``trace.csv`` and ``ladder.csv``; a group
    of columns ``NAME_0, NAME_1, ...`` is one 2-D array ``NAME``), ``ensembles`` (every
    ensemble's counts, buffer, per-pair counts and final states by level), ``seconds``, ``memory_estimate_bytes`` (what
    the run was estimated to need, checked before it started) and ``peak_memory_bytes``
    (this process's peak resident memory so far; ``None`` where the system does not
    say). The gaussian-path target returns its own summary with the tables
    ``lambda_profile``, ``grid`` and ``rounds`` (the columns of ``lambda.csv``,
    ``grid.csv`` and ``rounds.csv``). ``nrpt.RUN_EXTRAS`` names the keys beyond
    ``summary.json``'s. Every table converts with ``pandas.DataFrame(nrpt.flat(t))``;
    ``nrpt.jsonable(r)`` is the dict as plain JSON values; a classifier's samples
    unfold into layers with :func:`unflatten`.
    """
    argv_options = dict(options)
    with _array_files(argv_options) as names:
        argv = _argv(
            "run",
            "run",
            argv_options,
            refused={"out": _NO_FILES, "checkpoint_every": _NO_FILES, "resume": _NO_FILES},
        )
        result = _nrpt.run(argv, progress)
    return _emit(_renamed_paths(result, names), strict, "run")


_OUT_DOC = """
    ``out`` (a folder) writes the command's folder there as ``nrpt %s -o`` does
    (all or nothing, refusing a folder nrpt did not write unless ``force=True``),
    figures included: ``r["out"]`` is the folder and ``r["figures"]`` maps each
    figure's stem to its files, ``{"svg": path, "png": path, "csv": path or None}``.
    Without ``out`` nothing is written, ``r["out"]`` is ``None`` and
    ``r["figures"]`` is ``{}``."""


def _written(options: Mapping[str, Any]) -> bool:
    return options.get("out") is not None


def reproduce(*, progress: bool = False, **options: Any) -> Dict[str, Any]:
    """``nrpt reproduce``: the paper's 2D experiment (its Figures 3-6), the results of
    ``results.json`` as a dict (``methods``, ``s_sweep``, ``w_sweep``, ``variants``:
    lists of rows, each a table for ``pandas.DataFrame``; ``w_sweep_columns``, the
    window sweep as columns). Keywords: ``quick``, ``ensembles``, ``iterations``,
    ``seed``, ``shard`` (``"i/n"``: the results of that shard's seeds alone, with a
    ``shard`` entry; joining shards is ``nrpt reproduce merge``'s, on their folders),
    ``threads``, ``backend``, ``device``, ``math``, ``out``, ``force``.
    """
    argv = _argv("reproduce", "reproduce", options)
    result = _nrpt.reproduce(argv, progress, _written(options))
    result["w_sweep_columns"] = _columns(result["w_sweep"])
    _figures(result)
    return result


def deep(*, progress: bool = False, **options: Any) -> Dict[str, Any]:
    """``nrpt deep``: the deep-learning comparison at toy scale (the paper's Table 2
    and Figure 7) under the protocol of the book's chapter on deep posteriors,
    ``results.json`` as a dict: ``methods``,
    ``eta_sweep`` and ``swap_sweep`` (rows with accuracy, NLL, ECE and, against the
    reference posterior, agreement and total variation, each with ``_sd`` and ``_ci``;
    round trips), ``reference``, ``curves`` (arrays against epochs),
    ``sample_curves``, ``warnings``, ... Keywords: ``quick``, ``ensembles``,
    ``epochs``, ``pretrain_epochs``, ``patience``, ``samples``, ``burn_in``,
    ``eta_rule``, ``eta_sweep``, ``preset``, ``step_energy``, ``reference`` (a folder
    written by ``nrpt reference``), ``chains``, ``swap_rate``, ``swap_sweep``,
    ``eta_min``, ``eta_max``, ``hidden``, ``batch``, ``prior_sigma``, ``dataset``,
    ``data``, ``labels``, ``test_data``, ``test_labels`` (paths, or arrays as in
    :func:`run`), ``seed``, ``shard`` (``"i/n"``: the results of that shard's seeds
    alone, with a ``shard`` entry; with ``out`` its folder also holds the
    ``shard.json`` and ``records.json`` that ``nrpt deep merge`` joins), ``threads``,
    ``backend``, ``device``, ``math``, ``out``, ``force``."""
    argv_options = dict(options)
    with _array_files(argv_options) as names:
        argv = _argv("deep", "deep", argv_options)
        result = _nrpt.deep(argv, progress, _written(options))
    result = _renamed_paths(result, names)
    for c in result["curves"]:
        for key in ("epochs", "round_trips", "ladder", "pair_indicator_rates", "accuracy_by_level"):
            c[key] = np.asarray(c[key], dtype=float)
    for row in result["methods"] + result["eta_sweep"] + result["swap_sweep"]:
        for key in ("pair_indicator_rates", "steady_pair_indicator_rates"):
            if row.get(key) is not None:
                row[key] = np.asarray(row[key])
    result["curve_columns"] = _stacked(
        result["curves"], ("epochs", "round_trips", "ladder", "pair_indicator_rates")
    )
    result["sample_curve_columns"] = _stacked(
        result["sample_curves"], ("samples", "nll", "accuracy", "agreement", "total_variation")
    )
    _figures(result)
    return result


def dataset(name: str) -> Dict[str, Any]:
    """A bundled data set, ``"digits"`` or ``"mnist1d"``, exactly as nrpt's models see
    it and split as nrpt splits it: what to train your own model on, so that its
    predictive can be scored against a reference posterior with :func:`fidelity`.

    Keys: ``data`` (training features, examples x features, float32), ``labels``
    (int64), ``test_data`` and ``test_labels`` (the test split, in order),
    ``features``, ``classes``, ``name``, ``description`` (source, licence, split rule)
    and ``data_sha256`` (the digest a reference's ``model.data_sha256`` records). The
    digits' features are the pixel counts divided by 16 (in [0, 1]); example i of their
    file is a test example when ``i % 4 == 3`` (1,348 training and 449 test examples).
    MNIST-1D's are the generator's values, split as its package splits them (12,800
    and 3,200). ``nrpt.run`` and ``nrpt.deep`` take these data as ``dataset=name``;
    given as arrays (``data=``, ``labels=``) they would be standardized like any
    user's data, a different model. ``ValueError`` for another name."""
    return _nrpt.dataset(str(name))


def fidelity(
    probs: Any,
    *,
    labels: Any,
    dataset: str,
    layers: Sequence[int],
    prior_sigma: float,
    reference: Union[str, "os.PathLike[str]"] = "digits-mlp64",
    seed: int = 0,
) -> Dict[str, Any]:
    """How close your own predictive is to a reference posterior, scored as
    :func:`deep` scores its methods.

    A reference posterior is the predictive of long, converged full-batch HMC runs on
    one model, data set and prior (``nrpt reference``; ``"digits-mlp64"`` is bundled:
    an MLP with one hidden layer of 64 ReLU units, ``layers=[64, 64, 10]``, a N(0, 1)
    prior on every weight and bias, on the digits). Train that same model your own
    way (SGD, an ensemble, variational inference, ...), average its softmax outputs
    over your samples on the reference's test examples (``nrpt.dataset(...)
    ["test_data"]``, in order), and give:

    - ``probs``: that predictive, test examples x classes, each row probabilities
      summing to 1 (within 1e-6; a float32 softmax passes), not logits. A NumPy array
      or anything ``np.asarray`` takes (``tensor.detach().cpu().numpy()``).
    - ``labels``: the test labels you scored it on (integers, in order); they must be
      the reference's test labels, which tells nrpt your split is its split.
    - ``dataset``, ``layers``, ``prior_sigma``: the model your predictive is of (the
      data set's name, ``"digits"`` or ``"mnist1d"``; the layer sizes ``[features,
      hidden..., classes]``; the prior's standard deviation). Each must equal the
      reference's (``r["reference"]["model"]``).
    - ``reference``: a bundled reference by name, or a folder written by
      ``nrpt reference`` (a path; a ``str`` that names a bundled reference is that
      one, so write ``"./digits-mlp64"`` for a folder of that name).
    - ``seed``: the bootstrap's seed, as ``nrpt deep --seed`` (0 by default there):
      the same seed draws the same resampled test sets as that run's rows.

    Returns a dict: ``accuracy``, ``nll`` (mean negative log-likelihood per test
    example, probabilities floored at 1e-12), ``nll_sum``, ``ece`` (expected
    calibration error, 15 bins), ``agreement`` (the share of test examples whose most
    probable class is the reference's) and ``total_variation`` (the mean over test
    examples of half the summed absolute differences from the reference's
    probabilities; 0 is the reference itself, 1 disjoint), each but ``nll_sum`` with
    ``NAME_ci``, its 95 % interval by a bootstrap over test examples (1,000
    resamples, as ``nrpt deep``'s rows); ``test_examples``, ``level``,
    ``resamples``, ``seed``; and ``reference``, where it came from (``source``) and
    its description (``model``, ``sampler``, ``diagnostics``, its own ``accuracy``
    and ``nll``, ...).

    ``ValueError`` (with nrpt's message, naming what differs) for a predictive of
    another model, labels that are not the reference's test labels (another split or
    order), a reference whose data is not a bundled data set, a predictive of another
    shape or a row that is not a distribution; ``TypeError`` for non-numeric
    probabilities or non-integer labels."""
    try:
        p = np.asarray(probs)
    except (TypeError, ValueError) as err:
        raise TypeError(f"probs must be an array of probabilities: {err}") from None
    if p.dtype.kind not in "fiu":
        raise TypeError(f"probs must be an array of probabilities, got an array of {p.dtype}")
    if p.ndim != 2:
        raise ValueError(f"probs must be 2-D (test examples x classes), got shape {p.shape}")
    y = _integer_labels("labels", labels)
    if y.ndim != 1:
        raise ValueError(f"labels must be 1-D (one label per test example), got shape {y.shape}")
    if y.size and (int(y.min()) < 0 or int(y.max()) > 2**32 - 1):
        i = int(np.argmin(y)) if int(y.min()) < 0 else int(np.argmax(y))
        raise ValueError(f"labels: {y[i]} at position {i} is not a class label (0, 1, ...)")
    if isinstance(layers, (str, bytes)) or not isinstance(layers, Sequence):
        raise TypeError(f"layers must be a list of sizes [features, hidden..., classes], got {layers!r}")
    sizes = [operator.index(n) for n in layers]
    if any(n < 0 for n in sizes):
        raise ValueError(f"layers must be sizes (0 or more), got {list(layers)}")
    seed = operator.index(seed)
    if not 0 <= seed <= 2**32 - 1:
        raise ValueError(f"seed must be between 0 and {2**32 - 1}, got {seed}")
    if not isinstance(reference, (str, os.PathLike)):
        raise TypeError(
            f"reference must be a bundled reference's name or a folder, got {type(reference).__name__}"
        )
    return _nrpt.fidelity(
        np.ascontiguousarray(p, dtype=np.float64),
        np.ascontiguousarray(y, dtype=np.int64),
        str(dataset),
        sizes,
        float(prior_sigma),
        os.fspath(reference),
        isinstance(reference, os.PathLike),
        seed,
    )


def scale(*, progress: bool = False, **options: Any) -> Dict[str, Any]:
    """``nrpt scale``: the expected round-trip time E[T] against P and W beside Lemma
    1, ``results.json`` as a dict (``settings``, ``points``, ``fits``) plus
    ``columns``, the points as a dict of arrays (``chains``, ``window``,
    ``expected_round_trip``, ``model_expected_round_trip``, ``ratio``, ...).
    Keywords: ``target``, ``simulator`` (``"bitsliced"`` or ``"lanes"``, for
    ``bernoulli``), ``chains`` (``"8,16,64"``, ``"8..4096"`` or a list),
    ``window`` (``"1,opt"`` or a list), ``swap_rate``, ``rates_file``,
    ``ensembles``, ``target_se``, ``max_iterations``, ``warmup``, ``seed``, ``dim``,
    ``part`` (``"i/n"``: the points i, i + n, ...), ``threads``, ``backend``,
    ``device``, ``math``, ``out``, ``force``. ``model`` and ``shard``, their names
    before, still work with a ``DeprecationWarning``."""
    argv = _argv("scale", "scale", options)
    result = _nrpt.scale(argv, progress, _written(options))
    result["columns"] = _columns(result["points"])
    _figures(result)
    return result


for _f, _name in ((reproduce, "reproduce"), (deep, "deep"), (scale, "scale")):
    _f.__doc__ = (_f.__doc__ or "") + _OUT_DOC % _name
del _f, _name
