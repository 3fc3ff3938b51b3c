"""Exact tempering for your own model and sampler: :class:`ExactController` (ask/tell).

The tempered densities are ``pi_beta(x) ∝ pi_0(x) · L(x)**beta``: ``pi_0`` is the
reference (the prior, or anything normalized that your sampler can draw or explore
exactly), ``L`` the likelihood and ``beta`` in [0, 1]; ``beta = 1`` is the posterior,
``beta = 0`` the reference. You keep P chains (states of your model, never moved by
nrpt) and a sampler; each iteration

1. :meth:`ExactController.ask` gives the ``beta`` of every replica;
2. you move replica ``r`` with any sampler that leaves ``pi_beta`` invariant at its
   ``beta`` (exact draws, Gibbs, NUTS/HMC on ``log pi_0 + beta · log L``, ...; at
   ``beta = 0`` an exact draw from ``pi_0`` is best);
3. :meth:`ExactController.tell` takes ``log L`` of every replica's new state, **by
   replica**.

nrpt then does the rest, with the code of its Rust core (the same function, bit for bit,
as a run of ``nrpt run --target gaussian-path``): Metropolis swaps of neighbouring
levels by non-reversible even-odd sweeps (DEO; an optional window, or SEO), rounds of
doubling length after which the ``beta`` grid moves to equal communication barrier, the
barrier Λ̂ and its profile λ̂(β), log Z = log ∫ pi_0 L by the stepping stone (forward,
reverse and their mean, with batch-means standard errors), round trips, and the
command's warnings. A swap exchanges the ``beta`` of two chains, never their states.

With ``reference="variational"`` nrpt also fits a Gaussian ``q`` to the posterior
level as the run goes and, once fitted, tempers from ``q`` instead of ``pi_0``
(:class:`GaussianReference`; Surjanovic et al., NeurIPS 2022): the path is then much
shorter when the posterior sits far from ``pi_0``.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Mapping, Optional, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

from . import _nrpt, _statefile

__all__ = ["ExactController", "ExactStep", "GaussianReference", "LogZ"]

_NONFINITE = ("raise", "warn", "skip")
_SCHEMES = ("deo", "seo")
_REFERENCES = ("fixed", "variational")
_FORMAT = "nrpt.ExactController"
_VERSION = 1
_U32 = 2**32


@dataclass(frozen=True)
class LogZ:
    """log Z = log ∫ pi_0(x) L(x) dx (the log evidence when ``pi_0`` is the normalized
    prior) from the last completed round, as ``nrpt run`` reports it: ``value`` is the
    mean of the forward and reverse stepping stones and ``se`` the mean of their
    standard errors (conservative: the two share their states)."""

    value: float
    """The mean of the forward and reverse estimates."""
    se: float
    """Its standard error, (se_forward + se_reverse) / 2 (NaN with fewer than two
    batches in the round)."""
    forward: float
    """The forward stepping stone (biased low by O(1/N))."""
    forward_se: float
    """Its batch-means standard error."""
    reverse: float
    """The reverse stepping stone (biased high by O(1/N))."""
    reverse_se: float
    """Its batch-means standard error."""

    def __float__(self) -> float:
        return self.value


@dataclass(frozen=True, repr=False)
class ExactStep:
    """What one :meth:`ExactController.tell` did. Arrays by *pair* have length P - 1
    (pair l is levels l and l + 1), by *level* or *replica* length P."""

    iteration: int
    """The iteration (0-based) that this tell completed."""
    swaps: int
    """Swaps executed."""
    round_trips: int
    """Round trips (beta = 0 -> 1 -> 0, counted at the reference) completed."""
    nonfinite_pairs: int
    """Pairs with a non-finite log-likelihood (they cannot swap)."""
    swapped: npt.NDArray[np.bool_]
    """By pair: the pair exchanged the betas of its two chains."""
    replica_at: npt.NDArray[np.int64]
    """By level: the replica now at each level (``replica_at[0]`` is at beta = 1)."""
    level_of: npt.NDArray[np.int64]
    """By replica: the level of each replica now."""
    round: Optional[Dict[str, Any]]
    """If this tell ended a round, its report: ``round``, ``iterations``, ``lambda``
    (Λ̂) and ``lambda_se``, ``log_z`` and ``log_z_se`` (mean of forward and reverse),
    ``log_z_forward``/``_se``, ``log_z_reverse``/``_se``, ``round_trips``,
    ``restarts``, ``round_trips_per_1000``, ``predicted_round_trips_per_1000``,
    ``rejection_min``/``_max`` and ``grid_adapted`` (``None`` where not finite)."""

    def __repr__(self) -> str:
        ended = "" if self.round is None else f", round {self.round['round']} ended"
        return (
            f"ExactStep(iteration={self.iteration}, swaps={self.swaps}, "
            f"round_trips={self.round_trips}{ended})"
        )


@dataclass(frozen=True, repr=False)
class GaussianReference:
    """The variational reference q = N(mean, diag(scale**2)) that an
    :class:`ExactController` with ``reference="variational"`` fitted to its posterior
    level (:attr:`ExactController.reference`), as it was when read: each fit at the
    end of a round replaces it, so read :attr:`ExactController.reference` again after
    every tell.

    While it is the controller's reference, move replica ``r`` at ``beta`` with a sampler
    of ``q(x)**(1 - beta) * gamma_1(x)**beta``, where ``gamma_1 = pi_0 * L`` is your
    unnormalized posterior (at ``beta = 0``: :meth:`sample`), and tell
    ``log gamma_1(x) - log q(x)`` = ``log pi_0(x) + log L(x) - log_density(x)`` instead
    of ``log L(x)``."""

    mean: npt.NDArray[np.float64]
    """m, by coordinate (length D)."""
    scale: npt.NDArray[np.float64]
    """s, the standard deviations by coordinate (length D, positive)."""
    fits: int
    """The fit this is (1 for the first)."""
    _native: Any = field(repr=False, compare=False, default=None)

    @property
    def dim(self) -> int:
        """D, the coordinates of a state."""
        return int(self.mean.shape[0])

    @overload
    def log_density(self, x: npt.ArrayLike, *, gradient: Literal[False] = ...) -> float: ...
    @overload
    def log_density(
        self, x: npt.ArrayLike, *, gradient: Literal[True]
    ) -> Tuple[float, npt.NDArray[np.float64]]: ...

    def log_density(
        self, x: npt.ArrayLike, *, gradient: bool = False
    ) -> Union[float, Tuple[float, npt.NDArray[np.float64]]]:
        """log q(x), normalized (``sum_i log N(x_i; mean_i, scale_i**2)``), computed by
        the Rust core; with ``gradient=True`` also its gradient ``-(x - mean) /
        scale**2``, as ``(value, gradient)``. ``x`` is one state (D real numbers).
        ``RuntimeError`` once a later fit has replaced this reference."""
        native = self._native
        if native is None or native.reference_fits != self.fits:
            raise RuntimeError(
                f"this is fit {self.fits} of the variational reference, which a later fit "
                f"replaced: read ExactController.reference again"
            )
        value, grad = native.reference_log_density(_floats("x", x, self.dim, "one per coordinate"))
        return (value, grad) if gradient else value

    def sample(
        self, rng: np.random.Generator, size: Optional[int] = None
    ) -> npt.NDArray[np.float64]:
        """Exact draws ``mean + scale * z`` with ``z`` standard normal from your NumPy
        ``Generator``: one state (shape ``(D,)``), or ``size`` of them (``(size, D)``)."""
        shape = (self.dim,) if size is None else (size, self.dim)
        return self.mean + self.scale * rng.standard_normal(shape)

    def __repr__(self) -> str:
        return (
            f"GaussianReference(dim={self.dim}, fits={self.fits}, mean={self.mean!r}, "
            f"scale={self.scale!r})"
        )


def _int(name: str, value: Any, low: int, high: Optional[int] = None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r}")
    v = int(value)
    if v < low or (high is not None and v > high):
        bound = f"at least {low}" if high is None else f"between {low} and {high}"
        raise ValueError(f"{name} must be {bound}, got {v}")
    return v


def _floats(name: str, values: Any, length: int, each: str = "one per replica") -> np.ndarray:
    """``values`` as a contiguous float64 array of ``length`` numbers: floats and ints
    of any width; not bools, complex numbers, strings or None."""
    return _reals(f"{name} must be {length} real numbers ({each})", values, (length,))


def _reals(what: str, values: Any, shape: Tuple[int, ...]) -> np.ndarray:
    """``values`` as a contiguous float64 array of ``shape``: floats and ints of any
    width; not bools, complex numbers, strings or None (``what`` opens the message)."""
    if values is None:
        raise TypeError(f"{what}, got None")
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what}: {err}") from None
    kind = raw.dtype.kind
    if kind == "b":
        raise TypeError(f"{what}, got booleans")
    if kind == "c":
        raise TypeError(f"{what}, got complex numbers")
    if kind == "O":
        try:
            raw = raw.astype(np.float64)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{what}: {err}") from None
    elif kind not in "fiu":
        raise TypeError(f"{what}, got an array of {raw.dtype}")
    if raw.shape != shape:
        raise ValueError(f"{what}: expected shape {shape}, got {raw.shape}")
    return np.ascontiguousarray(raw, dtype=np.float64)


class ExactController:
    """Exact non-reversible parallel tempering around your own sampler (ask/tell).

    Keep P chains of your model's state (chain r is "replica r" in the by-replica
    views). Each iteration, :meth:`ask` gives the
    inverse temperature ``beta`` of every replica (by replica); move each replica with
    your own exact sampler of ``pi_beta(x) ∝ pi_0(x) · L(x)**beta`` at its ``beta``
    (``beta = 0``: the reference ``pi_0``, which the sampler must draw or explore
    exactly; ``beta = 1``: the posterior), then :meth:`tell` the log-likelihood
    ``log L`` of every replica's new state, by replica. Replicas keep their states;
    swaps move the betas between them. The samples of the posterior are the states of
    replica ``replica_at[0]`` after each tell.

    Parameters
    ----------
    chains
        P, the number of chains (>= 2): the states you keep, one per chain.
        ``recommended_chains`` says how many the measured barrier asks for (about
        2Λ + 1).
    seed, ensemble
        Philox key of the swaps' random numbers (0 <= each < 2**32): the same seed and
        the same log-likelihoods give the same run, bit for bit.
    scheme
        ``"deo"`` (default: the non-reversible deterministic even-odd sweep) or
        ``"seo"`` (the reversible stochastic baseline).
    window
        The DEO window W (default 1, vanilla DEO). With W > 1 a pair rejected in a
        window tries again, which biases the levels, Λ̂ and log Z: the controller warns
        (``RuntimeWarning``, and in :attr:`warnings`).
    first_round
        Iterations of the first round (default 2, as ``nrpt run``); round r lasts
        ``first_round * 2**r`` and its estimates come from it alone.
    adapt_grid
        Re-place the grid at equal barrier after every round (default ``True``); also a
        settable attribute (``False`` keeps the grid fixed from then on).
    betas
        The initial grid by level, strictly decreasing from 1 to 0 (default uniform),
        for instance :meth:`equal_barrier_grid` of an earlier controller.
    nonfinite
        A NaN or +inf log-likelihood: ``"raise"`` (default) a ``ValueError`` before
        anything changes; ``"warn"`` a ``RuntimeWarning``, then the core's rule (its
        pairs never swap and are counted, and the round's log Z is NaN); ``"skip"`` the
        same silently. -inf (a likelihood of zero) is always accepted.
    reference
        ``"fixed"`` (default): your ``pi_0`` is the reference throughout.
        ``"variational"``: nrpt fits a Gaussian ``q = N(m, diag(s**2))`` to the
        posterior level (after each tell it gathers the state of replica
        ``replica_at[0]``; at the end of every round whose grid adapts it fits ``m`` and
        ``s`` to that round's states, once at least 16 are gathered) and from the first
        fit on tempers from ``q`` instead of ``pi_0``; see "A variational reference"
        below.
    dim
        D, the coordinates of a state: required with ``reference="variational"`` (which
        :meth:`tell` the states), not given otherwise.

    A variational reference
    -----------------------
    When the posterior sits far from ``pi_0`` (a vague prior, a concentrated
    posterior), the path from ``pi_0`` is long (a large barrier Λ) and needs many
    chains; a path from a ``q`` fitted to the posterior is short. With
    ``reference="variational"`` every :meth:`tell` also takes ``states``, the P states
    (shape ``(P, D)``, by replica) that the log-likelihoods belong to, and
    :attr:`reference` says which reference is in force:

    - while :attr:`reference` is ``None`` (before the first fit), do as with a fixed
      reference: at ``beta = 0`` draw from ``pi_0``, at ``beta > 0`` sample
      ``pi_0 · L**beta``, tell ``log L``;
    - once it is a :class:`GaussianReference` ``q``: at ``beta = 0`` draw from ``q``
      (``q.sample(rng)``), at ``beta > 0`` sample ``q(x)**(1 - beta) ·
      gamma_1(x)**beta`` with ``gamma_1 = pi_0 · L``, and tell
      ``log gamma_1(x) - log q(x)`` (``log pi_0 + log L - q.log_density(x)``).

    Read :attr:`reference` after every tell: a tell that ends a round may fit it again.
    The posterior (``beta = 1``) is the same, and ``q`` is normalized, so :attr:`log_z`
    is still ``log ∫ pi_0 L``.

    Example (a conjugate model, drawn exactly at every beta)::

        ctl = nrpt.ExactController(8, seed=1)
        for k in range(4094):
            beta = ctl.ask()                       # by replica
            x = [draw_tempered_posterior(b, rng) for b in beta]
            ctl.tell([log_likelihood(xr) for xr in x])
        print(ctl.log_z, ctl.barrier(), ctl.warnings)
    """

    def __init__(
        self,
        chains: int,
        *,
        seed: int = 0,
        scheme: str = "deo",
        window: int = 1,
        first_round: int = 2,
        adapt_grid: bool = True,
        betas: Optional[npt.ArrayLike] = None,
        ensemble: int = 0,
        nonfinite: str = "raise",
        reference: str = "fixed",
        dim: Optional[int] = None,
    ) -> None:
        p = _int("chains", chains, 2)
        d = _reference_dim(reference, dim)
        seed = _int("seed", seed, 0, _U32 - 1)
        ensemble = _int("ensemble", ensemble, 0, _U32 - 1)
        if not isinstance(scheme, str):
            raise TypeError(f"scheme must be a str, {_SCHEMES[0]!r} or {_SCHEMES[1]!r}, got {scheme!r}")
        if scheme not in _SCHEMES:
            raise ValueError(f"scheme must be {_SCHEMES[0]!r} or {_SCHEMES[1]!r}, got {scheme!r}")
        w = _int("window", window, 1, _U32 - 1)
        if scheme == "seo" and w != 1:
            raise ValueError(
                f"window applies to scheme='deo' (SEO draws the parity every iteration), got window={w}"
            )
        first = _int("first_round", first_round, 1, 2**63 - 1)
        if not isinstance(adapt_grid, (bool, np.bool_)):
            raise TypeError(f"adapt_grid must be a bool, got {adapt_grid!r}")
        _check_nonfinite(nonfinite)
        grid = None if betas is None else _floats("betas", betas, p).tolist()
        code = 0 if scheme == "seo" else w
        self._native = _nrpt.NativeExactController(
            p, code, seed, ensemble, first, bool(adapt_grid), grid, reference, d
        )
        self._nonfinite = nonfinite
        self._asked = False
        for message in self._native.warnings():
            warnings.warn(message, RuntimeWarning, stacklevel=2)

    # -- ask/tell -------------------------------------------------------------------

    def ask(self) -> npt.NDArray[np.float64]:
        """The inverse temperature ``beta`` of each replica (by replica) for this
        iteration: move replica ``r`` with a sampler of ``pi_0 · L**beta[r]``, then
        :meth:`tell`. Asking again before the tell gives the same betas."""
        self._asked = True
        return self._native.betas_by_replica

    def tell(
        self, log_likelihoods: npt.ArrayLike, states: Optional[npt.ArrayLike] = None
    ) -> ExactStep:
        """One iteration, given ``log L`` of every replica's state after your sampler
        moved it at the beta of :meth:`ask`, **by replica** (P real numbers: a list, a
        NumPy array of floats or ints). Then the swaps, the records and, at the end of a
        round, its estimates and the next grid. Needs an :meth:`ask` since the last
        tell (``RuntimeError``); bad input raises ``TypeError`` or ``ValueError`` and
        changes nothing.

        With ``reference="variational"``, ``states`` is required: the P states those
        log-likelihoods belong to, shape ``(P, D)``, by replica (a row with a NaN or an
        infinity is accepted but not gathered for the fit), and once :attr:`reference`
        is fitted the log-likelihoods are ``log gamma_1 - log q`` (see the class
        docstring). With a fixed reference, ``states`` is not given."""
        if not self._asked:
            raise RuntimeError(
                "tell() without ask(): call ask() first for the betas of this iteration, "
                "move every replica at its beta, then tell() their log-likelihoods"
            )
        ell = _floats("log_likelihoods", log_likelihoods, self.chains)
        flat = self._states(states)
        bad = np.flatnonzero(np.isnan(ell) | (ell == np.inf))
        if bad.size and self._nonfinite != "skip":
            which = ", ".join(f"replica {r}: {ell[r]}" for r in bad[:8])
            more = f" and {bad.size - 8} more" if bad.size > 8 else ""
            if self._nonfinite == "raise":
                raise ValueError(
                    f"log_likelihoods must not be NaN or +inf, got {which}{more} "
                    f"(nonfinite='raise'; with 'warn' or 'skip' those chains do not swap "
                    f"and the round's log Z is NaN)"
                )
            warnings.warn(
                f"non-finite log-likelihoods at iteration {self.iteration}: {which}{more}; "
                f"those chains do not swap",
                RuntimeWarning,
                stacklevel=2,
            )
        step = ExactStep(**self._native.tell(ell, flat))
        self._asked = False
        return step

    def _states(self, states: Any) -> Optional[np.ndarray]:
        """``states`` checked against the reference, flat (``None`` for a fixed one)."""
        d = self._native.reference_dim
        if d is None:
            if states is not None:
                raise ValueError(
                    "states are told only with reference='variational' (which fits a "
                    "Gaussian to them); this controller's reference is 'fixed'"
                )
            return None
        shape = (self.chains, d)
        what = (
            f"states must be the {self.chains} replicas' states of {d} real numbers each, "
            f"by replica (reference='variational')"
        )
        if states is None:
            raise ValueError(f"{what}: expected shape {shape}, got no states")
        return _reals(what, states, shape).ravel()

    # -- the reference --------------------------------------------------------------

    @property
    def reference_kind(self) -> str:
        """``"fixed"`` or ``"variational"`` (the ``reference`` argument)."""
        return self._native.reference

    @property
    def dim(self) -> Optional[int]:
        """D with ``reference="variational"``, ``None`` with a fixed reference."""
        return self._native.reference_dim

    @property
    def reference(self) -> Optional[GaussianReference]:
        """The fitted variational reference ``q`` now in force, or ``None`` while the
        reference is your own ``pi_0`` (always with ``reference="fixed"``; before the
        first fit with ``"variational"``). Read it after every tell: it says what to
        sample at each beta and what to tell (see the class docstring)."""
        mean, scale = self._native.reference_mean, self._native.reference_scale
        if mean is None or scale is None:
            return None
        mean.setflags(write=False)
        scale.setflags(write=False)
        return GaussianReference(mean, scale, self._native.reference_fits, self._native)

    @property
    def reference_fits(self) -> int:
        """Fits of the variational reference so far (0 with a fixed one)."""
        return self._native.reference_fits

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
    def round(self) -> int:
        """The current round (rounds completed so far)."""
        return self._native.round

    @property
    def round_iteration(self) -> int:
        """Iterations told in the current round."""
        return self._native.round_iteration

    @property
    def round_length(self) -> int:
        """Iterations of the current round (``first_round * 2**round``)."""
        return self._native.round_length

    @property
    def scheme(self) -> str:
        """``"deo"`` or ``"seo"``."""
        return "seo" if self._native.window == 0 else "deo"

    @property
    def window(self) -> int:
        """The DEO window W (1 for SEO, which has none)."""
        return max(self._native.window, 1)

    @property
    def seed(self) -> int:
        """The seed (first word of the Philox key)."""
        return self._native.seed

    @property
    def ensemble(self) -> int:
        """The ensemble (second word of the Philox key)."""
        return self._native.ensemble

    @property
    def first_round(self) -> int:
        """Iterations of round 0."""
        return self._native.first_round

    @property
    def nonfinite(self) -> str:
        """The policy for NaN or +inf log-likelihoods."""
        return self._nonfinite

    @property
    def adapt_grid(self) -> bool:
        """Whether the grid moves to equal barrier after each round (settable)."""
        return self._native.adapt_grid

    @adapt_grid.setter
    def adapt_grid(self, on: bool) -> None:
        if not isinstance(on, (bool, np.bool_)):
            raise TypeError(f"adapt_grid must be a bool, got {on!r}")
        self._native.adapt_grid = bool(on)

    @property
    def betas(self) -> npt.NDArray[np.float64]:
        """By level: the grid, from 1 (level 0, the posterior) to 0 (the reference)."""
        return self._native.betas

    @property
    def level_of(self) -> npt.NDArray[np.int64]:
        """By replica: the level of each replica."""
        return self._native.level_of

    @property
    def replica_at(self) -> npt.NDArray[np.int64]:
        """By level: the replica at each level; ``replica_at[0]`` samples the
        posterior."""
        return self._native.replica_at

    @property
    def log_likelihoods(self) -> npt.NDArray[np.float64]:
        """By replica: the log-likelihoods last told (NaN before the first tell)."""
        return self._native.log_likelihoods

    # -- estimates of the last completed round ---------------------------------------

    def barrier(self) -> Optional[float]:
        """Λ̂, the global communication barrier of the last completed round (the sum of
        its pair rejection rates; ``None`` before the first round ends). DEO makes about
        1 / (2 + 2Λ) round trips per iteration as P grows."""
        return self._native.barrier()

    def lambda_profile(self, betas: npt.ArrayLike) -> Optional[npt.NDArray[np.float64]]:
        """λ̂(β), the local barrier (the derivative of the cumulative barrier) of the last
        completed round at each of ``betas`` (numbers in [0, 1]); ``None`` before the
        first round ends."""
        at = self._profile_points(betas)
        out = self._native.profile(at)
        return None if out is None else out[0]

    def cumulative_barrier(self, betas: npt.ArrayLike) -> Optional[npt.NDArray[np.float64]]:
        """Λ̂(β) = ∫₀^β λ̂, the cumulative barrier of the last completed round at each of
        ``betas`` (``Λ̂(1)`` is :meth:`barrier`); ``None`` before the first round
        ends."""
        at = self._profile_points(betas)
        out = self._native.profile(at)
        return None if out is None else out[1]

    @staticmethod
    def _profile_points(betas: Any) -> np.ndarray:
        arr = np.atleast_1d(np.asarray(betas))
        if arr.dtype.kind not in "fiu":
            raise TypeError(f"betas must be real numbers in [0, 1], got an array of {arr.dtype}")
        at = np.ascontiguousarray(arr, dtype=np.float64).ravel()
        if not np.all((at >= 0.0) & (at <= 1.0)):
            raise ValueError("betas must be real numbers in [0, 1]")
        return at

    def equal_barrier_grid(self, chains: int) -> Optional[npt.NDArray[np.float64]]:
        """The grid of ``chains`` betas at equal barrier for the last completed round's
        Λ̂ (the ``betas`` of a new controller with that many chains); ``None`` before
        the first round ends."""
        return self._native.equal_barrier_grid(_int("chains", chains, 2))

    @property
    def log_z(self) -> Optional[LogZ]:
        """log Z = log ∫ pi_0 L of the last completed round (``None`` before): the mean
        of the forward and reverse stepping stones, with both. Non-finite parts are
        NaN."""
        r = self._native.last_round()
        if r is None:
            return None

        def f(key: str) -> float:
            v = r[key]
            return float("nan") if v is None else float(v)

        return LogZ(
            value=f("log_z"),
            se=f("log_z_se"),
            forward=f("log_z_forward"),
            forward_se=f("log_z_forward_se"),
            reverse=f("log_z_reverse"),
            reverse_se=f("log_z_reverse_se"),
        )

    @property
    def last_round(self) -> Optional[Dict[str, Any]]:
        """The report of the last completed round (see :attr:`ExactStep.round`)."""
        return self._native.last_round()

    @property
    def round_trips(self) -> int:
        """Round trips over the whole run (a replica's trip from beta = 0 to 1 and back,
        counted when it reaches the reference)."""
        return int(self._native.stats()["round_trips"])

    @property
    def round_trips_per_1000(self) -> Optional[float]:
        """Round trips per 1000 iterations in the last completed round (all chains)."""
        r = self._native.last_round()
        return None if r is None else r["round_trips_per_1000"]

    @property
    def predicted_round_trips_per_1000(self) -> Optional[float]:
        """What the last round's rejection rates predict for DEO with W = 1:
        1000 / (2 + 2 Σ r/(1 - r)) (Syed et al. 2022). Far fewer measured round trips
        mean that your sampler does not move the chains enough between tells."""
        r = self._native.last_round()
        return None if r is None else r["predicted_round_trips_per_1000"]

    @property
    def recommended_chains(self) -> Dict[str, Union[int, bool, None]]:
        """The chains the measured Λ̂ asks for: ``cost_optimal`` (P - 1 ≈ 2Λ̂: the most
        round trips per unit of work) and ``near_limit_5_percent`` (the fewest within 5 %
        of the limit 1/(2 + 2Λ), for chains run in parallel), ``None`` before the
        first round ends; ``lower_bound`` is ``True`` where Λ̂ saturates (pairs reject
        more than half of their swaps on average, or one never swapped), so that both
        are "at least" that many."""
        return self._native.recommended_chains()

    @property
    def warnings(self) -> List[str]:
        """What ``nrpt run`` would warn about the last completed round, each saying
        what to do: pairs rejecting more than half of their swaps or never swapping (too
        few chains), no round trip, the forward and reverse log Z apart by more than 4
        standard errors, round trips below half of the prediction (the sampler moves
        the chains too little), a window above 1."""
        return self._native.warnings()

    def summary(self) -> Dict[str, Any]:
        """Everything the controller knows as plain Python values (JSON-ready:
        ``None`` for what is not finite or not known yet): ``settings``, ``iteration``,
        ``rounds``, ``measured_iterations``, the run's ``round_trips``, ``restarts``,
        ``authors_round_trips`` and ``nonfinite_energies``, the grid ``betas``, and once
        a round has ended the command's estimates of it (``lambda``, ``lambda_se``,
        ``log_z``, ``log_z_se``, ``log_z_forward``, ``log_z_reverse`` with their
        ``_se``, ``round_trips_per_1000``, ``predicted_round_trips_per_1000``,
        ``lemma1_round_trips_per_1000``, ``limit_round_trips_per_1000``,
        ``rejection_range``, ``barrier_gaussian_corrected``, ...),
        ``recommended_chains``, ``warnings``, ``reference`` (``"fixed"`` or
        ``"variational"``) and ``reference_fits``."""
        s = self._native.summary()
        s["scheme"] = self.scheme
        s["nonfinite"] = self._nonfinite
        return s

    def stats(self) -> Dict[str, Any]:
        """Counts as plain Python values: ``iterations``, ``round_trips``,
        ``restarts``, ``authors_round_trips``, ``nonfinite_energies`` (non-finite
        log-likelihoods met by the swaps), and by pair in the last completed round
        ``pair_rejection_rate``, ``pair_tests``, ``pair_attempts``, ``pair_swaps`` and
        ``pair_nonfinite`` (lists of length P - 1; empty before the first round
        ends)."""
        return self._native.stats()

    # -- saving ---------------------------------------------------------------------

    def state_dict(self) -> Dict[str, Any]:
        """The whole state, JSON-ready: a format tag, the version, a few readable
        fields (``chains``, ``iteration``, ``nonfinite``, ``asked``, ``reference``), and
        ``state``, every buffer and counter of the Rust controller with each float bit
        for bit (hex of its binary encoding), the variational reference's fit included.
        :meth:`load_state_dict` or :meth:`from_state_dict` continue it exactly. It
        carries no checksum (a pickle keeps it as it is); :meth:`save` adds one."""
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "chains": self.chains,
            "iteration": self.iteration,
            "nonfinite": self._nonfinite,
            "asked": self._asked,
            "reference": self.reference_kind,
            "state": bytes(self._native.state_bytes()).hex(),
        }

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any]) -> "ExactController":
        """A controller continuing a :meth:`state_dict`, checked first: the fields'
        types (``TypeError``) and values (``ValueError``), unknown or missing keys, the
        readable fields against the encoded state, and the invariants every state of
        a run keeps: the lengths, the β grid strictly decreasing from 1 (level 0) to 0
        (level P - 1), the barrier's knots, a permutation and its inverse, finite
        positive step sizes, the iteration at most 2**53 and equal to the rounds'
        iterations (``first_round * (2**round - 1)`` plus the current round's), the
        counts within what that many iterations allow, and a variational reference's
        fit (a finite mean, a finite positive scale, at most one fit per completed
        round)."""
        self = cls.__new__(cls)
        self._restore(state)
        return self

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Replaces this controller's state by a :meth:`state_dict` (checked first, as
        :meth:`from_state_dict` does: nothing changes if it is refused)."""
        self._restore(state)

    def _restore(self, state: Mapping[str, Any]) -> None:
        state = _statefile.mapping(state, "state")
        if state.get("format") != _FORMAT or state.get("version") != _VERSION:
            raise ValueError(
                f"not a state of this nrpt.ExactController: format {state.get('format')!r} "
                f"version {state.get('version')!r} (this is {_FORMAT!r} version {_VERSION})"
            )
        _statefile.keys(
            state,
            "state",
            ("format", "version", "state"),
            ("chains", "iteration", "nonfinite", "asked", "reference"),
        )
        nonfinite = state.get("nonfinite", "raise")
        _check_nonfinite(nonfinite)
        asked = _statefile.boolean(state.get("asked", False), "state['asked']")
        text = state.get("state")
        if not isinstance(text, str):
            raise TypeError("state['state'] must be the hex text that state_dict() wrote")
        try:
            raw = bytes.fromhex(text)
        except ValueError as err:
            raise ValueError(f"state['state'] is not hex text: {err}") from None
        native = _nrpt.NativeExactController.from_state_bytes(raw)
        # The readable copies must say what the encoded state holds.
        for key, actual in (("chains", native.chains), ("iteration", native.iteration)):
            if key in state:
                value = _statefile.integer(state[key], f"state[{key!r}]", 0, 2**64 - 1)
                if value != actual:
                    _statefile.fail(
                        f"state[{key!r}]", f"is {value}, but the encoded state holds {actual}"
                    )
        if "reference" in state and state["reference"] != native.reference:
            _statefile.fail(
                "state['reference']",
                f"is {state['reference']!r}, but the encoded state holds {native.reference!r}",
            )
        self._native = native
        self._nonfinite = nonfinite
        self._asked = asked

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the state to ``path`` as JSON (file format 2):
        ``{"format": 2, "kind": "nrpt.ExactController", "sha256": ..., "state": ...}``,
        ``state`` being :meth:`state_dict` and ``sha256`` the SHA-256 of its canonical
        JSON (sorted keys, no spaces), so that :meth:`load` finds any change. The file is
        written whole or not at all (a temporary file beside it, renamed into place):
        an interrupted save leaves the previous file as it was."""
        _statefile.write(path, "nrpt.ExactController", self.state_dict())

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"]) -> "ExactController":
        """A controller from a file written by :meth:`save`. Refused with
        ``ValueError``: what is not a regular file (a device such as ``/dev/zero``, a
        FIFO, a folder: not read at all), a file over 128 MiB (more than any
        controller's state; never read past that), a file that is not JSON of
        :meth:`save`'s layout, of another format or kind, whose checksum does not
        match its state (any edit that changes a value), and then everything
        :meth:`from_state_dict` refuses. A file of an earlier version (format 1, the state dict
        without a checksum) is refused with a message saying so: if you trust it,
        ``ExactController.from_state_dict(json.load(open(path)))`` loads it with
        every check but the checksum, and :meth:`save` writes it again in format 2."""
        return cls.from_state_dict(_statefile.read(path, "nrpt.ExactController"))

    def __getstate__(self) -> Dict[str, Any]:
        return self.state_dict()

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self._restore(state)

    def __repr__(self) -> str:
        lam = self.barrier()
        z = self.log_z
        est = "" if lam is None or z is None else f", barrier={lam:.4g}, log_z={z.value:.6g}±{z.se:.2g}"
        ref = ""
        if self.dim is not None:
            ref = f", reference='variational', dim={self.dim}, fits={self.reference_fits}"
        return (
            f"nrpt.ExactController(chains={self.chains}, scheme={self.scheme!r}, "
            f"window={self.window}{ref}, iteration={self.iteration}, round={self.round}{est})"
        )


def _reference_dim(reference: Any, dim: Any) -> int:
    """``dim`` for the native controller (0 with a fixed reference), checked."""
    if not isinstance(reference, str):
        raise TypeError(f"reference must be a str, 'fixed' or 'variational', got {reference!r}")
    if reference == "stabilized":
        raise ValueError(
            "reference='stabilized' (the two-leg stabilized ladder) is available in "
            "`nrpt run` only; ExactController takes 'fixed' or 'variational'"
        )
    if reference not in _REFERENCES:
        raise ValueError(f"reference must be 'fixed' or 'variational', got {reference!r}")
    if reference == "fixed":
        if dim is not None:
            raise ValueError(
                f"dim applies to reference='variational' (the states it fits), got dim={dim!r}"
            )
        return 0
    if dim is None:
        raise ValueError(
            "reference='variational' needs dim=D, the coordinates of a state (it fits a "
            "Gaussian to the states you tell)"
        )
    return _int("dim", dim, 1, 2**20)


def _check_nonfinite(policy: Any) -> None:
    if policy not in _NONFINITE:
        raise ValueError(f"nonfinite must be one of {_NONFINITE}, got {policy!r}")
