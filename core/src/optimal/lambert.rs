//! The lower branch W₋₁ of Lambert's W function in `f64`, computed without tables.
//!
//! Lambert's W solves `w · e^w = z`. On `[−1/e, 0)` the equation has two real solutions;
//! the lower branch `W₋₁` takes the one with `w ≤ −1`, running from `W₋₁(−1/e) = −1`
//! down to `−∞` as `z → 0⁻` (Corless, Gonnet, Hare, Jeffrey and Knuth, "On the Lambert W
//! function", Adv. Comput. Math. 5, 1996). The optimal-window solver uses it for its
//! starting point: for small `x`, `x ln x ≈ −1/(P − 1)`, so `x⋆ ≈ exp(W₋₁(−1/(P − 1)))`.
//!
//! # Method
//!
//! A starting value, then Halley's iteration, in one of two forms chosen so that the
//! residual is computed without catastrophic cancellation:
//!
//! * Near the branch point (`z < −1/4`), with `u = w + 1 ∈ [−1.16, 0]` and
//!   `c = 1 + e·z = e·(z + 1/e)`, the equation `w e^w = z` is `h(u) = c` with
//!   `h(u) = (u − 1)e^u + 1 = Σ_{k≥2} (k − 1) u^k / k!`. `z + 1/e` is formed exactly
//!   (Sterbenz) against a two-part `1/e`, and `h` is summed from its series for `|u| ≤ 1`,
//!   so both sides keep full relative precision even where `w ≈ −1`. The start is the
//!   branch-point series `w ≈ −1 + p − p²/3 + 11p³/72 − 43p⁴/540 + …` with
//!   `p = −√(2c)` (Corless et al., eq. 4.22).
//! * Away from it (`−1/4 ≤ z < 0`), the logarithmic form `w + ln(−w) = ln(−z)`, started
//!   from the asymptotic expansion `L₁ − L₂ + L₂/L₁ + L₂(L₂ − 2)/(2L₁²) + …` with
//!   `L₁ = ln(−z)`, `L₂ = ln(−L₁)` (Corless et al., eq. 4.19). This form stays exact for
//!   subnormal `z`, where `e^w` would underflow.
//!
//! The branch series starts within 10⁻³ of the answer and the asymptotic expansion within
//! 0.02, so three or four Halley steps reach full `f64` precision (within one ulp of
//! mpmath at every tested point); the iteration is capped in any case.

use crate::error::Error;

/// The `f64` nearest to `1/e`; it lies about `1.24e-17` *above* `1/e`.
const INV_E_HI: f64 = 0.367_879_441_171_442_33;
/// `1/e − INV_E_HI`, so that `INV_E_HI + INV_E_LO` is `1/e` to about 10⁻³³.
const INV_E_LO: f64 = -1.242_875_367_278_836_3e-17;
/// Where the method switches from the branch-point form to the logarithmic form.
const SWITCH: f64 = -0.25;
/// Cap on Halley steps; two or three are used in practice.
const MAX_HALLEY: usize = 12;

/// The lower branch `W₋₁(z)` of Lambert's W function: the solution `w ≤ −1` of
/// `w · e^w = z`, for `z` in `[−1/e, 0)`.
///
/// Accurate to a few units in the last place over the whole domain, including next to
/// the branch point and for subnormal `z` (where `W₋₁(z) ≈ −751`).
///
/// The `f64` nearest to `−1/e` (`-0.36787944117144233`, which is what `-1.0 /
/// core::f64::consts::E` gives) lies about `1.2e-17` below the true branch point; it is
/// accepted as the branch point itself and yields `−1` (the exact value there is complex
/// with real part `−1 + 2·10⁻¹⁷`).
///
/// # Errors
///
/// [`Error::InvalidValue`] (name `"z"`) when `z` is NaN, below `−1/e` or not negative
/// (`0` and `−0` included: `W₋₁(0⁻) = −∞`).
pub fn lambert_w_m1(z: f64) -> Result<f64, Error> {
    if !(-INV_E_HI..0.0).contains(&z) {
        return Err(Error::InvalidValue {
            name: "z",
            value: z,
            allowed: "in [-1/e, 0)",
        });
    }
    if z < SWITCH {
        Ok(near_branch(z))
    } else {
        Ok(logarithmic(z))
    }
}

