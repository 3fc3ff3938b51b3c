//! One row of a comparison's tables, the scores of one method (or the exact baseline)
//! with the fields the report's later steps fill in, and the curves of a tempering run.

use serde::Serialize;

use crate::deep::fidelity::{Fidelity, Summary};
use crate::deep::metrics::Scores;
use nrpt_sampling::stats::mean_sd;

/// One method's results (see [`crate::deep::fidelity`] for the scores).
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Name as in the paper.
    pub name: String,
    /// Window W (tempering rows).
    pub window: Option<u32>,
    /// Target swap rate S (tempering rows).
    pub swap_rate: Option<f64>,
    /// The factor on the protocol's learning rates (1 but in the sensitivity rows).
    pub eta_factor: f64,
    /// BMA test accuracy, mean over seeds.
    pub accuracy: f64,
    /// Its standard deviation over seeds.
    pub accuracy_sd: f64,
    /// Its 95 % paired-bootstrap interval over test examples.
    pub accuracy_ci: [f64; 2],
    /// Mean NLL per test example.
    pub nll: f64,
    /// Its standard deviation over seeds.
    pub nll_sd: f64,
    /// Its interval.
    pub nll_ci: [f64; 2],
    /// NLL summed over the test set (the paper's figure).
    pub nll_sum: f64,
    /// Expected calibration error (15 bins).
    pub ece: f64,
    /// Its standard deviation over seeds.
    pub ece_sd: f64,
    /// Its interval.
    pub ece_ci: [f64; 2],
    /// Agreement of the top class with the reference posterior's (with a reference).
    pub agreement: Option<f64>,
    /// Its standard deviation over seeds.
    pub agreement_sd: Option<f64>,
    /// Its interval.
    pub agreement_ci: Option<[f64; 2]>,
    /// Total variation from the reference predictive (with a reference).
    pub total_variation: Option<f64>,
    /// Its standard deviation over seeds.
    pub total_variation_sd: Option<f64>,
    /// Its interval.
    pub total_variation_ci: Option<[f64; 2]>,
    /// 95 % paired-bootstrap interval of this row's NLL minus the DEO⋆ row's at the
    /// same rates (over the same resampled test examples; below 0: better than DEO⋆).
    pub nll_minus_deo_star_ci: Option<[f64; 2]>,
    /// The same for the total variation to the reference (with a reference).
    pub total_variation_minus_deo_star_ci: Option<[f64; 2]>,
    /// 95 % seed-paired t interval of this row's NLL minus the DEO⋆ row's at the same
    /// rates: over the seeds' differences (the same seed's networks, batches and noise
    /// on both sides), what the seeds alone could move; NaN with fewer than two seeds.
    pub nll_minus_deo_star_seed_ci: Option<[f64; 2]>,
    /// The same for the total variation to the reference (with a reference).
    pub total_variation_minus_deo_star_seed_ci: Option<[f64; 2]>,
    /// Whether this is the exact-sampling row: model averages of K of the reference
    /// run's own HMC draws, its "seeds" independent realisations of them (see
    /// [`crate::deep::exact_sampling`]); no seed-paired interval then.
    pub exact_sampling: bool,
    /// Mean entropy of the model average's predictive (nats), mean over seeds: below
    /// the reference's (`reference.entropy`), the average is too sure of itself.
    pub entropy: f64,
    /// Its standard deviation over seeds.
    pub entropy_sd: f64,
    /// The total variation of exact sampling at this row's number of samples K: the
    /// mean over the realisations of K reference draws (with a reference that has
    /// draws).
    pub exact_total_variation: Option<f64>,
    /// This row's total variation minus exact sampling's at the same K: what the
    /// method adds to the noise of averaging K samples (its bias, and its samples'
    /// correlation).
    pub total_variation_excess: Option<f64>,
    /// Its 95 % Welch interval over this row's seeds and exact sampling's
    /// realisations; NaN with fewer than two of either.
    pub total_variation_excess_ci: Option<[f64; 2]>,
    /// Mini-batch gradient evaluations per seed, pre-training of the networks the
    /// method starts from included (for the exact-sampling row, the reference run's
    /// full-batch gradients times N/B: what they cost in mini-batch gradients).
    pub gradient_evaluations: f64,
    /// Per-example scores for the paired comparisons.
    #[serde(skip)]
    pub(super) example_nll: Vec<f64>,
    #[serde(skip)]
    pub(super) example_total_variation: Option<Vec<f64>>,
    /// Per seed: round trips per 100 epochs over the whole run, in the steady state,
    /// and Lemma 1's (tempering rows), for the ratio of DEO⋆ to DEO.
    #[serde(skip)]
    pub(super) trips_per_seed: Option<[Vec<f64>; 3]>,
    /// Standard round trips per 100 epochs (tempering rows), mean over seeds.
    pub round_trips_per_100_epochs: Option<f64>,
    /// Its standard deviation.
    pub round_trips_per_100_epochs_sd: Option<f64>,
    /// Per pair, the measured share of iterations with swap indicator 1, mean over
    /// seeds (tempering rows; the target is `swap_rate`).
    pub pair_indicator_rates: Option<Vec<f64>>,
    /// Round trips per 100 epochs in the steady state: from the first trace entry at
    /// or after the burn-in to the last, mean over seeds (tempering rows).
    pub steady_round_trips_per_100_epochs: Option<f64>,
    /// Its 95 % t interval over seeds (NaN with one seed).
    pub steady_round_trips_per_100_epochs_ci: Option<[f64; 2]>,
    /// Lemma 1's round trips per 100 epochs at each seed's steady-state pair rates
    /// (rejection 1 − indicator rate per pair, this row's window), mean over seeds.
    pub lemma1_round_trips_per_100_epochs: Option<f64>,
    /// Per pair, the indicator rates of the steady state, mean over seeds.
    pub steady_pair_indicator_rates: Option<Vec<f64>>,
    /// Samples averaged per seed.
    pub samples: usize,
    /// Wall-clock seconds of the method, all seeds.
    pub seconds: f64,
    /// Per seed scores.
    pub per_seed: Vec<Scores>,
}

