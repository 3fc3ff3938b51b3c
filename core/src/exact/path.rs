//! Annealing paths with a reference: the densities exact tempering interpolates.
//!
//! A path is a reference π₀ that can be sampled exactly and a target π₁, joined by
//!
//! ```text
//! π_β(x) ∝ π₀(x)^(1−β) π₁(x)^β = π₀(x) · exp(β ℓ(x)),   ℓ = log π₁ − log π₀,   β ∈ [0, 1].
//! ```
//!
//! The sampler needs log π₀ and ℓ with their gradients (MALA or HMC at every β > 0), ℓ alone
//! (the swaps and the stepping stone), and exact draws from π₀ (the level β = 0). In
//! nrpt's level order, level 0 is the target (β = 1) and level P − 1 the reference
//! (β = 0).
//!
//! Normalization is the path's choice and decides what the stepping stone estimates:
//! with `Z(β) = ∫ π₀(x) e^{β ℓ(x)} dx` for the functions exactly as the path returns
//! them, the sampler estimates `log Z(1) − log Z(0)`. If [`log_reference`] returns a
//! normalized log density (Z(0) = 1), that is log Z(1) = log ∫ π₀ e^ℓ, the log normalizing
//! constant of the unnormalized target `γ₁ = π₀ e^ℓ`.
//!
//! [`log_reference`]: AnnealingPath::log_reference

use rand_core::Rng;

use crate::error::Error;

/// A reference π₀ and a log-likelihood ℓ = log π₁ − log π₀: the path
/// π_β ∝ π₀ e^{βℓ} (see the [module docs](self)).
///
/// States are `f64` slices of length [`dim`](AnnealingPath::dim); gradients are written
/// into caller-owned slices of the same length. Randomness for exact draws comes only
/// from the `rng` handed in (the driver hands each replica and iteration its own Philox
/// stream, [`crate::rng::streams::EXACT_EXPLORE`]).
pub trait AnnealingPath {
    /// Error of a failed evaluation (a data source that fails, say). Non-finite values
    /// are not errors: a MALA or HMC proposal with a non-finite log density is rejected and a
    /// non-finite ℓ never wins a swap. `Clone`, because a sampler stopped by an error
    /// returns it again on every later call.
    type Error: core::fmt::Debug + Clone;

    /// Dimension D of a state.
    fn dim(&self) -> usize;

    /// Checks the path's own settings when a sampler is built; the default accepts
    /// everything.
    fn validate(&self) -> Result<(), Error> {
        Ok(())
    }

    /// log π₀(x), and ∇ log π₀(x) written into `grad` (length D).
    fn log_reference(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64, Self::Error>;

    /// ℓ(x) = log π₁(x) − log π₀(x), and ∇ℓ(x) written into `grad` (length D).
    fn log_likelihood_gradient(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64, Self::Error>;

    /// ℓ(x) alone (the reference level needs no gradient).
    fn log_likelihood(&mut self, x: &[f64]) -> Result<f64, Self::Error>;

    /// Overwrites `x` (length D) with an exact draw from the normalized π₀, using only
    /// `rng`.
    fn sample_reference<R: Rng + ?Sized>(
        &mut self,
        x: &mut [f64],
        rng: &mut R,
    ) -> Result<(), Self::Error>;

    /// The target level's state after an iteration of
    /// [`ExactTempering::step`](super::ExactTempering::step), for a path that adapts to
    /// the target (a [`VariationalPath`](super::VariationalPath) gathers its moments).
    /// The default ignores it.
    fn observe_target(&mut self, _x: &[f64]) {}

    /// The end of a round of [`ExactTempering::step`](super::ExactTempering::step)
    /// whose grid adapts: a path may change here (a
    /// [`VariationalPath`](super::VariationalPath) fits its reference) and returns
    /// whether it did; the sampler then evaluates every replica's ℓ again, so that the
    /// next round runs on the new path. The default changes nothing.
    fn end_round(&mut self) -> Result<bool, Self::Error> {
        Ok(false)
    }
}

/// The path of a run whose caller explores and tells nrpt the log-likelihoods
/// ([`ExactTempering::told`](super::ExactTempering::told) and
/// [`ExactTempering::tell`](super::ExactTempering::tell)): nrpt keeps no states (D = 0)
/// and never evaluates anything. Its functions answer [`NoPathError`], so a
/// [`ExactTempering::step`](super::ExactTempering::step) on such a run stops with that
/// error instead of sampling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoPath;

/// The error of [`NoPath`]'s functions: a run told its log-likelihoods has no path to
/// explore with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoPathError;

impl core::fmt::Display for NoPathError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(
            "this run is told its log-likelihoods and has no path to explore: call tell, not step",
        )
    }
}

impl core::error::Error for NoPathError {}

impl AnnealingPath for NoPath {
    type Error = NoPathError;

    fn dim(&self) -> usize {
        0
    }

    fn log_reference(&mut self, _: &[f64], _: &mut [f64]) -> Result<f64, NoPathError> {
        Err(NoPathError)
    }

    fn log_likelihood_gradient(&mut self, _: &[f64], _: &mut [f64]) -> Result<f64, NoPathError> {
        Err(NoPathError)
    }

    fn log_likelihood(&mut self, _: &[f64]) -> Result<f64, NoPathError> {
        Err(NoPathError)
    }

    fn sample_reference<R: Rng + ?Sized>(
        &mut self,
        _: &mut [f64],
        _: &mut R,
    ) -> Result<(), NoPathError> {
        Err(NoPathError)
    }
}

/// `log π_β = log π₀ + β ℓ` from its two parts (what the explorers target at level β, up to the
/// constant log Z(β)).
#[inline]
pub fn log_tempered(beta: f64, log_reference: f64, log_likelihood: f64) -> f64 {
    if beta == 0.0 {
        // 0 · (−∞) would be NaN: at β = 0 the likelihood plays no part.
        log_reference
    } else {
        log_reference + beta * log_likelihood
    }
}
