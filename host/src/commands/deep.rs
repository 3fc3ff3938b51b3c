//! `nrpt deep`: the paper's deep-learning comparison at toy scale.
//!
//! Kept whole past 600 lines: the study's flags and their mirror in shard.json, its tables
//! and its figures, read against each other.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::cli::{DataArgs, DeepArgs, EngineArgs, ShardMergeArgs};
use crate::commands::bench::parse_hidden;
use crate::figures::{self, LineChart, Series, Style};
use nrpt_sampling::config::ConfigError;
use nrpt_sampling::console::StdoutError;
use nrpt_sampling::data;
use nrpt_sampling::engine::Backend;
use nrpt_sampling::error::in_range;
use nrpt_sampling::output::{Csv, OutDir, OutPolicy, write_json};
use nrpt_sampling::preset::{Preset, RuleChoices, StepEnergyKind};
use nrpt_sampling::targets::classifier::{Classifier, ClassifierTarget};
use nrpt_studies::deep::Rates;
use nrpt_studies::deep::experiment::{Curves, EtaRule, Records, Report, Row, Settings, Setup};
use nrpt_studies::deep::fidelity::SampleCurve;
use nrpt_studies::deep::methods::Pretraining;
use nrpt_studies::deep::reference::{self, Reference};
use nrpt_studies::shard::{self, RECORDS, Summary};

/// The most swap rates of `--swap-sweep`, and factors of `--eta-sweep`.
pub(crate) const MAX_SWAP_SWEEP: usize = 32;

/// Sampling iterations per chain, and the most of pre-training, with `--quick`.
pub(crate) const QUICK_ITERATIONS: f64 = 1300.0;

/// A comma-separated list of numbers, each checked by `ok`.
fn list(
    field: &str,
    text: &Option<String>,
    ok: fn(f64) -> bool,
    what: &str,
) -> Result<Vec<f64>, ConfigError> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let v = text
        .split(',')
        .map(|t| match t.trim().parse::<f64>() {
            Ok(x) if ok(x) => Ok(x),
            _ => Err(ConfigError::new(field, format!("`{t}` is not {what}"))),
        })
        .collect::<Result<Vec<f64>, _>>()?;
    if v.len() > MAX_SWAP_SWEEP {
        return Err(ConfigError::new(
            field,
            format!(
                "{} values: at most {MAX_SWAP_SWEEP} (each is a whole run of the methods per seed)",
                v.len()
            ),
        ));
    }
    Ok(v)
}

/// The settings of a run from its flags, for a data set of `per_epoch` mini-batches
/// per epoch (N/B; `--quick` sizes the run in iterations).
pub fn settings(args: &DeepArgs, per_epoch: f64) -> Result<Settings, ConfigError> {
    let swap_sweep = list(
        "swap_sweep",
        &args.swap_sweep,
        |s| s > 0.0 && s < 1.0,
        "a swap rate strictly between 0 and 1",
    )?;
    let eta_sweep = list(
        "eta_sweep",
        &args.eta_sweep,
        |f| f.is_finite() && f > 0.0 && f <= 1e3,
        "a factor between 0 and 1000",
    )?;
    let quick_epochs = QUICK_ITERATIONS / per_epoch.max(1e-9);
    let defaults = Settings::default();
    let s = Settings {
        chains: args.chains,
        seeds: args
            .ensembles
            .unwrap_or(if args.quick { 3 } else { defaults.seeds }),
        pretraining: Pretraining {
            max_epochs: args.pretrain_epochs.unwrap_or(if args.quick {
                quick_epochs
            } else {
                200.0
            }),
            patience: args.patience,
            ..Pretraining::default()
        },
        epochs: args.epochs.unwrap_or(if args.quick {
            quick_epochs
        } else {
            defaults.epochs
        }),
        burn_in: args.burn_in,
        samples: args.samples.unwrap_or(defaults.samples),
        rates: Rates {
            eta_min: args.eta_min,
            eta_max: args.eta_max,
            swap_rate: args.swap_rate,
            ..Rates::default()
        },
        eta_rule: args.eta_rule,
        rules: RuleChoices {
            preset: args.preset,
            step_energy: args.step_energy,
            ..RuleChoices::default()
        }
        .resolve_for(true)
        .rules,
        eta_sweep,
        swap_sweep,
        seed: args.seed,
        ..defaults
    };
    in_range("ensembles", s.seeds, 1, 1000)?;
    in_range("chains", s.chains, 2, 64)?;
    in_range("samples", s.samples, 1, 100_000)?;
    for (name, v) in [
        ("epochs", s.epochs),
        ("pretrain_epochs", s.pretraining.max_epochs),
        ("patience", s.pretraining.patience),
    ] {
        if !(v.is_finite() && v > 0.0 && v <= 1e5) {
            return Err(ConfigError::new(
                name,
                format!(
                    "must be a number of epochs above 0 and at most 100000 (fractions such \
                     as 0.5 allowed), got {v}"
                ),
            ));
        }
    }
    if !(s.burn_in.is_finite() && (0.0..1.0).contains(&s.burn_in)) {
        return Err(ConfigError::new(
            "burn_in",
            format!("must be a share in [0, 1), got {}", s.burn_in),
        ));
    }
    s.rates.check()?;
    Ok(s)
}

