//! The 25-mode 2D target of Deng et al. (AAAI 2023), Figure 3.

use core::f64::consts::PI;

use super::{LanePotential, Potential};
use crate::float::Float;

/// `U(x) = 0.2 (x₁² + x₂²) − 2 (cos 2πx₁ + cos 2πx₂) + 1[|x|² > 20] (|x|² − 20)`.
///
/// Twenty-five modes near the integer points of [−2, 2]², deeper towards the centre.
/// The last term is the soft wall of the authors' code, which keeps runaway explorers
/// (large learning rates, no temperature) inside |x|² ≤ 20; it does not change the
/// density where it has mass worth speaking of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Modes2d;

impl Modes2d {
    /// The wall starts at |x|² = 20.
    pub const WALL: f64 = 20.0;
}

impl Modes2d {
    /// U at (a, b), and the sines `(sin 2πa, sin 2πb)` its computation produced (the next
    /// gradient at the same point needs them: engines that keep them skip two sines).
    #[inline(always)]
    pub fn energy_and_sines<F: Float>(a: F, b: F) -> (F, F, F) {
        Modes2d::energy_and_sines_by(a, b, F::sin_cos_2pi)
    }

    /// [`Modes2d::energy_and_sines`] with `sin_cos` for `x ↦ (sin 2πx, cos 2πx)` (an
    /// engine's form of [`Float::sin_cos_2pi`] with the same bits, such as
    /// [`crate::fastmath::sin_cos_2pi_with`] and the processor's rounding).
    #[inline(always)]
    pub fn energy_and_sines_by<F: Float>(a: F, b: F, sin_cos: impl Fn(F) -> (F, F)) -> (F, F, F) {
        let r2 = a * a + b * b;
        let wall = F::from_f64(Modes2d::WALL);
        let (sa, ca) = sin_cos(a);
        let (sb, cb) = sin_cos(b);
        let mut u = F::from_f64(0.2) * r2 - F::from_f64(2.0) * (ca + cb);
        if r2 > wall {
            u += r2 - wall;
        }
        (u, sa, sb)
    }

    /// ∇U at (a, b) given `sa = sin 2πa` and `sb = sin 2πb`.
    #[inline(always)]
    pub fn gradient_from_sines<F: Float>(a: F, b: F, sa: F, sb: F) -> (F, F) {
        let four_pi = F::from_f64(4.0 * PI);
        let r2 = a * a + b * b;
        let slope = if r2 > F::from_f64(Modes2d::WALL) {
            F::from_f64(0.4 + 2.0)
        } else {
            F::from_f64(0.4)
        };
        (slope * a + four_pi * sa, slope * b + four_pi * sb)
    }
}

impl<F: Float> Potential<F> for Modes2d {
    fn dim(&self) -> usize {
        2
    }

    #[inline]
    fn energy(&self, x: &[F]) -> F {
        Modes2d::energy_and_sines(x[0], x[1]).0
    }

    #[inline]
    fn gradient(&self, x: &[F], grad: &mut [F]) {
        let (a, b) = (x[0], x[1]);
        let (ga, gb) = Modes2d::gradient_from_sines(a, b, a.sin_cos_2pi().0, b.sin_cos_2pi().0);
        grad[0] = ga;
        grad[1] = gb;
    }
}

impl LanePotential for Modes2d {
    #[inline(always)]
    fn gradient_lanes<const L: usize>(&self, x: &[[f32; L]], grad: &mut [[f32; L]]) {
        let (xa, xb) = (&x[0], &x[1]);
        let mut ga = [0.0f32; L];
        let mut gb = [0.0f32; L];
        for i in 0..L {
            let (a, b) = (xa[i], xb[i]);
            (ga[i], gb[i]) =
                Modes2d::gradient_from_sines(a, b, a.sin_cos_2pi().0, b.sin_cos_2pi().0);
        }
        grad[0] = ga;
        grad[1] = gb;
    }

    #[inline(always)]
    fn energy_lanes<const L: usize>(&self, x: &[[f32; L]]) -> [f32; L] {
        let mut u = [0.0f32; L];
        for i in 0..L {
            u[i] = Modes2d::energy_and_sines(x[0][i], x[1][i]).0;
        }
        u
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::gradient_check;

    #[test]
    fn energy_at_reference_points() {
        // U(0,0) = −4; U(1,0) = 0.2 − 4; U(2,2) = 1.6 − 4; U(0.5, 0) = 0.05 + 2 − 2.
        let cases: [([f64; 2], f64); 5] = [
            ([0.0, 0.0], -4.0),
            ([1.0, 0.0], 0.2 - 4.0),
            ([2.0, 2.0], 1.6 - 4.0),
            ([0.5, 0.0], 0.05),
            ([4.0, 3.0], 5.0 - 4.0 + 5.0), // |x|² = 25: wall adds 5
        ];
        for (x, u) in cases {
            let got = Potential::<f64>::energy(&Modes2d, &x);
            assert!((got - u).abs() < 1e-12, "U({x:?}) = {got}, want {u}");
        }
    }

    #[test]
    fn gradient_matches_central_differences() {
        let mut g = [0.0; 2];
        let mut p = [0.0; 2];
        for x in [
            [0.1, -0.3],
            [1.7, 2.2],
            [-3.9, 2.6],
            [4.1, -1.0],
            [0.0, 0.0],
        ] {
            let err = gradient_check(&Modes2d, &x, &mut g, &mut p, 1e-6);
            assert!(err < 1e-6, "at {x:?}: {err}");
        }
    }

    #[test]
    fn f32_agrees_with_f64() {
        for x in [[0.1f64, -0.3], [1.7, 2.2], [-3.9, 2.6]] {
            let xf = [x[0] as f32, x[1] as f32];
            let e64 = Potential::<f64>::energy(&Modes2d, &[f64::from(xf[0]), f64::from(xf[1])]);
            let e32 = Potential::<f32>::energy(&Modes2d, &xf);
            assert!(
                (f64::from(e32) - e64).abs() < 1e-5 * (1.0 + e64.abs()),
                "{x:?}"
            );
        }
    }
}
