//! The whole comparison of `nrpt deep`: pre-training, then every method on equal
//! gradient budgets with the same number of samples, seed by seed, scored on the test
//! set against the labels and against a reference posterior.
//!
//! # The protocol (stated for users in the book: `docs/src/guide/deep.md`)
//!
//! 1. **Learning rates by a stated rule** ([`EtaRule`]): the paper's rates (per
//!    example, 0.005 to 0.02) are given at its N/B ≈ 195 (CIFAR-100, 50,000 examples
//!    in batches of 256). SGD's noise, its effective temperature, scales with
//!    η·N/(B(1 − μ)); by default every rate is multiplied by 195.3/(N/B) so that every
//!    level runs at the paper's temperature ([`EtaRule::Temperature`]);
//!    [`EtaRule::AsGiven`] keeps the numbers. The sensitivity rows rerun every
//!    sampling method with the rates times each factor of `eta_sweep`.
//! 2. **Pre-training to convergence** ([`Pretraining`]): P networks per seed, a cosine
//!    schedule from η_max to 0, stopped when the NLL on a validation split carved
//!    from the training set stops improving; the pre-trained networks are their own
//!    row.
//! 3. **Equal samples**: every sampling method's model average holds `samples`
//!    samples per seed (K), collected after the same burn-in share of its run (the
//!    pre-trained row averages its P networks); curves of NLL and agreement against
//!    the number of samples for every method.
//! 4. **Baselines as their authors run them**: cyclical SGHMC keeps several samples
//!    per cycle; SWAG collects after a burn-in.
//! 5. **Scores with intervals**: accuracy, NLL, ECE, and with a reference posterior
//!    agreement and total variation ([`super::fidelity`]), each the mean over seeds
//!    with its spread and a paired-bootstrap interval over test examples.
//!
//! # Seeds, records, shards
//!
//! [`Setup::collect`] runs every method over a block of seeds and keeps, per seed and
//! row, what the report needs ([`Records`]: the model average of the test predictive,
//! the scores of the sample curve's points, a tempering run's round trips, indicator
//! counts, accuracy by level and traces); [`Setup::report`] builds the report from the
//! records of any seeds. A whole run is one block of all its seeds; a shard
//! (`--shard i/n`) is one block, and `nrpt deep merge` joins the shards' records in seed
//! order ([`Records::join`]) and builds the same report, to the bit, since every number
//! of a seed depends on that seed alone and every sum over seeds runs in seed order.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use nrpt_core::window::Scheme;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::fidelity::{self, Fidelity, PointScores, SampleCurve, Summary};
use super::methods::{
    self, ChainSettings, CyclicalSettings, Pretrained, Pretraining, SwagSettings, evenly,
};
use super::metrics::{Samples, Scores, score_against};
use super::reference::Reference;
use super::{Rates, Sampling, tempering_job};
use nrpt_sampling::data::Dataset;
use nrpt_sampling::engine::{Backend, EngineError, EnsembleTrace, Job, Record, RunOutput, Trace};
use nrpt_sampling::error::ConfigError;
use nrpt_sampling::stats::{Bootstrap, mean_sd};
use nrpt_sampling::targets::classifier::{Classifier, ClassifierTarget};

/// The paper's training examples per mini-batch: CIFAR-100's 50,000 in batches of 256.
pub const PAPER_EXAMPLES_PER_BATCH: f64 = 50_000.0 / 256.0;

/// Resamples of the paired bootstrap over test examples. With 1,000 the endpoints of a
/// 95% interval are quantiles with 25 resamples beyond each: for a statistic near
/// normal with standard error σ, the Monte Carlo standard error of the p-quantile is
/// √(p (1 − p)/B) / φ(z_p) · σ, 0.085 σ at p = 0.025, small beside the interval's
/// half-width of 1.96 σ.
pub const RESAMPLES: usize = 1000;

/// How the learning rates given in the paper's units become this data set's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum EtaRule {
    /// Multiplied by 195.3/(N/B): every level at the temperature η·N/(B(1 − μ)) the
    /// paper's rates have on CIFAR-100.
    #[default]
    Temperature,
    /// The numbers as given.
    AsGiven,
}

impl EtaRule {
    /// The factor on the given rates for `model`.
    pub fn factor(self, model: &ClassifierTarget) -> f64 {
        match self {
            EtaRule::Temperature => PAPER_EXAMPLES_PER_BATCH / model.iterations_per_epoch(),
            EtaRule::AsGiven => 1.0,
        }
    }
}