/// `h(u) = (u − 1)e^u + 1`, the branch-point residual, with full relative precision.
fn h(u: f64) -> f64 {
    if u.abs() <= 1.0 {
        // Σ_{k≥2} (k − 1) u^k / k!: for |u| ≤ 1 the largest term is the first, u²/2.
        let mut term = 0.5 * u * u;
        let mut sum = term;
        let mut k = 2.0;
        while k < 30.0 {
            term *= u / (k + 1.0);
            let add = k * term;
            sum += add;
            if add.abs() <= 1e-18 * sum.abs() {
                break;
            }
            k += 1.0;
        }
        sum
    } else {
        (u - 1.0) * libm::exp(u) + 1.0
    }
}

/// `W₋₁(z)` for `−1/e ≤ z < −1/4`, solved as `h(u) = 1 + e z` in `u = w + 1`.
fn near_branch(z: f64) -> f64 {
    // z + 1/e: the first sum is exact (Sterbenz, z and −INV_E_HI within a factor 2).
    let delta = (z + INV_E_HI) + INV_E_LO;
    if delta <= 0.0 {
        // Only z = −INV_E_HI, 1.2e-17 below the true branch point: treat it as −1/e.
        return -1.0;
    }
    let c = core::f64::consts::E * delta;
    let p = -libm::sqrt(2.0 * c);
    // Corless et al. (4.22), u = w + 1 = Σ_{k≥1} μ_k p^k, Horner form.
    const MU: [f64; 9] = [
        1.0,
        -1.0 / 3.0,
        11.0 / 72.0,
        -43.0 / 540.0,
        769.0 / 17_280.0,
        -221.0 / 8_505.0,
        680_863.0 / 43_545_600.0,
        -1_963.0 / 204_120.0,
        226_287_557.0 / 37_623_398_400.0,
    ];
    let mut poly = 0.0;
    for mu in MU.iter().rev() {
        poly = poly * p + mu;
    }
    let mut u = poly * p;
    // Halley on F(u) = h(u) − c, F' = u e^u, F'' = (1 + u) e^u.
    for _ in 0..MAX_HALLEY {
        let f = h(u) - c;
        let eu = libm::exp(u);
        let d1 = u * eu;
        let d2 = (1.0 + u) * eu;
        let denom = 2.0 * d1 * d1 - f * d2;
        if denom == 0.0 || !denom.is_finite() {
            break;
        }
        let step = 2.0 * f * d1 / denom;
        // Guard: u must stay ≤ 0 (the lower branch).
        let next = if u - step > 0.0 { 0.5 * u } else { u - step };
        let moved = (next - u).abs();
        u = next;
        if moved <= 2.0 * f64::EPSILON * u.abs() {
            break;
        }
    }
    u - 1.0
}

