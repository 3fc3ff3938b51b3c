//! What the exact explorers (MALA and HMC) share: the tempered density and its gradient
//! at a point, the error of one explorer call, and the step-size adaptation.
//!
//! # The tempered density
//!
//! At level β both explorers target `f(x) = log π₀(x) + β ℓ(x)` (up to a constant) with
//! gradient `∇f = ∇ log π₀ + β ∇ℓ` ([`tempered_gradient`]); at β = 0 the likelihood plays
//! no part, not even through a non-finite ℓ ([`log_tempered`]).
//!
//! # Step sizes (Robbins–Monro on log ε)
//!
//! Each level (or each chain a caller runs on its own) has its own step size ε, adapted
//! towards an acceptance rate a⋆ by
//!
//! ```text
//! log ε ← log ε + (n + 1)^(−κ) · (ā − a⋆),
//! ```
//!
//! with ā the mean acceptance probability (not the 0/1 outcome: less noise) of the
//! transitions since the last update, n the number of updates so far, κ ∈ (0.5, 1]
//! (default 0.6) ([`adapt_step`]). The gain starts at 1 (ε moves by a factor of at most
//! e^{max(a⋆, 1 − a⋆)} per update, so a poor initial ε is corrected within tens of
//! updates) and diminishes, so the adaptation vanishes over the run (Roberts and Rosenthal, J. Appl.
//! Prob. 2007, for its validity). ε stays within [[`MIN_STEP`], [`MAX_STEP`]]. The
//! targets: a⋆ = 0.574 for MALA (Roberts and Rosenthal, JRSS-B 1998), a⋆ = 0.65 for HMC
//! (Beskos, Pillai, Roberts, Sanz-Serna and Stuart, Bernoulli 2013), both the optima as
//! the dimension grows.

use core::fmt;

use super::path::{AnnealingPath, log_tempered};
use crate::error::{Error, check_len, check_positive, check_rate};

/// log π₀, ℓ and `f = log π₀ + β ℓ` at one point.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TemperedPoint {
    /// log π₀(x).
    pub log_reference: f64,
    /// ℓ(x).
    pub log_likelihood: f64,
    /// f(x) = log π₀(x) + β ℓ(x) ([`log_tempered`]).
    pub log_density: f64,
}

/// log π₀, ℓ and f = log π₀ + β ℓ at `x`, and ∇f into `grad` (using `tmp` for ∇ℓ; both of
/// the length of `x`). One evaluation of log π₀ and of ℓ with their gradients.
pub fn tempered_gradient<P: AnnealingPath>(
    path: &mut P,
    beta: f64,
    x: &[f64],
    grad: &mut [f64],
    tmp: &mut [f64],
) -> Result<TemperedPoint, P::Error> {
    let lr = path.log_reference(x, grad)?;
    let ll = path.log_likelihood_gradient(x, tmp)?;
    if beta != 0.0 {
        for (gi, &ti) in grad.iter_mut().zip(tmp.iter()) {
            *gi += beta * ti;
        }
    }
    Ok(TemperedPoint {
        log_reference: lr,
        log_likelihood: ll,
        log_density: log_tempered(beta, lr, ll),
    })
}

/// Why an explorer call ([`mala_explore`](super::mala_explore),
/// [`hmc_explore`](super::hmc_explore)) did not run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ExploreError<E> {
    /// The path's own error: the state may be half-moved.
    Path(E),
    /// A slice of the wrong length ([`Error::LengthMismatch`]: `x` must have
    /// [`AnnealingPath::dim`] entries, `scratch` a multiple of them); nothing was done.
    Input(Error),
}

impl<E> From<Error> for ExploreError<E> {
    fn from(e: Error) -> Self {
        ExploreError::Input(e)
    }
}

impl<E: fmt::Display> fmt::Display for ExploreError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExploreError::Path(e) => write!(f, "the annealing path failed: {e}"),
            ExploreError::Input(e) => e.fmt(f),
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for ExploreError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            ExploreError::Path(e) => Some(e),
            ExploreError::Input(e) => Some(e),
        }
    }
}

/// Checks `x` (length D of the path) and `scratch` (`vectors`·D, or longer).
pub(crate) fn check_lengths(
    dim: usize,
    x: usize,
    scratch: usize,
    vectors: usize,
) -> Result<(), Error> {
    check_len("x", x, dim)?;
    let need = dim.checked_mul(vectors).ok_or(Error::InvalidValue {
        name: "dim",
        value: dim as f64,
        allowed: "small enough that the scratch length fits in memory",
    })?;
    if scratch < need {
        return Err(Error::LengthMismatch {
            name: "scratch",
            expected: need,
            found: scratch,
        });
    }
    Ok(())
}

