"""Type stubs of the package ``nrpt`` (see ``nrpt/__init__.py`` for the docs)."""

import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, Literal, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from ._exact import ExactController as ExactController
from ._exact import ExactStep as ExactStep
from ._exact import GaussianReference as GaussianReference
from ._exact import LogZ as LogZ

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

__version__: str

_Path = Union[str, os.PathLike[str]]
_Window = Union[int, Literal["opt", "optimal", "paper", "seo"], str]
_Dtype = Union[Literal["float32", "float64", "f32", "f64"], type, np.dtype[Any]]
_Nonfinite = Literal["raise", "warn", "skip"]
_Rule = Literal["buffered", "metropolis"]
_Explorer = Literal["sgd", "sgld", "msgd"]
_Preset = Literal["paper", "authors-code"]
_Backend = Literal["auto", "cpu", "cuda"]
_Math = Literal["exact", "fma", "fast"]
_Data = Union[_Path, npt.ArrayLike, None]

# -- the optimal window and Lemma 1 ----------------------------------------------------

def optimal_window(chains: int, swap_rate: float) -> int:
    """The best integer window for P chains at swap rate S (``window="opt"``)."""

def w_star(chains: int, swap_rate: float) -> float:
    """The exact minimizer W* of Lemma 1's E[T] over real windows W >= 1."""

def paper_window(chains: int, swap_rate: float) -> int:
    """The paper's asymptotic window ceil((ln P + ln ln P) / -ln(1 - S))."""

def x_star(chains: int) -> Optional[float]:
    """The root x* = r^W* of the stationarity equation (None for P <= 3)."""

def expected_round_trip(chains: int, window: float, swap_rate: float) -> float:
    """Lemma 1's E[T] = 2WP (1 + (P - 1) r^W / (1 - r^W)), r = 1 - S."""

def round_trip_rate(chains: int, window: float, swap_rate: float) -> float:
    """Lemma 1's round trips per iteration of one ensemble, P / E[T]."""

def flat(table: Mapping[str, Any]) -> Dict[str, np.ndarray]: ...
def jsonable(value: Any) -> Any: ...
def read_json(path: _Path) -> Any:
    """A JSON file of nrpt's, ``"NaN"``, ``"inf"`` and ``"-inf"`` read as floats."""
def unflatten(theta: npt.ArrayLike, layers: Sequence[int]) -> Dict[str, npt.NDArray[Any]]: ...

AUTO_BUFFER_ITERATIONS: int
RUN_EXTRAS: Dict[str, Tuple[str, ...]]

class Stats(Dict[str, Any]):
    """The dict of ``Controller.stats()``; the names before 0.2 read with a warning."""

    def __missing__(self, key: Any) -> Any: ...
    def __reduce__(self) -> Any: ...
def window(chains: int, swap_rate: float) -> Dict[str, Any]:
    """``nrpt window --json`` as a dict."""

# -- the controller --------------------------------------------------------------------

@dataclass(frozen=True, repr=False)
class Decision:
    """What one :meth:`Controller.tell` decided (by pair: P - 1; by level or replica: P)."""

    iteration: int
    swapped: npt.NDArray[np.bool_]
    indicators: npt.NDArray[np.bool_]
    attempted: npt.NDArray[np.bool_]
    nonfinite: npt.NDArray[np.bool_]
    replica_at: npt.NDArray[np.int64]
    level_of: npt.NDArray[np.int64]
    ladder: npt.NDArray[np.float64]
    learning_rates: npt.NDArray[np.float64]
    temperatures: npt.NDArray[np.float64]
    changed_level: npt.NDArray[np.bool_]
    momentum_reset: npt.NDArray[np.bool_]
    buffer: float
    round_trips: int
    swaps: int
    indicator_count: int
    nonfinite_pairs: int

