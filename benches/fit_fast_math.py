#!/usr/bin/env python3
"""The coefficients of the CPU engine's fast mode (sampling/src/engine/simd.rs, `Fast`):
least-maximum-error polynomial fits (Lawson's iteratively reweighted least squares on
Chebyshev points) of sin 2πf and cos 2πf − 1 on f ∈ [−1/8, 1/8] and of
ln((1 + s)/(1 − s)) − 2s on |s| ≤ (√2 − 1)/(√2 + 1), printed with their maximum errors
(log2) in f64 and when evaluated in f32 as the engine does (Horner, no FMA).
Usage: python3 benches/fit_fast_math.py   (NumPy)"""
import numpy as np


def fit(fun, powers, lo, hi, n=4000, rounds=200):
    k = np.arange(n)
    x = 0.5 * (lo + hi) + 0.5 * (hi - lo) * np.cos(np.pi * (k + 0.5) / n)
    a = np.stack([x**p for p in powers], 1)
    y = fun(x)
    w = np.ones(n)
    for _ in range(rounds):
        r = np.sqrt(w)
        c, *_ = np.linalg.lstsq(a * r[:, None], y * r, rcond=None)
        e = np.abs(a @ c - y)
        w = w * e
        w /= w.sum()
    return c, float(np.max(np.abs(a @ c - y)))


def main():
    smax = (np.sqrt(2) - 1) / (np.sqrt(2) + 1)
    s, es = fit(lambda f: np.sin(2 * np.pi * f), [1, 3, 5], -0.125, 0.125)
    c, ec = fit(lambda f: np.cos(2 * np.pi * f) - 1, [2, 4, 6], -0.125, 0.125)
    l, el = fit(lambda t: np.log((1 + t) / (1 - t)) - 2 * t, [3, 5], -smax, smax)
    S, C, L = (np.float32(v) for v in s), (np.float32(v) for v in c), (np.float32(v / 2) for v in l)
    S, C, L = list(S), list(C), list(L)
    print("FAST_SIN", [float(v) for v in S], f"log2 error {np.log2(es):.2f}")
    print("FAST_COS", [float(v) for v in C], f"log2 error {np.log2(ec):.2f}")
    print("FAST_LN ", [float(v) for v in L], f"log2 error {np.log2(el):.2f} (in ln m)")
    f = np.linspace(-0.125, 0.125, 200001).astype(np.float32)
    f2 = f * f
    sv = f * (S[0] + f2 * (S[1] + f2 * S[2]))
    cv = np.float32(1) + f2 * (C[0] + f2 * (C[1] + f2 * C[2]))
    t = 2 * np.pi * f.astype(np.float64)
    print("f32 evaluation: sin", np.log2(np.max(np.abs(sv - np.sin(t)))),
          "cos", np.log2(np.max(np.abs(cv - np.cos(t)))))


if __name__ == "__main__":
    main()
