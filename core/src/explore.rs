//! Exploration steps over caller-owned slices: SGLD, SGD and momentum SGD, each at the
//! learning rate η and temperature T of the level the replica sits at.
//!
//! - SGLD (Welling and Teh, ICML 2011): `x ← x − η ∇Ũ(x) + sqrt(2 η T) ξ`, ξ ~ N(0, I).
//!   The target level uses T = 1.
//! - SGD: the same with T = 0 (the paper's explorers, whose temperature is implicit in
//!   the gradient noise and the learning rate).
//! - Momentum SGD: `v ← μ v − η ∇Ũ(x) + sqrt(2 (1 − μ) η T) ξ; x ← x + v`. With T = 0
//!   this is heavy-ball SGD; with T > 0 it is the momentum form of stochastic-gradient
//!   Hamiltonian Monte Carlo (Chen, Fox and Guestrin, ICML 2014) with friction 1 − μ.
//!
//! Noise `ξ` is supplied by the caller (the driver draws it from a fixed Philox stream
//! so the GPU kernels can reproduce it); it is ignored when T = 0.

use crate::error::{Error, check_non_negative};
use crate::float::Float;

/// The exploration kernel of every level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Explorer {
    /// Stochastic-gradient Langevin dynamics at each level's temperature.
    Langevin,
    /// Momentum SGD / SGHMC with momentum μ in [0, 1).
    Momentum {
        /// Momentum μ.
        momentum: f64,
    },
}

impl Explorer {
    /// Heavy-ball momentum 0.9, the common deep-learning default.
    pub const MSGD: Explorer = Explorer::Momentum { momentum: 0.9 };

    /// Checks μ ∈ [0, 1).
    pub fn validate(self) -> Result<Self, Error> {
        if let Explorer::Momentum { momentum } = self
            && !(momentum.is_finite() && (0.0..1.0).contains(&momentum))
        {
            return Err(Error::InvalidValue {
                name: "momentum",
                value: momentum,
                allowed: "in [0, 1)",
            });
        }
        Ok(self)
    }

    /// `true` when a momentum buffer is needed.
    pub fn has_momentum(self) -> bool {
        matches!(self, Explorer::Momentum { .. })
    }
}

/// Standard deviation of the injected noise: `sqrt(2 η T)` for Langevin steps and
/// `sqrt(2 (1 − μ) η T)` for momentum steps; 0 when T = 0.
#[inline]
pub fn noise_scale(explorer: Explorer, eta: f64, temperature: f64) -> f64 {
    match explorer {
        Explorer::Langevin => libm::sqrt(2.0 * eta * temperature),
        Explorer::Momentum { momentum } => libm::sqrt(2.0 * (1.0 - momentum) * eta * temperature),
    }
}

/// Standard deviation of the one normal vector that stands for both the gradient noise
/// and the sampling noise of a step whose stochastic gradient is `∇U(x) + σ_g ξ'` with
/// ξ' ~ N(0, I) (the toy targets' [`Noisy`](crate::target::Noisy) oracle):
/// `sqrt((η σ_g)² + σ²)`, σ the [`noise_scale`] of the level, in `f64` as written:
/// `a = |η·σ_g|`; then `a` when σ = 0 (the SGD levels), σ when `a = 0`, and otherwise
/// `sqrt(a·a + σ·σ)` (no fused step). The sum `−η σ_g ξ' + σ ξ''` of two independent
/// normal vectors is one normal vector of this scale, so an SGLD step
/// `x − η ∇U(x) + s ξ` (momentum: `v ← μ v − η ∇U(x) + s ξ`) has the same transition law
/// as the step with the noisy gradient and its own noise, from half the normals. A
/// negative σ_g stands for the same noise as |σ_g| (`|a|` is taken); a NaN makes the
/// scale NaN, and the step's state with it, as a NaN gradient would.
#[inline]
pub fn merged_noise_scale(eta: f64, gradient_noise: f64, sigma: f64) -> f64 {
    let a = libm::fabs(eta * gradient_noise);
    if sigma == 0.0 {
        a
    } else if a == 0.0 {
        sigma
    } else {
        libm::sqrt(a * a + sigma * sigma)
    }
}

/// SGLD / SGD step in place: `x ← x − η g + σ ξ` with σ = `noise_scale` (pass 0 for SGD).
#[inline]
pub fn langevin_step<F: Float>(x: &mut [F], grad: &[F], noise: &[F], eta: F, sigma: F) {
    if sigma == F::ZERO {
        for (xi, &g) in x.iter_mut().zip(grad) {
            *xi -= eta * g;
        }
    } else {
        for ((xi, &g), &z) in x.iter_mut().zip(grad).zip(noise) {
            *xi = *xi - eta * g + sigma * z;
        }
    }
}

/// Momentum step in place: `v ← μ v − η g + σ ξ; x ← x + v`.
#[inline]
pub fn momentum_step<F: Float>(
    x: &mut [F],
    v: &mut [F],
    grad: &[F],
    noise: &[F],
    eta: F,
    mu: F,
    sigma: F,
) {
    if sigma == F::ZERO {
        for ((xi, vi), &g) in x.iter_mut().zip(v.iter_mut()).zip(grad) {
            *vi = mu * *vi - eta * g;
            *xi += *vi;
        }
    } else {
        for (((xi, vi), &g), &z) in x.iter_mut().zip(v.iter_mut()).zip(grad).zip(noise) {
            *vi = mu * *vi - eta * g + sigma * z;
            *xi += *vi;
        }
    }
}

