//! The instruction sets of the CPU engine's vectorized paths, chosen at run time, and
//! what their lane loops share.

use nrpt_core::fastmath::{ln, sin_cos_2pi};
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
/// written for lane loops (std's `sqrt` vectorizes; the bits are the same).
#[inline(always)]
pub fn box_muller(w0: u32, w1: u32) -> (f32, f32) {
    let r = (-2.0 * ln(uniform_f32(w0))).sqrt();
    let (s, c) = sin_cos_2pi(uniform_f32(w1));
    (r * c, r * s)
}
