//! The instruction sets of the CPU engine's vectorized paths, chosen at run time, and
//! what their lane loops share.

use nrpt_core::fastmath::{
    ln_normal, quarter_turn_uniform, rotate_quarter_turns, sin_cos_2pi_uniform, sin_cos_2pi_with,
};
use nrpt_core::rng::uniform_f32;

/// The code paths of the CPU engine, from the fastest the processor allows down to
/// nrpt-core's scalar driver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Simd {
    /// The best the processor supports (AVX-512, else AVX2, else portable).
    #[default]
    Auto,
    /// At most AVX2.
    Avx2,
    /// Vectorized paths compiled for the baseline instruction set (SSE2 on x86-64).
    Portable,
    /// nrpt-core's scalar driver only.
    Scalar,
}

impl Simd {
    /// The instruction sets the vectorized paths may use on this processor.
    pub fn resolve(self) -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            let avx512 = std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512dq")
                && std::arch::is_x86_feature_detected!("avx512vl")
                && std::arch::is_x86_feature_detected!("avx512bw");
            let avx2 = std::arch::is_x86_feature_detected!("avx2");
            match self {
                Simd::Auto if avx512 => Simd::Auto,
                Simd::Auto | Simd::Avx2 if avx2 => Simd::Avx2,
                Simd::Scalar => Simd::Scalar,
                _ => Simd::Portable,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        match self {
            Simd::Scalar => Simd::Scalar,
            _ => Simd::Portable,
        }
    }
}

/// Box–Muller of nrpt-core (`box_muller_f32`) with a correctly rounded square root,
/// written for lane loops (std's `sqrt` vectorizes; the bits are the same): `ln` of a
/// uniform without special values, sin/cos 2πu reduced on the word's bits.
#[inline(always)]
pub fn box_muller(w0: u32, w1: u32) -> (f32, f32) {
    let r = (-2.0 * ln_normal(uniform_f32(w0))).sqrt();
    let (s, c) = sin_cos_2pi_uniform(w1);
    (r * c, r * s)
}

/// nrpt-core's `sin_cos_2pi` with std's `round_ties_even` (one `vroundps` in the AVX2
/// and AVX-512 builds) for its two roundings: the same bits (tested in nrpt-core).
#[inline(always)]
pub fn sin_cos_2pi(x: f32) -> (f32, f32) {
    sin_cos_2pi_with(x, f32::round_ties_even)
}

/// The lane loops' math: nrpt-core's exact functions ([`Exact`], the CPU's reference
/// bits) or fast mode's ([`Fast`], `--math fast`): fused multiply-adds where `FMA` (the
/// AVX2 and AVX-512 builds; the portable build has no FMA instruction and rounds each
/// product) and lower-degree polynomials, at the accuracy of the GPU's hardware
/// functions rather than to the last bit: sin 2πf of degree 5 and cos 2πf of degree 6
/// on f ∈ [−1/8, 1/8] (errors 2⁻²⁰·⁸ and 2⁻²⁴·⁹ against sin.approx's 2⁻²⁰·⁵; exact mode's
/// are of degrees 9 and 10), and ln's series in s = (m − 1)/(m + 1) to s⁵ instead of s⁹
/// (2⁻²⁴·⁸). The coefficients are least-maximum-error fits (`fit_fast_math.py` in
/// benches/), checked against f64 by the tests below.
pub(crate) trait LaneMath {
    /// `a · b + c`.
    fn mul_add(a: f32, b: f32, c: f32) -> f32;
    /// Box–Muller of two words.
    fn box_muller(w0: u32, w1: u32) -> (f32, f32);
    /// U of the 25-mode target and the sines of the coordinates (`Modes2d::energy_and_sines`).
    fn energy_and_sines(a: f32, b: f32) -> (f32, f32, f32);
    /// ∇U of the 25-mode target from the sines (`Modes2d::gradient_from_sines`).
    fn gradient_from_sines(a: f32, b: f32, sa: f32, sb: f32) -> (f32, f32);
}

/// nrpt-core's functions: the CPU's bits.
pub struct Exact;

impl LaneMath for Exact {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
    #[inline(always)]
    fn box_muller(w0: u32, w1: u32) -> (f32, f32) {
        box_muller(w0, w1)
    }
    #[inline(always)]
    fn energy_and_sines(a: f32, b: f32) -> (f32, f32, f32) {
        nrpt_core::target::Modes2d::energy_and_sines_by(a, b, sin_cos_2pi)
    }
    #[inline(always)]
    fn gradient_from_sines(a: f32, b: f32, sa: f32, sb: f32) -> (f32, f32) {
        nrpt_core::target::Modes2d::gradient_from_sines(a, b, sa, sb)
    }
}

