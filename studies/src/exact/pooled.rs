//! The pooled estimates of an exact run, from the measurement round of every ensemble:
//! Λ̂ and its errors, log Z from the forward and reverse stepping stones with the error
//! the run states for it ([`super::log_z_error`]), round trips measured and predicted
//! (Lemma 1), the profile λ̂(β), and the chains the rules recommend for the barrier
//! measured (a lower bound where Σ r̂ saturates).

use nrpt_core::exact::{Barrier, ChainRule, PairRecord, RoundReport, recommended_chains};
use serde::{Deserialize, Serialize};

use super::log_z_error::{LogZErrorSource, stated_error};
use super::{ExactOutcome, PILOT_MAX_MEAN_REJECTION, gaussian_corrected_barrier};
use nrpt_sampling::stats::mean_sd;

/// The pooled estimates of a run, from the measurement round of every ensemble.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pooled {
    /// Λ̂ = Σ r̂_l, mean over ensembles.
    pub lambda: f64,
    /// Its standard deviation over ensembles.
    pub lambda_sd: f64,
    /// Its standard error: √(Σ SE_e²)/E from each ensemble's batch means over the
    /// measured round's iterations (NaN with fewer than two batches).
    pub lambda_se: f64,
    /// Σ_l √(2/π) Φ⁻¹((1 + r̂_l)/2), mean over ensembles: Λ̂ corrected as if every pair's
    /// swap log-ratio were Gaussian ([`gaussian_corrected_barrier`]); a diagnostic, not
    /// an estimator of Λ in general. `None` when a pair rejected every swap.
    pub barrier_gaussian_corrected: Option<f64>,
    /// log Z: the mean of the forward and reverse stepping stones
    /// ([`log_z_mean`]: (`log_z_forward` + `log_z_reverse`)/2), mean over ensembles.
    pub log_z: f64,
    /// Its standard error, as the run states it: the larger of `log_z_se_batch_means`
    /// and `log_z_se_between_ensembles` (the latter only with two ensembles or more;
    /// [`super::log_z_error`]). Which one it is: `log_z_se_source`.
    pub log_z_se: f64,
    /// Where `log_z_se` comes from.
    pub log_z_se_source: LogZErrorSource,
    /// The within-ensemble error: (SE_f + SE_r)/2 of the pooled stepping stones, each
    /// √(Σ SE_e²)/E from every ensemble's batch means over its measured round (the two
    /// share their states, and this is the largest the error of their mean can be
    /// whatever their correlation: [`log_z_mean`]). It misses every correlation longer
    /// than a batch (`measured_iterations`/32 iterations).
    pub log_z_se_batch_means: f64,
    /// The between-ensemble error: sd(`log_z_ensembles`)/√E, the spread of independent
    /// ensembles (each with its own start, pilot, grid and step sizes); `None` with one
    /// ensemble.
    pub log_z_se_between_ensembles: Option<f64>,
    /// log Z of each ensemble (the mean of its forward and reverse stepping stones), in
    /// order.
    pub log_z_ensembles: Vec<f64>,
    /// The forward stepping stone, mean over ensembles (biased low by O(1/N)).
    pub log_z_forward: f64,
    /// Its standard error: √(Σ SE_e²)/E from each ensemble's batch means.
    pub log_z_forward_se: f64,
    /// The reverse stepping stone, mean over ensembles (biased high by O(1/N)).
    pub log_z_reverse: f64,
    /// Its standard error, as `log_z_forward_se`.
    pub log_z_reverse_se: f64,
    /// Round trips per 1000 iterations of one ensemble (all replicas), measured in the
    /// last round, mean over ensembles.
    pub round_trips_per_1000: f64,
    /// 1000/(2 + 2Σ r̂/(1 − r̂)) with the measured rejections (Syed et al.; W = 1), mean.
    pub predicted_round_trips_per_1000: f64,
    /// Lemma 1 with the measured rejections and the run's window, per 1000 iterations.
    pub lemma1_round_trips_per_1000: Option<f64>,
    /// 1000/(2 + 2Λ̂): the limit as P grows (W = 1).
    pub limit_round_trips_per_1000: f64,
    /// Smallest and largest pair rejection rate (over pairs and ensembles).
    pub rejection_range: (f64, f64),
    /// Acceptance of the explorers (MALA or HMC) in the last round, mean over levels
    /// with β > 0 and ensembles.
    pub explorer_acceptance: f64,
}

