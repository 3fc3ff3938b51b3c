//! `nrpt run`: one configuration, everything written to an output folder.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use crate::cli::RunArgs;
use crate::config::{ConfigError, RunConfig, TargetKind};
use crate::engine::{Backend, Record, RunOutput, Target};
use crate::metrics::{Accuracy, Truth};
use crate::output::{Csv, ensure_dir, npy_f32, write_atomic, write_json};

/// `summary.json`.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// The configuration that ran.
    pub config: RunConfig,
    /// Backend that ran it.
    pub backend: String,
    /// Window used (0 for SEO).
    pub window: u32,
    /// The rules that ran (the preset with the rule keys applied).
    pub rules: crate::preset::RulesSummary,
    /// Iterations run (one more than `config.iterations` with inclusive iterations).
    pub iterations_run: u64,
    /// Standard round trips per 1000 iterations, mean over ensembles.
    pub round_trips_per_1000: f64,
    /// Round trips per 1000 iterations in the counting of the paper's code.
    pub round_trips_per_1000_authors: f64,
    /// Restarts (arrivals at level 0 from the top) per 1000 iterations.
    pub restarts_per_1000: f64,
    /// Lemma 1's prediction for this P, W and S (null for SEO).
    pub model_round_trips_per_1000: Option<f64>,
    /// Energy evaluations that were not finite.
    pub nonfinite_energies: u64,
    /// Final correction buffer, mean over ensembles.
    pub buffer: f64,
    /// Final ladder of ensemble 0.
    pub ladder: Vec<f64>,
    /// Per pair, share of iterations with swap indicator 1 (mean over ensembles).
    pub indicator_rate: Vec<f64>,
    /// Per pair, executed swaps per iteration (mean over ensembles).
    pub swap_rate: Vec<f64>,
    /// Accuracy of the target-level samples (2D toy only).
    pub accuracy: Option<Accuracy>,
    /// Classifier targets: the test-set scores of the Bayesian model average of every
    /// kept target-level sample, all ensembles pooled.
    pub classifier: Option<crate::deep::metrics::Scores>,
}

/// What `--json` prints: the summary (which is the same for the same seed, whatever
/// the machine) plus the timing (which is not, and so stays out of summary.json).
#[derive(Debug, Serialize)]
pub struct RunReport<'a> {
    /// The summary.
    #[serde(flatten)]
    pub summary: &'a Summary,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
    /// Chain-steps per second.
    pub chain_steps_per_sec: f64,
}

/// Mean per-pair rates over ensembles: (indicator rate, swap rate).
pub fn pair_rates(out: &RunOutput, iterations: u64) -> (Vec<f64>, Vec<f64>) {
    let e = out.ensembles.len() as f64;
    let pairs = out.ensembles.first().map_or(0, |r| r.pairs.len());
    let mean = |f: &dyn Fn(&nrpt_core::index::PairStats) -> f64| -> Vec<f64> {
        (0..pairs)
            .map(|l| out.ensembles.iter().map(|r| f(&r.pairs[l])).sum::<f64>() / e)
            .collect()
    };
    (
        mean(&|p| p.indicator_rate(iterations)),
        mean(&|p| p.swap_rate(iterations)),
    )
}

/// Loads `--config` (if any) and applies the flags on top.
pub fn load_config(args: &RunArgs) -> Result<RunConfig> {
    let mut c = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
                field: "config".into(),
                flag: "config".into(),
                message: format!("cannot read {}: {e}", path.display()),
            })?;
            RunConfig::from_toml_for(&text, args.flags.target)?
        }
        None => RunConfig::defaults_for(args.flags.target.unwrap_or(TargetKind::Modes2d)),
    };
    args.flags.apply(&mut c)?;
    Ok(c)
}

/// Writes the output folder of a run.
pub fn write_outputs(
    dir: &Path,
    config: &RunConfig,
    dim: usize,
    out: &RunOutput,
    summary: &Summary,
) -> Result<()> {
    ensure_dir(dir)?;
    let iterations = config.iterations;
    let (ind, swp) = pair_rates(out, iterations);
    let mut pairs = Csv::new(&[
        "pair",
        "indicator_rate",
        "swap_rate",
        "final_ladder_lower",
        "final_ladder_upper",
    ]);
    for l in 0..ind.len() {
        pairs.row([
            l.to_string(),
            format!("{:.6}", ind[l]),
            format!("{:.6}", swp[l]),
            format!("{:.6e}", summary.ladder[l]),
            format!("{:.6e}", summary.ladder[l + 1]),
        ]);
    }
    pairs.write(&dir.join("pairs.csv"))?;

    let t = &out.trace;
    let p = config.chains;
    let mut header = vec![
        "iteration".to_string(),
        "round_trips".into(),
        "authors_round_trips".into(),
        "buffer".into(),
    ];
    header.extend((0..p - 1).map(|l| format!("indicator_rate_{l}")));
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut trace = Csv::new(&refs);
    for i in 0..t.iterations.len() {
        let mut row = vec![
            t.iterations[i].to_string(),
            t.round_trips[i].to_string(),
            t.authors_round_trips[i].to_string(),
            format!("{:.6}", t.buffer[i]),
        ];
        row.extend(t.indicator_rate[i].iter().map(|r| format!("{r:.4}")));
        trace.row(row);
    }
    trace.write(&dir.join("trace.csv"))?;

    let mut header = vec!["iteration".to_string()];
    header.extend((0..p).map(|l| format!("eta_{l}")));
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut ladder = Csv::new(&refs);
    for (i, row) in t.ladder.iter().enumerate() {
        let mut cells = vec![t.iterations[i].to_string()];
        cells.extend(row.iter().map(|v| format!("{v:.6e}")));
        ladder.row(cells);
    }
    ladder.write(&dir.join("ladder.csv"))?;

    let e = out.ensembles.len();
    if dim <= MAX_CSV_DIM {
        let mut header = vec!["sample".to_string(), "iteration".into(), "ensemble".into()];
        header.extend((0..dim).map(|j| format!("x{j}")));
        let refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut samples = Csv::new(&refs);
        for (i, &k) in out.sample_iterations.iter().enumerate() {
            for ens in 0..e {
                let base = (i * e + ens) * dim;
                let mut cells = vec![i.to_string(), k.to_string(), ens.to_string()];
                cells.extend(out.samples[base..base + dim].iter().map(|v| format!("{v}")));
                samples.row(cells);
            }
        }
        samples.write(&dir.join("samples.csv"))?;
    }
    write_atomic(
        &dir.join("samples.npy"),
        &npy_f32(&[out.sample_iterations.len(), e, dim], &out.samples),
    )?;
    write_json(&dir.join("summary.json"), summary)
}