/// The sizes of a comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    /// Chains P of the tempering runs and members of the ensemble.
    pub chains: usize,
    /// Seeds: independent repetitions of every method.
    pub seeds: usize,
    /// Pre-training of the starting networks.
    pub pretraining: Pretraining,
    /// Epochs of sampling per chain (the single-chain methods run P times as many).
    pub epochs: f64,
    /// Share of every method's sampling run before its first sample.
    pub burn_in: f64,
    /// Samples in every method's model average, per seed.
    pub samples: usize,
    /// Rates, buffer, adaptation of the tempering runs, in the paper's units.
    pub rates: Rates,
    /// How the rates become this data set's.
    pub eta_rule: EtaRule,
    /// Factors on the rates of extra runs of every sampling method (sensitivity).
    pub eta_sweep: Vec<f64>,
    /// Target swap rates of an extra sweep of DEO⋆ (empty: none).
    pub swap_sweep: Vec<f64>,
    /// Samples per cycle of cyclical SGHMC (its cycles: samples / this).
    pub samples_per_cycle: usize,
    /// Share of each cycle of cyclical SGHMC that samples.
    pub cycle_sampling: f64,
    /// Rank of SWAG's low-rank part.
    pub swag_rank: usize,
    /// The rules of the tempering runs (in words in the report's `rules`).
    #[serde(skip)]
    pub rules: nrpt_core::Rules,
    /// Base seed.
    pub seed: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            chains: 10,
            seeds: 10,
            pretraining: Pretraining::default(),
            epochs: 200.0,
            burn_in: 0.25,
            samples: 60,
            rates: Rates::default(),
            eta_rule: EtaRule::Temperature,
            eta_sweep: Vec::new(),
            swap_sweep: Vec::new(),
            samples_per_cycle: 3,
            cycle_sampling: 0.2,
            swag_rank: 20,
            rules: nrpt_core::Rules::PAPER,
            seed: 0,
        }
    }
}

/// One method's results (see [`super::fidelity`] for the scores).
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
    pub meta: super::reference::Meta,
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

/// What scores the methods: the test labels, the reference, the bootstrap.
struct Scorer<'a> {
    labels: &'a [u32],
    classes: usize,
    reference: Option<&'a [f64]>,
    bootstrap: Bootstrap,
    points: Vec<usize>,
}

/// What the report needs of one method's samples of one seed: their number, their
/// model average, and the scores of the averages of the first k of them at the points
/// of the curves against the number of samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeedScores {
    /// Samples averaged.
    pub samples: usize,
    /// The average of their predictives, test example by test example (n × C).
    #[serde(with = "super::lossless::list")]
    pub predictive: Vec<f64>,
    /// The scores at each point of the sample curve (see [`fidelity::curve_points`]).
    pub curve: Vec<PointScores>,
}

/// What the report needs of one seed of a tempering run beyond its scores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeedTempering {
    /// Standard round trips.
    pub round_trips: u64,
    /// Per pair, the iterations whose swap indicator was 1.
    pub indicators: Vec<u64>,
    /// Test accuracy of the final network of every level.
    #[serde(with = "super::lossless::list")]
    pub accuracy_by_level: Vec<f64>,
    /// The ensemble's traces.
    pub trace: EnsembleTrace,
}

/// One method (one row of the report) over a block of seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MethodRecords {
    /// The row's name.
    pub name: String,
    /// Wall-clock seconds of the method over the block.
    #[serde(with = "super::lossless::one")]
    pub seconds: f64,
    /// Seed by seed.
    pub seeds: Vec<SeedScores>,
    /// Seed by seed, for a tempering run.
    pub tempering: Option<Vec<SeedTempering>>,
}

/// Everything a block of seeds of a comparison records: what its report is built from
/// (a whole run's records are those of all its seeds; `nrpt deep merge` joins its
/// shards' records, seed blocks in order, into the same).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Records {
    /// The seeds, `[start, end)` of the run's.
    pub seeds: [usize; 2],
    /// A digest of the data and the reference posterior the seeds ran on (FNV-1a, 64
    /// bits, hex, of every feature, label and reference probability): the merge scores
    /// on the same.
    pub inputs: String,
    /// What pre-training gave, network by network, seed by seed.
    pub pretrained: Vec<Pretrained>,
    /// Test accuracy of every pre-trained network alone, in the same order.
    #[serde(with = "super::lossless::list")]
    pub single_accuracy: Vec<f64>,
    /// Every row in the report's order: the pre-trained ensemble, the main methods, the
    /// learning-rate sweep's, the swap-rate sweep's.
    pub methods: Vec<MethodRecords>,
    /// Wall-clock seconds of the block.
    #[serde(with = "super::lossless::one")]
    pub seconds: f64,
}

