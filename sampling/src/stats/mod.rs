//! Statistics of results: summaries over independent repetitions, convergence of MCMC
//! chains, and intervals over test examples.
//!
//! - [`mean_sd`]: mean and sample standard deviation over repetitions (ensembles,
//!   seeds), one implementation for every command;
//! - [`convergence`]: the rank-normalized split-R̂ and the bulk and tail effective sample
//!   sizes of Vehtari, Gelman, Simpson, Carpenter and Bürkner, "Rank-normalization,
//!   folding, and localization: an improved R̂ for assessing convergence of MCMC",
//!   Bayesian Analysis 16(2), 2021, and the classic split-R̂ of Gelman et al., *Bayesian
//!   Data Analysis*, 3rd ed. (BDA3), §11.4; tested against ArviZ;
//! - [`bootstrap`]: paired percentile bootstrap intervals (Efron and Tibshirani, *An
//!   Introduction to the Bootstrap*, 1993, ch. 13) over test examples, the same resamples
//!   for every method compared;
//! - [`paired_t`]: Student's t interval of a mean difference over paired seeds, what a
//!   seed changes beside what the test set does;
//! - [`two_sample`]: Welch's interval of a difference of means of unpaired
//!   repetitions, and Fieller's interval of a ratio of paired means.
//!
//! Inputs are checked: draws, values and levels a caller got wrong come back as a
//! [`StatsError`], never as a panic.

pub mod bootstrap;
pub mod convergence;
pub mod paired_t;
pub mod two_sample;

pub use bootstrap::{Bootstrap, Interval, percentile_interval, weighted_mean};
pub use convergence::{
    Diagnoser, Diagnostics, Summary, diagnose, ess_bulk, ess_tail, rhat, split_rhat, summarize,
};
pub use paired_t::paired_t_interval;
pub use two_sample::{RatioInterval, fieller_ratio_interval, welch_interval};

/// Mean and sample standard deviation (divisor n − 1; 0 for one value; NaN mean for
/// none).
pub fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    (mean, (ss / (n - 1.0)).sqrt())
}

/// The p-quantile of sorted values by linear interpolation between order statistics
/// (Hyndman and Fan's type 7, NumPy's default): position h = (N − 1) p, N ≥ 1. Equal
/// neighbours give exactly their value.
fn sorted_quantile(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    let (a, b) = (sorted[lo], sorted[hi]);
    if a == b {
        a
    } else {
        a + (h - lo as f64) * (b - a)
    }
}

/// Why a statistic could not be computed: the input is not of the shape or range it
/// needs. Chains, draws, examples and resamples are counted from 0.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StatsError {
    /// Fewer chains than a between-chain comparison needs.
    #[error("{chains} chain(s): convergence diagnostics need at least 2")]
    TooFewChains {
        /// Chains given.
        chains: usize,
    },
    /// Chains too short to split in halves of at least two draws.
    #[error("{draws} draw(s) per chain: convergence diagnostics need at least 4")]
    TooFewDraws {
        /// Draws per chain given.
        draws: usize,
    },
    /// Chains of different lengths.
    #[error("chain {chain} has {draws} draws, chain 0 has {expected}")]
    UnequalChains {
        /// The first chain whose length differs from chain 0's.
        chain: usize,
        /// Its length.
        draws: usize,
        /// Chain 0's length.
        expected: usize,
    },
    /// A draw is NaN or infinite.
    #[error("draw {draw} of chain {chain} is {value}: draws must be finite")]
    NonFiniteDraw {
        /// The chain.
        chain: usize,
        /// The draw within the chain.
        draw: usize,
        /// The value.
        value: f64,
    },
    /// A summary over no quantities.
    #[error("no quantities to summarize")]
    NoQuantities,
    /// One quantity of a summary is wrong.
    #[error("quantity {index}: {source}")]
    Quantity {
        /// The quantity, in the order given.
        index: usize,
        /// What is wrong with it.
        #[source]
        source: Box<StatsError>,
    },
    /// Fewer paired repetitions (seeds) than an interval over them needs.
    #[error("{repetitions} repetition(s): an interval over repetitions needs at least 2")]
    TooFewRepetitions {
        /// Repetitions given.
        repetitions: usize,
    },
    /// Paired repetitions of two lengths.
    #[error("{first} and {second} repetitions: a paired interval needs one of each per seed")]
    UnpairedRepetitions {
        /// Repetitions of the first.
        first: usize,
        /// Repetitions of the second.
        second: usize,
    },
    /// A bootstrap over no test examples.
    #[error("no examples to resample")]
    NoExamples,
    /// More test examples than a bootstrap resamples (weights are drawn as `u32` indices).
    #[error("{examples} examples: a bootstrap resamples at most {max}")]
    TooManyExamples {
        /// Examples given.
        examples: usize,
        /// The most allowed.
        max: usize,
    },
    /// A bootstrap of no resamples.
    #[error("no resamples: a bootstrap needs at least one")]
    NoResamples,
    /// Per-example values of another length than the bootstrap's examples.
    #[error("{got} per-example values for a bootstrap of {expected} examples")]
    LengthMismatch {
        /// The bootstrap's examples.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// A per-example value is NaN or infinite.
    #[error("value {index} is {value}: per-example values must be finite")]
    NonFiniteValue {
        /// The example.
        index: usize,
        /// The value.
        value: f64,
    },
    /// A statistic gave NaN on one resample (infinities are ordered and allowed).
    #[error("the statistic is NaN on resample {resample}")]
    NanStatistic {
        /// The resample.
        resample: usize,
    },
    /// A confidence level outside (0, 1).
    #[error("confidence level {level}: must lie strictly between 0 and 1")]
    Level {
        /// The level given.
        level: f64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_sample_sd() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sum of squares 32, sample sd √(32/7).
        let (m, sd) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m, 5.0);
        assert!((sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-15);
        assert_eq!(mean_sd(&[3.0]), (3.0, 0.0));
        assert!(mean_sd(&[]).0.is_nan());
    }
}
