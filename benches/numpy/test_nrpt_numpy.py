#!/usr/bin/env python3
"""Checks of the NumPy reference implementation (no pytest needed).

    python3 benches/numpy/test_nrpt_numpy.py

Exits nonzero on failure. Takes well under 30 s.

1. The vectorized code agrees with a plain loop-by-loop transcription of the
   algorithm (DESIGN.md "One iteration k", the full adaptation formula with its
   max(0, .) and clamps, swaps pair by pair, round trips by the index-process state
   machine on every arrival) fed with the same random draws.
2. After a run the ladder ends are exactly eta_min and eta_max, the ladder is
   non-decreasing, and level_of is the inverse of replica_at.
3. The round-trip rate with W = 8 exceeds 1.5 times the rate with W = 1
   (E = 32, P = 16, 5000 iterations, fixed seed).
"""

import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nrpt_numpy as nn  # noqa: E402


def reference(E, P, iters, window, seed):
    """Loop-by-loop float64 transcription of the algorithm, same draws as nn._simulate."""
    rng = np.random.default_rng(seed)
    x = rng.random((E, P, 2), dtype=np.float64) * 2.0 - 1.0
    replica_at = [list(range(P)) for _ in range(E)]
    level_of = [list(range(P)) for _ in range(E)]
    ladder = [[nn.ETA_MIN * (nn.ETA_MAX / nn.ETA_MIN) ** (l / (P - 1)) for l in range(P)]
              for _ in range(E)]
    for lad in ladder:
        lad[0], lad[-1] = nn.ETA_MIN, nn.ETA_MAX
    buffer = [nn.INITIAL_BUFFER] * E
    gates = [[True] * (P - 1) for _ in range(E)]
    phase = [[nn.PH_NONE] * P for _ in range(E)]
    for e in range(E):
        phase[e][0], phase[e][P - 1] = nn.PH_BOTTOM, nn.PH_TOP_FRESH
    ind_counts = np.zeros((E, P - 1), dtype=np.int64)
    swap_counts = np.zeros((E, P - 1), dtype=np.int64)
    round_trips = restarts = 0
    n_grad = E * P * 2
    two_pi = 2.0 * math.pi

    def arrive(e, r, level):
        nonlocal round_trips, restarts
        ph = phase[e][r]
        if level == 0:
            restarts += ph in (nn.PH_TOP_FROM_BOTTOM, nn.PH_TOP_FRESH)
            round_trips += ph == nn.PH_TOP_FROM_BOTTOM
            phase[e][r] = nn.PH_BOTTOM
        elif level == P - 1:
            if ph == nn.PH_BOTTOM:
                phase[e][r] = nn.PH_TOP_FROM_BOTTOM
            elif ph == nn.PH_NONE:
                phase[e][r] = nn.PH_TOP_FRESH

    for k in range(iters):
        z = rng.standard_normal(n_grad + E * P + E * 2)
        z_grad = z[:n_grad].reshape(E, P, 2)
        z_energy = z[n_grad:n_grad + E * P].reshape(E, P)
        z_diff = z[n_grad + E * P:].reshape(E, 2)
        gamma = nn.GAMMA_A / (k ** nn.GAMMA_ALPHA + nn.GAMMA_B)
        par = (k // window) % 2
        for e in range(E):
            # 1. explore
            for r in range(P):
                lvl = level_of[e][r]
                eta = ladder[e][lvl]
                r2 = x[e, r, 0] ** 2 + x[e, r, 1] ** 2
                slope = 0.4 + (2.0 if r2 > nn.WALL else 0.0)
                g = slope * x[e, r] + 4.0 * math.pi * np.sin(two_pi * x[e, r]) \
                    + nn.GRAD_NOISE * z_grad[e, r]
                x[e, r] = x[e, r] - eta * g
                if lvl == 0:  # T_0 = 1, T_l = 0 above
                    x[e, r] = x[e, r] + math.sqrt(2.0 * eta * 1.0) * z_diff[e]
            # 2. energies by level
            en = [0.0] * P
            for r in range(P):
                a, b = x[e, r]
                r2 = a * a + b * b
                u = 0.2 * r2 - 2.0 * (np.cos(two_pi * a) + np.cos(two_pi * b))
                if r2 > nn.WALL:
                    u += r2 - nn.WALL
                en[level_of[e][r]] = u + nn.ENERGY_NOISE * z_energy[e, r]
            # 3.-4. indicators from the energies before any swap; windowed swaps
            if k % window == 0:
                gates[e] = [True] * (P - 1)
            s = [en[l + 1] + buffer[e] < en[l] for l in range(P - 1)]
            swapped = []
            for l in range(P - 1):
                if (l + 1) % 2 == par and gates[e][l] and s[l]:
                    ra, rb = replica_at[e][l], replica_at[e][l + 1]
                    replica_at[e][l], replica_at[e][l + 1] = rb, ra
                    level_of[e][rb], level_of[e][ra] = l, l + 1
                    gates[e][l] = False
                    swapped.append(l)
            # 5. adaptation (the paper's formula, every rate from the previous ladder)
            lad = ladder[e]
            last = list(lad)
            for l in range(1, P - 1):
                below, here, above = last[l - 1], last[l], last[l + 1]
                fb = below + max(0.0, here - below) * math.exp((s[l - 1] - nn.TARGET_RATE) * gamma)
                fa = above - max(0.0, above - here) * math.exp((s[l] - nn.TARGET_RATE) * gamma)
                new = 0.5 * (fb + fa)
                lad[l] = min(max(new, nn.ETA_MIN * nn.JACOBI_GUARD), nn.ETA_MAX / nn.JACOBI_GUARD)
            mean = sum(s) / (P - 1)
            buffer[e] = max(0.0, buffer[e] + (mean - nn.TARGET_RATE) * gamma)
            # 6. book-keeping
            ind_counts[e] += s
            for l in swapped:
                swap_counts[e, l] += 1
                for level in (l, l + 1):
                    arrive(e, replica_at[e][level], level)
    return {
        "x": x, "replica_at": np.array(replica_at), "level_of": np.array(level_of),
        "ladder": np.array(ladder), "buffer": np.array(buffer),
        "indicators": ind_counts, "swaps": swap_counts,
        "round_trips": round_trips, "restarts": restarts,
    }


FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)