impl Records {
    /// The records of consecutive blocks of seeds joined, in order (seconds added up).
    /// An error when the blocks do not follow each other or hold different rows.
    pub fn join(blocks: Vec<Records>) -> Result<Records, String> {
        let mut blocks = blocks.into_iter();
        let Some(mut all) = blocks.next() else {
            return Err("no records".into());
        };
        for b in blocks {
            if b.seeds[0] != all.seeds[1] {
                return Err(format!(
                    "seeds {}..{} do not follow seeds {}..{}",
                    b.seeds[0], b.seeds[1], all.seeds[0], all.seeds[1]
                ));
            }
            if b.inputs != all.inputs {
                return Err(format!(
                    "seeds {}..{} ran on other data or another reference posterior",
                    b.seeds[0], b.seeds[1]
                ));
            }
            if b.methods.len() != all.methods.len() {
                return Err(format!(
                    "{} rows against {}",
                    b.methods.len(),
                    all.methods.len()
                ));
            }
            all.seeds[1] = b.seeds[1];
            all.pretrained.extend(b.pretrained);
            all.single_accuracy.extend(b.single_accuracy);
            all.seconds += b.seconds;
            for (m, o) in all.methods.iter_mut().zip(b.methods) {
                if m.name != o.name {
                    return Err(format!("row `{}` against `{}`", o.name, m.name));
                }
                m.seconds += o.seconds;
                m.seeds.extend(o.seeds);
                match (&mut m.tempering, o.tempering) {
                    (Some(t), Some(o)) => t.extend(o),
                    (None, None) => {}
                    _ => {
                        return Err(format!(
                            "row `{}` is a tempering run in one block only",
                            m.name
                        ));
                    }
                }
            }
        }
        Ok(all)
    }
}

impl Scorer<'_> {
    /// What the report keeps of one seed's samples.
    fn seed(&self, s: &Samples) -> SeedScores {
        let curve = s
            .prefix_averages(&self.points_for(s.len()))
            .iter()
            .map(|p| PointScores::of(p, self.labels, self.classes, self.reference))
            .collect();
        SeedScores {
            samples: s.len(),
            predictive: s.average(),
            curve,
        }
    }

    /// The row and the curve of a method from its seeds' scores.
    fn score(&self, name: &str, c: &MethodRecords, eta_factor: f64) -> (Row, SampleCurve) {
        let finals: Vec<Vec<f64>> = c.seeds.iter().map(|s| s.predictive.clone()).collect();
        let f = fidelity::summarize(
            &finals,
            self.labels,
            self.classes,
            self.reference,
            &self.bootstrap,
        );
        let per_seed = finals
            .iter()
            .zip(&c.seeds)
            .map(|(p, s)| Scores {
                samples: s.samples,
                ..score_against(p, self.labels, self.classes, self.reference)
            })
            .collect();
        let points = self.points_for(c.seeds.iter().map(|s| s.samples).max().unwrap_or(0));
        let scored: Vec<Vec<PointScores>> = c.seeds.iter().map(|s| s.curve.clone()).collect();
        let curve = SampleCurve::from_points(name, &points, &scored, self.reference.is_some());
        let samples = c.seeds.first().map_or(0, |s| s.samples);
        (
            row(name, &f, per_seed, samples, c.seconds, eta_factor),
            curve,
        )
    }

    /// The curve's points for a method of `n` samples: the common points up to `n`,
    /// and `n` itself.
    fn points_for(&self, n: usize) -> Vec<usize> {
        let mut points: Vec<usize> = self.points.iter().copied().filter(|&k| k < n).collect();
        if n > 0 {
            points.push(n);
        }
        points
    }

    /// Whether `s` is a seed's scores of at most `most` samples over this test set.
    fn check(&self, s: &SeedScores, most: usize) -> Result<(), String> {
        if s.samples > most {
            return Err(format!(
                "{} samples, the run keeps at most {most}",
                s.samples
            ));
        }
        if s.predictive.len() != self.labels.len() * self.classes {
            return Err(format!(
                "a predictive of {} values for {} test examples of {} classes",
                s.predictive.len(),
                self.labels.len(),
                self.classes
            ));
        }
        let points = self.points_for(s.samples).len();
        if s.curve.len() != points {
            return Err(format!(
                "{} points of the sample curve, {} samples have {points}",
                s.curve.len(),
                s.samples
            ));
        }
        let with = self.reference.is_some();
        if s.curve
            .iter()
            .any(|p| p.agreement.is_some() != with || p.total_variation.is_some() != with)
        {
            return Err(if with {
                "scores without the reference posterior the run scores against".into()
            } else {
                "scores against a reference posterior the run does not have".into()
            });
        }
        Ok(())
    }
}

