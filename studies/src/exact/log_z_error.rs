//! The standard error an exact run states for log Z, and when it cannot be trusted.
//!
//! # Two errors, and the larger one stated
//!
//! - **Batch means, within each ensemble** (nrpt-core's [`BatchMeans`]): the measured
//!   round cut into 32 batches of consecutive iterations, sd/√32 of the batch estimates.
//!   It is valid only when a batch is long against the autocorrelation of the
//!   stepping-stone terms. On a real posterior it is not: `nrpt run --target classifier
//!   --exact --hidden 0 -p 48 -n 256 -e 2` measures 128 iterations, batches of 4, while
//!   its HMC explorers need far longer to forget their state, and seeds 0, 1, 2 gave
//!   −463.88 ± 0.48, −461.71 ± 0.41 and −463.58 ± 0.45 (sd 1.17, 2.5 times the stated
//!   error).
//! - **Between ensembles**: the ensembles of a run are independent replicas of the whole
//!   estimate, each from its own prior draws with its own pilot, grid and step sizes, so
//!   the spread of their log Z, sd/√E over E ensembles, measures every source of error
//!   that differs between replicas, whatever its time scale: autocorrelation, the grid's
//!   adaptation, the step sizes. With few ensembles it is itself noisy (E − 1 degrees of
//!   freedom; with E = 2 its expectation is 0.80 of the true error, and it can come out
//!   near 0).
//!
//! The run states the larger of the two ([`stated_error`]), and says which
//! ([`LogZErrorSource`]): batch means protect against an unlucky small spread of few
//! ensembles, the spread against batches too short. This is nrpt's own choice, not the
//! paper's (which states no error for log Z); before it the batch-means error alone was
//! stated, and it remains in the summary as `log_z_se_batch_means`. Neither covers a bias
//! that every ensemble shares (the O(1/N) Jensen bias of the stepping stones: forward low,
//! reverse high; an equilibrium not reached by any of them), which the forward–reverse
//! check and an independent estimate (annealed importance sampling,
//! [`super::ais`]) address.
//!
//! # When even that fails: too few round trips
//!
//! A round trip carries a fresh exact draw of the reference (β = 0) up to the target and
//! back; until a few of them have happened in the measured round, the states at every
//! level are still those the round began with, correlated over the whole round. Batch
//! means then see none of that correlation, and the spread of a few ensembles little of
//! it. [`MIN_ROUND_TRIPS`] is the count below which the run warns
//! ([`super::diagnostics()`]).
//!
//! [`BatchMeans`]: nrpt_core::exact::BatchMeans

use serde::{Deserialize, Serialize};

use nrpt_sampling::stats::mean_sd;

/// The fewest round trips (all replicas) in the measured round of every ensemble for the
/// run to state log Z's standard error without a warning.
///
/// Why 10: each round trip brings one exact reference draw through every level, so the
/// round trips count, roughly, the independent pieces of information the stepping stones
/// of a round rest on (the regeneration view of Syed et al. 2022, in which tours from the
/// reference are independent). An error estimated from k independent pieces has a
/// relative error of about 1/√(2(k − 1)): 24 % at k = 10, enough to tell a fair error bar
/// from one 2.5 times too small; at k = 3 it is 50 %, and with none the error measures
/// nothing but the explorers' local noise.
pub const MIN_ROUND_TRIPS: u64 = 10;

/// Where the stated error of log Z comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogZErrorSource {
    /// The batch means within each ensemble (one ensemble, or its error the larger).
    BatchMeans,
    /// The spread between ensembles, sd/√E.
    BetweenEnsembles,
}

impl LogZErrorSource {
    /// How a report names it.
    pub fn describe(self) -> &'static str {
        match self {
            LogZErrorSource::BatchMeans => "batch means within the ensembles",
            LogZErrorSource::BetweenEnsembles => "the spread between ensembles",
        }
    }
}

/// The error a run states for log Z, and its parts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StatedError {
    /// The larger of the two errors (the batch means' alone with one ensemble).
    pub standard_error: f64,
    /// Which one it is.
    pub source: LogZErrorSource,
    /// sd/√E of the ensembles' log Z (`None` for fewer than two ensembles or a
    /// non-finite value among them).
    pub between_ensembles: Option<f64>,
}

