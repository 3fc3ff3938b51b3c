//! A D-dimensional multi-modal target whose energy is a sum over coordinates.

use core::f64::consts::PI;

use super::{LanePotential, Potential};
use crate::float::Float;
use crate::reduce::tree_sum;

/// `U(x) = Σ_j [0.2 x_j² − 2 cos 2πx_j]`: the 25-mode target's profile in every
/// coordinate (without its wall), 5^D well-separated modes in [−2, 2]^D.
///
/// Its energy is a reduction over D terms, which is what the GPU energy kernels for
/// large D are built and measured on; the terms are added in the fixed pairwise order
/// of [`crate::reduce`] (for D ≤ 3 that is the sequential sum). For D = 2 it equals
/// [`super::Modes2d`] inside the wall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SumModes {
    /// Dimension D (≥ 1).
    pub dim: usize,
}

impl SumModes {
    /// The energy's term of one coordinate: `0.2 x² − 2 cos 2πx`.
    #[inline(always)]
    pub fn term<F: Float>(x: F) -> F {
        F::from_f64(0.2) * x * x - F::from_f64(2.0) * x.sin_cos_2pi().1
    }

    /// The gradient's coordinate: `0.4 x + 4π sin 2πx`.
    #[inline(always)]
    pub fn slope<F: Float>(x: F) -> F {
        F::from_f64(0.4) * x + F::from_f64(4.0 * PI) * x.sin_cos_2pi().0
    }
}

impl<F: Float> Potential<F> for SumModes {
    fn dim(&self) -> usize {
        self.dim
    }

    /// The terms `0.2 x_j² − 2 cos 2πx_j` added by the pairwise tree of
    /// [`crate::reduce`], the order the GPU kernels reproduce for any D.
    #[inline]
    fn energy(&self, x: &[F]) -> F {
        tree_sum(x.len(), |j| SumModes::term(x[j]))
    }

    #[inline]
    fn gradient(&self, x: &[F], grad: &mut [F]) {
        for (g, &xj) in grad.iter_mut().zip(x) {
            *g = SumModes::slope(xj);
        }
    }
}

impl LanePotential for SumModes {
    #[inline(always)]
    fn gradient_lanes<const L: usize>(&self, x: &[[f32; L]], grad: &mut [[f32; L]]) {
        for (g, xj) in grad.iter_mut().zip(x) {
            for i in 0..L {
                g[i] = SumModes::slope(xj[i]);
            }
        }
    }

    #[inline(always)]
    fn energy_lanes<const L: usize>(&self, x: &[[f32; L]]) -> [f32; L] {
        tree_sum(x.len(), |j| {
            let mut t = [0.0f32; L];
            for i in 0..L {
                t[i] = SumModes::term(x[j][i]);
            }
            t
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::{Modes2d, gradient_check};

    #[test]
    fn equals_modes2d_inside_the_wall() {
        for x in [[0.3, -1.2], [2.0, 1.0], [-0.7, 0.25]] {
            let a = Potential::<f64>::energy(&SumModes { dim: 2 }, &x);
            let b = Potential::<f64>::energy(&Modes2d, &x);
            assert!((a - b).abs() < 1e-12);
        }
    }

    #[test]
    fn gradient_matches_central_differences() {
        let x: [f64; 7] = [0.1, -0.3, 1.7, 2.2, -3.9, 0.0, 0.49];
        let mut g = [0.0; 7];
        let mut p = [0.0; 7];
        let err = gradient_check(&SumModes { dim: 7 }, &x, &mut g, &mut p, 1e-6);
        assert!(err < 1e-6, "{err}");
        // Minimum at the origin: U = −2 D.
        let u = Potential::<f64>::energy(&SumModes { dim: 7 }, &[0.0; 7]);
        assert_eq!(u, -14.0);
    }

    /// The energy is the tree sum of the per-coordinate terms, bit for bit, for D of
    /// one warp, one warp and a bit, and a 1024-coordinate block; the sequential sum it
    /// replaced differs from it only by rounding, and not at all for D ≤ 3.
    #[test]
    fn energy_is_the_tree_sum_of_the_terms() {
        use crate::reduce::tree_sum_slice;
        use crate::rng::{PhiloxStream, Rng, UnitDraw};
        let mut w = PhiloxStream::new(3, 1, 4, 1, 5);
        for d in [1usize, 2, 3, 64, 65, 1000, 1024] {
            let x: std::vec::Vec<f32> = (0..d)
                .map(|_| (f32::uniform(w.next_u32()) - 0.5) * 6.0)
                .collect();
            let terms: std::vec::Vec<f32> = x
                .iter()
                .map(|&v| 0.2f32 * v * v - 2.0f32 * v.sin_cos_2pi().1)
                .collect();
            let u = Potential::<f32>::energy(&SumModes { dim: d }, &x);
            assert_eq!(u.to_bits(), tree_sum_slice(&terms).to_bits(), "D = {d}");
            let seq = terms.iter().fold(0.0f32, |a, &t| a + t);
            let abs: f32 = terms.iter().map(|t| t.abs()).sum();
            assert!((u - seq).abs() <= d as f32 * f32::EPSILON * abs, "D = {d}");
            if d <= 3 {
                assert_eq!(u.to_bits(), seq.to_bits(), "D = {d}");
            }
        }
    }
}