fn row(
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
    let stars: Vec<(f64, Vec<f64>, Option<Vec<f64>>)> = main
        .iter()
        .chain(sweep.iter())
        .filter(|r| r.name.starts_with("DEO⋆"))
        .map(|r| {
            (
                r.eta_factor,
                r.example_nll.clone(),
                r.example_total_variation.clone(),
            )
        })
        .collect();
    for r in main
        .iter_mut()
        .chain(sweep.iter_mut())
        .chain(swaps.iter_mut())
    {
        let Some((_, nll, tv)) = stars.iter().find(|(f, _, _)| *f == r.eta_factor) else {
            continue;
        };
        r.nll_minus_deo_star_ci = Some(fidelity::paired_difference(&r.example_nll, nll, bootstrap));
        r.total_variation_minus_deo_star_ci = match (&r.example_total_variation, tv) {
            (Some(a), Some(b)) => Some(fidelity::paired_difference(a, b, bootstrap)),
            _ => None,
        };
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

/// Checks the sizes that the flags do not already bound.
fn check(s: &Settings, iterations: u64) -> Result<(), ConfigError> {
    if s.seeds == 0 || s.chains < 2 {
        return Err(ConfigError::new(
            "seeds",
            "needs at least 1 seed and 2 chains",
        ));
    }
    if s.samples == 0 {
        return Err(ConfigError::new("samples", "must be at least 1, got 0"));
    }
    let after = iterations - (s.burn_in * iterations as f64) as u64;
    if (s.samples as u64) > after {
        return Err(ConfigError::new(
            "samples",
            format!(
                "{} samples per method, but the sampling phase has only {after} iterations after its burn-in: lower --samples or raise --epochs",
                s.samples
            ),
        ));
    }
    if s.samples_per_cycle == 0 {
        return Err(ConfigError::new(
            "samples_per_cycle",
            "must be at least 1, got 0",
        ));
    }
    Ok(())
}

/// What a row of the report runs.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// The pre-trained networks.
    Pretrained,
    /// A tempering run with this window.
    Tempering(Scheme),
    /// The mSGD ensemble.
    Ensemble,
    /// Cyclical SGHMC.
    Cyclical,
    /// SWAG.
    Swag,
}

/// Where a row goes in the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Group {
    /// `methods` (and the curves).
    Main,
    /// `eta_sweep`.
    EtaSweep,
    /// `swap_sweep`.
    SwapSweep,
}

/// One row of the report, before it runs.
struct Planned {
    name: String,
    kind: Kind,
    rates: Rates,
    factor: f64,
    group: Group,
}

/// A comparison before it runs: its sizes, rates, scorer and rows, from the model, the
/// settings and the reference alone (the same for a whole run, each of its shards and
/// their merge). [`Setup::collect`] runs a block of its seeds; [`Setup::report`] builds
/// the report from the records of some seeds (of all of them for the run's report).
pub struct Setup<'a> {
    model: &'a Classifier,
    s: &'a Settings,
    reference: Option<&'a Reference>,
    iterations: u64,
    warmup: u64,
    eta_factor: f64,
    rates: Rates,
    pre_data: Arc<Dataset>,
    scorer: Scorer<'a>,
    plan: Vec<Planned>,
    inputs: String,
}