/// Curves of a tempering run for the figures.
#[derive(Clone, Debug, Serialize)]
pub struct Curves {
    /// Name.
    pub name: String,
    /// Epochs at each entry.
    pub epochs: Vec<f64>,
    /// Round trips so far per seed (mean over seeds).
    pub round_trips: Vec<f64>,
    /// Learning rates (per example) at each entry, mean over seeds.
    pub ladder: Vec<Vec<f64>>,
    /// Indicator rate of every pair since the previous entry (mean over seeds).
    pub pair_indicator_rates: Vec<Vec<f64>>,
    /// Test accuracy of the final state of every level (mean over seeds).
    pub accuracy_by_level: Vec<f64>,
}

/// A row of `f`'s scores; every field that a later step fills (the paired
/// differences, the exact baseline, the round trips, the gradients) empty.
pub(super) fn row(
    name: &str,
    f: &Fidelity,
    per_seed: Vec<Scores>,
    samples: usize,
    seconds: f64,
    eta_factor: f64,
) -> Row {
    let opt = |s: &Option<Summary>| (s.map(|s| s.value), s.map(|s| s.sd), s.map(|s| s.ci));
    let (agreement, agreement_sd, agreement_ci) = opt(&f.agreement);
    let (total_variation, total_variation_sd, total_variation_ci) = opt(&f.total_variation);
    let (entropy, entropy_sd) = mean_sd(&per_seed.iter().map(|s| s.entropy).collect::<Vec<_>>());
    Row {
        name: name.to_string(),
        window: None,
        swap_rate: None,
        eta_factor,
        accuracy: f.accuracy.value,
        accuracy_sd: f.accuracy.sd,
        accuracy_ci: f.accuracy.ci,
        nll: f.nll.value,
        nll_sd: f.nll.sd,
        nll_ci: f.nll.ci,
        nll_sum: f.nll_sum,
        ece: f.ece.value,
        ece_sd: f.ece.sd,
        ece_ci: f.ece.ci,
        agreement,
        agreement_sd,
        agreement_ci,
        total_variation,
        total_variation_sd,
        total_variation_ci,
        nll_minus_deo_star_ci: None,
        total_variation_minus_deo_star_ci: None,
        nll_minus_deo_star_seed_ci: None,
        total_variation_minus_deo_star_seed_ci: None,
        exact_sampling: false,
        entropy,
        entropy_sd,
        exact_total_variation: None,
        total_variation_excess: None,
        total_variation_excess_ci: None,
        gradient_evaluations: f64::NAN,
        example_nll: f.example_nll.clone(),
        example_total_variation: f.example_total_variation.clone(),
        trips_per_seed: None,
        round_trips_per_100_epochs: None,
        round_trips_per_100_epochs_sd: None,
        pair_indicator_rates: None,
        steady_round_trips_per_100_epochs: None,
        steady_round_trips_per_100_epochs_ci: None,
        lemma1_round_trips_per_100_epochs: None,
        steady_pair_indicator_rates: None,
        samples,
        seconds,
        per_seed,
    }
}

/// A row named `name` at rates × `factor` whose NLL is `nll` on every one of `n` test
/// examples, for the tests of the report's parts.
#[cfg(test)]
pub(super) fn row_of(name: &str, factor: f64, nll: f64, n: usize) -> Row {
    let s = Summary {
        value: 0.0,
        sd: 0.0,
        ci: [0.0; 2],
    };
    let f = Fidelity {
        accuracy: s,
        nll: s,
        nll_sum: 0.0,
        ece: s,
        agreement: None,
        total_variation: None,
        example_nll: vec![nll; n],
        example_total_variation: None,
    };
    row(name, &f, Vec::new(), 1, 0.0, factor)
}