/// log Z as nrpt reports it from the forward and reverse stepping stones (`(value, se)`
/// each): their mean, with standard error (SE_f + SE_r)/2.
///
/// Forward and reverse are computed from the same states, so their errors are
/// correlated (positively: both follow the same draws), and their covariance is not
/// estimated. Var((F + R)/2) = (SE_f² + SE_r² + 2ρ SE_f SE_r)/4 ≤ ((SE_f + SE_r)/2)² for
/// every correlation ρ ≤ 1 (Cauchy–Schwarz), with equality at ρ = 1: the error stated
/// is conservative, never below the truth of the batch-means errors it combines. Their
/// O(1/N) Jensen biases have opposite signs (forward low, reverse high), which the mean
/// partly cancels.
pub fn log_z_mean(forward: (f64, f64), reverse: (f64, f64)) -> (f64, f64) {
    (0.5 * (forward.0 + reverse.0), 0.5 * (forward.1 + reverse.1))
}

impl ExactOutcome {
    /// Pooled estimates.
    pub fn pooled(&self) -> Pooled {
        let last: Vec<&RoundReport> = self.ensembles.iter().filter_map(|e| e.last()).collect();
        let e = last.len().max(1) as f64;
        let of = |f: &dyn Fn(&RoundReport) -> f64| last.iter().map(|r| f(r)).collect::<Vec<_>>();
        let (lambda, lambda_sd) = mean_sd(&of(&|r| r.global_barrier));
        let pooled_se = |f: &dyn Fn(&RoundReport) -> f64| {
            last.iter().map(|r| f(r).powi(2)).sum::<f64>().sqrt() / e
        };
        let corrected: Option<Vec<f64>> = self
            .ensembles
            .iter()
            .map(|en| {
                let rej: Vec<f64> = en.pairs.iter().map(PairRecord::rejection_rate).collect();
                gaussian_corrected_barrier(&rej)
            })
            .collect();
        let forward = (
            mean_sd(&of(&|r| r.log_normalizer.value)).0,
            pooled_se(&|r| r.log_normalizer.standard_error),
        );
        let reverse = (
            mean_sd(&of(&|r| r.log_normalizer_reverse.value)).0,
            pooled_se(&|r| r.log_normalizer_reverse.standard_error),
        );
        let log_z = log_z_mean(forward, reverse);
        let log_z_ensembles: Vec<f64> = last
            .iter()
            .map(|r| {
                log_z_mean(
                    (r.log_normalizer.value, 0.0),
                    (r.log_normalizer_reverse.value, 0.0),
                )
                .0
            })
            .collect();
        let stated = stated_error(log_z.1, &log_z_ensembles);
        let lemma1: Vec<f64> = self
            .ensembles
            .iter()
            .filter_map(|en| {
                let rej: Vec<f64> = en.pairs.iter().map(PairRecord::rejection_rate).collect();
                lemma1_rate(&rej, self.window)
            })
            .collect();
        Pooled {
            lambda,
            lambda_sd,
            lambda_se: pooled_se(&|r| r.global_barrier_standard_error),
            barrier_gaussian_corrected: corrected.filter(|c| !c.is_empty()).map(|c| mean_sd(&c).0),
            log_z: log_z.0,
            log_z_se: stated.standard_error,
            log_z_se_source: stated.source,
            log_z_se_batch_means: log_z.1,
            log_z_se_between_ensembles: stated.between_ensembles,
            log_z_ensembles,
            log_z_forward: forward.0,
            log_z_forward_se: forward.1,
            log_z_reverse: reverse.0,
            log_z_reverse_se: reverse.1,
            round_trips_per_1000: mean_sd(&of(&|r| {
                1000.0 * r.round_trips as f64 / r.iterations as f64
            }))
            .0,
            predicted_round_trips_per_1000: 1000.0
                * mean_sd(&of(&|r| r.predicted_round_trip_rate)).0,
            lemma1_round_trips_per_1000: (lemma1.len() == self.ensembles.len()
                && !lemma1.is_empty())
            .then(|| 1000.0 * mean_sd(&lemma1).0),
            limit_round_trips_per_1000: 1000.0 / (2.0 + 2.0 * lambda),
            rejection_range: last
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
                    (lo.min(r.rejection_range.0), hi.max(r.rejection_range.1))
                }),
            explorer_acceptance: mean_sd(&of(&|r| r.explorer_acceptance)).0,
        }
    }

    /// Smallest and largest step size of the explorers (levels with β > 0, every
    /// ensemble) in the last round; NaN without such a level.
    pub fn step_size_range(&self) -> (f64, f64) {
        self.ensembles
            .iter()
            .flat_map(|en| en.levels.iter().filter(|l| l.proposals() > 0))
            .fold((f64::NAN, f64::NAN), |(lo, hi), l| {
                (lo.min(l.step_size()), hi.max(l.step_size()))
            })
    }

    /// λ̂(β) and Λ̂(β) at `betas`, mean over ensembles.
    pub fn profile(&self, betas: &[f64]) -> Vec<(f64, f64, f64)> {
        let barriers: Vec<Barrier<'_>> =
            self.ensembles.iter().filter_map(|e| e.barrier()).collect();
        let n = barriers.len().max(1) as f64;
        betas
            .iter()
            .map(|&b| {
                let local = barriers.iter().map(|x| x.local(b)).sum::<f64>() / n;
                let cumulative = barriers.iter().map(|x| x.cumulative(b)).sum::<f64>() / n;
                (b, local, cumulative)
            })
            .collect()
    }
}