/// States of more coordinates than this (a classifier's parameters) are written to
/// samples.npy only.
pub const MAX_CSV_DIM: usize = 64;

/// Runs the command.
pub fn run(args: &RunArgs, backend: &dyn Backend, json: bool, quiet: bool) -> Result<()> {
    let config = load_config(args)?;
    let record = Record {
        thin: config.thin,
        warmup: config.warmup,
        trace_every: (config.iterations / 400).max(1),
        path_iterations: 0,
    };
    let job = config.job(record)?;
    let started = Instant::now();
    let out = super::run_job(backend, &job, "run", quiet)?;
    let seconds = started.elapsed().as_secs_f64();
    let stats = out.total_stats();
    let e = job.ensembles as f64;
    let per1000 = |n: u64| n as f64 * 1000.0 / (e * job.iterations as f64);
    let window = job.options.scheme.window_code();
    let (indicator_rate, swap_rate) = pair_rates(&out, job.iterations);
    let summary = Summary {
        config: config.clone(),
        backend: out.backend.clone(),
        window,
        rules: config.rule_choices().resolve().into(),
        iterations_run: job.iterations,
        round_trips_per_1000: per1000(stats.round_trips),
        round_trips_per_1000_authors: per1000(stats.authors_round_trips),
        restarts_per_1000: per1000(stats.restarts),
        model_round_trips_per_1000: (window > 0)
            .then(|| {
                nrpt_core::optimal::round_trip_rate_u32(job.chains, window, config.swap_rate).ok()
            })
            .flatten()
            .map(|r| 1000.0 * r),
        nonfinite_energies: stats.nonfinite_energies,
        buffer: out.ensembles.iter().map(|r| r.buffer).sum::<f64>() / e,
        ladder: out
            .ensembles
            .first()
            .map(|r| r.ladder.clone())
            .unwrap_or_default(),
        indicator_rate,
        swap_rate,
        accuracy: (job.target == Target::Modes2d && !out.samples.is_empty())
            .then(|| Truth::new().accuracy(&out.samples)),
        classifier: match &job.target {
            Target::Classifier(t) => {
                let data = &t.data;
                let mut bma = crate::deep::metrics::Bma::new(data.test.len(), data.classes);
                for theta in out.samples.chunks_exact(t.dim()) {
                    bma.add(t, theta, &data.test.x);
                }
                Some(bma.scores(&data.test.y))
            }
            _ => None,
        },
    };
    write_outputs(&config.out, &config, job.target.dim(), &out, &summary)?;
    if json {
        let report = RunReport {
            summary: &summary,
            seconds,
            chain_steps_per_sec: (job.chains * job.ensembles) as f64 * job.iterations as f64
                / seconds,
        };
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "{} backend: {} ensembles × {} chains × {} iterations in {:.2} s",
            summary.backend, job.ensembles, job.chains, job.iterations, seconds
        );
        println!(
            "window {}: {:.1} round trips per 1000 iterations ({:.1} in the paper's counting{})",
            if window == 0 {
                "SEO".to_string()
            } else {
                window.to_string()
            },
            summary.round_trips_per_1000,
            summary.round_trips_per_1000_authors,
            summary
                .model_round_trips_per_1000
                .map(|m| format!("; Lemma 1 predicts {m:.1}"))
                .unwrap_or_default()
        );
        if let Some(s) = summary.classifier {
            println!(
                "test set: accuracy {:.2}%, NLL {:.4} per example, ECE {:.2}% (Bayesian model average of {} samples)",
                100.0 * s.accuracy,
                s.nll,
                100.0 * s.ece,
                s.samples
            );
        }
        if let Some(a) = summary.accuracy {
            println!(
                "accuracy: TV {:.3} on the 50×50 grid, {:.3} over the 25 modes, {:.1}% of samples outside",
                a.tv_distance,
                a.tv_modes,
                100.0 * a.outside_share
            );
        }
        println!("wrote {}", config.out.display());
    }
    Ok(())
}