/// The flags that define a comparison (not where it runs, how many threads, where it
/// writes): what a shard's `shard.json` states as its run's settings, and what
/// `nrpt deep merge` sets the comparison up from again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub(crate) struct Config {
    pub quick: bool,
    pub ensembles: Option<usize>,
    pub epochs: Option<f64>,
    pub pretrain_epochs: Option<f64>,
    pub patience: f64,
    pub samples: Option<usize>,
    pub burn_in: f64,
    pub eta_rule: EtaRule,
    pub eta_sweep: Option<String>,
    pub preset: Preset,
    pub step_energy: Option<StepEnergyKind>,
    pub reference: Option<PathBuf>,
    pub chains: usize,
    pub swap_rate: f64,
    pub swap_sweep: Option<String>,
    pub eta_min: f64,
    pub eta_max: f64,
    pub hidden: String,
    pub batch: usize,
    pub prior_sigma: f64,
    pub dataset: Option<data::Bundled>,
    pub data: Option<PathBuf>,
    pub labels: Option<PathBuf>,
    pub test_data: Option<PathBuf>,
    pub test_labels: Option<PathBuf>,
    pub seed: u32,
}

impl Config {
    /// The configuration of a run's flags.
    pub fn of(a: &DeepArgs) -> Config {
        Config {
            quick: a.quick,
            ensembles: a.ensembles,
            epochs: a.epochs,
            pretrain_epochs: a.pretrain_epochs,
            patience: a.patience,
            samples: a.samples,
            burn_in: a.burn_in,
            eta_rule: a.eta_rule,
            eta_sweep: a.eta_sweep.clone(),
            preset: a.preset,
            step_energy: a.step_energy,
            reference: a.reference.clone(),
            chains: a.chains,
            swap_rate: a.swap_rate,
            swap_sweep: a.swap_sweep.clone(),
            eta_min: a.eta_min,
            eta_max: a.eta_max,
            hidden: a.hidden.clone(),
            batch: a.batch,
            prior_sigma: a.prior_sigma,
            dataset: a.data.dataset,
            data: a.data.data.clone(),
            labels: a.data.labels.clone(),
            test_data: a.data.test_data.clone(),
            test_labels: a.data.test_labels.clone(),
            seed: a.seed,
        }
    }

    /// The flags of this configuration (whole, on the default engine, writing to
    /// `out`).
    pub fn args(&self, out: PathBuf) -> DeepArgs {
        let c = self.clone();
        DeepArgs {
            action: None,
            quick: c.quick,
            ensembles: c.ensembles,
            epochs: c.epochs,
            pretrain_epochs: c.pretrain_epochs,
            patience: c.patience,
            samples: c.samples,
            burn_in: c.burn_in,
            eta_rule: c.eta_rule,
            eta_sweep: c.eta_sweep,
            preset: c.preset,
            step_energy: c.step_energy,
            reference: c.reference,
            chains: c.chains,
            swap_rate: c.swap_rate,
            swap_sweep: c.swap_sweep,
            eta_min: c.eta_min,
            eta_max: c.eta_max,
            hidden: c.hidden,
            batch: c.batch,
            prior_sigma: c.prior_sigma,
            data: DataArgs {
                dataset: c.dataset,
                data: c.data,
                labels: c.labels,
                test_data: c.test_data,
                test_labels: c.test_labels,
            },
            out,
            seed: c.seed,
            shard: None,
            math: None,
            engine: EngineArgs::default(),
            force: false,
        }
    }
}

/// What a shard writes beside its report: its summary (`shard.json`) and its seeds'
/// records (`records.json`, what `nrpt deep merge` joins).
#[derive(Debug)]
pub struct ShardFiles {
    /// `shard.json`.
    pub summary: Summary,
    /// `records.json`.
    pub records: Records,
}

/// The seeds `args.shard` runs (all of them without a shard) and the summary that marks
/// its folder; checks the flags.
fn shard_of(args: &DeepArgs) -> Result<(Range<usize>, Option<Summary>)> {
    let s = settings(args, 1.0)?;
    match args.shard {
        None => Ok((0..s.seeds, None)),
        Some(sh) => {
            let summary = Summary::new(
                "deep",
                sh,
                s.seeds,
                nrpt_sampling::json::to_value(&Config::of(args))?,
            )
            .map_err(|e| ConfigError::new("shard", e.to_string()))?;
            Ok((sh.block(s.seeds)?, Some(summary)))
        }
    }
}