/// The error to state for the mean of `per_ensemble` (each ensemble's log Z) whose
/// batch-means error is `batch_means`: the larger of it and sd/√E of `per_ensemble`
/// (see the [module docs](self)). A NaN batch-means error (too short a round) gives way
/// to the spread.
pub fn stated_error(batch_means: f64, per_ensemble: &[f64]) -> StatedError {
    let between = (per_ensemble.len() >= 2 && per_ensemble.iter().all(|v| v.is_finite()))
        .then(|| mean_sd(per_ensemble).1 / (per_ensemble.len() as f64).sqrt());
    match between {
        // A NaN batch-means error compares false: the spread is stated.
        Some(b) if batch_means < b || batch_means.is_nan() => StatedError {
            standard_error: b,
            source: LogZErrorSource::BetweenEnsembles,
            between_ensembles: between,
        },
        _ => StatedError {
            standard_error: batch_means,
            source: LogZErrorSource::BatchMeans,
            between_ensembles: between,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_larger_error_is_stated_and_named() {
        // sd of (1, 3) is √2, over √2: 1.
        let s = stated_error(0.4, &[1.0, 3.0]);
        assert_eq!(s.source, LogZErrorSource::BetweenEnsembles);
        assert!((s.standard_error - 1.0).abs() < 1e-15, "{s:?}");
        assert_eq!(s.between_ensembles, Some(s.standard_error));
        let s = stated_error(1.5, &[1.0, 3.0]);
        assert_eq!(s.source, LogZErrorSource::BatchMeans);
        assert_eq!(s.standard_error, 1.5);
        assert!((s.between_ensembles.unwrap() - 1.0).abs() < 1e-15);
        // One ensemble: batch means alone, no spread.
        let s = stated_error(0.4, &[2.0]);
        assert_eq!((s.standard_error, s.between_ensembles), (0.4, None));
        // A NaN batch-means error gives way to the spread; a NaN ensemble gives none.
        let s = stated_error(f64::NAN, &[1.0, 3.0]);
        assert_eq!(s.source, LogZErrorSource::BetweenEnsembles);
        let s = stated_error(0.4, &[1.0, f64::NAN]);
        assert_eq!((s.standard_error, s.between_ensembles), (0.4, None));
    }
}

/// The stated error against the truth: a statistical test on the Gaussian path, whose log Z
/// has a closed form.
#[cfg(test)]
mod coverage {
    use crate::exact::{Chains, ExactSettings, run};
    use nrpt_core::exact::ExactExplorer;
    use nrpt_sampling::config::WindowSpec;

    /// A short run whose batches are short against MALA's autocorrelation (D = 16, 8
    /// chains, 256 iterations: a measured round of 128, batches of 4), 4 ensembles, seeds
    /// 0–11: the root-mean-square error of log Z against the closed form lies within
    /// [0.67, 1.5] times the mean stated error (1.5: issue 35's criterion; 0.67 its mirror,
    /// an error not inflated either; measured 0.96, the batch means alone 1.34), and at
    /// least 10 of the 12 errors lie within 2.576 stated errors (a 99 % band if the error
    /// is right; fewer than 10 of 12 then happens with probability 2·10⁻⁴).
    #[test]
    fn the_stated_error_matches_the_error_against_the_closed_form() {
        let seeds = 12u32;
        let (mut squares, mut stated, mut covered) = (0.0, 0.0, 0);
        for seed in 0..seeds {
            let s = ExactSettings {
                dim: 16,
                chains: Chains::Fixed(8),
                ensembles: 4,
                iterations: 256,
                window: WindowSpec::Fixed(1),
                seed,
                explorer: ExactExplorer::default(),
                reference: nrpt_sampling::config::ReferenceKind::Fixed,
            };
            let out = run(&s, &nrpt_sampling::engine::unobserved).unwrap();
            let p = out.pooled();
            let error = p.log_z - out.closed_form.log_z;
            squares += error * error;
            stated += p.log_z_se;
            covered += usize::from(error.abs() <= 2.576 * p.log_z_se);
        }
        let rms = (squares / f64::from(seeds)).sqrt();
        let ratio = rms / (stated / f64::from(seeds));
        assert!((0.67..=1.5).contains(&ratio), "rms {rms}, ratio {ratio}");
        assert!(
            covered >= 10,
            "{covered} of {seeds} within 2.576 stated errors"
        );
    }
}