def test_matches_loop_reference():
    for E, P, iters, window, seed in [(3, 6, 400, 3, 11), (2, 5, 300, 1, 5), (2, 8, 300, 8, 2)]:
        ref = reference(E, P, iters, window, seed)
        got, _ = nn._simulate(E, P, iters, window, seed, "float64")
        tag = f"E={E} P={P} W={window}"
        check(np.array_equal(got["replica_at"], ref["replica_at"]), f"{tag}: replica_at")
        check(np.array_equal(got["level_of"], ref["level_of"]), f"{tag}: level_of")
        check(np.allclose(got["ladder"], ref["ladder"], rtol=1e-9, atol=0), f"{tag}: ladder")
        check(np.allclose(got["buffer"], ref["buffer"], rtol=1e-9, atol=1e-12), f"{tag}: buffer")
        check(np.allclose(got["states"], ref["x"], rtol=1e-9, atol=1e-9), f"{tag}: states")
        check(np.array_equal(np.rint(got["indicator_rate"] * iters), ref["indicators"]),
              f"{tag}: indicator counts")
        check(np.array_equal(np.rint(got["swap_rate"] * iters), ref["swaps"]),
              f"{tag}: swap counts")
        check((got["round_trips"], got["restarts"]) == (ref["round_trips"], ref["restarts"]),
              f"{tag}: round trips {got['round_trips']} / restarts {got['restarts']} "
              f"(reference {ref['round_trips']} / {ref['restarts']})")


def test_ladder_and_rates():
    E, P, iters, seed = 32, 16, 5000, 7
    rates = {}
    for window in (8, 1):
        r = nn.run(E, P, iters, window, seed, "float32", warmup=0, details=True)
        d = r["details"]
        lad = d["ladder"]
        check(bool(np.all(lad[:, 0] == nn.ETA_MIN) and np.all(lad[:, -1] == nn.ETA_MAX)),
              f"W={window}: ladder ends fixed")
        check(bool(np.all((lad > 0) & np.isfinite(lad))), f"W={window}: ladder positive, finite")
        inv = np.take_along_axis(d["level_of"], d["replica_at"], axis=1)
        check(bool(np.all(inv == np.arange(P))), f"W={window}: level_of inverts replica_at")
        check(bool(np.all(np.isfinite(d["states"]))), f"W={window}: states finite")
        rates[window] = r["round_trips_per_1000"]
    check(rates[8] > 1.5 * rates[1],
          f"round trips / 1000 it: W=8 {rates[8]:.1f} > 1.5 x W=1 {rates[1]:.1f}")


def main():
    t0 = time.perf_counter()
    test_matches_loop_reference()
    test_ladder_and_rates()
    print(f"{time.perf_counter() - t0:.1f} s")
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
