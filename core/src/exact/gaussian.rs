//! The Gaussian path: reference N(0, σ₀² I_d), target N(0, σ₁² I_d), and its closed forms.
//!
//! Pigeons.jl tests its tempering with this path (`ScaledPrecisionNormalPath`, precisions
//! 1 and 10, after section I.4.1 of Syed et al.'s supplement); the defaults are the same,
//! σ₀² = 1 and σ₁² = 0.1. Write a = 1/σ₀², b = 1/σ₁² and k = b − a.
//!
//! # The functions
//!
//! ```text
//! log π₀(x) = −a|x|²/2 − (d/2) ln(2πσ₀²)          (normalized: Z(0) = 1)
//! ℓ(x)      = −k|x|²/2 + (d/2) ln(2πσ₀²)          (so π₀ e^ℓ = γ₁(x) = exp(−b|x|²/2))
//! ```
//!
//! ℓ is deliberately unnormalized: the target the stepping stone sees is
//! γ₁ = exp(−|x|²/(2σ₁²)), whose log normalizing constant is (d/2) ln(2πσ₁²), not 0.
//!
//! # Tempered distributions and normalizing constants
//!
//! `π₀ e^{βℓ} = exp(−τ_β |x|²/2) · (2πσ₀²)^{−(1−β)d/2}` with the precision
//! `τ_β = (1 − β) a + β b = a + β k`, so π_β = N(0, I/τ_β) and
//!
//! ```text
//! log Z(β) = (d/2) [ln(2π/τ_β) − (1 − β) ln(2πσ₀²)],   Z(0) = 1,   log Z(1) = (d/2) ln(2πσ₁²).
//! ```
//!
//! # Communication barrier
//!
//! Syed, Bouchard-Côté, Deligiannidis and Doucet (JRSS-B 2022) define the local barrier
//! `λ(β) = ½ E|ℓ(X) − ℓ(X′)|` for X, X′ independent from π_β (their V is −ℓ), and show
//! that the swap rejection rate between β and β′ is |Λ(β′) − Λ(β)| + O(|β′ − β|³) with
//! `Λ(β) = ∫₀^β λ`. Here `|X|² = U/τ_β` with U ~ χ²_d, so
//! `ℓ(X) − ℓ(X′) = −k (U − U′)/(2τ_β)` and `λ(β) = |k| E|U − U′| / (4 τ_β)`.
//!
//! E|U − U′| for independent χ²_d: with X = Z, X′ = Z′ standard normal in R^d,
//! `U − U′ = Σ (Z_i − Z′_i)(Z_i + Z′_i) = 2⟨A, B⟩` where A = (Z − Z′)/√2 and
//! B = (Z + Z′)/√2 are independent N(0, I_d). Given B, ⟨A, B⟩ ~ N(0, |B|²), whose mean
//! absolute value is |B|·√(2/π); and E|B| = √2 Γ((d+1)/2)/Γ(d/2) (the χ_d mean). Hence
//!
//! ```text
//! E|χ²_d − χ²′_d| = 4 c_d,   c_d = Γ((d+1)/2) / (√π Γ(d/2))     (d = 1: 4/π; d = 2: 2),
//! λ(β) = |k| c_d / τ_β,   Λ(β) = c_d |ln(τ_β / a)|,   Λ = Λ(1) = c_d |ln(σ₀²/σ₁²)|.
//! ```
//!
//! For σ₀² = 1, σ₁² = 0.1: Λ = ln(10) c_d; d = 1 gives ln(10)/π ≈ 0.7329. By Legendre's
//! duplication formula this is the form Pigeons.jl tests against (its
//! `analytic_cumulativebarrier`, which it attributes to Predescu et al., doi
//! 10.1063/1.1644093): `Λ(β) = 2^{2−d}/B(d/2, d/2) · ln(σ₀/σ_β)`.
//! `core/tests/it/exact.rs` checks both E|χ² − χ²′| and Λ by independent quadrature.

use core::convert::Infallible;

use rand_core::Rng;

use super::path::AnnealingPath;
use crate::error::{Error, check_positive};
use crate::rng::fill_normals;

/// Reference N(0, σ₀² I_d), target N(0, σ₁² I_d), with the unnormalized
/// ℓ(x) = −(1/σ₁² − 1/σ₀²)|x|²/2 + (d/2) ln(2πσ₀²) of the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GaussianPath {
    dim: usize,
    reference_variance: f64,
    target_variance: f64,
    /// (d/2) ln(2πσ₀²).
    half_log_reference: f64,
}