impl<'a> Setup<'a> {
    /// The comparison of `s` on `model`, scored against `reference` when given (the
    /// caller checks that it belongs to `model`), sized to hold `block` seeds at once.
    pub fn new(
        model: &'a Classifier,
        s: &'a Settings,
        reference: Option<&'a Reference>,
        block: usize,
    ) -> Result<Self, anyhow::Error> {
        let target = model;
        let data = &target.data;
        let (p, d) = (s.chains, target.dim());
        let iterations = model.iterations(s.epochs);
        check(s, iterations)?;
        let eta_factor = s.eta_rule.factor(model);
        let rates = Rates {
            eta_min: s.rates.eta_min * eta_factor,
            eta_max: s.rates.eta_max * eta_factor,
            ..s.rates
        };
        rates.check()?;
        let warmup = (s.burn_in * iterations as f64) as u64;

        // Everything the comparison holds at once, checked before any work.
        let probe = tempering_job(
            model,
            &Sampling {
                chains: p,
                seeds: block,
                iterations,
                scheme: Scheme::Deo { window: 1 },
                rates,
                seed: s.seed,
                record: sample_record(iterations, warmup, s.samples),
                rules: s.rules,
                initial_states: None,
            },
        )?;
        let mut footprint = nrpt_sampling::engine::memory::of_job(&probe);
        let m = |v: &[u64]| v.iter().fold(1u64, |a, &b| a.saturating_mul(b));
        let (seeds, chains_u, dim) = (block as u64, p as u64, d as u64);
        footprint.add("pre-trained networks", m(&[seeds, chains_u, dim, 4]));
        footprint.add(
            "predictives of the samples",
            m(&[
                seeds,
                s.samples as u64 + chains_u,
                data.test.len() as u64,
                data.classes as u64,
                4,
            ]),
        );
        nrpt_sampling::engine::memory::check(
            &footprint,
            "--ensembles, --samples, --chains or --epochs",
        )
        .map_err(|e| ConfigError::new("max_memory", e))?;

        let scorer = Scorer {
            labels: &data.test.y,
            classes: data.classes,
            reference: reference.map(|r| &r.predictive[..]),
            bootstrap: Bootstrap::new(data.test.len(), RESAMPLES, u64::from(s.seed))?,
            points: fidelity::curve_points(s.samples.max(p)),
        };
        let pre_data = Arc::new(methods::validation_split(
            data,
            s.pretraining.validation_every,
        ));

        let mut plan = vec![Planned {
            name: format!("pre-trained×P{p}"),
            kind: Kind::Pretrained,
            rates,
            factor: 1.0,
            group: Group::Main,
        }];
        let mut every_method =
            |rates: Rates, factor: f64, group: Group| -> Result<(), ConfigError> {
                let suffix = if group == Group::Main {
                    String::new()
                } else {
                    format!(", η×{factor}")
                };
                for (name, kind) in [
                    (
                        format!("DEO⋆-mSGD×P{p}{suffix}"),
                        Kind::Tempering(star(p, rates.swap_rate)?),
                    ),
                    (
                        format!("DEO-mSGD×P{p}{suffix}"),
                        Kind::Tempering(Scheme::Deo { window: 1 }),
                    ),
                    (format!("mSGD×P{p}{suffix}"), Kind::Ensemble),
                    (format!("cycSGHMC×T{p}{suffix}"), Kind::Cyclical),
                    (format!("SWAG×T{p}{suffix}"), Kind::Swag),
                ] {
                    plan.push(Planned {
                        name,
                        kind,
                        rates,
                        factor,
                        group,
                    });
                }
                Ok(())
            };
        every_method(rates, 1.0, Group::Main)?;
        for &factor in &s.eta_sweep {
            let swept = Rates {
                eta_min: rates.eta_min * factor,
                eta_max: rates.eta_max * factor,
                ..rates
            };
            every_method(swept, factor, Group::EtaSweep)?;
        }
        for &rate in &s.swap_sweep {
            plan.push(Planned {
                name: format!("DEO⋆-mSGD×P{p}, S = {rate}"),
                kind: Kind::Tempering(star(p, rate)?),
                rates: Rates {
                    swap_rate: rate,
                    ..rates
                },
                factor: 1.0,
                group: Group::SwapSweep,
            });
        }
        let inputs = inputs_digest(data, reference);
        Ok(Setup {
            inputs,
            model,
            s,
            reference,
            iterations,
            warmup,
            eta_factor,
            rates,
            pre_data,
            scorer,
            plan,
        })
    }

    /// Trace entries of the tempering runs every 5 epochs (swap rates over ~100
    /// iterations, smooth enough to see), and at least 20 times in a short run.
    fn trace_every(&self) -> u64 {
        let per_epoch = self.model.iterations_per_epoch();
        ((5.0 * per_epoch).round() as u64)
            .min(self.iterations / 20)
            .max(1)
    }