/// Fast mode's functions, with fused multiply-adds when `FMA` (only where the target
/// features include FMA: otherwise `mul_add` is a library call).
pub struct Fast<const FMA: bool>;

/// sin 2πf ≈ f (S1 + f² (S3 + f² S5)) on [−1/8, 1/8].
const FAST_SIN: [f32; 3] = [6.283_154, -41.325_57, 79.531_41];
/// cos 2πf ≈ 1 + f² (C2 + f² (C4 + f² C6)) on [−1/8, 1/8].
const FAST_COS: [f32; 3] = [-19.739_168, 64.923_225, -83.665_924];
/// ln m = 2s (1 + s² (L3 + s² L5)), s = (m − 1)/(m + 1), m ∈ [√½, √2).
const FAST_LN: [f32; 2] = [0.333_267_15, 0.206_437_36];

impl<const FMA: bool> Fast<FMA> {
    /// `fastmath::ln` with the shorter series (special values as there).
    #[inline(always)]
    pub fn ln(x: f32) -> f32 {
        let subnormal = x < f32::MIN_POSITIVE;
        let xs = if subnormal { x * 8_388_608.0 } else { x };
        let y = Self::ln_scaled(xs, if subnormal { 150 } else { 127 });
        let y = if x == f32::INFINITY { x } else { y };
        let y = if x == 0.0 { f32::NEG_INFINITY } else { y };
        if x >= 0.0 { y } else { f32::NAN }
    }

    /// [`Fast::ln`] of a positive normal finite `x` (a uniform): the same values,
    /// without the subnormal scaling and the special values' selects.
    #[inline(always)]
    pub fn ln_normal(x: f32) -> f32 {
        Self::ln_scaled(x, 127)
    }

    /// The series of [`Fast::ln`] for a positive normal `xs` of exponent bias `bias`.
    #[inline(always)]
    fn ln_scaled(xs: f32, bias: i32) -> f32 {
        let bits = xs.to_bits();
        let mut e = ((bits >> 23) & 0xff) as i32 - bias;
        let mut m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
        if m > core::f32::consts::SQRT_2 {
            m *= 0.5;
            e += 1;
        }
        let s = (m - 1.0) / (m + 1.0);
        let s2 = s * s;
        let p = Self::mul_add(s2, Self::mul_add(s2, FAST_LN[1], FAST_LN[0]), 1.0);
        let ln_m = 2.0 * s * p;
        let ef = e as f32;
        Self::mul_add(
            ef,
            nrpt_core::fastmath::LN2_HI,
            Self::mul_add(ef, nrpt_core::fastmath::LN2_LO, ln_m),
        )
    }

    /// `fastmath::sin_cos_2pi` with the shorter polynomials: the same exact reduction
    /// to f ∈ [−1/8, 1/8] and quadrant, so the accuracy holds for every argument.
    #[inline(always)]
    pub fn sin_cos_2pi(x: f32) -> (f32, f32) {
        let r = x - x.round_ties_even();
        let q = (4.0 * r).round_ties_even();
        let f = Self::mul_add(-0.25, q, r);
        let (sin, cos) = Self::quarter_turns(f, q);
        if x.is_finite() {
            (sin, cos)
        } else {
            (f32::NAN, f32::NAN)
        }
    }

    /// The shorter polynomials at f ∈ [−1/8, 1/8], rotated by q quarter turns.
    #[inline(always)]
    fn quarter_turns(f: f32, q: f32) -> (f32, f32) {
        let f2 = f * f;
        let s = f * Self::mul_add(f2, Self::mul_add(f2, FAST_SIN[2], FAST_SIN[1]), FAST_SIN[0]);
        let c = Self::mul_add(
            f2,
            Self::mul_add(f2, Self::mul_add(f2, FAST_COS[2], FAST_COS[1]), FAST_COS[0]),
            1.0,
        );
        rotate_quarter_turns(s, c, q)
    }
}