/// Writes a shard's `records.json` (compact: it is large, and read by the merge) and
/// `shard.json` into `dir`.
pub fn write_shard(dir: &Path, files: &ShardFiles) -> Result<()> {
    let mut text = nrpt_sampling::json::to_vec(&files.records)?;
    text.push(b'\n');
    nrpt_sampling::output::write_atomic(&dir.join(RECORDS), &text)?;
    write_json(&dir.join(shard::SUMMARY), &files.summary)?;
    Ok(())
}

/// Runs the command.
pub fn run(args: &DeepArgs, backend: &dyn Backend, json: bool, quiet: bool) -> Result<()> {
    shard_of(args)?;
    let mut inputs = args.data.files();
    inputs.extend(args.reference.clone());
    let out = OutDir::prepare(
        &args.out,
        &OutPolicy {
            command: "deep",
            force: args.force,
            inputs,
        },
    )?;
    let say = |what: &str| {
        if !quiet && !json {
            note!("deep: {what}");
        }
    };
    let (report, shard) = compute_with_records(args, backend, &say)?;
    for w in &report.warnings {
        if !quiet {
            note!("warning: {w}");
        }
    }
    if let Some(files) = &shard {
        write_shard(out.path(), files)?;
    }
    write_outputs(out.path(), &report)?;
    let folder = out.commit()?;
    super::after_commit(&folder, || print(&report, &folder, json))
}

/// Prints the report of a comparison whose outputs are in `folder`.
fn print(report: &Report, folder: &Path, json: bool) -> Result<()> {
    if json {
        say!("{}", nrpt_sampling::json::to_string(report)?)?;
        return Ok(());
    }
    print_table(report)?;
    if let Some(sh) = &report.shard {
        say!(
            "\nshard {} of the comparison: seeds {}..{} of {} (configuration {}); join \
             every shard's folder with `nrpt deep merge`",
            sh.shard,
            sh.seeds[0],
            sh.seeds[1],
            sh.total_seeds,
            sh.config_hash
        )?;
    }
    say!("\nfigures and data in {}", folder.display())?;
    Ok(())
}

/// `nrpt deep merge`: the outputs of the whole comparison from the folders of all its
/// shards, the same bytes as the unsharded run's but for the seconds and what names
/// the command, the machine and the date.
pub fn merge(a: &ShardMergeArgs, json: bool) -> Result<()> {
    let mut inputs = a.inputs.clone();
    let out_dir = a.out_or("nrpt-deep");
    let set = shard::read_set(&a.inputs, "deep")?;
    let (first_folder, first) = (&set[0].0, &set[0].1);
    let in_first =
        |e: String| ConfigError::new("inputs", format!("{}: {e}", first_folder.display()));
    let config: Config = nrpt_sampling::json::from_value(first.settings.clone())
        .map_err(|e| in_first(format!("its settings are not a deep comparison's: {e}")))?;
    let args = config.args(out_dir.to_path_buf());
    let total = settings(&args, 1.0).map_err(|e| in_first(e.to_string()))?;
    if total.seeds != first.total_seeds {
        return Err(in_first(format!(
            "its shard.json counts {} seeds, its settings {}",
            first.total_seeds, total.seeds
        ))
        .into());
    }
    inputs.extend(args.data.files());
    inputs.extend(args.reference.clone());
    let out = OutDir::prepare(
        out_dir,
        &OutPolicy {
            command: "deep merge",
            force: a.force,
            inputs,
        },
    )?;
    let model = model(&args)?;
    let s = settings(&args, model.iterations_per_epoch())?;
    let reference = reference_for(&model, args.reference.as_deref())?;
    // The merge runs nothing: size the check of memory for one seed.
    let setup = Setup::new(&model, &s, reference.as_ref(), 1)?;
    let mut blocks = Vec::with_capacity(set.len());
    for (folder, summary) in &set {
        let r: Records = shard::read_records(folder, "deep")?;
        setup
            .check(&r, &(summary.seeds[0]..summary.seeds[1]))
            .map_err(|why| {
                ConfigError::new(
                    "inputs",
                    format!(
                        "{}: its {RECORDS} does not fit the run: {why}",
                        folder.display()
                    ),
                )
            })?;
        blocks.push(r);
    }
    let records = Records::join(blocks).map_err(|why| ConfigError::new("inputs", why))?;
    let report = setup.report(&records, records.seconds);
    write_outputs(out.path(), &report)?;
    let folder = out.commit()?;
    super::after_commit(&folder, || print(&report, &folder, json))
}

/// The model of a run's flags: the data, the network, the mini-batch, the prior.
pub fn model(args: &DeepArgs) -> Result<Classifier> {
    let dataset = Arc::new(data::load(&args.data.spec()?)?);
    Ok(Arc::new(ClassifierTarget::new(
        dataset,
        &parse_hidden(&args.hidden)?,
        args.batch,
        args.prior_sigma,
    )?))
}