    /// Runs every method over the seeds `seeds` (all of the run's, or one shard's
    /// block) and keeps what the report needs. `backend` runs the tempering jobs; the
    /// other methods run on the CPU. `progress(what)` is told what starts.
    pub fn collect(
        &self,
        backend: &dyn Backend,
        seeds: Range<usize>,
        progress: &dyn Fn(&str),
    ) -> Result<Records, anyhow::Error> {
        let started = Instant::now();
        let (s, rates) = (self.s, self.rates);
        let target = self.model;
        let data = &target.data;
        let (p, d, n) = (s.chains, target.dim(), seeds.len());

        progress("pre-training");
        let pre_model = Arc::new(self.model.with_data(Arc::clone(&self.pre_data))?);
        let pre_chains = ChainSettings {
            target: Arc::clone(&pre_model),
            seed: s.seed,
            momentum: rates.momentum,
        };
        let t = Instant::now();
        let (states, pretrained) = methods::pretrain(
            &pre_chains,
            seeds.clone(),
            p,
            &s.pretraining,
            rates.eta_max / pre_model.examples() as f64,
        )?;
        let states = Arc::new(states);
        let pre_samples: Vec<Samples> = (0..n)
            .map(|i| {
                let mut one = Samples::new(data.test.len(), data.classes);
                for theta in states[i * p * d..(i + 1) * p * d].chunks(d) {
                    one.push(target, theta, &data.test.x);
                }
                one
            })
            .collect();
        let single_accuracy: Vec<f64> = pre_samples
            .iter()
            .flat_map(|s| (0..s.len()).map(move |j| s.one(j)))
            .map(|probs| score_against(&probs, &data.test.y, data.classes, None).accuracy)
            .collect();
        let pre_seeds = pre_samples.iter().map(|s| self.scorer.seed(s)).collect();
        drop(pre_samples);
        let mut methods = Vec::with_capacity(self.plan.len());
        let mut pre_name = String::new();
        if let Some(first) = self.plan.first() {
            pre_name.clone_from(&first.name);
        }
        methods.push(MethodRecords {
            name: pre_name,
            seconds: t.elapsed().as_secs_f64(),
            seeds: pre_seeds,
            tempering: None,
        });

        let chains = ChainSettings {
            target: Arc::clone(target),
            seed: s.seed,
            momentum: rates.momentum,
        };
        let n_ex = self.model.examples() as f64;
        let iterations = self.iterations;
        let long = iterations * p as u64;
        let start = |i: usize, members: usize| &states[i * p * d..(i * p + members) * d];
        let first = seeds.start;
        for planned in self.plan.iter().skip(1) {
            let name = &planned.name;
            progress(name);
            let t = Instant::now();
            let rates = planned.rates;
            let (per_seed, tempering) = match planned.kind {
                Kind::Pretrained => continue,
                Kind::Tempering(scheme) => {
                    let (a, b) = self.tempering(scheme, rates, &seeds, &states, backend)?;
                    (a, Some(b))
                }
                Kind::Ensemble => {
                    let keep = evenly(self.warmup, iterations, s.samples.div_ceil(p));
                    let per_seed = (0..n)
                        .into_par_iter()
                        .map(|i| {
                            let mut all = methods::ensemble(
                                &chains,
                                first + i,
                                start(i, p),
                                iterations,
                                rates.eta_min / n_ex,
                                &keep,
                            )?;
                            all.truncate(s.samples);
                            Ok(self.scorer.seed(&all))
                        })
                        .collect::<Result<_, EngineError>>()?;
                    (per_seed, None)
                }
                Kind::Cyclical => {
                    let cyclical = CyclicalSettings {
                        cycles: s.samples.div_ceil(s.samples_per_cycle) as u64,
                        per_cycle: s.samples_per_cycle,
                        sampling: s.cycle_sampling,
                    };
                    let per_seed = (0..n)
                        .into_par_iter()
                        .map(|i| {
                            let mut all = methods::cyclical_sghmc(
                                &chains,
                                first + i,
                                start(i, 1),
                                long,
                                rates.eta_max / n_ex,
                                &cyclical,
                            )?;
                            all.truncate(s.samples);
                            Ok(self.scorer.seed(&all))
                        })
                        .collect::<Result<_, EngineError>>()?;
                    (per_seed, None)
                }
                Kind::Swag => {
                    let swag = SwagSettings {
                        burn_in: s.burn_in,
                        every: (target.iterations_per_epoch().round() as u64).max(1),
                        rank: s.swag_rank,
                        draws: s.samples,
                    };
                    let per_seed = (0..n)
                        .into_par_iter()
                        .map(|i| {
                            let all = methods::swag(
                                &chains,
                                first + i,
                                start(i, 1),
                                long,
                                rates.eta_max / n_ex,
                                &swag,
                            )?;
                            Ok(self.scorer.seed(&all))
                        })
                        .collect::<Result<_, EngineError>>()?;
                    (per_seed, None)
                }
            };
            methods.push(MethodRecords {
                name: name.clone(),
                seconds: t.elapsed().as_secs_f64(),
                seeds: per_seed,
                tempering,
            });
        }
        Ok(Records {
            seeds: [seeds.start, seeds.end],
            inputs: self.inputs.clone(),
            pretrained,
            single_accuracy,
            methods,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// A tempering run over the seeds `seeds`, from their pre-trained `states`: its
    /// seeds' scores and details.
    fn tempering(
        &self,
        scheme: Scheme,
        rates: Rates,
        seeds: &Range<usize>,
        states: &Arc<Vec<f32>>,
        backend: &dyn Backend,
    ) -> Result<(Vec<SeedScores>, Vec<SeedTempering>), anyhow::Error> {
        let s = self.s;
        let target = self.model;
        let data = &target.data;
        let (p, d) = (s.chains, target.dim());
        let mut record = sample_record(self.iterations, self.warmup, s.samples);
        record.trace_every = self.trace_every();
        let mut job = tempering_job(
            self.model,
            &Sampling {
                chains: p,
                seeds: seeds.len(),
                iterations: self.iterations,
                scheme,
                rates,
                seed: s.seed,
                record,
                rules: s.rules,
                initial_states: Some(Arc::clone(states)),
            },
        )?;
        job.options.ensemble = u32::try_from(seeds.start)
            .map_err(|_| ConfigError::new("ensembles", "too many seeds"))?;
        let out = backend.run(&job, &nrpt_sampling::interrupt::flow)?;
        let scores = target_samples(self.model, &job, &out, s.samples)
            .iter()
            .map(|one| self.scorer.seed(one))
            .collect();
        if out.ensembles.len() != seeds.len() || out.ensemble_traces.len() != seeds.len() {
            anyhow::bail!(
                "the {} backend returned {} ensembles and {} traces for {} seeds",
                out.backend,
                out.ensembles.len(),
                out.ensemble_traces.len(),
                seeds.len()
            );
        }
        let details = out
            .ensembles
            .par_iter()
            .zip(&out.ensemble_traces)
            .map(|(en, trace)| SeedTempering {
                round_trips: en.stats.round_trips,
                indicators: en.pairs.iter().map(|pair| pair.indicators).collect(),
                accuracy_by_level: (0..p)
                    .map(|l| {
                        let mut one = Samples::new(data.test.len(), data.classes);
                        one.push(target, &en.levels[l * d..(l + 1) * d], &data.test.x);
                        score_against(&one.average(), &data.test.y, data.classes, None).accuracy
                    })
                    .collect(),
                trace: trace.clone(),
            })
            .collect();
        Ok((scores, details))
    }

    /// Checks that `r` are whole records of the seeds `seeds` of this comparison: every
    /// row, every seed, every length as the run makes them (records read from a file
    /// are checked before the report indexes them).
    pub fn check(&self, r: &Records, seeds: &Range<usize>) -> Result<(), String> {
        let (p, n) = (self.s.chains, seeds.len());
        if r.seeds != [seeds.start, seeds.end] {
            return Err(format!(
                "they are of seeds {}..{}, the shard ran {}..{}",
                r.seeds[0], r.seeds[1], seeds.start, seeds.end
            ));
        }
        if r.inputs != self.inputs {
            return Err(format!(
                "they were scored on other data or another reference posterior (digest {}, \
                 here {}): the merge reads the data and the reference the shards name",
                r.inputs, self.inputs
            ));
        }
        if r.pretrained.len() != n * p || r.single_accuracy.len() != n * p {
            return Err(format!(
                "{} and {} pre-trained networks for {n} seeds of {p}",
                r.pretrained.len(),
                r.single_accuracy.len()
            ));
        }
        if r.methods.len() != self.plan.len() {
            return Err(format!(
                "{} rows, the comparison has {}",
                r.methods.len(),
                self.plan.len()
            ));
        }
        let entries = self.iterations / self.trace_every();
        for (m, planned) in r.methods.iter().zip(&self.plan) {
            let bad = |why: String| format!("row `{}`: {why}", planned.name);
            if m.name != planned.name {
                return Err(bad(format!("it is `{}`", m.name)));
            }
            if m.seeds.len() != n {
                return Err(bad(format!("{} seeds for {n}", m.seeds.len())));
            }
            let most = match planned.kind {
                Kind::Pretrained => p,
                _ => self.s.samples,
            };
            for (e, seed) in seeds.clone().zip(&m.seeds) {
                self.scorer
                    .check(seed, most)
                    .map_err(|why| bad(format!("seed {e}: {why}")))?;
            }
            match (planned.kind, &m.tempering) {
                (Kind::Tempering(_), Some(t)) => {
                    if t.len() != n {
                        return Err(bad(format!("{} tempering records for {n} seeds", t.len())));
                    }
                    for (e, t) in seeds.clone().zip(t) {
                        check_tempering(t, p, entries, self.trace_every())
                            .map_err(|why| bad(format!("seed {e}: {why}")))?;
                    }
                }
                (Kind::Tempering(_), None) => return Err(bad("no tempering records".into())),
                (_, Some(_)) => return Err(bad("tempering records of no tempering run".into())),
                (_, None) => {}
            }
        }
        Ok(())
    }

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
            warnings,
            seconds,
            command: nrpt_sampling::machine::command_line(),
            machine: nrpt_sampling::machine::describe(),
            date: nrpt_sampling::machine::utc_now(),
            shard: None,
        }
    }
}

/// FNV-1a (64 bits, hex) of every feature, label and reference probability.
fn inputs_digest(data: &Dataset, reference: Option<&Reference>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for split in [&data.train, &data.test] {
        eat(&(split.x.len() as u64).to_le_bytes());
        split.x.iter().for_each(|v| eat(&v.to_bits().to_le_bytes()));
        split.y.iter().for_each(|v| eat(&v.to_le_bytes()));
    }
    if let Some(r) = reference {
        eat(&(r.predictive.len() as u64).to_le_bytes());
        r.predictive
            .iter()
            .for_each(|v| eat(&v.to_bits().to_le_bytes()));
    }
    format!("{h:016x}")
}

/// Checks one seed's tempering records against a run of `p` chains traced `entries`
/// times, every `every` iterations.
fn check_tempering(t: &SeedTempering, p: usize, entries: u64, every: u64) -> Result<(), String> {
    if t.indicators.len() != p - 1 || t.accuracy_by_level.len() != p {
        return Err(format!(
            "{} pairs and {} levels for {p} chains",
            t.indicators.len(),
            t.accuracy_by_level.len()
        ));
    }
    let tr = &t.trace;
    for (name, len) in [
        ("iterations", tr.iterations.len()),
        ("ladder", tr.ladder.len()),
        ("buffer", tr.buffer.len()),
        ("round trips", tr.trips.len()),
        ("rates", tr.rates.len()),
    ] {
        if len as u64 != entries {
            return Err(format!(
                "{len} trace entries of the {name}, the run has {entries}"
            ));
        }
    }
    if tr
        .iterations
        .iter()
        .enumerate()
        .any(|(i, &k)| k != (i as u64 + 1) * every)
        || tr.ladder.iter().any(|l| l.len() != p)
        || tr.rates.iter().any(|r| r.len() != p - 1)
    {
        return Err("a trace entry does not fit the run".into());
    }
    Ok(())
}

/// Runs the comparison over all its seeds: [`Setup::collect`] then
/// [`Setup::report`]. `backend` runs the tempering jobs; the other methods run on the
/// CPU. `reference`, when given, must belong to `model` (the caller checks it).
/// `progress(what)` is told what starts.
pub fn run(
    model: &Classifier,
    s: &Settings,
    reference: Option<&Reference>,
    backend: &dyn Backend,
    progress: &dyn Fn(&str),
) -> Result<Report, anyhow::Error> {
    let started = Instant::now();
    let setup = Setup::new(model, s, reference, s.seeds)?;
    let records = setup.collect(backend, 0..s.seeds, progress)?;
    Ok(setup.report(&records, started.elapsed().as_secs_f64()))
}

/// The optimal window for P chains at swap rate `rate`.
fn star(p: usize, rate: f64) -> Result<Scheme, ConfigError> {
    let window = nrpt_core::optimal::optimal_window(p, rate)
        .map_err(|e| ConfigError::new("swap_rate", e.to_string()))?;
    Ok(Scheme::Deo { window })
}

/// A record of the last `samples` target-level states evenly spaced after `warmup`
/// (the engine keeps every `thin`-th iteration from the warm-up on; the comparison
/// keeps the last `samples` of them).
fn sample_record(iterations: u64, warmup: u64, samples: usize) -> Record {
    let thin = ((iterations - warmup) / (samples as u64).max(1)).max(1);
    Record {
        thin,
        warmup,
        trace_every: 1.max(iterations / 20),
        path_iterations: 0,
    }
}

/// The predictives of the last `samples` recorded target-level states, per seed.
fn target_samples(model: &Classifier, job: &Job, out: &RunOutput, samples: usize) -> Vec<Samples> {
    let target = model;
    let data = &target.data;
    let (e, d) = (job.ensembles, target.dim());
    // Samples: [sample][ensemble][coordinate].
    let recorded = out.sample_iterations.len();
    let first = recorded.saturating_sub(samples);
    (0..e)
        .into_par_iter()
        .map(|en| {
            let mut s = Samples::new(data.test.len(), data.classes);
            for i in first..recorded {
                let at = (i * e + en) * d;
                s.push(target, &out.samples[at..at + d], &data.test.x);
            }
            s
        })
        .collect()
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
