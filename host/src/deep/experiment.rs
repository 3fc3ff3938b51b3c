//! The whole comparison of `nrpt deep`: pre-training, then every method on equal
//! gradient budgets, seed by seed, scored on the test set.

use std::sync::Arc;
use std::time::Instant;

use nrpt_core::window::Scheme;
use rayon::prelude::*;
use serde::Serialize;

use super::methods::{self, ChainSettings, Thinning};
use super::metrics::{Bma, Scores};
use super::{Model, Rates, Sampling};
use crate::engine::{Backend, Job, Record, RunOutput};
use crate::error::ConfigError;
use crate::stats::mean_sd;

/// The sizes of a comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    /// Chains P of the tempering runs and members of the ensemble.
    pub chains: usize,
    /// Seeds: independent repetitions of every method.
    pub seeds: usize,
    /// Epochs of pre-training (mSGD at η_max, from scratch).
    pub pretrain_epochs: f64,
    /// Epochs of sampling per chain (the single-chain methods run P times as many).
    pub epochs: f64,
    /// Share of the sampling epochs before the first sample is kept.
    pub burn_in: f64,
    /// Epochs between kept samples.
    pub thin_epochs: f64,
    /// Rates, buffer, adaptation of the tempering runs.
    pub rates: Rates,
    /// Target swap rates of an extra sweep of DEO⋆ (empty: none).
    pub swap_sweep: Vec<f64>,
    /// Cycles of cyclical SGHMC per P·epochs.
    pub cycles: u64,
    /// Base seed.
    pub seed: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            chains: 10,
            seeds: 5,
            pretrain_epochs: 20.0,
            epochs: 200.0,
            burn_in: 0.1,
            thin_epochs: 1.0,
            rates: Rates::default(),
            swap_sweep: Vec::new(),
            cycles: 50,
            seed: 0,
        }
    }
}

/// One method's results: mean and standard deviation over seeds.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Name as in the paper.
    pub name: String,
    /// Window W (tempering rows).
    pub window: Option<u32>,
    /// Target swap rate S (tempering rows).
    pub swap_rate: Option<f64>,
    /// BMA test accuracy, mean over seeds.
    pub accuracy: f64,
    /// Its standard deviation over seeds.
    pub accuracy_sd: f64,
    /// Mean NLL per test example.
    pub nll: f64,
    /// Its standard deviation.
    pub nll_sd: f64,
    /// NLL summed over the test set (the paper's figure).
    pub nll_sum: f64,
    /// Expected calibration error (15 bins).
    pub ece: f64,
    /// Its standard deviation.
    pub ece_sd: f64,
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
    /// Iterations per chain of the sampling phase.
    pub iterations: u64,
    /// Iterations per epoch.
    pub iterations_per_epoch: f64,
    /// The rows, in the paper's order.
    pub methods: Vec<Row>,
    /// The DEO⋆ runs of the swap-rate sweep.
    pub swap_sweep: Vec<Row>,
    /// Curves of DEO⋆ and DEO.
    pub curves: Vec<Curves>,
    /// Accuracy of the pre-trained networks (mean over networks and seeds).
    pub pretrained_accuracy: f64,
    /// Wall-clock seconds in all.
    pub seconds: f64,
}

fn row(name: String, scores: Vec<Scores>, seconds: f64) -> Row {
    let pick = |f: fn(&Scores) -> f64| mean_sd(&scores.iter().map(f).collect::<Vec<_>>());
    let (accuracy, accuracy_sd) = pick(|s| s.accuracy);
    let (nll, nll_sd) = pick(|s| s.nll);
    let (ece, ece_sd) = pick(|s| s.ece);
    Row {
        name,
        window: None,
        swap_rate: None,
        accuracy,
        accuracy_sd,
        nll,
        nll_sd,
        nll_sum: pick(|s| s.nll_sum).0,
        ece,
        ece_sd,
        round_trips_per_100_epochs: None,
        round_trips_per_100_epochs_sd: None,
        pair_indicator_rates: None,
        samples: scores.first().map_or(0, |s| s.samples),
        seconds,
        per_seed: scores,
    }
}