/// Temperatures of the paper's SGD explorers: T₀ = 1 (SGLD at the target), 0 above.
pub fn sgd_explorer_temperatures(out: &mut [f64]) {
    for (l, t) in out.iter_mut().enumerate() {
        *t = if l == 0 { 1.0 } else { 0.0 };
    }
}

/// Checks that every temperature is finite and ≥ 0.
pub fn check_temperatures(temperatures: &[f64]) -> Result<(), Error> {
    temperatures
        .iter()
        .try_for_each(|&t| check_non_negative("temperature", t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sgd_is_a_plain_gradient_step() {
        let mut x = [1.0f64, -2.0];
        langevin_step(&mut x, &[0.5, -1.0], &[9.0, 9.0], 0.1, 0.0);
        assert_eq!(x, [0.95, -1.9]);
    }

    /// The merged scale against its definition, the variances adding: s² equals
    /// (η σ_g)² + σ² to 4 ulp (the roundings of the products, the sum, the square root
    /// and the squaring here); the SGD levels' scale is η·σ_g exactly, σ_g = 0 gives σ
    /// exactly, and the sign of σ_g does not matter.
    #[test]
    fn merged_scale_adds_the_variances() {
        assert_eq!(merged_noise_scale(0.3, 2.0, 0.0), 0.3 * 2.0);
        assert_eq!(merged_noise_scale(0.3, 0.0, 0.7), 0.7);
        assert_eq!(merged_noise_scale(0.3, 0.0, 0.0), 0.0);
        assert_eq!(merged_noise_scale(0.3, -2.0, 0.0), 0.3 * 2.0);
        assert_eq!(
            merged_noise_scale(0.3, -2.0, 0.5).to_bits(),
            merged_noise_scale(0.3, 2.0, 0.5).to_bits()
        );
        for (eta, g, t) in [
            (0.003, 2.0, 1.0),
            (0.6, 2.0, 1.0),
            (0.01, 0.5, 3.0),
            (1e-6, 4.0, 0.2),
        ] {
            let sigma = noise_scale(Explorer::Langevin, eta, t);
            let s = merged_noise_scale(eta, g, sigma);
            let want = (eta * g) * (eta * g) + sigma * sigma;
            assert!(
                ((s * s - want) / want).abs() < 4.0 * f64::EPSILON,
                "{eta} {g} {t}"
            );
        }
        assert!(merged_noise_scale(0.3, f64::NAN, 0.5).is_nan());
    }

    #[test]
    fn langevin_adds_scaled_noise() {
        let mut x = [0.0f32, 0.0];
        let sigma = noise_scale(Explorer::Langevin, 0.5, 1.0) as f32;
        assert_eq!(sigma, 1.0);
        langevin_step(&mut x, &[1.0, 2.0], &[0.25, -0.5], 0.5, sigma);
        assert_eq!(x, [-0.25, -1.5]);
    }

    #[test]
    fn momentum_accumulates_velocity() {
        let mut x = [0.0f64];
        let mut v = [0.0f64];
        for _ in 0..3 {
            momentum_step(&mut x, &mut v, &[1.0], &[0.0], 0.1, 0.5, 0.0);
        }
        // v: −0.1, −0.15, −0.175; x: −0.1, −0.25, −0.425.
        assert!((v[0] + 0.175).abs() < 1e-15);
        assert!((x[0] + 0.425).abs() < 1e-15);
        let s = noise_scale(Explorer::Momentum { momentum: 0.75 }, 2.0, 1.0);
        assert!((s - 1.0).abs() < 1e-15);
    }

    /// SGLD on U(x) = x²/2 at temperature T samples N(0, T) up to O(η) bias: the
    /// stationary variance of x ← (1 − η) x + sqrt(2ηT) ξ is 2ηT / (1 − (1 − η)²).
    #[test]
    fn langevin_on_a_gaussian_has_the_right_variance() {
        use crate::rng::{PhiloxStream, fill_normals};
        let (eta, t) = (0.05f64, 2.0f64);
        let sigma = noise_scale(Explorer::Langevin, eta, t);
        let mut rng = PhiloxStream::new(5, 0, 0, 0, 1);
        let mut x = [0.0f64];
        let mut noise = [0.0f64; 1];
        let (mut sum, mut sum2, n) = (0.0, 0.0, 400_000);
        for i in 0..n + 1000 {
            fill_normals(&mut rng, &mut noise);
            let g = [x[0]];
            langevin_step(&mut x, &g, &noise, eta, sigma);
            if i >= 1000 {
                sum += x[0];
                sum2 += x[0] * x[0];
            }
        }
        let mean = sum / n as f64;
        let var = sum2 / n as f64 - mean * mean;
        let exact = 2.0 * eta * t / (1.0 - (1.0 - eta) * (1.0 - eta));
        // Autocorrelation time ≈ 1/η = 20 steps: effective n ≈ 20,000, so the relative
        // standard error of the variance is about sqrt(2/20,000) = 1%; allow 5%.
        assert!((var / exact - 1.0).abs() < 0.05, "var {var} vs {exact}");
        assert!(mean.abs() < 0.1, "mean {mean}");
    }

    #[test]
    fn bad_momentum_is_rejected() {
        assert!(Explorer::Momentum { momentum: 1.0 }.validate().is_err());
        assert!(
            Explorer::Momentum { momentum: f64::NAN }
                .validate()
                .is_err()
        );
        assert!(Explorer::MSGD.validate().is_ok());
        assert!(check_temperatures(&[1.0, 0.0]).is_ok());
        assert!(check_temperatures(&[1.0, -0.1]).is_err());
    }
}
