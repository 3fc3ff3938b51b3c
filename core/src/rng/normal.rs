//! Uniform and Gaussian variates from 32-bit words, by fixed formulas.
//!
//! These formulas are part of the crate's reproducibility contract: GPU kernels
//! recompute them from the same Philox words. All `f32` arithmetic is done in `f32`
//! with the branch-free [`crate::fastmath::ln`] and [`crate::fastmath::sin_cos_2pi`]
//! and a correctly rounded square root, so `f32` normals are the same bits on any
//! IEEE-754 machine (GPU code compiled without FMA contraction included). All `f64`
//! arithmetic is in `f64` with libm's `log`, `sqrt`, `cos`, `sin`. No step is fused.
//!
//! Uniforms (each value is computed exactly, without rounding):
//!
//! ```text
//! uniform_f32(w) = ((w >> 9) as f32 + 0.5) * 2^-23    // in [2^-24, 1 - 2^-24]
//! uniform_f64(w) = (w as f64 + 0.5) * 2^-32           // in [2^-33, 1 - 2^-33]
//! ```
//!
//! Both lie strictly inside (0, 1). The `f32` form keeps 23 bits of the word rather
//! than 24 because `v + 0.5` is not representable in `f32` for `v >= 2^23`: with 24 bits
//! the top word values would round to exactly 1.0.
//!
//! Box–Muller, from two words `(w0, w1)`, everything in the float type `F`:
//!
//! ```text
//! u1 = uniform(w0);  u2 = uniform(w1)
//! r  = sqrt(-2 * ln(u1))
//! f32: (s, c) = fastmath::sin_cos_2pi(u2)          // sin and cos of 2π·u2
//! f64: θ = TAU * u2; (s, c) = (sin θ, cos θ)       // TAU = 0x401921FB54442D18
//! (z0, z1) = (r * c, r * s)
//! ```
//!
//! Word consumption: [`uniform_draw`] takes one word; [`normal_pair`] takes two
//! (`w0` then `w1`); [`fill_normals`] takes two words per pair, `2 * ceil(len / 2)`
//! words in all, and for an odd length discards the second value of the last pair.
//!
//! The uniforms are exact, so they match bit for bit on any IEEE-754 machine; so do the
//! `f32` normals. The `f64` normals match only where libm's `log`, `cos` and `sin` are
//! used.

use rand_core::Rng;

use crate::float::Float;

/// `2^-23` as `f32`.
const F32_2_POW_M23: f32 = 1.0 / 8_388_608.0;
/// `2^-32` as `f64`.
const F64_2_POW_M32: f64 = 1.0 / 4_294_967_296.0;

/// A uniform `f32` strictly inside (0, 1): `((word >> 9) as f32 + 0.5) * 2^-23`.
///
/// The result is exact (no rounding): an odd multiple of `2^-24`, from `2^-24` to
/// `1 - 2^-24`.
#[inline]
pub fn uniform_f32(word: u32) -> f32 {
    ((word >> 9) as f32 + 0.5) * F32_2_POW_M23
}

/// A uniform `f64` strictly inside (0, 1): `(word as f64 + 0.5) * 2^-32`.
///
/// The result is exact (no rounding): an odd multiple of `2^-33`, from `2^-33` to
/// `1 - 2^-33`.
#[inline]
pub fn uniform_f64(word: u32) -> f64 {
    (word as f64 + 0.5) * F64_2_POW_M32
}

/// Box–Muller in `f32` arithmetic: `u1 = uniform_f32(w0)`, `u2 = uniform_f32(w1)`,
/// `r = sqrtf(-2 * ln(u1))`, `(s, c) = sin_cos_2pi(u2)`, returns `(r * c, r * s)`, with
/// [`crate::fastmath`]'s `ln` and `sin_cos_2pi`.
#[inline]
pub fn box_muller_f32(w0: u32, w1: u32) -> (f32, f32) {
    // ln of a uniform (always positive and normal), sin/cos of a uniform from its word:
    // `ln(u1)` and `sin_cos_2pi(u2)`, the same bits.
    let r = libm::sqrtf(-2.0 * crate::fastmath::ln_normal(uniform_f32(w0)));
    let (s, c) = crate::fastmath::sin_cos_2pi_uniform(w1);
    (r * c, r * s)
}