/// The reference posterior of `model`: the folder `given`, or the bundled one of this
/// model, or none.
pub(crate) fn reference_for(
    model: &ClassifierTarget,
    given: Option<&Path>,
) -> Result<Option<Reference>> {
    match given {
        Some(dir) => {
            let r = Reference::load(dir)?;
            r.check(model)?;
            Ok(Some(r))
        }
        None => Ok(reference::bundled_for(model)?),
    }
}

/// The comparison of a run's flags (of its shard's seeds with `--shard`), without
/// writing anything; `say(what)` is told what starts.
pub fn compute(args: &DeepArgs, backend: &dyn Backend, say: &dyn Fn(&str)) -> Result<Report> {
    Ok(compute_with_records(args, backend, say)?.0)
}

/// [`compute`], and with `--shard` what the shard's folder holds beside the report
/// ([`write_shard`] writes it).
pub fn compute_with_records(
    args: &DeepArgs,
    backend: &dyn Backend,
    say: &dyn Fn(&str),
) -> Result<(Report, Option<ShardFiles>)> {
    let (seeds, summary) = shard_of(args)?;
    let started = std::time::Instant::now();
    let model = model(args)?;
    let settings = settings(args, model.iterations_per_epoch())?;
    let reference = reference_for(&model, args.reference.as_deref())?;
    let setup = Setup::new(&model, &settings, reference.as_ref(), seeds.len())?;
    let records = setup.collect(backend, seeds, say)?;
    let mut report = setup.report(&records, started.elapsed().as_secs_f64());
    report.shard.clone_from(&summary);
    Ok((
        report,
        summary.map(|summary| ShardFiles { summary, records }),
    ))
}

/// `value ± sd [lo, hi]` with `digits` decimals, in percent when `percent`.
fn cell(value: f64, sd: f64, ci: [f64; 2], digits: usize, percent: bool) -> String {
    let k = if percent { 100.0 } else { 1.0 };
    format!(
        "{:.digits$} ± {:.digits$} [{:.digits$}, {:.digits$}]",
        k * value,
        k * sd,
        k * ci[0],
        k * ci[1]
    )
}

fn print_table(r: &Report) -> Result<(), StdoutError> {
    say!("`{}` on {}, {}", r.command, r.machine, r.date)?;
    say!(
        "{}: {} training and {} test examples (N/B = {:.1}); MLP {:?}, batch {}; {} chains, {} seeds; {:.1} sampling epochs ({} iterations per chain); {:.1} s",
        r.data,
        r.examples.0,
        r.examples.1,
        r.iterations_per_epoch,
        r.layers,
        r.batch,
        r.settings.chains,
        r.settings.seeds,
        r.settings.epochs,
        r.iterations,
        r.seconds
    )?;
    say!(
        "learning rates {:.4}–{:.4} per example ({:?} rule: ×{:.3} the given {}–{}); {} samples per method after a burn-in of {:.0} %",
        r.eta.0,
        r.eta.1,
        r.settings.eta_rule,
        r.eta_factor,
        r.settings.rates.eta_min,
        r.settings.rates.eta_max,
        r.settings.samples,
        100.0 * r.settings.burn_in
    )?;
    let pre = &r.pretraining;
    say!(
        "pre-training: {:.0} epochs on average ({:.0}–{:.0}), best validation NLL {:.4}; one pre-trained network alone: {:.2} % test accuracy",
        pre.epochs[0],
        pre.epochs[1],
        pre.epochs[2],
        pre.validation_nll,
        100.0 * pre.single_network_accuracy
    )?;
    match &r.reference {
        Some(reference) => {
            let m = &reference.meta;
            say!(
                "reference posterior ({}): full-batch HMC, {} chains × {} samples; accuracy {:.2} %, NLL {:.4}; R̂ of the test log-likelihood {:.3}, largest R̂ of a predictive probability {:.3}",
                reference.source,
                m.sampler.chains,
                m.sampler.samples,
                100.0 * m.accuracy,
                m.nll,
                m.diagnostics.test_log_likelihood.rhat,
                m.diagnostics.predictive_rhat_max
            )?;
        }
        None => say!("no reference posterior: agreement and total variation not computed")?,
    }
    say!("\nmean ± sd over seeds [95 % paired-bootstrap interval over test examples]")?;
    say!(
        "{:<26} {:>32} {:>38} {:>32} {:>32} {:>38} {:>14}",
        "method",
        "accuracy (%)",
        "NLL / example",
        "ECE (%)",
        "agreement (%)",
        "total variation",
        "trips/100 ep."
    )?;
    for m in r.methods.iter().chain(&r.eta_sweep).chain(&r.swap_sweep) {
        print_row(m)?;
    }
    say!(
        "\npaired against DEO⋆ at the same rates, 95 % intervals of the difference (below 0: lower than DEO⋆'s): over the same resampled test examples, and over the seeds (t interval of the per-seed differences)"
    )?;
    say!(
        "{:<26} {:>22} {:>22} {:>22} {:>22}",
        "method",
        "NLL − DEO⋆'s (test)",
        "(seeds)",
        "TV − DEO⋆'s (test)",
        "(seeds)"
    )?;
    for m in r.methods.iter().chain(&r.eta_sweep).chain(&r.swap_sweep) {
        let Some(nll) = m.nll_minus_deo_star_ci else {
            continue;
        };
        if nll == [0.0, 0.0] {
            // DEO⋆ itself.
            continue;
        }
        let interval = |c: [f64; 2]| format!("[{:+.4}, {:+.4}]", c[0], c[1]);
        let or_dash = |c: Option<[f64; 2]>| c.map_or_else(|| "—".to_string(), interval);
        say!(
            "{:<26} {:>22} {:>22} {:>22} {:>22}",
            m.name,
            interval(nll),
            or_dash(m.nll_minus_deo_star_seed_ci),
            or_dash(m.total_variation_minus_deo_star_ci),
            or_dash(m.total_variation_minus_deo_star_seed_ci)
        )?;
    }
    say!("  {}", r.interval_sources)?;
    print_exact_and_compute(r)?;
    print_round_trips(r)?;
    for m in r.methods.iter().chain(&r.swap_sweep) {
        if let Some(rates) = &m.pair_indicator_rates {
            let list: Vec<String> = rates.iter().map(|v| format!("{v:.3}")).collect();
            say!("  swap rates of {}: {}", m.name, list.join(" "))?;
        }
    }
    for w in &r.warnings {
        say!("warning: {w}")?;
    }
    Ok(())
}

