//! The report of a comparison from its records: every row's scores with their spread
//! and intervals, the paired differences against DEO⋆, the tempering runs' round
//! trips, swap rates and curves, what pre-training gave, and the warnings.

use nrpt_core::window::Scheme;
use serde::Serialize;

use super::records::SeedTempering;
use super::{Group, Kind, Records, Settings, Setup};
use crate::deep::Rates;
use crate::deep::fidelity::{self, Fidelity, SampleCurve, Summary};
use crate::deep::methods::{Pretrained, Pretraining};
use crate::deep::metrics::Scores;
use nrpt_sampling::engine::{EnsembleTrace, Trace};
use nrpt_sampling::stats::{Bootstrap, mean_sd, paired_t_interval};
use nrpt_sampling::targets::classifier::Classifier;

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
    /// Per-example scores for the paired comparisons.
    #[serde(skip)]
    example_nll: Vec<f64>,
    #[serde(skip)]
    example_total_variation: Option<Vec<f64>>,
    /// Standard round trips per 100 epochs (tempering rows), mean over seeds.
    pub round_trips_per_100_epochs: Option<f64>,
    /// Its standard deviation.
    pub round_trips_per_100_epochs_sd: Option<f64>,
    /// Per pair, the measured share of iterations with swap indicator 1, mean over
    /// seeds (tempering rows; the target is `swap_rate`).
    pub pair_indicator_rates: Option<Vec<f64>>,
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
        example_nll: f.example_nll.clone(),
        example_total_variation: f.example_total_variation.clone(),
        round_trips_per_100_epochs: None,
        round_trips_per_100_epochs_sd: None,
        pair_indicator_rates: None,
        samples,
        seconds,
        per_seed,
    }
}

/// Fills every row's paired differences against the DEO⋆ row of the same rates (the
/// main rows' DEO⋆ for the swap sweep).
fn pair_with_deo_star(
    bootstrap: &Bootstrap,
    main: &mut [Row],
    sweep: &mut [Row],
    swaps: &mut [Row],
) {
    let stars: Vec<Row> = main
        .iter()
        .chain(sweep.iter())
        .filter(|r| r.name.starts_with("DEO⋆"))
        .cloned()
        .collect();
    for r in main
        .iter_mut()
        .chain(sweep.iter_mut())
        .chain(swaps.iter_mut())
    {
        let Some(star) = stars.iter().find(|s| s.eta_factor == r.eta_factor) else {
            continue;
        };
        r.nll_minus_deo_star_ci = Some(fidelity::paired_difference(
            &r.example_nll,
            &star.example_nll,
            bootstrap,
        ));
        r.total_variation_minus_deo_star_ci =
            match (&r.example_total_variation, &star.example_total_variation) {
                (Some(a), Some(b)) => Some(fidelity::paired_difference(a, b, bootstrap)),
                _ => None,
            };
        let by_seed = |row: &Row, f: fn(&Scores) -> Option<f64>| -> Option<Vec<f64>> {
            row.per_seed.iter().map(f).collect()
        };
        let seed_ci = |f: fn(&Scores) -> Option<f64>| match (by_seed(r, f), by_seed(star, f)) {
            (Some(a), Some(b)) => Some(
                paired_t_interval(&a, &b, fidelity::LEVEL)
                    .map_or([f64::NAN; 2], |i| [i.lower, i.upper]),
            ),
            _ => None,
        };
        let (nll, tv) = (seed_ci(|s| Some(s.nll)), seed_ci(|s| s.total_variation));
        r.nll_minus_deo_star_seed_ci = nll;
        r.total_variation_minus_deo_star_seed_ci = tv;
    }
}