/// Chains the two rules of [`nrpt_core::exact::chains`] recommend for a measured barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recommended {
    /// P − 1 ≈ 2Λ̂: the most round trips per chain-iteration ([`ChainRule::CostOptimal`],
    /// the rule of `--chains auto`).
    pub cost_optimal: Option<usize>,
    /// The fewest chains within 5 % of the limit rate 1/(2 + 2Λ̂), for chains run in
    /// parallel ([`ChainRule::NEAR_LIMIT_5_PERCENT`]).
    pub near_limit_5_percent: Option<usize>,
    /// Whether Λ̂ only bounds the barrier from below, and so both numbers are "at least"
    /// rather than recommendations ([`barrier_saturated`]): Σ r̂ cannot exceed P − 1, and
    /// it falls short of Λ once pairs reject more than half of their swaps on average or a
    /// pair never swaps.
    pub lower_bound: bool,
}

impl Recommended {
    /// Both rules for a barrier `lambda` known not to be saturated (a closed form, say):
    /// `None` where a rule cannot answer (Λ̂ NaN, negative or too large).
    pub fn for_barrier(lambda: f64) -> Self {
        let by = |rule| recommended_chains(lambda, rule).ok();
        Recommended {
            cost_optimal: by(ChainRule::CostOptimal),
            near_limit_5_percent: by(ChainRule::NEAR_LIMIT_5_PERCENT),
            lower_bound: false,
        }
    }

    /// Both rules for Λ̂ = `lambda` measured with `chains` chains, lower bounds when
    /// [`barrier_saturated`] says so (`never_swapped`: a pair of the measured round made
    /// no swap).
    pub fn for_measured(lambda: f64, chains: usize, never_swapped: bool) -> Self {
        Recommended {
            lower_bound: barrier_saturated(lambda, chains, never_swapped),
            ..Self::for_barrier(lambda)
        }
    }
}

