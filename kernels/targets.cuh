// targets.cuh: the potentials of nrpt_core::target for F = f32, in the same operation
// order as core's generic code (constants are `F::from_f64(c)`: the f64 value rounded
// to f32 once).
#pragma once
#include "fastmath.cuh"

/// Modes2d::WALL.
#define NRPT_MODES2D_WALL 20.0f
/// π as f64 (core::f64::consts::PI).
#define NRPT_PI_F64 3.141592653589793

/// Modes2d::energy: 0.2|x|² − 2(cos 2πa + cos 2πb) + 1[|x|² > 20](|x|² − 20), the
/// cosines by the branch-free sin_cos_2pi, as core computes them.
NRPT_HD float nrpt_modes2d_energy(float a, float b) {
    float r2 = a * a + b * b;
    float ca = nrpt_sin_cos_2pi(a).c;
    float cb = nrpt_sin_cos_2pi(b).c;
    float u = (float)0.2 * r2 - 2.0f * (ca + cb);
    if (r2 > NRPT_MODES2D_WALL) {
        u += r2 - NRPT_MODES2D_WALL;
    }
    return u;
}

/// Modes2d::gradient.
NRPT_HD void nrpt_modes2d_gradient(float a, float b, float* ga, float* gb) {
    const float four_pi = (float)(4.0 * NRPT_PI_F64);
    float r2 = a * a + b * b;
    float slope = (r2 > NRPT_MODES2D_WALL) ? (float)(0.4 + 2.0) : (float)0.4;
    *ga = slope * a + four_pi * nrpt_sin_cos_2pi(a).s;
    *gb = slope * b + four_pi * nrpt_sin_cos_2pi(b).s;
}

/// One term of SumModes::energy, `0.2 x² − 2 cos 2πx` (core: `q * xj * xj - c * cos`);
/// the energy is the sum of the terms in coordinate order starting from 0.
NRPT_HD float nrpt_sum_modes_term(float x) {
    return (float)0.2 * x * x - (float)2.0 * nrpt_sin_cos_2pi(x).c;
}

/// One coordinate of SumModes::gradient, `0.4 x + 4π sin 2πx`.
NRPT_HD float nrpt_sum_modes_grad(float x) {
    const float four_pi = (float)(4.0 * NRPT_PI_F64);
    return (float)0.4 * x + four_pi * nrpt_sin_cos_2pi(x).s;
}
