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

use std::sync::Arc;
use std::time::Instant;

use nrpt_core::window::Scheme;
use rayon::prelude::*;
use serde::Serialize;

use super::fidelity::{self, Fidelity, SampleCurve, Summary};
use super::methods::{
    self, ChainSettings, CyclicalSettings, Pretrained, Pretraining, SwagSettings, evenly,
};
use super::metrics::{Samples, Scores, score_against};
use super::reference::Reference;
use super::{Model, Rates, Sampling};
use crate::engine::{Backend, Job, Record, RunOutput};
use crate::error::ConfigError;
use crate::stats::{Bootstrap, mean_sd};

/// The paper's training examples per mini-batch: CIFAR-100's 50,000 in batches of 256.
pub const PAPER_EXAMPLES_PER_BATCH: f64 = 50_000.0 / 256.0;

/// Resamples of the paired bootstrap over test examples.
pub const RESAMPLES: usize = 1000;

/// How the learning rates given in the paper's units become this data set's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
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
    pub fn factor(self, model: &Model) -> f64 {
        match self {
            EtaRule::Temperature => {
                PAPER_EXAMPLES_PER_BATCH / model.target().iterations_per_epoch()
            }
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
    pub rules: crate::preset::RulesSummary,
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
    /// The machine it ran on ([`crate::machine::describe`]).
    pub machine: String,
    /// When it finished (UTC, RFC 3339).
    pub date: String,
}

/// What scores the methods: the test labels, the reference, the bootstrap.
struct Scorer<'a> {
    labels: &'a [u32],
    classes: usize,
    reference: Option<&'a [f64]>,
    bootstrap: Bootstrap,
    points: Vec<usize>,
}

/// One method's samples, per seed.
struct Collected {
    name: String,
    per_seed: Vec<Samples>,
    seconds: f64,
}

