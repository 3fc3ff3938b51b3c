//! The report of a comparison from its records: every row's scores with their spread
//! and intervals, the paired differences against DEO⋆ ([`super::paired`]), the
//! tempering runs' round trips, swap rates and curves ([`super::round_trips`]), the
//! gradients each row cost and the exact-sampling baseline
//! ([`super::exact_baseline`]), what pre-training gave, and the warnings.

use serde::Serialize;

use super::exact_baseline::ExactSummary;
use super::paired::{interval_sources, pair_with_deo_star};
use super::round_trips::{RoundTripRatio, round_trip_ratio, tempering_details};
use super::row::{Curves, Row};
use super::{Group, Kind, Records, Settings, Setup};
use crate::deep::fidelity::SampleCurve;
use crate::deep::methods::{Pretrained, Pretraining};
use nrpt_sampling::stats::mean_sd;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_is_the_mean_the_least_and_the_most() {
        assert_eq!(spread(&[2.0, 1.0, 6.0]), [3.0, 1.0, 6.0]);
    }
}