class Controller:
    """The swap controller for your own training loop (ask/tell): energies by replica
    in, swaps, permutation, learning rates and momentum resets out; the Rust core's
    decisions bit for bit."""

    def __init__(
        self,
        chains: int,
        *,
        window: Optional[_Window] = None,
        swap_rate: Optional[float] = None,
        eta_min: Optional[float] = None,
        eta_max: Optional[float] = None,
        rule: Optional[_Rule] = None,
        explorer: Optional[_Explorer] = None,
        adapt_ladder: Optional[bool] = None,
        adapt_buffer: Optional[bool] = None,
        gamma_a: Optional[float] = None,
        gamma_alpha: Optional[float] = None,
        gamma_b: Optional[float] = None,
        buffer_scale: Optional[float] = None,
        seed: Optional[int] = None,
        preset: Optional[_Preset] = None,
        pair_energies: Optional[Literal["per-level", "fresh-per-test"]] = None,
        sweep_order: Optional[Literal["simultaneous", "sequential"]] = None,
        ladder_update: Optional[Literal["jacobi", "in-place"]] = None,
        buffer_projection: Optional[Literal["non-negative", "unprojected"]] = None,
        momentum_on_swap: Optional[Literal["reset", "carry"]] = None,
        ladder_decimals: Optional[int] = None,
        buffer: Union[float, Literal["auto"], None] = None,
        ensemble: int = 0,
        dtype: _Dtype = "float64",
        nonfinite: _Nonfinite = "raise",
        rules: Literal["practitioner", "paper"] = "practitioner",
        energy: Optional[Literal["mean", "sum"]] = None,
        n_data: Optional[int] = None,
        callback: Optional[Callable[[Decision], Any]] = None,
    ) -> None: ...
    def ask(self) -> npt.NDArray[np.float64]:
        """The learning rate of each model (by replica) for its next step."""
    def tell(self, energies: npt.ArrayLike, iteration: Optional[int] = None) -> Decision:
        """Swaps, adaptation and counts for the P energies, by replica."""
    def noise_scales(self, momentum: float = 0.0) -> npt.NDArray[np.float64]:
        """By replica: sqrt(2 (1 - momentum) eta T / N) (N = 1 for summed energies)."""
    def set_ladder_ends(self, eta_min: float, eta_max: float) -> None:
        """Moves the ladder's ends, the inner rates in proportion on the log scale."""
    def scale_ladder(self, factor: float) -> None:
        """Multiplies every learning rate by factor."""
    @property
    def rules(self) -> str: ...
    @property
    def energy(self) -> str: ...
    @property
    def n_data(self) -> Optional[int]: ...
    @property
    def chains(self) -> int: ...
    @property
    def iteration(self) -> int: ...
    @property
    def buffer(self) -> float: ...
    @property
    def window(self) -> int: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def ensemble(self) -> int: ...
    @property
    def nonfinite(self) -> str: ...
    @property
    def ladder(self) -> npt.NDArray[np.float64]: ...
    @property
    def temperature_ladder(self) -> npt.NDArray[np.float64]: ...
    @property
    def replica_at(self) -> npt.NDArray[np.int64]: ...
    @property
    def level_of(self) -> npt.NDArray[np.int64]: ...
    @property
    def learning_rates(self) -> npt.NDArray[np.float64]: ...
    @property
    def temperatures(self) -> npt.NDArray[np.float64]: ...
    @property
    def config(self) -> Dict[str, Any]: ...
    def stats(self) -> Stats: ...
    def state_dict(self) -> Dict[str, Any]:
        """The whole state as plain JSON values, without a checksum (pickles and
        ``torch.save`` keep it as it is)."""
    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any]) -> "Controller":
        """Checked first: every field's type (``TypeError``) and value, unknown or
        missing keys, and a controller's invariants (permutation and inverse,
        lengths, the ladder's order and ends, temperatures, buffer, iteration at most
        2**53, counts, calibration) (``ValueError``)."""
    def save(self, path: _Path) -> None:
        """JSON file format 2: ``{"format": 2, "kind": "nrpt.Controller", "sha256":
        ..., "state": state_dict()}``, the SHA-256 over the state's canonical JSON
        (sorted keys, no spaces)."""
    @classmethod
    def load(cls, path: _Path) -> "Controller":
        """A file of :meth:`save`: ``ValueError`` for a device, FIFO or folder (not
        read), a file over 128 MiB (not read past it), another layout, format or kind,
        a checksum that does not match, a file of format 1 (earlier versions, no
        checksum: ``from_state_dict(json.load(f))`` loads it), and what
        :meth:`from_state_dict` refuses."""
    def __getstate__(self) -> Dict[str, Any]: ...
    def __setstate__(self, state: Mapping[str, Any]) -> None: ...

