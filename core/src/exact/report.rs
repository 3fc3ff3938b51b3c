//! What an iteration and a round report.

use super::evidence::Estimate;

/// What one iteration did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExactReport {
    /// Swaps executed.
    pub swaps: u32,
    /// Standard round trips completed at this iteration.
    pub round_trips: u32,
    /// Pairs with a non-finite ℓ.
    pub nonfinite_pairs: u32,
    /// The summary of the round this iteration completed, if it completed one.
    pub round_end: Option<RoundReport>,
}

/// The summary of one round, from that round's iterations only.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RoundReport {
    /// The round's index (from 0).
    pub round: u32,
    /// Its iterations N.
    pub iterations: u64,
    /// Λ̂ = Σ_l r̂_l on the round's grid.
    pub global_barrier: f64,
    /// Batch-means standard error of Λ̂ over the round's iterations: Λ̂ is the round's
    /// mean of s_k = Σ_l (1 − α_{l,k}), so its error is sd/√B of the means of s_k over
    /// [`BATCHES`](super::BATCHES) batches of consecutive iterations (NaN for fewer than
    /// two batches). It covers the noise of the round's Λ̂ on its grid, not the bias of
    /// Σ r̂ against Λ.
    pub global_barrier_standard_error: f64,
    /// Forward stepping stone: log Z(1) − log Z(0), batch-means standard error.
    pub log_normalizer: Estimate,
    /// Reverse stepping stone of the same quantity.
    pub log_normalizer_reverse: Estimate,
    /// Standard round trips completed in the round (all replicas).
    pub round_trips: u64,
    /// Restarts (arrivals at level 0 from level P − 1) in the round.
    pub restarts: u64,
    /// 1/(2 + 2Σ r̂_l/(1 − r̂_l)): the round trips per iteration Syed et al. predict.
    pub predicted_round_trip_rate: f64,
    /// Smallest and largest r̂_l of the round.
    pub rejection_range: (f64, f64),
    /// Mean acceptance probability of the explorers (MALA or HMC) over the levels with
    /// β > 0.
    pub explorer_acceptance: f64,
    /// Whether the grid was re-placed at equal barrier for the next round.
    pub grid_adapted: bool,
}