/// Each row beside exact sampling at the same number of samples, and what it cost.
fn print_exact_and_compute(r: &Report) -> Result<(), StdoutError> {
    match (&r.exact_sampling, &r.reference) {
        (Some(e), Some(reference)) => say!(
            "\nagainst exact sampling: model averages of K of the reference's own HMC draws ({} draws, {} disjoint realisations of K = {}); entropy of the reference's predictive {:.4} nats",
            e.draws,
            e.realisations,
            e.samples,
            reference.entropy
        )?,
        _ => say!(
            "\nno exact-sampling baseline (the reference has no draws, or there is no reference)"
        )?,
    }
    say!(
        "{:<26} {:>4} {:>14} {:>18} {:>10} {:>10} {:>28}",
        "method",
        "K",
        "gradients/seed",
        "entropy (nats)",
        "TV",
        "exact TV",
        "excess TV [95 % Welch]"
    )?;
    for m in r.methods.iter().chain(&r.eta_sweep).chain(&r.swap_sweep) {
        let or_dash = |v: Option<String>| v.unwrap_or_else(|| "—".to_string());
        say!(
            "{:<26} {:>4} {:>14} {:>18} {:>10} {:>10} {:>28}",
            m.name,
            m.samples,
            format!("{:.3e}", m.gradient_evaluations),
            format!("{:.4} ± {:.4}", m.entropy, m.entropy_sd),
            or_dash(m.total_variation.map(|v| format!("{v:.4}"))),
            or_dash(m.exact_total_variation.map(|v| format!("{v:.4}"))),
            or_dash(
                m.total_variation_excess
                    .zip(m.total_variation_excess_ci)
                    .map(|(v, c)| format!("{v:+.4} [{:+.4}, {:+.4}]", c[0], c[1]))
            ),
        )?;
    }
    Ok(())
}

/// The tempering rows' round trips: whole run, steady state with its interval, Lemma 1
/// at the steady rates; then DEO⋆ over DEO.
fn print_round_trips(r: &Report) -> Result<(), StdoutError> {
    say!(
        "\nround trips per 100 epochs: whole run; after the burn-in (steady) [95 % t interval over seeds]; Lemma 1 at the steady pair rates"
    )?;
    for m in r.methods.iter().chain(&r.swap_sweep) {
        let (Some(whole), Some(steady), Some(ci), Some(lemma)) = (
            m.round_trips_per_100_epochs,
            m.steady_round_trips_per_100_epochs,
            m.steady_round_trips_per_100_epochs_ci,
            m.lemma1_round_trips_per_100_epochs,
        ) else {
            continue;
        };
        say!(
            "{:<26} whole {whole:>6.1}   steady {steady:>6.1} [{:.1}, {:.1}]   Lemma 1 {lemma:>6.1} ({:.0} % of it reached)",
            m.name,
            ci[0],
            ci[1],
            100.0 * steady / lemma
        )?;
    }
    if let Some(q) = &r.round_trip_ratio {
        say!(
            "DEO⋆ / DEO: {:.2} over the whole run, {:.2} in the steady state {}; Lemma 1 at the measured rates: {:.2}",
            q.whole_run,
            q.steady,
            q.steady_ci.map_or_else(
                || "(no bounded interval: DEO's round trips are not clearly above 0)".to_string(),
                |c| format!("[95 % Fieller interval {:.2}, {:.2}]", c[0], c[1])
            ),
            q.lemma1
        )?;
    }
    Ok(())
}