# -- the toy targets' exploration ------------------------------------------------------

class ToyExplorer:
    """The Rust driver's exploration step of the toy targets over NumPy states."""

    def __init__(
        self,
        chains: Optional[int] = None,
        *,
        target: Optional[Literal["modes2d", "sum-modes"]] = None,
        dim: Optional[int] = None,
        noise: Optional[float] = None,
        explorer: Optional[_Explorer] = None,
        momentum: Optional[float] = None,
        seed: Optional[int] = None,
        ensemble: int = 0,
        dtype: _Dtype = "float64",
    ) -> None: ...
    @property
    def chains(self) -> int: ...
    @property
    def dim(self) -> int: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    def initial_states(self) -> npt.NDArray[Any]: ...
    def step(
        self,
        states: npt.NDArray[Any],
        learning_rates: npt.ArrayLike,
        temperatures: npt.ArrayLike,
        iteration: int,
        momenta: Optional[npt.NDArray[Any]] = None,
    ) -> npt.NDArray[Any]: ...

# -- the engines -----------------------------------------------------------------------

def run(
    *,
    progress: bool = False,
    strict: bool = False,
    config: Optional[_Path] = None,
    # The configuration keys, generated from sampling/src/config/keys.rs by host/tests/it/cli.rs
    # (NRPT_BLESS=1 cargo test -p nrpt-host --test it cli::reference):
    target: Optional[Literal["modes2d", "sum-modes", "classifier", "gaussian-path", "mixture"]] = None,
    dim: Optional[int] = None,
    chains: Union[int, Literal["auto"], None] = None,
    ensembles: Optional[int] = None,
    iterations: Optional[int] = None,
    window: Optional[_Window] = None,
    rule: Optional[Literal["buffered", "metropolis"]] = None,
    swap_rate: Optional[float] = None,
    eta_min: Optional[float] = None,
    eta_max: Optional[float] = None,
    explorer: Optional[Literal["sgd", "sgld", "msgd", "mala", "hmc"]] = None,
    explorer_steps: Optional[int] = None,
    leapfrog_steps: Optional[int] = None,
    reference: Optional[Literal["fixed", "variational", "stabilized"]] = None,
    exact: Optional[bool] = None,
    quick: Optional[bool] = None,
    ais: Optional[int] = None,
    ais_steps: Optional[int] = None,
    momentum: Optional[float] = None,
    buffer: Optional[float] = None,
    noise: Optional[float] = None,
    adapt_ladder: Optional[bool] = None,
    adapt_buffer: Optional[bool] = None,
    gamma_a: Optional[float] = None,
    gamma_alpha: Optional[float] = None,
    gamma_b: Optional[float] = None,
    buffer_scale: Optional[float] = None,
    seed: Optional[int] = None,
    preset: Optional[Literal["paper", "authors-code"]] = None,
    pair_energies: Optional[Literal["per-level", "fresh-per-test"]] = None,
    sweep_order: Optional[Literal["simultaneous", "sequential"]] = None,
    ladder_update: Optional[Literal["jacobi", "in-place"]] = None,
    buffer_projection: Optional[Literal["non-negative", "unprojected"]] = None,
    step_energy: Optional[Literal["after-step", "shared-batch"]] = None,
    momentum_on_swap: Optional[Literal["reset", "carry"]] = None,
    ladder_decimals: Optional[int] = None,
    inclusive_iterations: Optional[bool] = None,
    dataset: Optional[str] = None,
    data: _Data = None,
    labels: _Data = None,
    test_data: _Data = None,
    test_labels: _Data = None,
    hidden: Union[Sequence[int], str, None] = None,
    batch: Optional[int] = None,
    prior_sigma: Optional[float] = None,
    target_arg: Optional[str] = None,
    math: Optional[Literal["exact", "fma", "fast"]] = None,
    precision: Optional[Literal["f32", "bf16", "f16"]] = None,
    thin: Optional[int] = None,
    warmup: Optional[int] = None,
    # (end of the generated keys)
    threads: Optional[int] = None,
    backend: Optional[_Backend] = None,
    device: Optional[int] = None,
) -> Dict[str, Any]:
    """``nrpt run``, its outputs as a dict of values and NumPy arrays."""

