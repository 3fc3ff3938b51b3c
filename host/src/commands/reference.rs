//! `nrpt reference`: a reference posterior for `nrpt deep` by full-batch HMC.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;

use crate::cli::ReferenceArgs;
use crate::figures::{self, LineChart, Series, Style};
use crate::progress::Progress;
use nrpt_sampling::config::{ConfigError, parse_hidden};
use nrpt_sampling::console::StdoutError;
use nrpt_sampling::data;
use nrpt_sampling::output::{Csv, OutDir, OutPolicy};
use nrpt_sampling::targets::classifier::{Classifier, ClassifierTarget};
use nrpt_studies::deep::reference::{HmcSettings, ReferenceRun, run::run as run_hmc};

/// The sampler's settings from the flags.
pub fn settings(args: &ReferenceArgs) -> Result<HmcSettings, ConfigError> {
    let d = HmcSettings::default();
    let s = HmcSettings {
        chains: args.chains.unwrap_or(if args.quick { 2 } else { d.chains }),
        warmup: args
            .warmup
            .unwrap_or(if args.quick { 50 } else { d.warmup }),
        samples: args
            .samples
            .unwrap_or(if args.quick { 100 } else { d.samples }),
        trajectory_length: args.trajectory_length,
        max_leapfrog_steps: args.max_leapfrog_steps.unwrap_or(if args.quick {
            64
        } else {
            d.max_leapfrog_steps
        }),
        target_acceptance: args.target_acceptance,
        seed: args.seed,
        stored_draws: args.draws,
        ..d
    };
    s.check()?;
    Ok(s)
}

/// The model of the flags: the data, the network, the prior (the mini-batch is the
/// whole training set).
pub fn model(args: &ReferenceArgs) -> Result<Classifier> {
    let dataset = Arc::new(data::load(&args.data.spec()?)?);
    let n = dataset.train.len();
    Ok(Arc::new(ClassifierTarget::new(
        dataset,
        &parse_hidden(&args.hidden)?,
        n,
        args.prior_sigma,
    )?))
}

/// Computes the reference of the flags without writing anything.
pub fn compute(args: &ReferenceArgs, quiet: bool) -> Result<ReferenceRun> {
    let s = settings(args)?;
    let model = model(args)?;
    let progress = Progress::new("reference", s.chains as u64 * (s.warmup + s.samples), quiet);
    let out = run_hmc(&model, &s, &nrpt_sampling::machine::command_line(), &|| {
        progress.inc(1)
    });
    progress.finish();
    Ok(out?)
}

/// Runs the command.
pub fn run(args: &ReferenceArgs, json: bool, quiet: bool) -> Result<()> {
    settings(args)?;
    let inputs = args.data.files();
    let out = OutDir::prepare(
        &args.out,
        &OutPolicy {
            command: "reference",
            force: args.force,
            inputs,
        },
    )?;
    let result = compute(args, quiet || json)?;
    let r = &result.reference;
    r.write(out.path())?;
    trace_figure(out.path(), &result)?;
    let folder = out.commit()?;
    super::after_commit(&folder, || {
        if json {
            say!("{}", nrpt_sampling::json::to_string(&r.meta)?)?;
            return Ok(());
        }
        print_summary(&result)?;
        say!(
            "\nreference.npy, draws.npy.gz, reference.json and the trace in {}",
            folder.display()
        )?;
        Ok(())
    })
}

fn print_summary(result: &ReferenceRun) -> Result<(), StdoutError> {
    let m = &result.reference.meta;
    let d = &m.diagnostics;
    say!(
        "{}: MLP {:?}, prior σ = {}, {} training and {} test examples",
        m.model.data,
        m.model.layers,
        m.model.prior_sigma,
        m.model.train_examples,
        m.model.test_examples
    )?;
    say!(
        "full-batch HMC: {} chains × ({} warm-up + {} kept) trajectories of length {:.3}; {} gradient evaluations in {:.1} s",
        m.sampler.chains,
        m.sampler.warmup,
        m.sampler.samples,
        m.sampler.trajectory_length,
        d.gradient_evaluations,
        m.seconds
    )?;
    let list = |v: &[f64], digits: usize| -> String {
        v.iter()
            .map(|x| format!("{x:.digits$}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    say!(
        "step sizes {} ; leapfrog steps {:?} ; acceptance {} ; divergent trajectories {}",
        list(&d.step_size, 5),
        d.leapfrog_steps,
        list(&d.acceptance, 3),
        d.divergent
    )?;
    say!(
        "test log-likelihood: R̂ {:.3}, bulk ESS {:.0}, tail ESS {:.0}",
        d.test_log_likelihood.rhat,
        d.test_log_likelihood.ess_bulk,
        d.test_log_likelihood.ess_tail
    )?;
    say!(
        "predictive probabilities ({}): R̂ largest {:.3}, median {:.3}, {:.2} % above 1.1; bulk ESS smallest {:.0}, median {:.0}",
        d.predictive_quantities,
        d.predictive_rhat_max,
        d.predictive_rhat_median,
        100.0 * d.predictive_rhat_above_1_1,
        d.predictive_ess_bulk_min,
        d.predictive_ess_bulk_median
    )?;
    say!(
        "reference predictive: accuracy {:.2} %, NLL {:.4} per test example",
        100.0 * m.accuracy,
        m.nll
    )?;
    if !d.converged {
        say!(
            "warning: an R̂ is above 1.1: the chains disagree; run more --samples (or --warmup) before trusting this reference"
        )?;
    }
    if d.divergent > 0 {
        say!(
            "warning: {} kept trajectories diverged (an energy error past e^-745, or a non-finite value): raise --target-acceptance so that the warm-up settles on a smaller step",
            d.divergent
        )?;
    }
    Ok(())
}

/// The test log-likelihood of every kept sample of every chain (PNG, SVG and CSV).
fn trace_figure(dir: &Path, result: &ReferenceRun) -> Result<()> {
    let points: Vec<Vec<(f64, f64)>> = result
        .test_log_likelihood
        .iter()
        .map(|c| c.iter().enumerate().map(|(i, &v)| (i as f64, v)).collect())
        .collect();
    let names: Vec<String> = (0..points.len()).map(|c| format!("chain {c}")).collect();
    let series: Vec<Series<'_>> = points
        .iter()
        .zip(&names)
        .map(|(p, name)| Series {
            name,
            points: p,
            style: Style::Line,
        })
        .collect();
    figures::lines(
        &dir.join("trace_test_log_likelihood"),
        &LineChart {
            title: "Test log-likelihood of each kept HMC sample",
            x_label: "kept trajectory",
            y_label: "Σ log p(y | x, θ) over the test set",
            x_log: false,
            y_log: false,
            series: &series,
            hlines: &[],
            vlines: &[],
        },
    )?;
    let mut csv = Csv::new(&["chain", "sample", "test_log_likelihood"]);
    for (c, chain) in result.test_log_likelihood.iter().enumerate() {
        for (i, v) in chain.iter().enumerate() {
            csv.row([c.to_string(), i.to_string(), format!("{v:.6}")]);
        }
    }
    csv.write(&dir.join("trace_test_log_likelihood.csv"))?;
    Ok(())
}
