//! The report of a comparison from its records: every row's scores with their spread
//! and intervals, the paired differences against DEO⋆ ([`super::paired`]), the
//! tempering runs' round trips, swap rates and curves ([`super::round_trips`]), the
//! gradients each row cost and the exact-sampling baseline
//! ([`super::exact_baseline`]), what pre-training gave, and the warnings.

use serde::Serialize;

use super::exact_baseline::ExactSummary;
use super::paired::{interval_sources, pair_with_deo_star};
use super::round_trips::{RoundTripRatio, round_trip_ratio, tempering_details};
use super::{Group, Kind, Records, Settings, Setup};
use crate::deep::fidelity::{Fidelity, SampleCurve, Summary};
use crate::deep::methods::{Pretrained, Pretraining};
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

/// What pre-training gave, over every network of every seed.
#[derive(Clone, Debug, Serialize)]
pub struct PretrainSummary {
    /// The settings.
    pub settings: Pretraining,
    /// Training and validation examples of pre-training.
    pub examples: (usize, usize),
    /// Learning rate at the start of the cosine schedule (per example).
    pub eta: f64,
    /// Epochs run: mean, least, most.
    pub epochs: [f64; 3],
    /// Epoch of the kept networks: mean, least, most.
    pub best_epoch: [f64; 3],
    /// Validation NLL of the kept networks, mean.
    pub validation_nll: f64,
    /// Test accuracy of a single pre-trained network, mean over networks and seeds.
    pub single_network_accuracy: f64,
}

/// The reference posterior a report was scored against.
#[derive(Clone, Debug, Serialize)]
pub struct ReferenceSummary {
    /// Where it came from.
    pub source: String,
    /// Its description: model, sampler settings, diagnostics, accuracy, NLL, command,
    /// machine, date.
    #[serde(flatten)]
    pub meta: crate::deep::reference::Meta,
    /// Mean entropy of its predictive (nats), the level a method's `entropy` is read
    /// against.
    pub entropy: f64,
}

impl ReferenceSummary {
    /// The summary of `r`.
    pub fn of(r: &crate::deep::reference::Reference) -> Self {
        let classes = r.meta.model.layers.last().copied().unwrap_or(1);
        ReferenceSummary {
            source: r.source.clone(),
            meta: r.meta.clone(),
            entropy: crate::deep::metrics::mean_entropy(&r.predictive, classes),
        }
    }
}

/// Everything `nrpt deep` reports.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Sizes.
    pub settings: Settings,
    /// The data.
    pub data: String,
    /// Training and test examples.
    pub examples: (usize, usize),
    /// Layer sizes.
    pub layers: Vec<usize>,
    /// Examples per mini-batch.
    pub batch: usize,
    /// N/B: iterations per epoch.
    pub iterations_per_epoch: f64,
    /// The factor of the learning-rate rule on the given rates.
    pub eta_factor: f64,
    /// The rates the runs use, per example: (η_min, η_max).
    pub eta: (f64, f64),
    /// Iterations per chain of the sampling phase.
    pub iterations: u64,
    /// The rules of the tempering runs.
    pub rules: nrpt_sampling::preset::RulesSummary,
    /// Pre-training.
    pub pretraining: PretrainSummary,
    /// The reference posterior (`null` without one: then no agreement or total
    /// variation).
    pub reference: Option<ReferenceSummary>,
    /// The rows: the pre-trained ensemble, then the paper's order.
    pub methods: Vec<Row>,
    /// Every sampling method again at each factor of `eta_sweep`.
    pub eta_sweep: Vec<Row>,
    /// The DEO⋆ runs of the swap-rate sweep.
    pub swap_sweep: Vec<Row>,
    /// Curves of DEO⋆ and DEO.
    pub curves: Vec<Curves>,
    /// Scores against the number of samples averaged, per method.
    pub sample_curves: Vec<SampleCurve>,
    /// The exact-sampling baseline's make-up (with a reference that has draws).
    pub exact_sampling: Option<ExactSummary>,
    /// DEO⋆'s round trips over DEO's (the main rows), whole run and steady state, beside
    /// Lemma 1's ratio at their measured rates.
    pub round_trip_ratio: Option<RoundTripRatio>,
    /// Which source of error dominates the differences to DEO⋆: the seeds (their
    /// t intervals, `_minus_deo_star_seed_ci`) or the test set (the paired bootstrap,
    /// `_minus_deo_star_ci`).
    pub interval_sources: String,
    /// What the reader must know before trusting the numbers.
    pub warnings: Vec<String>,
    /// Wall-clock seconds in all.
    pub seconds: f64,
    /// The command line that ran it.
    pub command: String,
    /// The machine it ran on ([`nrpt_sampling::machine::describe`]).
    pub machine: String,
    /// When it finished (UTC, RFC 3339).
    pub date: String,
    /// The shard this report is of (absent for a whole run or a merge): its rows then
    /// hold that shard's seeds only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::shard::Summary>,
}

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
        entropy: mean_sd(&per_seed.iter().map(|s| s.entropy).collect::<Vec<_>>()).0,
        entropy_sd: mean_sd(&per_seed.iter().map(|s| s.entropy).collect::<Vec<_>>()).1,
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

