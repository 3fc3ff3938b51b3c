//! The MALA explorer at each level's β, and exact draws at β = 0.
//!
//! # MALA (Roberts and Tweedie, Bernoulli 1996)
//!
//! At level β the target is `f(x) = log π₀(x) + β ℓ(x)` (up to a constant) with gradient
//! `g = ∇ log π₀ + β ∇ℓ`. With step size ε and `h = ε²/2`, one step proposes
//! `y = x + h g(x) + ε ξ`, ξ ~ N(0, I_D), and accepts it with probability
//! `min(1, exp(f(y) − f(x) + log q(x|y) − log q(y|x)))`, where
//! `log q(y|x) = −|y − x − h g(x)|²/(2ε²)` (the constants cancel). The Metropolis
//! correction makes π_β exactly invariant, whatever ε.
//!
//! A proposal whose log density or gradient is not finite is rejected. A current state
//! whose log density is not finite (a state the caller supplied outside the support)
//! accepts any finite proposal.
//!
//! Word use, per step (stream [`EXACT_EXPLORE`](crate::rng::streams::EXACT_EXPLORE)):
//! `2·ceil(D/2)` words for ξ by [`fill_normals`], then one word for the uniform of the
//! accept/reject test, drawn even when the proposal is rejected outright.
//!
//! # Step sizes
//!
//! Each level has its own ε, adapted by the Robbins–Monro recursion on log ε of
//! [`adapt_step`](super::adapt_step) towards the acceptance rate a⋆ = 0.574, the optimum
//! of Roberts and Rosenthal (JRSS-B 1998) for MALA in high dimension (see
//! [`super::explorer`]). A level keeps its ε when the β grid moves between rounds; the
//! adaptation follows the move.

use rand_core::Rng;

use super::explorer::{
    ExploreError, OptionNames, check_adaptation, check_lengths, tempered_gradient,
};
use super::path::AnnealingPath;
use crate::error::Error;
use crate::rng::{UnitDraw, fill_normals};

/// Vectors of length D in the scratch of [`mala_explore`]: proposal, two gradients, a
/// temporary.
pub const MALA_SCRATCH_VECTORS: usize = 4;

/// Options of the MALA explorers. `Default`: ε₀ = 0.5, a⋆ = 0.574, one step per
/// iteration, adaptation on with κ = 0.6.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MalaOptions {
    /// Step size ε of every level at the start (finite, > 0).
    pub initial_step: f64,
    /// Acceptance rate a⋆ the adaptation aims at, in (0, 1).
    pub target_acceptance: f64,
    /// MALA steps every level with β > 0 takes per iteration (≥ 1).
    pub steps_per_iteration: u32,
    /// Adapt the step sizes (otherwise they stay at `initial_step`).
    pub adapt: bool,
    /// κ of the gain (n + 1)^(−κ), in (0.5, 1].
    pub decay: f64,
}

impl Default for MalaOptions {
    fn default() -> Self {
        MalaOptions {
            initial_step: 0.5,
            target_acceptance: 0.574,
            steps_per_iteration: 1,
            adapt: true,
            decay: 0.6,
        }
    }
}

impl MalaOptions {
    /// Checks every field.
    pub fn validate(self) -> Result<Self, Error> {
        check_adaptation(
            &OptionNames {
                initial_step: "mala.initial_step",
                target_acceptance: "mala.target_acceptance",
                steps_per_iteration: "mala.steps_per_iteration",
                decay: "mala.decay",
            },
            self.initial_step,
            self.target_acceptance,
            self.steps_per_iteration,
            self.decay,
        )?;
        Ok(self)
    }
}

/// What one level's exploration at one iteration did, and where it left the replica.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MalaOutcome {
    /// Sum of the acceptance probabilities of the steps (0 for an exact draw).
    pub acceptance_sum: f64,
    /// Proposals made (0 for an exact draw).
    pub proposals: u32,
    /// Proposals accepted.
    pub accepted: u32,
    /// ℓ at the final state.
    pub log_likelihood: f64,
}