def reproduce(
    *,
    progress: bool = False,
    quick: bool = False,
    ensembles: Optional[int] = None,
    iterations: Optional[int] = None,
    seed: Optional[int] = None,
    threads: Optional[int] = None,
    backend: Optional[_Backend] = None,
    math: Optional[_Math] = None,
    device: Optional[int] = None,
    out: Optional[_Path] = None,
    force: bool = False,
) -> Dict[str, Any]:
    """``nrpt reproduce``: ``results.json`` as a dict."""

def deep(
    *,
    progress: bool = False,
    quick: bool = False,
    ensembles: Optional[int] = None,
    epochs: Optional[float] = None,
    pretrain_epochs: Optional[float] = None,
    chains: Optional[int] = None,
    swap_rate: Optional[float] = None,
    swap_sweep: Union[Sequence[float], str, None] = None,
    eta_min: Optional[float] = None,
    eta_max: Optional[float] = None,
    hidden: Union[Sequence[int], str, None] = None,
    batch: Optional[int] = None,
    prior_sigma: Optional[float] = None,
    data: _Data = None,
    labels: _Data = None,
    test_data: _Data = None,
    test_labels: _Data = None,
    seed: Optional[int] = None,
    shard: Optional[str] = None,
    threads: Optional[int] = None,
    backend: Optional[_Backend] = None,
    math: Optional[_Math] = None,
    device: Optional[int] = None,
    out: Optional[_Path] = None,
    force: bool = False,
) -> Dict[str, Any]:
    """``nrpt deep``: ``results.json`` as a dict."""

# -- your own predictive against a reference posterior --------------------------------

def dataset(name: Literal["digits", "mnist1d"]) -> Dict[str, Any]:
    """A bundled data set as nrpt's models see it: ``data``, ``labels``, ``test_data``,
    ``test_labels`` (arrays), ``features``, ``classes``, ``name``, ``description``,
    ``data_sha256``."""

def fidelity(
    probs: npt.ArrayLike,
    *,
    labels: npt.ArrayLike,
    dataset: str,
    layers: Sequence[int],
    prior_sigma: float,
    reference: _Path = "digits-mlp64",
    seed: int = 0,
) -> Dict[str, Any]:
    """Your predictive scored against a reference posterior: ``accuracy``, ``nll``,
    ``ece``, ``agreement``, ``total_variation``, each with ``_ci``, and ``reference``."""

def scale(
    *,
    progress: bool = False,
    target: Optional[Literal["bernoulli", "modes2d", "sum-modes", "gaussian-path"]] = None,
    simulator: Optional[Literal["bitsliced", "lanes"]] = None,
    chains: Union[Sequence[int], str, None] = None,
    window: Union[Sequence[Union[int, str]], str, None] = None,
    swap_rate: Union[Sequence[float], float, str, None] = None,
    rates_file: Optional[_Path] = None,
    ensembles: Optional[int] = None,
    target_se: Optional[float] = None,
    max_iterations: Optional[int] = None,
    warmup: Optional[int] = None,
    seed: Optional[int] = None,
    dim: Optional[int] = None,
    part: Optional[str] = None,
    threads: Optional[int] = None,
    backend: Optional[_Backend] = None,
    math: Optional[_Math] = None,
    device: Optional[int] = None,
    out: Optional[_Path] = None,
    force: bool = False,
) -> Dict[str, Any]:
    """``nrpt scale``: ``results.json`` as a dict, with ``columns`` of arrays."""