impl GaussianPath {
    /// σ₀² = 1 and σ₁² = 0.1, as Pigeons.jl's tests.
    pub fn standard(dim: usize) -> Result<Self, Error> {
        Self::new(dim, 1.0, 0.1)
    }

    /// The path from N(0, `reference_variance`·I) to N(0, `target_variance`·I) in
    /// `dim ≥ 1` dimensions; both variances finite and > 0.
    pub fn new(dim: usize, reference_variance: f64, target_variance: f64) -> Result<Self, Error> {
        if dim == 0 {
            return Err(Error::InvalidValue {
                name: "dim",
                value: 0.0,
                allowed: ">= 1",
            });
        }
        check_positive("reference_variance", reference_variance)?;
        check_positive("target_variance", target_variance)?;
        let a = 1.0 / reference_variance;
        let b = 1.0 / target_variance;
        if !(a.is_finite() && b.is_finite() && (b - a).is_finite()) {
            return Err(Error::InvalidValue {
                name: "reference_variance",
                value: reference_variance,
                allowed: "such that 1/σ₀² and 1/σ₁² are finite",
            });
        }
        Ok(GaussianPath {
            dim,
            reference_variance,
            target_variance,
            half_log_reference: 0.5
                * dim as f64
                * libm::log(core::f64::consts::TAU * reference_variance),
        })
    }

    /// σ₀².
    pub fn reference_variance(&self) -> f64 {
        self.reference_variance
    }

    /// σ₁².
    pub fn target_variance(&self) -> f64 {
        self.target_variance
    }

    /// k = 1/σ₁² − 1/σ₀²: ℓ(x) = −k|x|²/2 + const.
    pub fn likelihood_precision(&self) -> f64 {
        1.0 / self.target_variance - 1.0 / self.reference_variance
    }

    /// τ_β = (1 − β)/σ₀² + β/σ₁²: π_β = N(0, I/τ_β).
    pub fn precision(&self, beta: f64) -> f64 {
        (1.0 - beta) / self.reference_variance + beta / self.target_variance
    }

    /// log Z(β) = (d/2)[ln(2π/τ_β) − (1 − β) ln(2πσ₀²)] for the functions as this path
    /// returns them: 0 at β = 0, (d/2) ln(2πσ₁²) at β = 1.
    pub fn log_normalizer(&self, beta: f64) -> f64 {
        0.5 * self.dim as f64 * libm::log(core::f64::consts::TAU / self.precision(beta))
            - (1.0 - beta) * self.half_log_reference
    }

    /// log Z(1) − log Z(0) = (d/2) ln(2πσ₁²): what the stepping stone estimates.
    pub fn log_evidence(&self) -> f64 {
        self.log_normalizer(1.0) - self.log_normalizer(0.0)
    }

    /// c_d = Γ((d+1)/2)/(√π Γ(d/2)), so that E|χ²_d − χ²′_d| = 4 c_d.
    pub fn barrier_constant(&self) -> f64 {
        barrier_constant(self.dim)
    }

    /// The local barrier λ(β) = |k| c_d / τ_β.
    pub fn local_barrier(&self, beta: f64) -> f64 {
        libm::fabs(self.likelihood_precision()) * self.barrier_constant() / self.precision(beta)
    }

    /// The cumulative barrier Λ(β) = c_d |ln(τ_β σ₀²)|.
    pub fn cumulative_barrier(&self, beta: f64) -> f64 {
        self.barrier_constant()
            * libm::fabs(libm::log(self.precision(beta) * self.reference_variance))
    }

    /// The global barrier Λ = Λ(1) = c_d |ln(σ₀²/σ₁²)|.
    pub fn global_barrier(&self) -> f64 {
        self.barrier_constant()
            * libm::fabs(libm::log(self.reference_variance / self.target_variance))
    }
}

/// c_d = Γ((d+1)/2)/(√π Γ(d/2)) for `dim = d ≥ 1` (by `lgamma`): E|χ²_d − χ²′_d| = 4 c_d
/// for independent χ²_d variables (derivation in the [module docs](self)).
pub fn barrier_constant(dim: usize) -> f64 {
    let d = dim as f64;
    libm::exp(libm::lgamma(0.5 * (d + 1.0)) - libm::lgamma(0.5 * d))
        / libm::sqrt(core::f64::consts::PI)
}