fn print_row(m: &Row) -> Result<(), StdoutError> {
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "—".to_string());
    say!(
        "{:<26} {:>32} {:>38} {:>32} {:>32} {:>38} {:>14}",
        m.name,
        cell(m.accuracy, m.accuracy_sd, m.accuracy_ci, 2, true),
        cell(m.nll, m.nll_sd, m.nll_ci, 4, false),
        cell(m.ece, m.ece_sd, m.ece_ci, 2, true),
        or_dash(
            m.agreement
                .zip(m.agreement_sd)
                .zip(m.agreement_ci)
                .map(|((v, sd), ci)| cell(v, sd, ci, 2, true))
        ),
        or_dash(
            m.total_variation
                .zip(m.total_variation_sd)
                .zip(m.total_variation_ci)
                .map(|((v, sd), ci)| cell(v, sd, ci, 4, false))
        ),
        or_dash(m.round_trips_per_100_epochs.map(|t| format!(
            "{t:.1} ± {:.1}",
            m.round_trips_per_100_epochs_sd.unwrap_or(0.0)
        ))),
    )
}

/// Writes the folder of a comparison into `dir`: `results.json`, `table.csv`, the
/// figures and their data (what [`run`] commits; the Python package calls it too).
pub fn write_outputs(dir: &Path, r: &Report) -> Result<()> {
    write_json(&dir.join("results.json"), r)?;
    let mut csv = Csv::new(&[
        "method",
        "window",
        "swap_rate",
        "eta_factor",
        "samples",
        "accuracy",
        "accuracy_sd",
        "accuracy_ci_low",
        "accuracy_ci_high",
        "nll",
        "nll_sd",
        "nll_ci_low",
        "nll_ci_high",
        "nll_sum",
        "ece",
        "ece_sd",
        "ece_ci_low",
        "ece_ci_high",
        "agreement",
        "agreement_sd",
        "agreement_ci_low",
        "agreement_ci_high",
        "total_variation",
        "total_variation_sd",
        "total_variation_ci_low",
        "total_variation_ci_high",
        "nll_minus_deo_star_ci_low",
        "nll_minus_deo_star_ci_high",
        "total_variation_minus_deo_star_ci_low",
        "total_variation_minus_deo_star_ci_high",
        "nll_minus_deo_star_seed_ci_low",
        "nll_minus_deo_star_seed_ci_high",
        "total_variation_minus_deo_star_seed_ci_low",
        "total_variation_minus_deo_star_seed_ci_high",
        "round_trips_per_100_epochs",
        "round_trips_per_100_epochs_sd",
        "exact_sampling",
        "entropy",
        "entropy_sd",
        "exact_total_variation",
        "total_variation_excess",
        "total_variation_excess_ci_low",
        "total_variation_excess_ci_high",
        "gradient_evaluations",
        "steady_round_trips_per_100_epochs",
        "steady_round_trips_per_100_epochs_ci_low",
        "steady_round_trips_per_100_epochs_ci_high",
        "lemma1_round_trips_per_100_epochs",
        "seconds",
    ]);
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.6}"));
    let f = |x: f64| format!("{x:.6}");
    for m in r.methods.iter().chain(&r.eta_sweep).chain(&r.swap_sweep) {
        csv.row([
            m.name.clone(),
            m.window.map_or(String::new(), |w| w.to_string()),
            opt(m.swap_rate),
            f(m.eta_factor),
            m.samples.to_string(),
            f(m.accuracy),
            f(m.accuracy_sd),
            f(m.accuracy_ci[0]),
            f(m.accuracy_ci[1]),
            f(m.nll),
            f(m.nll_sd),
            f(m.nll_ci[0]),
            f(m.nll_ci[1]),
            format!("{:.3}", m.nll_sum),
            f(m.ece),
            f(m.ece_sd),
            f(m.ece_ci[0]),
            f(m.ece_ci[1]),
            opt(m.agreement),
            opt(m.agreement_sd),
            opt(m.agreement_ci.map(|c| c[0])),
            opt(m.agreement_ci.map(|c| c[1])),
            opt(m.total_variation),
            opt(m.total_variation_sd),
            opt(m.total_variation_ci.map(|c| c[0])),
            opt(m.total_variation_ci.map(|c| c[1])),
            opt(m.nll_minus_deo_star_ci.map(|c| c[0])),
            opt(m.nll_minus_deo_star_ci.map(|c| c[1])),
            opt(m.total_variation_minus_deo_star_ci.map(|c| c[0])),
            opt(m.total_variation_minus_deo_star_ci.map(|c| c[1])),
            opt(m.nll_minus_deo_star_seed_ci.map(|c| c[0])),
            opt(m.nll_minus_deo_star_seed_ci.map(|c| c[1])),
            opt(m.total_variation_minus_deo_star_seed_ci.map(|c| c[0])),
            opt(m.total_variation_minus_deo_star_seed_ci.map(|c| c[1])),
            opt(m.round_trips_per_100_epochs),
            opt(m.round_trips_per_100_epochs_sd),
            m.exact_sampling.to_string(),
            f(m.entropy),
            f(m.entropy_sd),
            opt(m.exact_total_variation),
            opt(m.total_variation_excess),
            opt(m.total_variation_excess_ci.map(|c| c[0])),
            opt(m.total_variation_excess_ci.map(|c| c[1])),
            format!("{:.0}", m.gradient_evaluations),
            opt(m.steady_round_trips_per_100_epochs),
            opt(m.steady_round_trips_per_100_epochs_ci.map(|c| c[0])),
            opt(m.steady_round_trips_per_100_epochs_ci.map(|c| c[1])),
            opt(m.lemma1_round_trips_per_100_epochs),
            format!("{:.3}", m.seconds),
        ]);
    }
    csv.write(&dir.join("table.csv"))?;
    sample_curve_figures(dir, r)?;
    if r.curves.is_empty() {
        return Ok(());
    }
    curve_figures(dir, r)
}