impl MalaOutcome {
    /// Mean acceptance probability of the proposals (NaN without proposals).
    pub fn mean_acceptance(&self) -> f64 {
        self.acceptance_sum / f64::from(self.proposals)
    }
}

/// `steps` MALA steps at inverse temperature `beta` with step size `step`, from `x`
/// (length D = [`AnnealingPath::dim`], updated in place); `scratch` has at least
/// [`MALA_SCRATCH_VECTORS`]·D entries (proposal, two gradients, a temporary). Draws from
/// `rng` as the [module docs](self) say. Costs `steps + 1` evaluations of log π₀ and of ℓ
/// with their gradients.
///
/// # Errors
///
/// [`ExploreError::Input`] for a slice of the wrong length (nothing done),
/// [`ExploreError::Path`] for the path's error.
pub fn mala_explore<P: AnnealingPath, R: Rng + ?Sized>(
    path: &mut P,
    beta: f64,
    step: f64,
    steps: u32,
    x: &mut [f64],
    scratch: &mut [f64],
    rng: &mut R,
) -> Result<MalaOutcome, ExploreError<P::Error>> {
    check_lengths(path.dim(), x.len(), scratch.len(), MALA_SCRATCH_VECTORS)?;
    mala_unchecked(path, beta, step, steps, x, scratch, rng).map_err(ExploreError::Path)
}

/// [`mala_explore`] for lengths the caller has checked.
pub(crate) fn mala_unchecked<P: AnnealingPath, R: Rng + ?Sized>(
    path: &mut P,
    beta: f64,
    step: f64,
    steps: u32,
    x: &mut [f64],
    scratch: &mut [f64],
    rng: &mut R,
) -> Result<MalaOutcome, P::Error> {
    let d = x.len();
    let (y, rest) = scratch.split_at_mut(d);
    let (gx, rest) = rest.split_at_mut(d);
    let (gy, rest) = rest.split_at_mut(d);
    let tmp = &mut rest[..d];
    let h = 0.5 * step * step;

    let start = tempered_gradient(path, beta, x, gx, tmp)?;
    let (mut fx, mut lx) = (start.log_density, start.log_likelihood);
    let mut out = MalaOutcome::default();
    for _ in 0..steps {
        // y = x + h g(x) + ε ξ; |y − x − h g(x)|² = ε²|ξ|².
        fill_normals(rng, y);
        let mut forward = 0.0;
        for ((yi, &xi), &gi) in y.iter_mut().zip(x.iter()).zip(gx.iter()) {
            forward += *yi * *yi;
            *yi = xi + h * gi + step * *yi;
        }
        let u = f64::uniform(rng.next_u32());
        out.proposals += 1;
        let proposal = tempered_gradient(path, beta, y, gy, tmp)?;
        let (fy, ly) = (proposal.log_density, proposal.log_likelihood);
        if !(fy.is_finite() && gy.iter().all(|g| g.is_finite())) {
            continue;
        }
        // log q(x|y) − log q(y|x) = (ε²|ξ|² − |x − y − h g(y)|²)/(2ε²).
        let backward: f64 = x
            .iter()
            .zip(y.iter())
            .zip(gy.iter())
            .map(|((&xi, &yi), &gi)| {
                let r = xi - yi - h * gi;
                r * r
            })
            .sum();
        let log_ratio = fy - fx + (step * step * forward - backward) / (2.0 * step * step);
        // A current state outside the support accepts any finite proposal.
        let (accept, prob) = if !fx.is_finite() || log_ratio >= 0.0 {
            (true, 1.0)
        } else {
            // NaN compares false: rejected, probability 0.
            let p = libm::exp(log_ratio);
            (
                f64::ln_uniform(u) < log_ratio,
                if p.is_nan() { 0.0 } else { p },
            )
        };
        out.acceptance_sum += prob;
        if accept {
            out.accepted += 1;
            x.copy_from_slice(y);
            gx.copy_from_slice(gy);
            fx = fy;
            lx = ly;
        }
    }
    out.log_likelihood = lx;
    Ok(out)
}