/// Box–Muller in `f64` arithmetic: `u1 = uniform_f64(w0)`, `u2 = uniform_f64(w1)`,
/// `r = sqrt(-2 * log(u1))`, `θ = TAU_f64 * u2`, returns `(r * cos(θ), r * sin(θ))`.
#[inline]
pub fn box_muller_f64(w0: u32, w1: u32) -> (f64, f64) {
    let u1 = uniform_f64(w0);
    let u2 = uniform_f64(w1);
    let r = libm::sqrt(-2.0 * libm::log(u1));
    let theta = core::f64::consts::TAU * u2;
    (r * libm::cos(theta), r * libm::sin(theta))
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// Float types with the crate's fixed word-to-variate formulas (sealed: `f32`, `f64`).
pub trait UnitDraw: Float + sealed::Sealed {
    /// A uniform strictly inside (0, 1) from one word: [`uniform_f32`] or [`uniform_f64`].
    fn uniform(word: u32) -> Self;
    /// Two independent standard normals from two words: [`box_muller_f32`] or
    /// [`box_muller_f64`].
    fn box_muller(w0: u32, w1: u32) -> (Self, Self);
    /// Natural logarithm of a uniform in (0, 1), by the same function as Box–Muller:
    /// [`crate::fastmath::ln`] for `f32`, libm's `log` for `f64`.
    fn ln_uniform(u: Self) -> Self;
}

impl UnitDraw for f32 {
    #[inline]
    fn uniform(word: u32) -> Self {
        uniform_f32(word)
    }
    #[inline]
    fn box_muller(w0: u32, w1: u32) -> (Self, Self) {
        box_muller_f32(w0, w1)
    }
    #[inline]
    fn ln_uniform(u: Self) -> Self {
        crate::fastmath::ln(u)
    }
}

impl UnitDraw for f64 {
    #[inline]
    fn uniform(word: u32) -> Self {
        uniform_f64(word)
    }
    #[inline]
    fn box_muller(w0: u32, w1: u32) -> (Self, Self) {
        box_muller_f64(w0, w1)
    }
    #[inline]
    fn ln_uniform(u: Self) -> Self {
        libm::log(u)
    }
}

/// One uniform strictly inside (0, 1), from one word (`F::uniform(rng.next_u32())`).
#[inline]
pub fn uniform_draw<F: UnitDraw, R: Rng + ?Sized>(rng: &mut R) -> F {
    F::uniform(rng.next_u32())
}

/// Two independent standard normals from two words: `w0 = rng.next_u32()`, then
/// `w1 = rng.next_u32()`, returns `F::box_muller(w0, w1)`.
#[inline]
pub fn normal_pair<F: UnitDraw, R: Rng + ?Sized>(rng: &mut R) -> (F, F) {
    let w0 = rng.next_u32();
    let w1 = rng.next_u32();
    F::box_muller(w0, w1)
}

/// Fills `out` with standard normals: for pair `i`, two words `w0, w1` are drawn in that
/// order and `(z0, z1) = F::box_muller(w0, w1)` goes to `out[2i]`, `out[2i + 1]`.
///
/// Consumes `2 * ceil(out.len() / 2)` words: for an odd length the last pair still takes
/// two words and its `z1` is discarded. An empty `out` consumes nothing.
pub fn fill_normals<F: UnitDraw, R: Rng + ?Sized>(rng: &mut R, out: &mut [F]) {
    for chunk in out.chunks_mut(2) {
        let (z0, z1) = normal_pair::<F, R>(rng);
        match chunk {
            [a, b] => {
                *a = z0;
                *b = z1;
            }
            [a] => *a = z0,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{PhiloxStream, streams};

    const EDGE_WORDS: [u32; 8] = [
        0,
        1,
        0x1ff,
        0x200,
        0x7fff_ffff,
        0x8000_0000,
        u32::MAX - 1,
        u32::MAX,
    ];

    #[test]
    fn uniform_strictly_inside_unit_interval() {
        for w in EDGE_WORDS {
            let a = uniform_f32(w);
            let b = uniform_f64(w);
            assert!(a > 0.0 && a < 1.0, "f32 {w:#x} -> {a}");
            assert!(b > 0.0 && b < 1.0, "f64 {w:#x} -> {b}");
        }
        assert_eq!(uniform_f32(0), 1.0 / 16_777_216.0);
        assert_eq!(uniform_f32(u32::MAX), 1.0 - 1.0 / 16_777_216.0);
        assert_eq!(uniform_f64(0), 1.0 / 8_589_934_592.0);
        assert_eq!(uniform_f64(u32::MAX), 1.0 - 1.0 / 8_589_934_592.0);
    }

    #[test]
    fn uniform_is_exact() {
        let mut s = PhiloxStream::new(1, 2, 3, 4, streams::STEP);
        let words = EDGE_WORDS
            .into_iter()
            .chain((0..1000).map(|_| s.next_u32()));
        for w in words {
            // Same value computed in f64 (exact there) must be the f32 result exactly.
            let exact = ((w >> 9) as f64 + 0.5) / 8_388_608.0;
            assert_eq!(uniform_f32(w) as f64, exact);
            assert_eq!(<f32 as UnitDraw>::uniform(w), uniform_f32(w));
            assert_eq!(<f64 as UnitDraw>::uniform(w), uniform_f64(w));
            // f64: odd multiple of 2^-33.
            let k = uniform_f64(w) * 8_589_934_592.0;
            assert_eq!(k, 2.0 * w as f64 + 1.0);
        }
    }

    /// Box–Muller in f64 written out independently, from the uniform values.
    fn reference(u1: f64, u2: f64) -> (f64, f64) {
        let r = libm::sqrt(-2.0 * libm::log(u1));
        let t = 2.0 * core::f64::consts::PI * u2;
        (r * libm::cos(t), r * libm::sin(t))
    }

    #[test]
    fn box_muller_hand_words() {
        let pairs = [
            (0u32, 0u32),
            (u32::MAX, u32::MAX),
            (0x8000_0000, 0x4000_0000),
            (0x1234_5678, 0xdead_beef),
            (0x0000_0001, 0xc000_0000),
            (0xffff_0000, 0x2000_0000),
            (0x0bad_f00d, 0x7fff_ffff),
        ];
        for (w0, w1) in pairs {
            // f64: same formula, bit for bit.
            let (a, b) = box_muller_f64(w0, w1);
            let (ra, rb) = reference(
                (w0 as f64 + 0.5) / 4_294_967_296.0,
                (w1 as f64 + 0.5) / 4_294_967_296.0,
            );
            assert_eq!((a, b), (ra, rb), "f64 {w0:#x} {w1:#x}");
            assert_eq!(<f64 as UnitDraw>::box_muller(w0, w1), (a, b));

            // f32: computed in f32, compared to the f64 formula on the f32 uniforms.
            let (a, b) = box_muller_f32(w0, w1);
            let u1 = ((w0 >> 9) as f64 + 0.5) / 8_388_608.0;
            let u2 = ((w1 >> 9) as f64 + 0.5) / 8_388_608.0;
            let (ra, rb) = reference(u1, u2);
            let r = libm::sqrt(-2.0 * libm::log(u1));
            let tol = 1e-6 * r.max(1.0);
            assert!(
                (a as f64 - ra).abs() <= tol,
                "f32 z0 {w0:#x} {w1:#x}: {a} vs {ra}"
            );
            assert!(
                (b as f64 - rb).abs() <= tol,
                "f32 z1 {w0:#x} {w1:#x}: {b} vs {rb}"
            );
            assert_eq!(<f32 as UnitDraw>::box_muller(w0, w1), (a, b));
            assert!(a.is_finite() && b.is_finite());
        }
        // u2 = 1/4 (up to 2^-33): θ ≈ π/2, so z0 ≈ 0 and z1 ≈ r.
        let (z0, z1) = box_muller_f64(0x8000_0000, 0x4000_0000);
        let r = libm::sqrt(-2.0 * libm::log(0.5 + 0.5 / 4_294_967_296.0));
        assert!(z0.abs() < 1e-8 && (z1 - r).abs() < 1e-8);
    }

    fn moments<F: UnitDraw>() -> (f64, f64) {
        let mut s = PhiloxStream::new(2024, 0, 0, 0, streams::STEP);
        let mut buf = [F::ZERO; 1000];
        let (mut sum, mut sum2) = (0.0f64, 0.0f64);
        let n = 200_000;
        for _ in 0..n / buf.len() {
            fill_normals(&mut s, &mut buf);
            for z in buf {
                let z = z.to_f64();
                sum += z;
                sum2 += z * z;
            }
        }
        let mean = sum / n as f64;
        (mean, sum2 / n as f64 - mean * mean)
    }

    #[test]
    fn normal_moments_f32() {
        let (mean, var) = moments::<f32>();
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "var {var}");
    }

    #[test]
    fn normal_moments_f64() {
        let (mean, var) = moments::<f64>();
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "var {var}");
    }

    #[test]
    fn word_consumption() {
        let base = PhiloxStream::new(5, 6, 7, 8, streams::STEP);

        let mut s = base.clone();
        let u: f32 = uniform_draw(&mut s);
        assert_eq!(u, uniform_f32(base.word(0)));
        assert_eq!(s.position(), 1);

        let mut s = base.clone();
        let p: (f64, f64) = normal_pair(&mut s);
        assert_eq!(p, box_muller_f64(base.word(0), base.word(1)));
        assert_eq!(s.position(), 2);

        let mut s = base.clone();
        let mut empty: [f32; 0] = [];
        fill_normals(&mut s, &mut empty);
        assert_eq!(s.position(), 0);

        for len in 1..=6usize {
            let mut s = base.clone();
            let mut out = [0.0f32; 6];
            let out = &mut out[..len];
            fill_normals(&mut s, out);
            assert_eq!(s.position(), 2 * len.div_ceil(2) as u64, "len {len}");
            for (i, z) in out.iter().enumerate() {
                let pair = box_muller_f32(
                    base.word(2 * (i / 2) as u64),
                    base.word(2 * (i / 2) as u64 + 1),
                );
                let expected = if i % 2 == 0 { pair.0 } else { pair.1 };
                assert_eq!(*z, expected, "len {len} index {i}");
            }
        }

        // Odd then even: the discarded value is not reused.
        let mut s = base.clone();
        let mut a = [0.0f64; 3];
        fill_normals(&mut s, &mut a);
        let mut b = [0.0f64; 2];
        fill_normals(&mut s, &mut b);
        let expected = box_muller_f64(base.word(4), base.word(5));
        assert_eq!((b[0], b[1]), expected);
    }
}