/// `W₋₁(z)` for `−1/4 ≤ z < 0`, solved as `w + ln(−w) = ln(−z)`.
fn logarithmic(z: f64) -> f64 {
    let l1 = libm::log(-z);
    let l2 = libm::log(-l1);
    // Corless et al. (4.19), to third order in 1/L₁.
    let mut w = l1 - l2
        + l2 / l1
        + l2 * (l2 - 2.0) / (2.0 * l1 * l1)
        + l2 * (6.0 - 9.0 * l2 + 2.0 * l2 * l2) / (6.0 * l1 * l1 * l1);
    // Halley on f(w) = w + ln(−w) − L₁, f' = 1 + 1/w, f'' = −1/w².
    for _ in 0..MAX_HALLEY {
        let f = w + libm::log(-w) - l1;
        let d1 = 1.0 + 1.0 / w;
        let d2 = -1.0 / (w * w);
        let denom = 2.0 * d1 * d1 - f * d2;
        if denom == 0.0 || !denom.is_finite() {
            break;
        }
        let step = 2.0 * f * d1 / denom;
        // Guard: w must stay below −1 (the lower branch, away from the branch point).
        let next = if w - step >= -1.0 {
            0.5 * (w - 1.0)
        } else {
            w - step
        };
        let moved = (next - w).abs();
        w = next;
        if moved <= 2.0 * f64::EPSILON * w.abs() {
            break;
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values from mpmath 1.3, `mpmath.lambertw(mpf(z), -1)` at 200 bits,
    /// rounded to the nearest `f64` (the real part at `−INV_E_HI`, where the exact value is
    /// `−0.99999999999999997748 − 8.2e-9 i`).
    const REFERENCE: [(f64, f64); 19] = [
        (-0.367_879_441_171_442_33, -1.0),
        (-0.367_879_441_171_442_3, -1.000_000_015_304_254_3),
        (-0.367_879_44, -1.000_079_805_761_595_8),
        (-0.3678, -1.020_927_239_409_425_5),
        (-0.367, -1.070_791_886_768_052_1),
        (-0.35, -1.349_717_252_192_249_1),
        (-1.0 / 3.0, -1.512_134_551_657_842_6),
        (-0.3, -1.781_337_023_421_627_7),
        (-0.25, -2.153_292_364_110_35),
        (-0.2, -2.542_641_357_773_526_5),
        (-0.1, -3.577_152_063_957_297),
        (-1e-2, -6.472_775_124_394_005),
        (-1e-3, -9.118_006_470_402_74),
        (-1e-5, -14.163_600_815_810_183),
        (-1e-10, -26.295_238_819_246_926),
        (-1e-20, -49.962_984_276_674_476),
        (-1e-100, -235.721_158_875_685_32),
        (-1e-300, -697.322_776_295_460_1),
        (-5e-324, -751.061_559_539_879_1),
    ];

    /// Relative tolerance against the mpmath values: 1e-14 (about 45 ulp; the observed
    /// error is at most a few ulp).
    const TOL: f64 = 1e-14;

    #[test]
    fn matches_mpmath() {
        for &(z, expected) in &REFERENCE {
            let w = lambert_w_m1(z).unwrap();
            let rel = ((w - expected) / expected).abs();
            assert!(
                rel < TOL,
                "W-1({z:e}) = {w:e}, mpmath {expected:e}, rel {rel:e}"
            );
        }
    }

    #[test]
    fn nearest_double_to_minus_inv_e_is_the_branch_point() {
        assert_eq!(lambert_w_m1(-1.0 / core::f64::consts::E), Ok(-1.0));
    }

    #[test]
    fn satisfies_defining_identity_on_a_sweep() {
        // z = −exp(−t) for t from 1 to 744 (geometric in −z), plus points crowding −1/e.
        let mut previous = -1.0;
        let mut t = 1.0 + 1e-12;
        while t < 744.0 {
            let z = -libm::exp(-t);
            let w = lambert_w_m1(z).unwrap();
            assert!(
                w <= -1.0 && w < previous + 1e-12,
                "not decreasing at z = {z:e}"
            );
            previous = w;
            // w e^w = z; e^w carries the relative error of w times |w|. (Only where z is
            // far from the subnormal range, where w e^w itself loses precision.)
            if z < -1e-290 {
                let residual = (w * libm::exp(w) - z) / z;
                let bound = 8.0 * f64::EPSILON * (1.0 + w.abs());
                assert!(
                    residual.abs() <= bound,
                    "z = {z:e}: w = {w}, residual {residual:e}"
                );
            }
            // The logarithmic identity holds without that amplification.
            let log_residual = w + libm::log(-w) - libm::log(-z);
            assert!(log_residual.abs() <= 8.0 * f64::EPSILON * w.abs());
            t *= 1.01;
        }
        for k in 3..=60 {
            let z = -INV_E_HI + libm::ldexp(1.0, -k);
            let w = lambert_w_m1(z).unwrap();
            let residual = (w * libm::exp(w) - z) / z;
            assert!(residual.abs() <= 8.0 * f64::EPSILON, "z = -1/e + 2^-{k}");
        }
    }

    #[test]
    fn continuous_across_the_switch() {
        let below = lambert_w_m1(-0.25 - 1e-15).unwrap();
        let at = lambert_w_m1(-0.25).unwrap();
        // dW/dz = W / (z (1 + W)) ≈ 7.4 at z = −1/4.
        assert!((below - at).abs() < 1e-13);
    }

    #[test]
    fn branch_series_region_is_accurate() {
        // Just above the branch point, W₋₁ = −1 − √(2 e δ) + …; check the slope.
        for k in [20, 30, 40, 50] {
            let d = libm::ldexp(1.0, -k);
            let z = -INV_E_HI + d;
            let delta = d + INV_E_LO; // z + 1/e
            let p = -libm::sqrt(2.0 * core::f64::consts::E * delta);
            let w = lambert_w_m1(z).unwrap();
            let series = -1.0 + p - p * p / 3.0;
            assert!((w - series).abs() <= 1e-15 + (p * p * p).abs());
        }
    }

    #[test]
    fn rejects_outside_domain() {
        for z in [
            f64::NAN,
            0.0,
            -0.0,
            1.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.368,
            -f64::from_bits(INV_E_HI.to_bits() + 1),
        ] {
            assert!(
                matches!(lambert_w_m1(z), Err(Error::InvalidValue { name: "z", .. })),
                "accepted {z}"
            );
        }
    }
}