fn squared_norm(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum()
}

impl AnnealingPath for GaussianPath {
    type Error = Infallible;

    fn dim(&self) -> usize {
        self.dim
    }

    fn log_reference(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64, Infallible> {
        let a = 1.0 / self.reference_variance;
        for (g, &v) in grad.iter_mut().zip(x) {
            *g = -a * v;
        }
        Ok(-0.5 * a * squared_norm(x) - self.half_log_reference)
    }

    fn log_likelihood_gradient(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64, Infallible> {
        let k = self.likelihood_precision();
        for (g, &v) in grad.iter_mut().zip(x) {
            *g = -k * v;
        }
        Ok(-0.5 * k * squared_norm(x) + self.half_log_reference)
    }

    fn log_likelihood(&mut self, x: &[f64]) -> Result<f64, Infallible> {
        Ok(-0.5 * self.likelihood_precision() * squared_norm(x) + self.half_log_reference)
    }

    /// σ₀ times D standard normals by [`fill_normals`] (`2·ceil(D/2)` words).
    fn sample_reference<R: Rng + ?Sized>(
        &mut self,
        x: &mut [f64],
        rng: &mut R,
    ) -> Result<(), Infallible> {
        fill_normals(rng, x);
        let s = libm::sqrt(self.reference_variance);
        for v in x.iter_mut() {
            *v *= s;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_forms_at_known_points() {
        let p = GaussianPath::standard(1).unwrap();
        assert!((p.global_barrier() - libm::log(10.0) / core::f64::consts::PI).abs() < 1e-15);
        assert!(
            (barrier_constant(2) - 0.5).abs() < 1e-15,
            "E|χ²₂ − χ²₂′| = 2"
        );
        assert!((barrier_constant(1) - 1.0 / core::f64::consts::PI).abs() < 1e-15);
        let q = GaussianPath::standard(10).unwrap();
        assert!(q.log_normalizer(0.0).abs() < 1e-14);
        let want = 5.0 * libm::log(core::f64::consts::TAU * 0.1);
        assert!((q.log_evidence() - want).abs() < 1e-13);
        assert!((q.precision(1.0) - 10.0).abs() < 1e-14);
        assert!((q.cumulative_barrier(1.0) - q.global_barrier()).abs() < 1e-14);
        // λ is the derivative of Λ (central differences).
        for beta in [0.1, 0.5, 0.9] {
            let h = 1e-5;
            let fd = (q.cumulative_barrier(beta + h) - q.cumulative_barrier(beta - h)) / (2.0 * h);
            assert!((fd - q.local_barrier(beta)).abs() < 1e-7 * q.local_barrier(beta));
        }
    }

    #[test]
    fn functions_are_consistent() {
        let mut p = GaussianPath::new(3, 2.0, 0.5).unwrap();
        let x = [0.3, -1.2, 0.7];
        let mut g0 = [0.0; 3];
        let mut g1 = [0.0; 3];
        let lr = p.log_reference(&x, &mut g0).unwrap();
        let ll = p.log_likelihood_gradient(&x, &mut g1).unwrap();
        assert_eq!(ll, p.log_likelihood(&x).unwrap());
        // π₀ e^ℓ = exp(−|x|²/(2σ₁²)).
        let r2: f64 = x.iter().map(|v| v * v).sum();
        assert!((lr + ll + r2 / (2.0 * 0.5)).abs() < 1e-13);
        for i in 0..3 {
            assert!((g0[i] + g1[i] + x[i] / 0.5).abs() < 1e-14);
        }
        // A wider target: k < 0, the barrier stays positive.
        assert!(p.likelihood_precision() > 0.0);
        let w = GaussianPath::new(2, 0.1, 1.0).unwrap();
        assert!(w.likelihood_precision() < 0.0 && w.global_barrier() > 0.0);
        assert!(
            (w.global_barrier() - GaussianPath::standard(2).unwrap().global_barrier()).abs()
                < 1e-14
        );
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(GaussianPath::new(0, 1.0, 0.1).is_err());
        assert!(GaussianPath::new(2, 0.0, 0.1).is_err());
        assert!(GaussianPath::new(2, 1.0, f64::NAN).is_err());
        assert!(GaussianPath::new(2, f64::INFINITY, 0.1).is_err());
        assert!(GaussianPath::new(2, 1.0, 1e-320).is_err());
    }
}