/// Mean, least and most.
fn spread(v: &[f64]) -> [f64; 3] {
    [
        mean_sd(v).0,
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    ]
}

impl Setup<'_> {
    /// The report of the seeds of `records` (all of the run's for its report), which
    /// took `seconds`.
    pub fn report(&self, records: &Records, seconds: f64) -> Report {
        let (s, rates) = (self.s, self.rates);
        let model = self.model;
        let target = model;
        let data = &target.data;
        let mut warnings = Vec::new();
        if self.reference.is_none() {
            warnings.push(
                "no reference posterior for this model: agreement and total variation are not computed; make one with `nrpt reference` (same data, --hidden and --prior-sigma) and pass it with --reference".to_string(),
            );
        }
        let outcomes = &records.pretrained;
        let pick = |f: fn(&Pretrained) -> f64| outcomes.iter().map(f).collect::<Vec<_>>();
        let unconverged = outcomes
            .iter()
            .filter(|o| {
                o.epochs >= s.pretraining.max_epochs - 1e-9 && o.best_epoch >= o.epochs - 1e-9
            })
            .count();
        if unconverged > 0 {
            warnings.push(format!(
                "{unconverged} of {} pre-trained networks were still improving on the validation split when the schedule of {} epochs ended: raise --pretrain-epochs",
                outcomes.len(),
                s.pretraining.max_epochs
            ));
        }
        let pretraining = PretrainSummary {
            settings: s.pretraining,
            examples: (self.pre_data.train.len(), self.pre_data.test.len()),
            eta: rates.eta_max,
            epochs: spread(&pick(|o| o.epochs)),
            best_epoch: spread(&pick(|o| o.best_epoch)),
            validation_nll: mean_sd(&pick(|o| o.validation_nll)).0,
            single_network_accuracy: mean_sd(&records.single_accuracy).0,
        };

        let (mut methods, mut eta_sweep, mut swap_sweep) = (Vec::new(), Vec::new(), Vec::new());
        let (mut curves, mut sample_curves) = (Vec::new(), Vec::new());
        for (planned, m) in self.plan.iter().zip(&records.methods) {
            let (mut row, curve) = self.scorer.score(&planned.name, m, planned.factor);
            let details = match (planned.kind, &m.tempering) {
                (Kind::Tempering(scheme, _), Some(t)) => Some(tempering_details(
                    model,
                    self.iterations,
                    self.warmup,
                    scheme,
                    planned.rates,
                    &planned.name,
                    t,
                    &mut row,
                )),
                _ => None,
            };
            match planned.group {
                Group::Main => {
                    methods.push(row);
                    sample_curves.push(curve);
                    curves.extend(details);
                }
                Group::EtaSweep => eta_sweep.push(row),
                Group::SwapSweep => swap_sweep.push(row),
            }
        }
        self.count_gradients(records, &mut methods, &mut eta_sweep, &mut swap_sweep);
        let exact_sampling = self.exact_baseline(
            &mut methods,
            &mut sample_curves,
            &mut eta_sweep,
            &mut swap_sweep,
            &mut warnings,
        );
        let round_trip_ratio = round_trip_ratio(&methods);
        pair_with_deo_star(
            &self.scorer.bootstrap,
            &mut methods,
            &mut eta_sweep,
            &mut swap_sweep,
        );
        let interval_sources = interval_sources(
            &methods
                .iter()
                .chain(&eta_sweep)
                .chain(&swap_sweep)
                .collect::<Vec<_>>(),
        );

        Report {
            settings: s.clone(),
            data: data.description.clone(),
            examples: (data.train.len(), data.test.len()),
            layers: target.arch.sizes().collect(),
            batch: target.batch,
            iterations_per_epoch: target.iterations_per_epoch(),
            eta_factor: self.eta_factor,
            eta: (rates.eta_min, rates.eta_max),
            iterations: self.iterations,
            rules: nrpt_sampling::preset::RulesSummary::from(nrpt_sampling::preset::Resolved {
                rules: s.rules,
                inclusive_iterations: false,
            }),
            pretraining,
            reference: self.reference.map(ReferenceSummary::of),
            methods,
            eta_sweep,
            swap_sweep,
            curves,
            sample_curves,
            exact_sampling,
            round_trip_ratio,
            interval_sources,
            warnings,
            seconds,
            command: nrpt_sampling::machine::command_line(),
            machine: nrpt_sampling::machine::describe(),
            date: nrpt_sampling::machine::utc_now(),
            shard: None,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_is_the_mean_the_least_and_the_most() {
        assert_eq!(spread(&[2.0, 1.0, 6.0]), [3.0, 1.0, 6.0]);
    }
}
