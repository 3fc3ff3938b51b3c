#!/usr/bin/env python3
"""Vectorized NumPy reference implementation of non-reversible parallel tempering.

The same algorithm as the Rust CPU engine (nrpt-core's driver; see
../../../shared/DESIGN.md, "One iteration k"): DEO_W windowed even/odd swaps with
the buffered swap rule, SGD explorers above an SGLD target level, stochastic-
approximation tuning of the learning-rate ladder and of the buffer, and round-trip
book-keeping, on the paper's 25-mode 2D target with noisy oracles.

It is the speed reference of the project's throughput claim, so it is written to be
a fair, competent NumPy program, not a strawman:

* every step is vectorized across all E ensembles and all P replicas at once; the
  only Python loop is the loop over iterations (the ladder update is the paper's
  Jacobi form, every rate from the previous ladder, so all levels go at once);
* the even/odd swap sweep is vectorized too: eligible pairs are disjoint, so all
  swaps of an iteration are one gather through a level permutation;
* all work arrays are preallocated and updated in place through ufunc ``out=``;
  gathers use flat indices with ``np.take(..., out=, mode="clip")``;
* all normals of an iteration come from one ``standard_normal(out=...)`` call of
  numpy's default Generator (PCG64), in the working dtype (float32 by default, to
  match the f32 engine; float64 with ``--dtype float64``).

Random numbers differ from the Rust engine's (Philox there, PCG64 here), so results
agree in distribution, not bit for bit.

Usage:
    python3 benches/numpy/nrpt_numpy.py --ensembles 256 --chains 16 --iters 2000 \
        --window 8 --json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

# The paper's toy experiment (DESIGN.md, "The paper's experiments we reproduce").
ETA_MIN = 0.003  # eta_0: the target level (SGLD, T = 1)
ETA_MAX = 0.6  # eta_{P-1}: the hottest SGD explorer
JACOBI_GUARD = 2.0 ** -20  # nrpt_core::adapt::JACOBI_GUARD
INITIAL_BUFFER = 4.0  # C_0
TARGET_RATE = 0.4  # S
GAMMA_A, GAMMA_ALPHA, GAMMA_B = 50.0, 0.8, 500.0  # gamma_k = a / (k^alpha + b)
GRAD_NOISE = 2.0  # grad U~ = grad U + 2 N(0, I)
ENERGY_NOISE = 2.0  # U~ = U + 2 N(0, 1)
WALL = 20.0  # regularizer 1[|x|^2 > 20] (|x|^2 - 20)
DIM = 2

# Round-trip phase of a replica (same state machine as nrpt-core's index process):
# 0 no end seen yet, 1 last end seen was level 0, 2 reached P-1 after level 0,
# 3 reached P-1 without having been at level 0.
PH_NONE, PH_BOTTOM, PH_TOP_FROM_BOTTOM, PH_TOP_FRESH = 0, 1, 2, 3
# Phase after arriving at the top, indexed by the phase before.
_TOP_NEXT = np.array([PH_TOP_FRESH, PH_TOP_FROM_BOTTOM, PH_TOP_FROM_BOTTOM, PH_TOP_FRESH],
                     dtype=np.int8)


def _simulate(E, P, iters, window, seed, dtype):
    """Runs `iters` iterations of E ensembles of P replicas; returns (stats, seconds)."""
    if P < 3:
        raise ValueError("chains must be >= 3")
    if window < 1:
        raise ValueError("window must be >= 1")
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)  # PCG64
    two_pi = dt.type(2.0 * math.pi)
    four_pi = dt.type(4.0 * math.pi)

    # ---- state ---------------------------------------------------------------
    x = (rng.random((E, P, DIM), dtype=dt) * dt.type(2.0) - dt.type(1.0))  # U(-1,1)^2
    xr = x.reshape(E * P, DIM)  # row view: replica r of ensemble e is row e*P + r
    levels = np.arange(P, dtype=np.intp)
    replica_at = np.tile(levels, (E, 1))  # (E, P): replica at each level
    level_of = replica_at.copy()  # (E, P): level of each replica
    # Ladder, float64 like the engine's, stored level-major (P, E) so that the
    # sequential update over levels works on contiguous rows.
    ladder = np.empty((P, E), dtype=np.float64)
    # Geometric start, from Python floats (correctly rounded pow, like libm's).
    geometric = [ETA_MIN * (ETA_MAX / ETA_MIN) ** (l / (P - 1)) for l in range(P)]
    ladder[:] = np.array(geometric)[:, None]
    ladder[0] = ETA_MIN
    ladder[P - 1] = ETA_MAX
    eta_f = np.empty((E, P), dtype=dt)  # ladder in the working dtype, ensemble-major
    np.copyto(eta_f, ladder.T, casting="same_kind")
    buffer = np.full(E, INITIAL_BUFFER)  # C, float64 like the engine's
    buffer_f = buffer.astype(dt)
    gates = np.ones((E, P - 1), dtype=bool)
    phase = np.zeros((E, P), dtype=np.int8)  # by replica (= by level at the start)
    phase[:, 0] = PH_BOTTOM
    phase[:, P - 1] = PH_TOP_FRESH
    phase_flat = phase.reshape(-1)
    indicator_counts = np.zeros((E, P - 1), dtype=np.int64)
    swap_counts = np.zeros((E, P - 1), dtype=np.int64)
    round_trips = 0
    restarts = 0

    # ---- scratch ---------------------------------------------------------------
    ens = np.arange(E, dtype=np.intp)
    row_off = (ens * P)[:, None]  # flat offset of each ensemble's (E, P) row
    eligible = [((np.arange(P - 1) + 1) % 2) == par for par in (0, 1)]  # by parity
    n_grad = E * P * DIM
    normals = np.empty(n_grad + E * P + E * DIM, dtype=dt)  # all draws of one iteration
    z_grad = normals[:n_grad].reshape(E, P, DIM)
    z_energy = normals[n_grad:n_grad + E * P].reshape(E, P)
    z_diff = normals[n_grad + E * P:].reshape(E, DIM)
    grad = np.empty((E, P, DIM), dtype=dt)
    tmp3 = np.empty((E, P, DIM), dtype=dt)
    r2 = np.empty((E, P), dtype=dt)
    slope = np.empty((E, P), dtype=dt)
    wall_mask = np.empty((E, P), dtype=bool)
    eta_rep = np.empty((E, P), dtype=dt)
    energy_rep = np.empty((E, P), dtype=dt)
    energy_lvl = np.empty((E, P), dtype=dt)
    energy_swapped = np.empty((E, P), dtype=dt)
    flat_idx = np.empty((E, P), dtype=np.intp)
    src = np.empty((E, P), dtype=np.intp)
    move = np.empty((E, P), dtype=np.intp)
    moved = np.empty((E, P), dtype=np.intp)
    level_off = levels + row_off  # flat index of (e, l)
    replica_new = np.empty((E, P), dtype=np.intp)
    hot_plus_c = np.empty((E, P - 1), dtype=dt)
    s = np.empty((E, P - 1), dtype=bool)  # swap indicators
    sw = np.empty((E, P - 1), dtype=bool)  # executed swaps
    grow = np.empty((P - 1, E), dtype=np.float64)  # exp((s - S) gamma), level-major
    from_above = np.empty((P - 2, E), dtype=np.float64)
    from_below = np.empty((P - 2, E), dtype=np.float64)
    sigma0 = np.empty(E, dtype=dt)
    n_ind = np.empty(E, dtype=np.intp)
    top = P - 1

    t_start = time.perf_counter()
    for k in range(iters):
        # 1. Explore: x <- x - eta_l grad U~(x) (+ sqrt(2 eta_0 T_0) xi at level 0).
        rng.standard_normal(out=normals, dtype=dt)
        np.add(level_of, row_off, out=flat_idx)
        np.take(eta_f, flat_idx, out=eta_rep, mode="clip")  # eta of each replica's level
        np.multiply(x, x, out=tmp3)
        np.add(tmp3[..., 0], tmp3[..., 1], out=r2)
        np.greater(r2, WALL, out=wall_mask)
        np.multiply(wall_mask, dt.type(2.0), out=slope)
        slope += dt.type(0.4)
        np.multiply(x, two_pi, out=tmp3)
        np.sin(tmp3, out=tmp3)
        tmp3 *= four_pi
        np.multiply(x, slope[..., None], out=grad)
        grad += tmp3
        z_grad *= dt.type(GRAD_NOISE)
        grad += z_grad  # noisy gradient
        grad *= eta_rep[..., None]
        x -= grad
        # Langevin noise at the target level (T_0 = 1; T_l = 0 above).
        np.multiply(eta_f[:, 0], dt.type(2.0), out=sigma0)
        np.sqrt(sigma0, out=sigma0)
        z_diff *= sigma0[:, None]
        rows0 = replica_at[:, 0] + row_off[:, 0]
        xr[rows0] += z_diff

        # 2. Energies U~ of every replica, then arranged by level.
        np.multiply(x, x, out=tmp3)
        np.add(tmp3[..., 0], tmp3[..., 1], out=r2)
        np.multiply(x, two_pi, out=tmp3)
        np.cos(tmp3, out=tmp3)
        np.add(tmp3[..., 0], tmp3[..., 1], out=energy_rep)
        energy_rep *= dt.type(-2.0)
        np.multiply(r2, dt.type(0.2), out=slope)
        energy_rep += slope
        r2 -= dt.type(WALL)
        np.maximum(r2, dt.type(0.0), out=r2)  # 1[|x|^2 > 20] (|x|^2 - 20)
        energy_rep += r2
        z_energy *= dt.type(ENERGY_NOISE)
        energy_rep += z_energy
        np.add(replica_at, row_off, out=flat_idx)
        np.take(energy_rep, flat_idx, out=energy_lvl, mode="clip")

        # 3. Indicators of every pair: s_l = 1[e_{l+1} + C < e_l].
        np.add(energy_lvl[:, 1:], buffer_f[:, None], out=hot_plus_c)
        np.less(hot_plus_c, energy_lvl[:, :-1], out=s)

        # 4. Windowed even/odd swaps (DEO_W). Eligible pairs are disjoint, so every
        # swap of the iteration is one gather through the level permutation `src`.
        if k % window == 0:
            gates.fill(True)
        np.logical_and(s, gates, out=sw)
        sw &= eligible[(k // window) % 2]
        np.logical_xor(gates, sw, out=gates)  # close the gates of the pairs that swapped
        # move[e, l]: +1 if the replica at level l goes up, -1 if down, else 0.
        move[:, -1] = 0
        np.copyto(move[:, :-1], sw)
        np.subtract(move[:, 1:], sw, out=move[:, 1:])
        np.add(move, level_off, out=src)  # new level l takes old level src[l]
        np.take(replica_at, src, out=replica_new, mode="clip")
        replica_at, replica_new = replica_new, replica_at
        np.add(level_of, row_off, out=flat_idx)
        np.take(move, flat_idx, out=moved, mode="clip")
        level_of += moved
        np.take(energy_lvl, src, out=energy_swapped, mode="clip")  # energies move too
        energy_lvl, energy_swapped = energy_swapped, energy_lvl

        # 5. Adaptation from this iteration's indicators.
        gamma = GAMMA_A / (k ** GAMMA_ALPHA + GAMMA_B)
        g_up = math.exp((1.0 - TARGET_RATE) * gamma)
        g_down = math.exp(-TARGET_RATE * gamma)
        np.multiply(s.T, g_up - g_down, out=grow)
        grow += g_down  # exp((s_l - S) gamma), one value per pair
        # nrpt-core's Jacobi update (the paper's Eq. 8-10): every inner rate from the
        # previous ladder, then kept within [2^-20 eta_min, 2^20 eta_max].
        np.subtract(ladder[1:-1], ladder[:-2], out=from_below)
        np.maximum(from_below, 0.0, out=from_below)
        from_below *= grow[:-1]
        from_below += ladder[:-2]
        np.subtract(ladder[2:], ladder[1:-1], out=from_above)
        np.maximum(from_above, 0.0, out=from_above)
        from_above *= grow[1:]
        np.subtract(ladder[2:], from_above, out=from_above)
        np.add(from_below, from_above, out=ladder[1:-1])
        ladder[1:-1] *= 0.5
        np.maximum(ladder[1:-1], ETA_MIN * JACOBI_GUARD, out=ladder[1:-1])
        np.minimum(ladder[1:-1], ETA_MAX / JACOBI_GUARD, out=ladder[1:-1])
        np.copyto(eta_f, ladder.T, casting="same_kind")
        np.sum(s, axis=1, out=n_ind)  # indicators per ensemble
        buffer += (n_ind * (1.0 / (P - 1)) - TARGET_RATE) * gamma
        np.maximum(buffer, 0.0, out=buffer)
        np.copyto(buffer_f, buffer, casting="same_kind")

        # 6. Book-keeping: per-pair counts, round trips and restarts. Only pair 0
        # brings a replica to level 0 and only pair P-2 one to level P-1.
        indicator_counts += s
        swap_counts += sw
        arrive = sw[:, 0]
        i0 = replica_at[:, 0] + row_off[:, 0]
        ph = phase_flat[i0]
        round_trips += int(np.count_nonzero(arrive & (ph == PH_TOP_FROM_BOTTOM)))
        restarts += int(np.count_nonzero(arrive & (ph >= PH_TOP_FROM_BOTTOM)))
        phase_flat[i0] = np.where(arrive, PH_BOTTOM, ph)
        arrive = sw[:, top - 1]
        it = replica_at[:, top] + row_off[:, 0]
        ph = phase_flat[it]
        phase_flat[it] = np.where(arrive, _TOP_NEXT[ph], ph)
    seconds = time.perf_counter() - t_start

    stats = {
        "round_trips": round_trips,
        "restarts": restarts,
        "ladder": ladder.T.copy(),  # (E, P)
        "buffer": buffer.copy(),
        "indicator_rate": indicator_counts / max(iters, 1),
        "swap_rate": swap_counts / max(iters, 1),
        "replica_at": replica_at.copy(),
        "level_of": level_of.copy(),
        "states": x.copy(),
    }
    return stats, seconds


def run(E, P, iters, window, seed, dtype="float32", warmup=20, details=False):
    """Runs the benchmark: a short untimed warm-up run, then `iters` timed iterations
    of E ensembles of P chains from a fresh start (k = 0).

    Returns a dict with round_trips, chain_steps (E * P * iters), seconds and
    chain_steps_per_sec (plus restarts and round_trips_per_1000: standard round trips
    per ensemble per 1000 iterations). With details=True the final ladder (E, P),
    buffer (E,), per-pair indicator and swap rates (E, P-1), permutation and states
    are included under "details".
    """
    if warmup > 0:
        _simulate(E, P, warmup, window, seed + 1_000_003, dtype)
    stats, seconds = _simulate(E, P, iters, window, seed, dtype)
    chain_steps = E * P * iters
    out = {
        "round_trips": stats["round_trips"],
        "restarts": stats["restarts"],
        "round_trips_per_1000": stats["round_trips"] * 1000.0 / (E * iters) if iters else 0.0,
        "chain_steps": chain_steps,
        "seconds": seconds,
        "chain_steps_per_sec": chain_steps / seconds if seconds > 0 else float("inf"),
    }
    if details:
        out["details"] = stats
    return out


def _blas_info():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    return [
        {k: d.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
        for d in threadpool_info()
    ]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ensembles", "-E", type=int, default=256)
    p.add_argument("--chains", "-P", type=int, default=16)
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--window", "-W", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--warmup", type=int, default=20, help="untimed warm-up iterations")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--blas", action="store_true",
                   help="also report the BLAS kernel (threadpoolctl) in the JSON")
    a = p.parse_args(argv)
    r = run(a.ensembles, a.chains, a.iters, a.window, a.seed, a.dtype, warmup=a.warmup)
    result = {
        "ensembles": a.ensembles,
        "chains": a.chains,
        "iters": a.iters,
        "window": a.window,
        "dtype": a.dtype,
        "seconds": r["seconds"],
        "chain_steps_per_sec": r["chain_steps_per_sec"],
        "round_trips_per_1000": r["round_trips_per_1000"],
        "numpy_version": np.__version__,
    }
    if a.blas:
        result["blas"] = _blas_info()
    if a.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:>22}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