/// Runs the comparison. `backend` runs the tempering jobs; the other methods run on
/// the CPU. `progress(what)` is told what starts.
pub fn run(
    model: &Model,
    s: &Settings,
    backend: &dyn Backend,
    progress: &dyn Fn(&str),
) -> Result<Report, anyhow::Error> {
    let started = Instant::now();
    let target = model.target();
    let data = &target.data;
    let n = model.examples() as f64;
    let (p, d) = (s.chains, target.dim());
    if s.seeds == 0 || p < 2 {
        return Err(ConfigError::new("seeds", "needs at least 1 seed and 2 chains").into());
    }
    let iterations = model.iterations(s.epochs);
    let per_epoch = target.iterations_per_epoch();
    let thinning = Thinning {
        warmup: (s.burn_in * iterations as f64) as u64,
        thin: ((s.thin_epochs * per_epoch).round() as u64).max(1),
    };
    let chains = ChainSettings {
        target: Arc::clone(target),
        seed: s.seed,
        momentum: s.rates.momentum,
    };

    // Everything the comparison holds at once, checked before any work: a tempering run
    // (states, records, data, scratch), the pre-trained networks it starts from, and a
    // Bayesian model average (test examples × classes) per chain of the ensemble.
    let probe = model.tempering_job(&Sampling {
        chains: p,
        seeds: s.seeds,
        iterations,
        scheme: Scheme::Deo { window: 1 },
        rates: s.rates,
        seed: s.seed,
        record: Record {
            thin: thinning.thin,
            warmup: thinning.warmup,
            trace_every: 1.max(iterations / 20),
            path_iterations: 0,
        },
        initial_states: None,
        ..Sampling::default()
    })?;
    let mut footprint = crate::engine::memory::of_job(&probe);
    let m = |v: &[u64]| v.iter().fold(1u64, |a, &b| a.saturating_mul(b));
    let (seeds, chains_u, dim) = (s.seeds as u64, p as u64, d as u64);
    footprint.add("pre-trained networks", m(&[seeds, chains_u, dim, 4]));
    footprint.add(
        "model averages",
        m(&[
            seeds,
            chains_u,
            data.test.len() as u64,
            data.classes as u64,
            8,
        ]),
    );
    crate::engine::memory::check(&footprint, "--ensembles, --chains or --epochs")
        .map_err(|e| ConfigError::new("max_memory", e))?;

    progress("pre-training");
    let pretrained = Arc::new(methods::pretrain(
        &chains,
        s.seeds,
        p,
        model.iterations(s.pretrain_epochs),
        s.rates.eta_max / n,
    ));
    let mut pre = Bma::new(data.test.len(), data.classes);
    let mut accs = Vec::new();
    for theta in pretrained.chunks(d) {
        let mut one = Bma::new(data.test.len(), data.classes);
        one.add(target, theta, &data.test.x);
        accs.push(one.scores(&data.test.y).accuracy);
        pre.merge(&one);
    }
    let pretrained_accuracy = mean_sd(&accs).0;

    // Traces every 5 epochs (swap rates over ~100 iterations, smooth enough to see),
    // and at least 20 times in a short run.
    let record = Record {
        thin: thinning.thin,
        warmup: thinning.warmup,
        trace_every: ((5.0 * per_epoch).round() as u64)
            .min(iterations / 20)
            .max(1),
        path_iterations: 0,
    };
    let tempering = |scheme: Scheme, rates: Rates| -> Result<Job, ConfigError> {
        model.tempering_job(&Sampling {
            chains: p,
            seeds: s.seeds,
            iterations,
            scheme,
            rates,
            seed: s.seed,
            record,
            initial_states: Some(Arc::clone(&pretrained)),
            ..Sampling::default()
        })
    };
    let star = |rate: f64| -> Result<Scheme, ConfigError> {
        let window = nrpt_core::optimal::optimal_window(p, rate)
            .map_err(|e| ConfigError::new("swap_rate", e.to_string()))?;
        Ok(Scheme::Deo { window })
    };

    let mut methods = Vec::new();
    let mut curves = Vec::new();
    for (name, scheme) in [
        (format!("DEO⋆-mSGD×P{p}"), star(s.rates.swap_rate)?),
        (format!("DEO-mSGD×P{p}"), Scheme::Deo { window: 1 }),
    ] {
        progress(&name);
        let job = tempering(scheme, s.rates)?;
        let t = Instant::now();
        let out = backend.run(&job, &crate::interrupt::flow)?;
        let seconds = t.elapsed().as_secs_f64();
        let (r, c) = tempering_row(model, &job, &out, name, seconds);
        methods.push(r);
        curves.push(c);
    }

    progress(&format!("mSGD×P{p}"));
    let t = Instant::now();
    let ens: Vec<Scores> = (0..s.seeds)
        .into_par_iter()
        .map(|e| {
            let start = &pretrained[e * p * d..(e + 1) * p * d];
            methods::ensemble(&chains, e, start, iterations, s.rates.eta_min / n, thinning)
                .scores(&data.test.y)
        })
        .collect();
    methods.push(row(format!("mSGD×P{p}"), ens, t.elapsed().as_secs_f64()));

    let long = iterations * p as u64;
    progress(&format!("cycSGHMC×T{p}"));
    let t = Instant::now();
    let cyc: Vec<Scores> = (0..s.seeds)
        .into_par_iter()
        .map(|e| {
            let start = &pretrained[e * p * d..e * p * d + d];
            methods::cyclical_sghmc(&chains, e, start, long, s.cycles, s.rates.eta_max / n, 0.2)
                .scores(&data.test.y)
        })
        .collect();
    methods.push(row(
        format!("cycSGHMC×T{p}"),
        cyc,
        t.elapsed().as_secs_f64(),
    ));

    progress(&format!("SWAG×T{p}"));
    let t = Instant::now();
    let every = (per_epoch.round() as u64).max(1);
    let sw: Vec<Scores> = (0..s.seeds)
        .into_par_iter()
        .map(|e| {
            let start = &pretrained[e * p * d..e * p * d + d];
            methods::swag(&chains, e, start, long, s.rates.eta_max / n, every, 20, 30)
                .scores(&data.test.y)
        })
        .collect();
    methods.push(row(format!("SWAG×T{p}"), sw, t.elapsed().as_secs_f64()));

    let mut swap_sweep = Vec::new();
    for &rate in &s.swap_sweep {
        let name = format!("DEO⋆-mSGD×P{p}, S = {rate}");
        progress(&name);
        let rates = Rates {
            swap_rate: rate,
            ..s.rates
        };
        let job = tempering(star(rate)?, rates)?;
        let t = Instant::now();
        let out = backend.run(&job, &crate::interrupt::flow)?;
        let (r, _) = tempering_row(model, &job, &out, name, t.elapsed().as_secs_f64());
        swap_sweep.push(r);
    }

    Ok(Report {
        settings: s.clone(),
        data: data.description.clone(),
        examples: (data.train.len(), data.test.len()),
        layers: target.arch.sizes().collect(),
        batch: target.batch,
        iterations,
        iterations_per_epoch: per_epoch,
        methods,
        swap_sweep,
        curves,
        pretrained_accuracy,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Scores, round trips, swap rates and curves of a tempering run.
fn tempering_row(
    model: &Model,
    job: &Job,
    out: &RunOutput,
    name: String,
    seconds: f64,
) -> (Row, Curves) {
    let target = model.target();
    let data = &target.data;
    let (e, p, d) = (job.ensembles, job.chains, target.dim());
    let per_epoch = target.iterations_per_epoch();
    // Samples: [sample][ensemble][coordinate].
    let samples = out.sample_iterations.len();
    let scores: Vec<Scores> = (0..e)
        .into_par_iter()
        .map(|en| {
            let mut bma = Bma::new(data.test.len(), data.classes);
            for i in 0..samples {
                let at = (i * e + en) * d;
                bma.add(target, &out.samples[at..at + d], &data.test.x);
            }
            bma.scores(&data.test.y)
        })
        .collect();
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
    let mut r = row(name.clone(), scores, seconds);
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
                    let mut one = Bma::new(data.test.len(), data.classes);
                    one.add(target, &en.levels[l * d..(l + 1) * d], &data.test.x);
                    one.scores(&data.test.y).accuracy
                })
                .collect();
            mean_sd(&accs).0
        })
        .collect();
    let t = &out.trace;
    let curves = Curves {
        name,
        epochs: t.iterations.iter().map(|&k| k as f64 / per_epoch).collect(),
        round_trips: t.round_trips.iter().map(|&r| r as f64 / e as f64).collect(),
        ladder: t
            .ladder
            .iter()
            .map(|l| l.iter().map(|&eta| eta * n).collect())
            .collect(),
        pair_indicator_rates: t.indicator_rate.clone(),
        accuracy_by_level,
    };
    (r, curves)
}