impl Scorer<'_> {
    /// The row and the curve of a method.
    fn score(&self, c: &Collected, eta_factor: f64) -> (Row, SampleCurve) {
        let finals: Vec<Vec<f64>> = c.per_seed.iter().map(Samples::average).collect();
        let f = fidelity::summarize(
            &finals,
            self.labels,
            self.classes,
            self.reference,
            &self.bootstrap,
        );
        let per_seed = finals
            .iter()
            .zip(&c.per_seed)
            .map(|(p, s)| Scores {
                samples: s.len(),
                ..score_against(p, self.labels, self.classes, self.reference)
            })
            .collect();
        let prefixes: Vec<Vec<Vec<f64>>> = c
            .per_seed
            .iter()
            .map(|s| s.prefix_averages(&self.points_for(s.len())))
            .collect();
        let points = self.points_for(c.per_seed.iter().map(Samples::len).max().unwrap_or(0));
        let curve = SampleCurve::new(
            &c.name,
            &points,
            &prefixes,
            self.labels,
            self.classes,
            self.reference,
        );
        let samples = c.per_seed.first().map_or(0, Samples::len);
        (
            row(&c.name, &f, per_seed, samples, c.seconds, eta_factor),
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

/// Runs the comparison. `backend` runs the tempering jobs; the other methods run on
/// the CPU. `reference`, when given, must belong to `model` (the caller checks it).
/// `progress(what)` is told what starts.
pub fn run(
    model: &Model,
    s: &Settings,
    reference: Option<&Reference>,
    backend: &dyn Backend,
    progress: &dyn Fn(&str),
) -> Result<Report, anyhow::Error> {
    let started = Instant::now();
    let target = model.target();
    let data = &target.data;
    let (p, d) = (s.chains, target.dim());
    let iterations = model.iterations(s.epochs);
    check(s, iterations)?;
    let per_epoch = target.iterations_per_epoch();
    let eta_factor = s.eta_rule.factor(model);
    let rates = Rates {
        eta_min: s.rates.eta_min * eta_factor,
        eta_max: s.rates.eta_max * eta_factor,
        ..s.rates
    };
    rates.check()?;
    let warmup = (s.burn_in * iterations as f64) as u64;
    let mut warnings = Vec::new();

    // Everything the comparison holds at once, checked before any work.
    let probe = model.tempering_job(&Sampling {
        chains: p,
        seeds: s.seeds,
        iterations,
        scheme: Scheme::Deo { window: 1 },
        rates,
        seed: s.seed,
        record: sample_record(iterations, warmup, s.samples),
        rules: s.rules,
        initial_states: None,
    })?;
    let mut footprint = crate::engine::memory::of_job(&probe);
    let m = |v: &[u64]| v.iter().fold(1u64, |a, &b| a.saturating_mul(b));
    let (seeds, chains_u, dim) = (s.seeds as u64, p as u64, d as u64);
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
    crate::engine::memory::check(&footprint, "--ensembles, --samples, --chains or --epochs")
        .map_err(|e| ConfigError::new("max_memory", e))?;

    let scorer = Scorer {
        labels: &data.test.y,
        classes: data.classes,
        reference: reference.map(|r| &r.predictive[..]),
        bootstrap: Bootstrap::new(data.test.len(), RESAMPLES, u64::from(s.seed))?,
        points: fidelity::curve_points(s.samples.max(p)),
    };
    if reference.is_none() {
        warnings.push(
            "no reference posterior for this model: agreement and total variation are not computed; make one with `nrpt reference` (same data, --hidden and --prior-sigma) and pass it with --reference".to_string(),
        );
    }

    progress("pre-training");
    let pre_data = Arc::new(methods::validation_split(
        data,
        s.pretraining.validation_every,
    ));
    let pre_model = model.with_data(Arc::clone(&pre_data))?;
    let pre_chains = ChainSettings {
        target: Arc::clone(pre_model.target()),
        seed: s.seed,
        momentum: rates.momentum,
    };
    let t = Instant::now();
    let (states, outcomes) = methods::pretrain(
        &pre_chains,
        s.seeds,
        p,
        &s.pretraining,
        rates.eta_max / pre_model.examples() as f64,
    );
    let pretrained = Arc::new(states);
    let pick = |f: fn(&Pretrained) -> f64| outcomes.iter().map(f).collect::<Vec<_>>();
    let unconverged = outcomes
        .iter()
        .filter(|o| o.epochs >= s.pretraining.max_epochs - 1e-9 && o.best_epoch >= o.epochs - 1e-9)
        .count();
    if unconverged > 0 {
        warnings.push(format!(
            "{unconverged} of {} pre-trained networks were still improving on the validation split when the schedule of {} epochs ended: raise --pretrain-epochs",
            outcomes.len(),
            s.pretraining.max_epochs
        ));
    }
    let pre_samples: Vec<Samples> = (0..s.seeds)
        .map(|e| {
            let mut one = Samples::new(data.test.len(), data.classes);
            for theta in pretrained[e * p * d..(e + 1) * p * d].chunks(d) {
                one.push(target, theta, &data.test.x);
            }
            one
        })
        .collect();
    let single: Vec<f64> = pre_samples
        .iter()
        .flat_map(|s| (0..s.len()).map(move |j| s.one(j)))
        .map(|probs| score_against(&probs, &data.test.y, data.classes, None).accuracy)
        .collect();
    let pretraining = PretrainSummary {
        settings: s.pretraining,
        examples: (pre_data.train.len(), pre_data.test.len()),
        eta: rates.eta_max,
        epochs: spread(&pick(|o| o.epochs)),
        best_epoch: spread(&pick(|o| o.best_epoch)),
        validation_nll: mean_sd(&pick(|o| o.validation_nll)).0,
        single_network_accuracy: mean_sd(&single).0,
    };
    let pre_name = format!("pre-trained×P{p}");
    let (pre_row, pre_curve) = scorer.score(
        &Collected {
            name: pre_name,
            per_seed: pre_samples,
            seconds: t.elapsed().as_secs_f64(),
        },
        1.0,
    );

    let chains = ChainSettings {
        target: Arc::clone(target),
        seed: s.seed,
        momentum: rates.momentum,
    };
    let sampler = Sampler {
        model,
        s,
        chains: &chains,
        pretrained: &pretrained,
        iterations,
        warmup,
        backend,
        scorer: &scorer,
        progress,
    };
    let mut methods = vec![pre_row];
    let mut sample_curves = vec![pre_curve];
    let (rows, curves, scs) = sampler.all_methods(rates, 1.0, true)?;
    methods.extend(rows);
    sample_curves.extend(scs);

    let mut eta_sweep = Vec::new();
    for &factor in &s.eta_sweep {
        let swept = Rates {
            eta_min: rates.eta_min * factor,
            eta_max: rates.eta_max * factor,
            ..rates
        };
        let (rows, _, _) = sampler.all_methods(swept, factor, false)?;
        eta_sweep.extend(rows);
    }

    let mut swap_sweep = Vec::new();
    for &rate in &s.swap_sweep {
        let swept = Rates {
            swap_rate: rate,
            ..rates
        };
        let name = format!("DEO⋆-mSGD×P{p}, S = {rate}");
        let (r, _, _) = sampler.tempering(&name, star(p, rate)?, swept, 1.0)?;
        swap_sweep.push(r);
    }

    pair_with_deo_star(
        &scorer.bootstrap,
        &mut methods,
        &mut eta_sweep,
        &mut swap_sweep,
    );

    Ok(Report {
        settings: s.clone(),
        data: data.description.clone(),
        examples: (data.train.len(), data.test.len()),
        layers: target.arch.sizes().collect(),
        batch: target.batch,
        iterations_per_epoch: per_epoch,
        eta_factor,
        eta: (rates.eta_min, rates.eta_max),
        iterations,
        rules: crate::preset::RulesSummary::from(crate::preset::Resolved {
            rules: s.rules,
            inclusive_iterations: false,
        }),
        pretraining,
        reference: reference.map(|r| ReferenceSummary {
            source: r.source.clone(),
            meta: r.meta.clone(),
        }),
        methods,
        eta_sweep,
        swap_sweep,
        curves,
        sample_curves,
        warnings,
        seconds: started.elapsed().as_secs_f64(),
        command: crate::machine::command_line(),
        machine: crate::machine::describe(),
        date: crate::machine::utc_now(),
    })
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

/// Runs the sampling methods of a comparison.
struct Sampler<'a> {
    model: &'a Model,
    s: &'a Settings,
    chains: &'a ChainSettings,
    pretrained: &'a Arc<Vec<f32>>,
    iterations: u64,
    warmup: u64,
    backend: &'a dyn Backend,
    scorer: &'a Scorer<'a>,
    progress: &'a dyn Fn(&str),
}

type Scored = (Vec<Row>, Vec<Curves>, Vec<SampleCurve>);

impl Sampler<'_> {
    /// Every sampling method at `rates` (rows named with the factor when it is not 1).
    fn all_methods(&self, rates: Rates, factor: f64, main: bool) -> Result<Scored, anyhow::Error> {
        let (s, p) = (self.s, self.s.chains);
        let suffix = if main {
            String::new()
        } else {
            format!(", η×{factor}")
        };
        let mut rows = Vec::new();
        let mut curves = Vec::new();
        let mut sample_curves = Vec::new();
        for (name, scheme) in [
            (format!("DEO⋆-mSGD×P{p}{suffix}"), star(p, rates.swap_rate)?),
            (format!("DEO-mSGD×P{p}{suffix}"), Scheme::Deo { window: 1 }),
        ] {
            let (r, c, sc) = self.tempering(&name, scheme, rates, factor)?;
            rows.push(r);
            curves.push(c);
            sample_curves.push(sc);
        }
        let n = self.model.examples() as f64;
        let d = self.chains.target.dim();
        let iterations = self.iterations;
        let start = |e: usize, members: usize| &self.pretrained[e * p * d..(e * p + members) * d];

        let name = format!("mSGD×P{p}{suffix}");
        (self.progress)(&name);
        let t = Instant::now();
        let keep = evenly(self.warmup, iterations, s.samples.div_ceil(p));
        let per_seed: Vec<Samples> = (0..s.seeds)
            .into_par_iter()
            .map(|e| {
                let mut all = methods::ensemble(
                    self.chains,
                    e,
                    start(e, p),
                    iterations,
                    rates.eta_min / n,
                    &keep,
                );
                all.truncate(s.samples);
                all
            })
            .collect();
        self.push(&name, per_seed, t, factor, &mut rows, &mut sample_curves);

        let long = iterations * p as u64;
        let name = format!("cycSGHMC×T{p}{suffix}");
        (self.progress)(&name);
        let t = Instant::now();
        let cyclical = CyclicalSettings {
            cycles: s.samples.div_ceil(s.samples_per_cycle) as u64,
            per_cycle: s.samples_per_cycle,
            sampling: s.cycle_sampling,
        };
        let per_seed: Vec<Samples> = (0..s.seeds)
            .into_par_iter()
            .map(|e| {
                let mut all = methods::cyclical_sghmc(
                    self.chains,
                    e,
                    start(e, 1),
                    long,
                    rates.eta_max / n,
                    &cyclical,
                );
                all.truncate(s.samples);
                all
            })
            .collect();
        self.push(&name, per_seed, t, factor, &mut rows, &mut sample_curves);

        let name = format!("SWAG×T{p}{suffix}");
        (self.progress)(&name);
        let t = Instant::now();
        let swag = SwagSettings {
            burn_in: s.burn_in,
            every: (self.model.target().iterations_per_epoch().round() as u64).max(1),
            rank: s.swag_rank,
            draws: s.samples,
        };
        let per_seed: Vec<Samples> = (0..s.seeds)
            .into_par_iter()
            .map(|e| methods::swag(self.chains, e, start(e, 1), long, rates.eta_max / n, &swag))
            .collect();
        self.push(&name, per_seed, t, factor, &mut rows, &mut sample_curves);
        Ok((rows, curves, sample_curves))
    }

    fn push(
        &self,
        name: &str,
        per_seed: Vec<Samples>,
        t: Instant,
        factor: f64,
        rows: &mut Vec<Row>,
        curves: &mut Vec<SampleCurve>,
    ) {
        let (r, c) = self.scorer.score(
            &Collected {
                name: name.to_string(),
                per_seed,
                seconds: t.elapsed().as_secs_f64(),
            },
            factor,
        );
        rows.push(r);
        curves.push(c);
    }

    /// A tempering run: its row, its curves, its sample curve.
    fn tempering(
        &self,
        name: &str,
        scheme: Scheme,
        rates: Rates,
        factor: f64,
    ) -> Result<(Row, Curves, SampleCurve), anyhow::Error> {
        (self.progress)(name);
        let s = self.s;
        let per_epoch = self.model.target().iterations_per_epoch();
        let mut record = sample_record(self.iterations, self.warmup, s.samples);
        // Traces every 5 epochs (swap rates over ~100 iterations, smooth enough to
        // see), and at least 20 times in a short run.
        record.trace_every = ((5.0 * per_epoch).round() as u64)
            .min(self.iterations / 20)
            .max(1);
        let job = self.model.tempering_job(&Sampling {
            chains: s.chains,
            seeds: s.seeds,
            iterations: self.iterations,
            scheme,
            rates,
            seed: s.seed,
            record,
            rules: s.rules,
            initial_states: Some(Arc::clone(self.pretrained)),
        })?;
        let t = Instant::now();
        let out = self.backend.run(&job, &crate::interrupt::flow)?;
        let per_seed = target_samples(self.model, &job, &out, s.samples);
        let (mut r, sc) = self.scorer.score(
            &Collected {
                name: name.to_string(),
                per_seed,
                seconds: t.elapsed().as_secs_f64(),
            },
            factor,
        );
        let c = tempering_details(self.model, &job, &out, name, &mut r);
        Ok((r, c, sc))
    }
}

/// The predictives of the last `samples` recorded target-level states, per seed.
fn target_samples(model: &Model, job: &Job, out: &RunOutput, samples: usize) -> Vec<Samples> {
    let target = model.target();
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

/// Round trips, swap rates and curves of a tempering run, into its row.
fn tempering_details(model: &Model, job: &Job, out: &RunOutput, name: &str, r: &mut Row) -> Curves {
    let target = model.target();
    let data = &target.data;
    let (e, p, d) = (job.ensembles, job.chains, target.dim());
    let per_epoch = target.iterations_per_epoch();
    let epochs = job.iterations as f64 / per_epoch;
    let trips: Vec<f64> = out
        .ensembles
        .iter()
        .map(|r| r.stats.round_trips as f64 * 100.0 / epochs)
        .collect();
    let (rt, rt_sd) = mean_sd(&trips);
    let rates: Vec<f64> = (0..p - 1)
        .map(|l| {
            out.ensembles
                .iter()
                .map(|r| r.pairs[l].indicators as f64 / job.iterations as f64)
                .sum::<f64>()
                / e as f64
        })
        .collect();
    r.window = Some(job.options.scheme.window_code());
    r.swap_rate = Some(job.options.adapt.target_swap_rate);
    r.round_trips_per_100_epochs = Some(rt);
    r.round_trips_per_100_epochs_sd = Some(rt_sd);
    r.pair_indicator_rates = Some(rates);
    let n = model.examples() as f64;
    let accuracy_by_level = (0..p)
        .map(|l| {
            let accs: Vec<f64> = out
                .ensembles
                .iter()
                .map(|en| {
                    let mut one = Samples::new(data.test.len(), data.classes);
                    one.push(target, &en.levels[l * d..(l + 1) * d], &data.test.x);
                    score_against(&one.average(), &data.test.y, data.classes, None).accuracy
                })
                .collect();
            mean_sd(&accs).0
        })
        .collect();
    let t = &out.trace;
    Curves {
        name: name.to_string(),
        epochs: t.iterations.iter().map(|&k| k as f64 / per_epoch).collect(),
        round_trips: t.round_trips.iter().map(|&r| r as f64 / e as f64).collect(),
        ladder: t
            .ladder
            .iter()
            .map(|l| l.iter().map(|&eta| eta * n).collect())
            .collect(),
        pair_indicator_rates: t.indicator_rate.clone(),
        accuracy_by_level,
    }
}
