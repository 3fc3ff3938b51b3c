//! A D-dimensional multi-modal target whose energy is a sum over coordinates.

use core::f64::consts::PI;

use super::Potential;
use crate::float::Float;

/// `U(x) = Σ_j [0.2 x_j² − 2 cos 2πx_j]`: the 25-mode target's profile in every
/// coordinate (without its wall), 5^D well-separated modes in [−2, 2]^D.
///
/// Its energy is a reduction over D terms, which is what the GPU energy kernels for
/// large D are built and measured on. For D = 2 it equals [`super::Modes2d`] inside the
/// wall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SumModes {
    /// Dimension D (≥ 1).
    pub dim: usize,
}

impl<F: Float> Potential<F> for SumModes {
    fn dim(&self) -> usize {
        self.dim
    }

    #[inline]
    fn energy(&self, x: &[F]) -> F {
        let (q, c) = (F::from_f64(0.2), F::from_f64(2.0));
        let mut u = F::ZERO;
        for &xj in x {
            u += q * xj * xj - c * xj.sin_cos_2pi().1;
        }
        u
    }

    #[inline]
    fn gradient(&self, x: &[F], grad: &mut [F]) {
        let (q, s) = (F::from_f64(0.4), F::from_f64(4.0 * PI));
        for (g, &xj) in grad.iter_mut().zip(x) {
            *g = q * xj + s * xj.sin_cos_2pi().0;
        }
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
}