/// Smallest step size the adaptation allows.
pub const MIN_STEP: f64 = 1e-12;
/// Largest step size the adaptation allows.
pub const MAX_STEP: f64 = 1e12;

/// One Robbins–Monro update of a step size: `log ε += (n + 1)^(−κ)(ā − a⋆)`, with
/// `updates = n` earlier updates and `mean_acceptance = ā` (NaN counts as 0); the result
/// is clamped to [[`MIN_STEP`], [`MAX_STEP`]] (see the [module docs](self)).
pub fn adapt_step(step: f64, updates: u64, mean_acceptance: f64, target: f64, decay: f64) -> f64 {
    let a = if mean_acceptance.is_nan() {
        0.0
    } else {
        mean_acceptance.clamp(0.0, 1.0)
    };
    let gain = libm::pow(updates as f64 + 1.0, -decay);
    (step * libm::exp(gain * (a - target))).clamp(MIN_STEP, MAX_STEP)
}

/// The names of an explorer's adaptation options in its errors.
pub(crate) struct OptionNames {
    pub initial_step: &'static str,
    pub target_acceptance: &'static str,
    pub steps_per_iteration: &'static str,
    pub decay: &'static str,
}

/// Checks the options both explorers have: ε₀ in [[`MIN_STEP`], [`MAX_STEP`]], a⋆ in
/// (0, 1), at least one transition per iteration, κ in (0.5, 1].
pub(crate) fn check_adaptation(
    names: &OptionNames,
    initial_step: f64,
    target_acceptance: f64,
    steps_per_iteration: u32,
    decay: f64,
) -> Result<(), Error> {
    check_positive(names.initial_step, initial_step)?;
    if !(MIN_STEP..=MAX_STEP).contains(&initial_step) {
        return Err(Error::InvalidValue {
            name: names.initial_step,
            value: initial_step,
            allowed: "in [1e-12, 1e12]",
        });
    }
    check_rate(names.target_acceptance, target_acceptance)?;
    if steps_per_iteration == 0 {
        return Err(Error::InvalidValue {
            name: names.steps_per_iteration,
            value: 0.0,
            allowed: ">= 1",
        });
    }
    if !(decay > 0.5 && decay <= 1.0) {
        return Err(Error::InvalidValue {
            name: names.decay,
            value: decay,
            allowed: "in (0.5, 1]",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptation_moves_the_right_way_and_stays_in_range() {
        assert!(adapt_step(1.0, 0, 1.0, 0.574, 0.6) > 1.0);
        assert!(adapt_step(1.0, 0, 0.0, 0.574, 0.6) < 1.0);
        assert!(adapt_step(1.0, 0, f64::NAN, 0.574, 0.6) < 1.0);
        assert_eq!(adapt_step(MIN_STEP, 0, 0.0, 0.574, 0.6), MIN_STEP);
        assert_eq!(adapt_step(MAX_STEP, 0, 1.0, 0.574, 0.6), MAX_STEP);
        let late = adapt_step(1.0, 1_000_000, 1.0, 0.574, 0.6);
        assert!(late > 1.0 && late < 1.001);
        // The closed form: gain (n + 1)^(−κ) = 4^(−0.6) at n = 3, ā − a⋆ = 0.35 − 0.65.
        let want = 0.2 * (-0.3 * 4f64.powf(-0.6)).exp();
        let got = adapt_step(0.2, 3, 0.35, 0.65, 0.6);
        assert!((got / want - 1.0).abs() < 1e-15, "{got} vs {want}");
    }

    #[test]
    fn lengths_are_checked() {
        assert_eq!(check_lengths(3, 3, 15, 5), Ok(()));
        assert_eq!(check_lengths(3, 3, 16, 5), Ok(()));
        assert!(matches!(
            check_lengths(3, 2, 15, 5),
            Err(Error::LengthMismatch { name: "x", .. })
        ));
        assert!(matches!(
            check_lengths(3, 3, 14, 5),
            Err(Error::LengthMismatch {
                name: "scratch",
                expected: 15,
                found: 14
            })
        ));
        assert!(check_lengths(usize::MAX, usize::MAX, 0, 5).is_err());
    }
}
