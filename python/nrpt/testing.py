"""Helpers for testing code against nrpt's Rust core.

:func:`record_tempering` runs the core's own driver (``nrpt_core::Tempering``:
explore, then exchange) on a toy target and records what it did at every iteration:
a :class:`nrpt.Controller` of the same configuration, told the recorded energies,
must make the recorded decisions bit for bit (``python/tests/test_controller.py``).

:func:`record_exact` runs the core's exact tempering with its own MALA explorers on the
Gaussian path and records the log-likelihoods it computed: an
:class:`nrpt.ExactController` told them must reach its grids and estimates bit for bit
(``python/tests/test_exact_controller.py``).
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

from . import _nrpt
from ._flags import argv

__all__ = ["record_exact", "record_tempering"]


def record_tempering(
    iterations: int, *, ensemble: int = 0, dtype: str = "float64", **options: Any
) -> Dict[str, np.ndarray]:
    """Runs ``iterations`` of the Rust driver on a toy target configured by the keys
    of ``nrpt run`` (``target``, ``chains``, ``window``, ``seed``, ``explorer``, the
    rules, ...) for ensemble ``ensemble`` in ``dtype``, and returns, one row per
    iteration: ``energies`` (the energies it computed, by replica, before the swaps;
    (N, P)), ``replica_at`` and ``ladder`` after the iteration ((N, P)), ``flags``
    (the swap flags of each pair: 1 indicator, 2 attempted, 4 swapped, 8 non-finite;
    (N, P - 1)), ``buffer``, and the running counts ``round_trips``,
    ``authors_round_trips``, ``restarts`` and ``nonfinite_energies`` ((N,)); and at
    the end ``pair_swaps`` (P - 1) and ``states`` (the final states by replica, (P,
    D))."""
    flags = argv("run", "record_tempering", options)
    return _nrpt.record_tempering(flags, int(ensemble), dtype, int(iterations))


def record_exact(
    iterations: int,
    *,
    chains: int = 6,
    dim: int = 3,
    seed: int = 0,
    window: int = 1,
    scheme: str = "deo",
    ensemble: int = 0,
) -> Dict[str, Any]:
    """Runs ``iterations`` of nrpt-core's exact tempering (``ExactTempering::step``: MALA
    at every beta > 0, exact draws at beta = 0) on the Gaussian path N(0, I_dim) ->
    N(0, I_dim / 10), with an :class:`nrpt.ExactController`'s defaults and these
    settings, and returns, one row per iteration: ``log_likelihoods`` (of every replica
    after its exploration, by replica; (N, P)), ``betas`` (the grid after the
    iteration, by level) and ``replica_at`` ((N, P)); ``rounds``, the report of every
    round that ended (as :attr:`nrpt.ExactStep.round`); and the path's closed forms
    ``log_evidence`` and ``global_barrier``."""
    code = 0 if scheme == "seo" else int(window)
    return _nrpt.record_exact(
        int(chains), int(dim), int(iterations), int(seed), code, int(ensemble)
    )