/// NLL, and agreement with the reference when there is one, against the number of
/// samples averaged, for every method.
fn sample_curve_figures(dir: &Path, r: &Report) -> Result<()> {
    let mut csv = Csv::new(&[
        "method",
        "samples",
        "nll",
        "accuracy",
        "agreement",
        "total_variation",
    ]);
    for c in &r.sample_curves {
        for (j, k) in c.samples.iter().enumerate() {
            let at = |v: &Option<Vec<f64>>| {
                v.as_ref()
                    .and_then(|v| v.get(j))
                    .map_or(String::new(), |x| format!("{x:.6}"))
            };
            csv.row([
                c.name.clone(),
                k.to_string(),
                format!("{:.6}", c.nll[j]),
                format!("{:.6}", c.accuracy[j]),
                at(&c.agreement),
                at(&c.total_variation),
            ]);
        }
    }
    csv.write(&dir.join("samples_curves.csv"))?;
    let draw = |file: &str,
                title: &str,
                y_label: &str,
                ys: &dyn Fn(&SampleCurve) -> Option<Vec<f64>>|
     -> Result<()> {
        let points: Vec<(String, Vec<(f64, f64)>)> = r
            .sample_curves
            .iter()
            .filter_map(|c| {
                ys(c).map(|v| {
                    (
                        c.name.clone(),
                        c.samples.iter().map(|&k| k as f64).zip(v).collect(),
                    )
                })
            })
            .collect();
        if points.is_empty() {
            return Ok(());
        }
        let series: Vec<Series<'_>> = points
            .iter()
            .map(|(name, p)| Series {
                name,
                points: p,
                style: Style::LinePoints,
            })
            .collect();
        figures::lines(
            &dir.join(file),
            &LineChart {
                title,
                x_label: "samples averaged",
                y_label,
                x_log: true,
                y_log: false,
                series: &series,
                hlines: &[],
                vlines: &[],
            },
        )
    };
    draw(
        "samples_nll",
        "Test NLL of the model average against the samples averaged (mean over seeds)",
        "NLL per test example",
        &|c| Some(c.nll.clone()),
    )?;
    draw(
        "samples_agreement",
        "Agreement with the reference posterior against the samples averaged (mean over seeds)",
        "share of test examples with the reference's top class",
        &|c| c.agreement.clone(),
    )?;
    draw(
        "samples_total_variation",
        "Total variation to the reference against the samples averaged (exact: HMC draws)",
        "mean total variation per test example",
        &|c| c.total_variation.clone(),
    )
}