/// Whether Λ̂ = Σ r̂ measured with `chains` chains is only a lower bound of Λ: a pair
/// never swapped (`never_swapped`; its r̂ = 1 however large its share of the barrier),
/// or the mean rejection Λ̂/(P − 1) exceeds [`PILOT_MAX_MEAN_REJECTION`] (NaN counts).
///
/// Each r̂ ≤ 1, so Σ r̂ ≤ P − 1 whatever Λ is, and a pair's rejection grows ever more
/// slowly with its share of the barrier as it approaches 1 (for Gaussian swaps
/// r = erf(Λ_pair √π/2): 0.5 at Λ_pair = 0.54, 0.9 at 1.31). Past a mean of 0.5 the
/// cost-optimal rule P − 1 ≈ 2Λ̂ asks for more chains than the run had, an extrapolation
/// beyond any grid measured from a Σ r̂ that can only be low: the same criterion as a
/// pilot too coarse to choose P ([`super::pilot_too_coarse`]).
pub fn barrier_saturated(lambda: f64, chains: usize, never_swapped: bool) -> bool {
    let pairs = chains.saturating_sub(1).max(1) as f64;
    never_swapped || lambda.is_nan() || lambda / pairs > PILOT_MAX_MEAN_REJECTION
}

impl ExactOutcome {
    /// Whether a pair never swapped in the measured round of some ensemble.
    pub fn any_pair_never_swapped(&self) -> bool {
        self.ensembles
            .iter()
            .any(|en| en.pairs.iter().any(|p| p.accepted() == 0))
    }

    /// The chains the rules recommend for the measured Λ̂ of `pooled` (lower bounds where
    /// it saturates).
    pub fn recommended(&self, pooled: &Pooled) -> Recommended {
        Recommended::for_measured(pooled.lambda, self.chains, self.any_pair_never_swapped())
    }
}

/// Lemma 1's round trips per iteration (all replicas) for per-pair rejections r_l and
/// window W: P / `E[T]` with `E[T]` = 2WP(1 + Σ r_l^W/(1 − r_l^W)); `None` for SEO or a
/// rejection of 1.
pub fn lemma1_rate(rejections: &[f64], window: u32) -> Option<f64> {
    if window == 0 || rejections.is_empty() {
        return None;
    }
    let w = f64::from(window);
    let mut sum = 0.0;
    for &r in rejections {
        let rw = r.clamp(0.0, 1.0).powf(w);
        if rw >= 1.0 {
            return None;
        }
        sum += rw / (1.0 - rw);
    }
    Some(1.0 / (2.0 * w * (1.0 + sum)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lemma1_at_w1_is_syeds_rate() {
        let r = [0.2, 0.3, 0.1];
        let syed = nrpt_core::exact::round_trip_rate(&r).unwrap();
        assert!((lemma1_rate(&r, 1).unwrap() - syed).abs() < 1e-15);
        // Against nrpt-core's Lemma 1 with equal rates.
        let t = nrpt_core::optimal::expected_round_trip_u32(4, 3, 0.7).unwrap();
        assert!((lemma1_rate(&[0.3; 3], 3).unwrap() - 4.0 / t).abs() < 1e-12);
        assert_eq!(lemma1_rate(&r, 0), None);
    }

    #[test]
    fn log_z_is_the_mean_of_forward_and_reverse_with_the_conservative_error() {
        let (z, se) = log_z_mean((-2.0, 0.03), (-1.9, 0.05));
        assert!((z + 1.95).abs() < 1e-15 && (se - 0.04).abs() < 1e-15);
        // Never below the error of the mean at any correlation ρ ∈ [−1, 1].
        for rho in [-1.0, 0.0, 0.5, 1.0] {
            let var: f64 = (0.03f64.powi(2) + 0.05f64.powi(2) + 2.0 * rho * 0.03 * 0.05) / 4.0;
            assert!(var.sqrt() <= se + 1e-15, "ρ = {rho}");
        }
    }
}