/// Which source of error the differences to DEO⋆ are most uncertain from: for every
/// paired difference with both intervals (NLL and total variation, every row but a
/// DEO⋆ row against itself), whether the seeds' t interval is wider than the test-set bootstrap's.
fn interval_sources(rows: &[&Row]) -> String {
    let mut pairs = Vec::new();
    for r in rows {
        pairs.push((r.nll_minus_deo_star_seed_ci, r.nll_minus_deo_star_ci));
        pairs.push((
            r.total_variation_minus_deo_star_seed_ci,
            r.total_variation_minus_deo_star_ci,
        ));
    }
    let both: Vec<(f64, f64)> = pairs
        .into_iter()
        .filter_map(|(seed, test)| {
            let (seed, test) = (seed?, test?);
            let (ws, wt) = (seed[1] - seed[0], test[1] - test[0]);
            // A DEO⋆ row against itself has two points: no comparison.
            (ws.is_finite() && wt.is_finite() && (ws > 0.0 || wt > 0.0)).then_some((ws, wt))
        })
        .collect();
    if both.is_empty() {
        return "no difference to DEO⋆ has both intervals (one seed, or no DEO⋆ row)".to_string();
    }
    let seeds_wider = both.iter().filter(|(ws, wt)| ws > wt).count();
    let verdict = if 2 * seeds_wider > both.len() {
        "the seeds dominate: a second test set would move these differences less than a second set of seeds"
    } else {
        "the test set dominates: a second set of seeds would move these differences less than a second test set"
    };
    format!(
        "of {} differences to DEO⋆ (NLL and total variation, every row), the seeds' t interval is wider than the test-set bootstrap's in {seeds_wider}: {verdict}; a difference is settled where both intervals exclude 0",
        both.len()
    )
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
                (Kind::Tempering(scheme), Some(t)) => Some(tempering_details(
                    model,
                    self.iterations,
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
            reference: self.reference.map(|r| ReferenceSummary {
                source: r.source.clone(),
                meta: r.meta.clone(),
            }),
            methods,
            eta_sweep,
            swap_sweep,
            curves,
            sample_curves,
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

/// Round trips, swap rates and curves of a tempering run of `iterations` iterations
/// from its seeds' records, into its row.
fn tempering_details(
    model: &Classifier,
    iterations: u64,
    scheme: Scheme,
    rates: Rates,
    name: &str,
    per_seed: &[SeedTempering],
    r: &mut Row,
) -> Curves {
    let e = per_seed.len();
    let p = per_seed.first().map_or(0, |t| t.accuracy_by_level.len());
    let per_epoch = model.iterations_per_epoch();
    let epochs = iterations as f64 / per_epoch;
    let trips: Vec<f64> = per_seed
        .iter()
        .map(|t| t.round_trips as f64 * 100.0 / epochs)
        .collect();
    let (rt, rt_sd) = mean_sd(&trips);
    let pair_rates: Vec<f64> = (0..p.saturating_sub(1))
        .map(|l| {
            per_seed
                .iter()
                .map(|t| t.indicators[l] as f64 / iterations as f64)
                .sum::<f64>()
                / e as f64
        })
        .collect();
    r.window = Some(scheme.window_code());
    r.swap_rate = Some(rates.swap_rate);
    r.round_trips_per_100_epochs = Some(rt);
    r.round_trips_per_100_epochs_sd = Some(rt_sd);
    r.pair_indicator_rates = Some(pair_rates);
    let n = model.examples() as f64;
    let accuracy_by_level = (0..p)
        .map(|l| {
            let accs: Vec<f64> = per_seed.iter().map(|t| t.accuracy_by_level[l]).collect();
            mean_sd(&accs).0
        })
        .collect();
    let traces: Vec<EnsembleTrace> = per_seed.iter().map(|t| t.trace.clone()).collect();
    let t = Trace::merge(&traces);
    Curves {
        name: name.to_string(),
        epochs: t.iterations.iter().map(|&k| k as f64 / per_epoch).collect(),
        round_trips: t.round_trips.iter().map(|&r| r as f64 / e as f64).collect(),
        ladder: t
            .ladder
            .iter()
            .map(|l| l.iter().map(|&eta| eta * n).collect())
            .collect(),
        pair_indicator_rates: t.indicator_rate,
        accuracy_by_level,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row named `name` at rates × `factor` whose NLL is `nll` on every one of `n`
    /// test examples.
    fn row_of(name: &str, factor: f64, nll: f64, n: usize) -> Row {
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

    /// Every row is compared with the DEO⋆ row of its own rates (the main one for the
    /// swap sweep), over the same resampled examples; a row at rates without a DEO⋆ row
    /// gets no comparison.
    #[test]
    fn rows_are_paired_with_the_deo_star_row_of_their_rates() {
        let n = 20;
        let bootstrap = Bootstrap::new(n, 200, 1).unwrap();
        let mut main = vec![
            row_of("DEO⋆-mSGD×P4", 1.0, 1.0, n),
            row_of("mSGD×P4", 1.0, 1.5, n),
        ];
        let mut sweep = vec![
            row_of("DEO⋆-mSGD×P4, η×2", 2.0, 3.0, n),
            row_of("mSGD×P4, η×2", 2.0, 2.0, n),
        ];
        let mut swaps = vec![
            row_of("DEO⋆-mSGD×P4, S = 0.3", 1.0, 1.25, n),
            row_of("mSGD×P4, η×0.5", 0.5, 2.0, n),
        ];
        pair_with_deo_star(&bootstrap, &mut main, &mut sweep, &mut swaps);
        let close = |r: &Row, d: f64| {
            let ci = r
                .nll_minus_deo_star_ci
                .unwrap_or_else(|| panic!("{}", r.name));
            assert!(
                (ci[0] - d).abs() < 1e-12 && (ci[1] - d).abs() < 1e-12,
                "{}: {ci:?} vs {d}",
                r.name
            );
        };
        close(&main[0], 0.0);
        close(&main[1], 0.5);
        close(&sweep[0], 0.0);
        close(&sweep[1], -1.0);
        close(&swaps[0], 0.25);
        assert_eq!(swaps[1].nll_minus_deo_star_ci, None);
        assert!(
            main.iter()
                .all(|r| r.total_variation_minus_deo_star_ci.is_none())
        );
    }

    /// The seeds' interval of a difference is the t interval of the per-seed
    /// differences, seed with seed; which source dominates follows from the widths.
    #[test]
    fn seed_intervals_pair_the_same_seeds() {
        let n = 20;
        let bootstrap = Bootstrap::new(n, 200, 1).unwrap();
        let seeds = |nll: &[f64]| -> Vec<Scores> {
            nll.iter()
                .map(|&v| Scores {
                    nll: v,
                    ..Scores::default()
                })
                .collect()
        };
        let mut star = row_of("DEO⋆-mSGD×P4", 1.0, 1.0, n);
        star.per_seed = seeds(&[1.0, 1.2, 0.9, 1.1]);
        let mut other = row_of("DEO-mSGD×P4", 1.0, 1.5, n);
        other.per_seed = seeds(&[1.5, 1.6, 1.5, 1.4]);
        let mut main = vec![star, other];
        pair_with_deo_star(&bootstrap, &mut main, &mut [], &mut []);
        let want = paired_t_interval(&[1.5, 1.6, 1.5, 1.4], &[1.0, 1.2, 0.9, 1.1], 0.95).unwrap();
        assert_eq!(
            main[1].nll_minus_deo_star_seed_ci,
            Some([want.lower, want.upper])
        );
        assert_eq!(main[0].nll_minus_deo_star_seed_ci, Some([0.0, 0.0]));
        // No reference: no total variation, so no interval of its difference.
        assert_eq!(main[1].total_variation_minus_deo_star_seed_ci, None);
        // Every example has the same NLL, so the test-set bootstrap's interval is a point
        // and the seeds' (wider) dominates.
        let text = interval_sources(&main.iter().collect::<Vec<_>>());
        assert!(text.starts_with("of 1 differences"), "{text}");
        assert!(
            text.contains("wider than the test-set bootstrap's in 1"),
            "{text}"
        );
        assert!(text.contains("the seeds dominate"), "{text}");
        // One seed: no seed interval (NaN), and the text says so when nothing has both.
        let mut one = vec![
            row_of("DEO⋆-mSGD×P4", 1.0, 1.0, n),
            row_of("SWAG", 1.0, 2.0, n),
        ];
        one[0].per_seed = seeds(&[1.0]);
        one[1].per_seed = seeds(&[2.0]);
        pair_with_deo_star(&bootstrap, &mut one, &mut [], &mut []);
        assert!(one[1].nll_minus_deo_star_seed_ci.unwrap()[0].is_nan());
        assert!(interval_sources(&one.iter().collect::<Vec<_>>()).starts_with("no difference"));
    }

    #[test]
    fn the_spread_is_the_mean_the_least_and_the_most() {
        assert_eq!(spread(&[2.0, 1.0, 6.0]), [3.0, 1.0, 6.0]);
    }
}