impl<const FMA: bool> LaneMath for Fast<FMA> {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        if FMA { a.mul_add(b, c) } else { a * b + c }
    }
    #[inline(always)]
    fn box_muller(w0: u32, w1: u32) -> (f32, f32) {
        // A uniform is positive and normal, and its angle is reduced on its word.
        let r = (-2.0 * Self::ln_normal(uniform_f32(w0))).sqrt();
        let (f, q) = quarter_turn_uniform(w1);
        let (s, c) = Self::quarter_turns(f, q);
        (r * c, r * s)
    }
    #[inline(always)]
    fn energy_and_sines(a: f32, b: f32) -> (f32, f32, f32) {
        let r2 = Self::mul_add(a, a, b * b);
        let (sa, ca) = Self::sin_cos_2pi(a);
        let (sb, cb) = Self::sin_cos_2pi(b);
        let mut u = Self::mul_add(0.2, r2, -2.0 * (ca + cb));
        if r2 > nrpt_core::target::Modes2d::WALL as f32 {
            u += r2 - nrpt_core::target::Modes2d::WALL as f32;
        }
        (u, sa, sb)
    }
    #[inline(always)]
    fn gradient_from_sines(a: f32, b: f32, sa: f32, sb: f32) -> (f32, f32) {
        let four_pi = (4.0 * core::f64::consts::PI) as f32;
        let r2 = Self::mul_add(a, a, b * b);
        let slope = if r2 > nrpt_core::target::Modes2d::WALL as f32 {
            2.4
        } else {
            0.4
        };
        (
            Self::mul_add(slope, a, four_pi * sa),
            Self::mul_add(slope, b, four_pi * sb),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrpt_core::rng::{PhiloxStream, Rng};

    /// Fast mode's functions against f64, within the accuracy the docs state (the
    /// polynomials' fitted error plus f32 roundings), in both builds of `mul_add`.
    fn check<const FMA: bool>() {
        let mut w = PhiloxStream::new(7, 0, 0, 0, 1);
        let (mut ln_worst, mut sc_worst) = (0.0f64, 0.0f64);
        for i in 0..200_000 {
            let u = uniform_f32(w.next_u32());
            let ln = f64::from(Fast::<FMA>::ln(u));
            let want = f64::from(u).ln();
            ln_worst = ln_worst.max((ln - want).abs() / want.abs().max(1.0));
            let x = if i % 2 == 0 { u } else { (u - 0.5) * 128.0 };
            let (s, c) = Fast::<FMA>::sin_cos_2pi(x);
            let t = 2.0 * core::f64::consts::PI * f64::from(x);
            sc_worst = sc_worst
                .max((f64::from(s) - t.sin()).abs())
                .max((f64::from(c) - t.cos()).abs());
        }
        // ln: 2^-24.8 from the series plus roundings; sin/cos: 2^-20.8 plus roundings.
        assert!(ln_worst < 2.0e-7, "fast ln: {ln_worst:e}");
        assert!(sc_worst < 8.0e-7, "fast sin/cos: {sc_worst:e}");
        assert_eq!(Fast::<FMA>::ln(0.0), f32::NEG_INFINITY);
        assert!(Fast::<FMA>::ln(-1.0).is_nan());
        assert!(Fast::<FMA>::sin_cos_2pi(f32::INFINITY).0.is_nan());
        // The energy and gradient follow from them: within a few of those errors.
        for _ in 0..10_000 {
            let a = (uniform_f32(w.next_u32()) - 0.5) * 10.0;
            let b = (uniform_f32(w.next_u32()) - 0.5) * 10.0;
            let (u, sa, sb) = Fast::<FMA>::energy_and_sines(a, b);
            let (ue, sae, sbe) = Exact::energy_and_sines(a, b);
            assert!(
                (u - ue).abs() <= 1e-5 * ue.abs().max(1.0) + 4.0 * 8e-7,
                "U({a}, {b})"
            );
            assert!((sa - sae).abs() < 1.6e-6 && (sb - sbe).abs() < 1.6e-6);
            let (g0, g1) = Fast::<FMA>::gradient_from_sines(a, b, sa, sb);
            let (e0, e1) = Exact::gradient_from_sines(a, b, sae, sbe);
            assert!(
                (g0 - e0).abs() < 1e-4 && (g1 - e1).abs() < 1e-4,
                "∇U({a}, {b})"
            );
        }
        eprintln!("fast lane math (FMA {FMA}): ln {ln_worst:.3e}, sin/cos {sc_worst:.3e}");
    }

    #[test]
    fn fast_lane_math_is_within_its_stated_accuracy() {
        check::<false>();
        check::<true>();
    }
}