/// Figure 7 of the paper at toy scale: round trips against epochs for both windows,
/// accuracy by level, the learning rates, the swap rates.
fn curve_figures(dir: &Path, r: &Report) -> Result<()> {
    let pts = |c: &Curves, ys: &[f64]| -> Vec<(f64, f64)> {
        c.epochs.iter().copied().zip(ys.iter().copied()).collect()
    };
    // Round trips against epochs.
    let trips: Vec<Vec<(f64, f64)>> = r.curves.iter().map(|c| pts(c, &c.round_trips)).collect();
    let series: Vec<Series<'_>> = r
        .curves
        .iter()
        .zip(&trips)
        .map(|(c, p)| Series {
            name: &c.name,
            points: p,
            style: Style::Line,
        })
        .collect();
    figures::lines(
        &dir.join("fig7a_round_trips"),
        &LineChart {
            title: "Round trips against epochs (mean over seeds)",
            x_label: "epoch of sampling",
            y_label: "round trips so far",
            x_log: false,
            y_log: false,
            series: &series,
            hlines: &[],
            vlines: &[],
        },
    )?;
    let mut csv = Csv::new(&["epoch", "method", "round_trips"]);
    for (c, p) in r.curves.iter().zip(&trips) {
        for (x, y) in p {
            csv.row([format!("{x:.3}"), c.name.clone(), format!("{y:.3}")]);
        }
    }
    csv.write(&dir.join("fig7a_round_trips.csv"))?;

    // Accuracy of each level's final network.
    let levels: Vec<Vec<(f64, f64)>> = r
        .curves
        .iter()
        .map(|c| {
            c.accuracy_by_level
                .iter()
                .enumerate()
                .map(|(l, &a)| (l as f64, 100.0 * a))
                .collect()
        })
        .collect();
    let series: Vec<Series<'_>> = r
        .curves
        .iter()
        .zip(&levels)
        .map(|(c, p)| Series {
            name: &c.name,
            points: p,
            style: Style::LinePoints,
        })
        .collect();
    figures::lines(
        &dir.join("fig7b_accuracy_by_level"),
        &LineChart {
            title: "Test accuracy of each level's final network (mean over seeds)",
            x_label: "level (0: smallest learning rate)",
            y_label: "test accuracy (%)",
            x_log: false,
            y_log: false,
            series: &series,
            hlines: &[],
            vlines: &[],
        },
    )?;
    // Shares in [0, 1], as in results.json (the figure shows percent).
    let mut csv = Csv::new(&["level", "method", "accuracy"]);
    for (c, p) in r.curves.iter().zip(&levels) {
        for (x, y) in p {
            csv.row([format!("{x}"), c.name.clone(), format!("{:.6}", y / 100.0)]);
        }
    }
    csv.write(&dir.join("fig7b_accuracy_by_level.csv"))?;

    // The learning rates and the swap-indicator rates of DEO⋆ (means over seeds).
    let star = &r.curves[0];
    let p = star.ladder.first().map_or(0, Vec::len);
    let ladder: Vec<Vec<(f64, f64)>> = (0..p)
        .map(|l| {
            pts(
                star,
                &star.ladder.iter().map(|row| row[l]).collect::<Vec<_>>(),
            )
        })
        .collect();
    let names: Vec<String> = (0..p).map(|l| format!("level {l}")).collect();
    let series: Vec<Series<'_>> = ladder
        .iter()
        .zip(&names)
        .map(|(pts, name)| Series {
            name,
            points: pts,
            style: Style::Line,
        })
        .collect();
    if !series.is_empty() {
        figures::lines(
            &dir.join("fig7c_learning_rates"),
            &LineChart {
                title: "Learning rates of DEO⋆ adapting (mean over seeds, per example)",
                x_label: "epoch of sampling",
                y_label: "learning rate",
                x_log: false,
                y_log: true,
                series: &series,
                hlines: &[],
                vlines: &[],
            },
        )?;
    }
    let pairs = star.pair_indicator_rates.first().map_or(0, Vec::len);
    let rates: Vec<Vec<(f64, f64)>> = (0..pairs)
        .map(|l| {
            pts(
                star,
                &star
                    .pair_indicator_rates
                    .iter()
                    .map(|row| row[l])
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let names: Vec<String> = (0..pairs).map(|l| format!("pair {l}–{}", l + 1)).collect();
    let series: Vec<Series<'_>> = rates
        .iter()
        .zip(&names)
        .map(|(pts, name)| Series {
            name,
            points: pts,
            style: Style::Line,
        })
        .collect();
    let target = r.settings.rates.swap_rate;
    let label = format!("target S = {target}");
    if !series.is_empty() {
        figures::lines(
            &dir.join("fig7d_swap_rates"),
            &LineChart {
                title: "Swap-indicator rates of DEO⋆ (between trace entries, mean over seeds)",
                x_label: "epoch of sampling",
                y_label: "share of iterations with e(l+1) + C < e(l)",
                x_log: false,
                y_log: false,
                series: &series,
                hlines: &[(target, &label)],
                vlines: &[],
            },
        )?;
    }
    let mut header = vec!["epoch".to_string()];
    header.extend((0..p).map(|l| format!("eta_{l}")));
    header.extend((0..pairs).map(|l| format!("rate_{l}")));
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut csv = Csv::new(&refs);
    for (i, x) in star.epochs.iter().enumerate() {
        let mut cells = vec![format!("{x:.3}")];
        cells.extend(
            star.ladder
                .get(i)
                .into_iter()
                .flatten()
                .map(|v| format!("{v:.6e}")),
        );
        cells.extend(
            star.pair_indicator_rates
                .get(i)
                .into_iter()
                .flatten()
                .map(|v| format!("{v:.4}")),
        );
        csv.row(cells);
    }
    csv.write(&dir.join("fig7cd_ladder_and_rates.csv"))?;
    Ok(())
}
