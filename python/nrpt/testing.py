"""Helpers for testing code against nrpt's Rust core.

:func:`record_tempering` runs the core's own driver (``nrpt_core::Tempering``:
explore, then exchange) on a toy target and records what it did at every iteration:
a :class:`nrpt.Controller` of the same configuration, told the recorded energies,
must make the recorded decisions bit for bit (``python/tests/test_controller.py``).
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

from . import _nrpt
from ._flags import argv

__all__ = ["record_tempering"]


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