/// The reference level's move: an exact draw from π₀ into `x`, and ℓ there.
pub fn reference_draw<P: AnnealingPath, R: Rng + ?Sized>(
    path: &mut P,
    x: &mut [f64],
    rng: &mut R,
) -> Result<MalaOutcome, P::Error> {
    path.sample_reference(x, rng)?;
    Ok(MalaOutcome {
        log_likelihood: path.log_likelihood(x)?,
        ..MalaOutcome::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::{GaussianPath, adapt_step};
    use crate::rng::{PhiloxStream, streams};

    /// Long MALA runs at a fixed β sample N(0, I/τ_β): E|x|²/d = 1/τ_β, and the adapted
    /// step reaches the target acceptance.
    #[test]
    fn mala_samples_the_tempered_gaussian() {
        let d = 4;
        let mut path = GaussianPath::standard(d).unwrap();
        for beta in [1.0, 0.3] {
            let tau = path.precision(beta);
            let mut x = [0.0f64; 4];
            let mut scratch = [0.0f64; 16];
            let mut step = 2.0;
            let (mut sum, mut acc, mut n) = (0.0, 0.0, 0u32);
            for k in 0..60_000u64 {
                let mut rng = PhiloxStream::new(5, 0, k, 0, streams::EXACT_EXPLORE);
                let o =
                    mala_explore(&mut path, beta, step, 1, &mut x, &mut scratch, &mut rng).unwrap();
                step = adapt_step(step, k, o.acceptance_sum, 0.574, 0.6);
                if k >= 10_000 {
                    sum += x.iter().map(|v| v * v).sum::<f64>() / d as f64;
                    acc += o.acceptance_sum;
                    n += 1;
                }
            }
            let var = sum / f64::from(n);
            let acc = acc / f64::from(n);
            assert!(
                (var * tau - 1.0).abs() < 0.05,
                "β {beta}: variance {var} vs {}",
                1.0 / tau
            );
            assert!((acc - 0.574).abs() < 0.02, "β {beta}: acceptance {acc}");
        }
    }

    /// Slices of the wrong length are typed errors, with nothing drawn or moved.
    #[test]
    fn wrong_lengths_are_errors() {
        let mut path = GaussianPath::standard(3).unwrap();
        let mut rng = PhiloxStream::new(0, 0, 0, 0, streams::EXACT_EXPLORE);
        let mut x = [0.5; 3];
        let short = mala_explore(&mut path, 1.0, 0.1, 1, &mut x, &mut [0.0; 11], &mut rng);
        assert!(matches!(
            short,
            Err(ExploreError::Input(Error::LengthMismatch {
                name: "scratch",
                expected: 12,
                found: 11
            }))
        ));
        let wrong = mala_explore(
            &mut path,
            1.0,
            0.1,
            1,
            &mut [0.0; 4],
            &mut [0.0; 16],
            &mut rng,
        );
        assert!(matches!(
            wrong,
            Err(ExploreError::Input(Error::LengthMismatch { name: "x", .. }))
        ));
        assert_eq!((x, rng.position()), ([0.5; 3], 0));
    }

    #[test]
    fn options_are_checked() {
        assert!(MalaOptions::default().validate().is_ok());
        for bad in [
            MalaOptions {
                initial_step: 0.0,
                ..MalaOptions::default()
            },
            MalaOptions {
                initial_step: f64::NAN,
                ..MalaOptions::default()
            },
            MalaOptions {
                target_acceptance: 1.0,
                ..MalaOptions::default()
            },
            MalaOptions {
                steps_per_iteration: 0,
                ..MalaOptions::default()
            },
            MalaOptions {
                decay: 0.5,
                ..MalaOptions::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
