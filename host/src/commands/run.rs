//! `nrpt run`: one configuration, everything written to an output folder.
//!
//! Kept whole past 600 lines: one command whose branches (SGD engines, exact tempering,
//! checkpoints and resume) share the configuration's checks and the output folder.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use crate::cli::RunArgs;
use nrpt_sampling::config::{ConfigError, RunConfig};
use nrpt_sampling::engine::cpu::CpuBackend;
use nrpt_sampling::engine::state::RunState;
use nrpt_sampling::engine::{Backend, Job, RunOutput};
use nrpt_sampling::output::{OutDir, OutPolicy, OutputSet, write_json};
use nrpt_sampling::targets::Modes2dTarget;
use nrpt_sampling::targets::classifier::Classifier;
use nrpt_studies::checkpoint;
use nrpt_studies::error::StudyError;
use nrpt_studies::metrics::{Accuracy, Truth};

/// `summary.json`.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// The configuration that ran.
    pub config: RunConfig,
    /// Backend that ran it.
    pub backend: String,
    /// The floating-point contract it ran under: the configuration's `math` on the CUDA
    /// backend; on the CPU `fast` (fast mode's lane math, which the 2D toy's lane groups
    /// use) or `exact` (for `fma` too: the CPU does not contract).
    pub math: &'static str,
    /// Window used (0 for SEO).
    pub window: u32,
    /// The rules that ran (the preset with the rule keys applied).
    pub rules: nrpt_sampling::preset::RulesSummary,
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
    /// Final correction buffer C, mean over ensembles (in the units of the energies;
    /// per example for classifiers, like `config.buffer`).
    pub final_buffer_mean: f64,
    /// Final learning-rate ladder: per level, the mean over ensembles.
    pub final_ladder_mean: Vec<f64>,
    /// Final learning-rate ladder: per level, the standard deviation over ensembles.
    pub final_ladder_sd: Vec<f64>,
    /// Final learning-rate ladder of every ensemble (`[ensemble][level]`).
    pub final_ladders: Vec<Vec<f64>>,
    /// Per pair, the measured share of iterations with swap indicator 1, mean over
    /// ensembles: what the ladder adaptation drives to `config.swap_rate`.
    pub pair_indicator_rate: Vec<f64>,
    /// Per pair, the measured executed swaps per iteration, mean over ensembles
    /// (below the indicator rate when the window holds swaps back).
    pub pair_executed_swap_rate: Vec<f64>,
    /// Accuracy of the target-level samples (2D toy only).
    pub accuracy: Option<Accuracy>,
    /// Classifier targets: the test-set scores of the Bayesian model average of every
    /// kept target-level sample, all ensembles pooled.
    pub classifier: Option<nrpt_studies::deep::metrics::Scores>,
    /// Lemma 1 at the measured swap rate: the window it recommends for this P (`null`
    /// for SEO or when the measured rate is 0 or 1).
    pub lemma1_at_measured_rate: Option<WindowAdvice>,
    /// What may make this run not what was meant: non-finite energies above
    /// [`NONFINITE_WARNING_SHARE`] of the chain-steps, no kept samples, settings without
    /// effect. `--strict` turns them into exit status 1.
    pub warnings: Vec<String>,
}

/// The window Lemma 1 recommends for the swap rate a run measured.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct WindowAdvice {
    /// S̄: the measured indicator rate, mean over pairs and ensembles.
    pub measured_swap_rate: f64,
    /// P.
    pub chains: usize,
    /// The best integer window for (P, S̄).
    pub optimal_window: u32,
    /// Lemma 1's `E[T]` with that window, in iterations.
    pub expected_round_trip_optimal: f64,
    /// Lemma 1's `E[T]` with the window that ran.
    pub expected_round_trip_used: f64,
}

impl WindowAdvice {
    /// The advice for P chains, window W (0: SEO, no advice) and per-pair rates.
    pub fn new(chains: usize, window: u32, rates: &[f64]) -> Option<Self> {
        if window == 0 || rates.is_empty() {
            return None;
        }
        let s = rates.iter().sum::<f64>() / rates.len() as f64;
        let w = nrpt_core::optimal::optimal_window(chains, s).ok()?;
        Some(WindowAdvice {
            measured_swap_rate: s,
            chains,
            optimal_window: w,
            expected_round_trip_optimal: nrpt_core::optimal::expected_round_trip_u32(chains, w, s)
                .ok()?,
            expected_round_trip_used: nrpt_core::optimal::expected_round_trip_u32(
                chains, window, s,
            )
            .ok()?,
        })
    }
}

pub use super::warnings::{NONFINITE_WARNING_SHARE, StrictError, warnings};

/// What `--json` prints: the summary (which is the same for the same seed, whatever
/// the machine) plus the timing (which is not, and so stays out of summary.json).
#[derive(Debug, Serialize)]
pub(crate) struct RunReport<'a> {
    /// The summary.
    #[serde(flatten)]
    pub summary: &'a Summary,
    /// Wall-clock seconds of this process's part of the run (from the checkpoint on,
    /// for a resumed run).
    pub seconds: f64,
    /// Chain-steps per second of this process's part of the run.
    pub chain_steps_per_sec: f64,
    /// What the run was estimated to need before it started, in bytes (checked against
    /// `--max-memory`).
    pub memory_estimate_bytes: u64,
    /// The peak resident memory of the process, in bytes (Linux; `null` elsewhere).
    pub peak_memory_bytes: Option<u64>,
}

/// Mean per-pair rates over ensembles: (indicator rate, executed swap rate).
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
            let text = nrpt_sampling::input::read_text(
                path,
                nrpt_sampling::input::MAX_CONFIG_BYTES,
                "the cap of a configuration file",
            )
            .map_err(|e| ConfigError {
                field: "config".into(),
                flag: "config".into(),
                message: format!("cannot read {}: {e}", path.display()),
            })?;
            RunConfig::from_toml_for(&text, args.flags.target.clone())?
        }
        None => RunConfig::defaults_for(args.flags.target.clone().unwrap_or_default()),
    };
    args.flags.apply(&mut c)?;
    Ok(c)
}

/// The outputs of a run besides its summary, described once: `pairs.csv`, `trace.csv`,
/// `ladder.csv`, `samples.csv` (D ≤ [`MAX_CSV_DIM`]) and `samples.npy` as files, and
/// for Python also every ensemble's counts and final states. Rates and buffers are in
/// the configuration's units (`energy_scale`: per example for classifiers).
pub fn outputs(
    config: &RunConfig,
    dim: usize,
    energy_scale: f64,
    out: &RunOutput,
    summary: &Summary,
) -> OutputSet {
    use nrpt_sampling::output::{Array, Cell, Column, Table, Values};
    let (p, e, scale) = (config.chains, out.ensembles.len(), energy_scale);
    // Rates over the iterations that ran (N + 1 with inclusive iterations), as in the
    // summary.
    let (ind, swp) = pair_rates(out, summary.iterations_run);
    let ladder = &summary.final_ladder_mean;
    let pairs = Table {
        name: "pairs",
        file: Some("pairs.csv"),
        in_python: true,
        columns: vec![
            Column::new("pair", Values::U64((0..ind.len() as u64).collect())),
            Column::new("indicator_rate", Values::F64(ind.clone(), Cell::Fixed(6))),
            Column::new("executed_swap_rate", Values::F64(swp, Cell::Fixed(6))),
            Column::new(
                "final_eta_lower_mean",
                Values::F64(ladder[..ind.len()].to_vec(), Cell::Sci(6)),
            ),
            Column::new(
                "final_eta_upper_mean",
                Values::F64(ladder[1..=ind.len()].to_vec(), Cell::Sci(6)),
            ),
        ],
    };
    let t = &out.trace;
    let trace = Table {
        name: "trace",
        file: Some("trace.csv"),
        in_python: true,
        columns: vec![
            Column::new("iteration", Values::U64(t.iterations.clone())),
            Column::new("round_trips", Values::U64(t.round_trips.clone())),
            Column::new(
                "authors_round_trips",
                Values::U64(t.authors_round_trips.clone()),
            ),
            Column::new(
                "buffer",
                Values::F64(t.buffer.iter().map(|b| b / scale).collect(), Cell::Fixed(6)),
            ),
            Column::vector(
                "indicator_rate",
                p - 1,
                Values::F64(t.indicator_rate.concat(), Cell::Fixed(4)),
            ),
        ],
    };
    let scaled =
        |rows: &[Vec<f64>]| -> Vec<f64> { rows.iter().flatten().map(|v| v * scale).collect() };
    let ladder_table = Table {
        name: "ladder",
        file: Some("ladder.csv"),
        in_python: true,
        columns: vec![
            Column::new("iteration", Values::U64(t.iterations.clone())),
            Column::vector("eta_mean", p, Values::F64(scaled(&t.ladder), Cell::Sci(6))),
            Column::vector("eta_sd", p, Values::F64(scaled(&t.ladder_sd), Cell::Sci(6))),
        ],
    };
    // samples.csv: one row per (sample, ensemble); in Python the array below.
    let kept = out.sample_iterations.len();
    let samples_csv = Table {
        name: "samples_table",
        file: (dim <= MAX_CSV_DIM).then_some("samples.csv"),
        in_python: false,
        columns: vec![
            Column::new(
                "sample",
                Values::U64(
                    (0..kept as u64)
                        .flat_map(|i| std::iter::repeat_n(i, e))
                        .collect(),
                ),
            ),
            Column::new(
                "iteration",
                Values::U64(
                    out.sample_iterations
                        .iter()
                        .flat_map(|&k| std::iter::repeat_n(k, e))
                        .collect(),
                ),
            ),
            Column::new(
                "ensemble",
                Values::U64((0..kept).flat_map(|_| 0..e as u64).collect()),
            ),
            Column {
                separator: "",
                // Not written beyond MAX_CSV_DIM (nor given to Python): no copy then.
                ..Column::vector(
                    "x",
                    dim,
                    Values::F32(
                        if dim <= MAX_CSV_DIM {
                            out.samples.clone()
                        } else {
                            Vec::new()
                        },
                        Cell::Plain,
                    ),
                )
            },
        ],
    };
    let stats = |f: &dyn Fn(&nrpt_sampling::engine::EnsembleResult) -> u64| -> Values {
        Values::U64(out.ensembles.iter().map(f).collect())
    };
    let pair = |f: &dyn Fn(&nrpt_core::index::PairStats) -> u64| -> Values {
        Values::U64(
            out.ensembles
                .iter()
                .flat_map(|r| r.pairs.iter().map(f))
                .collect(),
        )
    };
    let ensembles = Table {
        name: "ensembles",
        file: None,
        in_python: true,
        columns: vec![
            Column::new("round_trips", stats(&|r| r.stats.round_trips)),
            Column::new(
                "authors_round_trips",
                stats(&|r| r.stats.authors_round_trips),
            ),
            Column::new("restarts", stats(&|r| r.stats.restarts)),
            Column::new("nonfinite_energies", stats(&|r| r.stats.nonfinite_energies)),
            Column::new(
                "buffer",
                Values::F64(
                    out.ensembles.iter().map(|r| r.buffer / scale).collect(),
                    Cell::Plain,
                ),
            ),
            Column::vector("pair_indicators", p - 1, pair(&|s| s.indicators)),
            Column::vector("pair_attempts", p - 1, pair(&|s| s.attempts)),
            Column::vector("pair_swaps", p - 1, pair(&|s| s.swaps)),
            Column::vector("pair_nonfinite", p - 1, pair(&|s| s.nonfinite)),
            Column {
                row_shape: vec![p, dim],
                ..Column::new(
                    "levels",
                    Values::F32(
                        out.ensembles
                            .iter()
                            .flat_map(|r| r.levels.iter().copied())
                            .collect(),
                        Cell::Plain,
                    ),
                )
            },
        ],
    };
    let totals = out.total_stats();
    OutputSet {
        tables: vec![pairs, trace, ladder_table, samples_csv, ensembles],
        arrays: vec![Array {
            name: "samples",
            file: Some("samples.npy"),
            shape: vec![kept, e, dim],
            data: out.samples.clone(),
        }],
        totals: vec![
            ("round_trips", totals.round_trips),
            ("authors_round_trips", totals.authors_round_trips),
            ("restarts", totals.restarts),
        ],
        vectors: vec![("sample_iterations", out.sample_iterations.clone())],
    }
}

/// Writes the output folder of a run: its [`outputs`] and `summary.json`.
pub fn write_outputs(
    dir: &Path,
    config: &RunConfig,
    dim: usize,
    energy_scale: f64,
    out: &RunOutput,
    summary: &Summary,
) -> Result<()> {
    outputs(config, dim, energy_scale, out, summary).write(dir)?;
    write_json(&dir.join("summary.json"), summary)?;
    Ok(())
}

pub use nrpt_sampling::config::MAX_CSV_DIM;

/// Where a run starts: its configuration, checkpoint cadence, saved state (when resumed)
/// and the digests of its input files (when it checkpoints).
struct Start {
    config: RunConfig,
    every: Option<u64>,
    saved: Option<RunState>,
    inputs: Vec<checkpoint::InputDigest>,
    /// The seal of the checkpoint resumed from (see `checkpoint::remove_own`).
    resumed: Option<checkpoint::Seal>,
}

/// The start of a run: from `--resume` (the checkpoint's configuration, which the other
/// flags must agree with, and its input files, which must not have changed) or from the
/// flags.
fn start(args: &RunArgs, loaded: Result<RunConfig>) -> Result<Start> {
    if args.checkpoint_every == Some(0) {
        return Err(ConfigError::new("checkpoint_every", "must be at least 1 iteration").into());
    }
    let Some(dir) = &args.resume else {
        let config = loaded?;
        let inputs = if args.checkpoint_every.is_some() {
            refuse_pipes_with_checkpoints(&config)?;
            checkpoint::input_digests(&config)?
        } else {
            Vec::new()
        };
        return Ok(Start {
            config,
            every: args.checkpoint_every,
            saved: None,
            inputs,
            resumed: None,
        });
    };
    if let Some(out) = &args.flags.out
        && !same_place(out, dir)
    {
        return Err(ConfigError::new(
            "out",
            format!(
                "a resumed run writes its outputs to the folder it resumes ({}); leave out                  --out, or give the same folder",
                dir.display()
            ),
        )
        .into());
    }
    let path = checkpoint::path_for(dir);
    if !path.exists() {
        return Err(ConfigError::new(
            "resume",
            format!(
                "no checkpoint {} beside {}: nothing to resume",
                path.display(),
                dir.display()
            ),
        )
        .into());
    }
    let c: checkpoint::Checkpoint =
        checkpoint::read(&path).map_err(|e| ConfigError::new("resume", e.to_string()))?;
    let resumed = checkpoint::seal_of(&path);
    let mut config = c.config;
    config.out = dir.clone();
    // Flags given with --resume must not change the run.
    let mut given = config.clone();
    args.flags.apply(&mut given)?;
    given.out = dir.clone();
    if args.config.is_some() || given != config {
        return Err(ConfigError::new(
            "resume",
            "continues the saved configuration: leave out --config and configuration flags \
             that differ from it",
        )
        .into());
    }
    let now = checkpoint::input_digests(&config)?;
    let changed = checkpoint::changed_inputs(&c.inputs, &now);
    if !changed.is_empty() {
        return Err(ConfigError::new(
            "resume",
            format!(
                "the input files changed since {} was written ({}): a resumed run must read \
                 the same data; restore it, or start the run again",
                path.display(),
                changed.join("; ")
            ),
        )
        .into());
    }
    Ok(Start {
        config,
        every: Some(args.checkpoint_every.unwrap_or(c.every)),
        saved: Some(c.state),
        inputs: c.inputs,
        resumed,
    })
}

/// A run with checkpoints reads its data files twice (their digests, then the data) and
/// again on a resume: a pipe or device cannot be, so it is refused before anything is
/// read.
fn refuse_pipes_with_checkpoints(config: &RunConfig) -> Result<(), ConfigError> {
    for (key, path) in config.input_paths() {
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Err(ConfigError::new(
                "checkpoint_every",
                format!(
                    "a run with checkpoints reads --{} ({}) again when it resumes, and a pipe \
                     or device cannot be read twice: give a regular file, or leave out \
                     --checkpoint-every",
                    key.replace('_', "-"),
                    path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Whether two paths name the same place: the same folder once links and `.`/`..` are
/// resolved (for names that do not exist yet, their parents resolved).
fn same_place(a: &Path, b: &Path) -> bool {
    fn resolved(p: &Path) -> Option<PathBuf> {
        if let Ok(r) = p.canonicalize() {
            return Some(r);
        }
        let parent = nrpt_sampling::output::parent_of(p).canonicalize().ok()?;
        Some(parent.join(p.file_name()?))
    }
    a == b || matches!((resolved(a), resolved(b)), (Some(x), Some(y)) if x == y)
}

/// Refuses, before anything is computed, a run whose checkpoint would replace what
/// nrpt did not write at `<out>.checkpoint` (a person's file, unless `--force`; a
/// folder, a link or a device, always).
fn check_checkpoint_place(path: &Path, force: bool) -> Result<(), ConfigError> {
    let shown = path.display();
    let why = match checkpoint::occupant(path) {
        Ok(checkpoint::Occupant::Nothing | checkpoint::Occupant::Checkpoint) => return Ok(()),
        Ok(checkpoint::Occupant::Other(what)) if what == "a file nrpt did not write" => {
            if force {
                return Ok(());
            }
            format!(
                "the checkpoint of this run goes to {shown}, which is a file nrpt did not \
                 write: move it, choose another --out, or add --force to replace it"
            )
        }
        Ok(checkpoint::Occupant::Other(what)) => format!(
            "the checkpoint of this run goes to {shown}, which is {what}: nrpt writes only \
             a file of its own there (not even with --force); move it, or choose another --out"
        ),
        Err(e) => format!("cannot read {shown}, where the checkpoint goes: {e}"),
    };
    Err(ConfigError::new("out", why))
}

/// What `--out` may replace for `nrpt run`: the inputs are the data files and the
/// configuration file.
pub(crate) fn out_policy(args: &RunArgs, config: &RunConfig) -> OutPolicy {
    let mut inputs: Vec<PathBuf> = config
        .input_paths()
        .into_iter()
        .map(|(_, p)| p.to_path_buf())
        .collect();
    inputs.extend(args.config.clone());
    OutPolicy {
        command: "run",
        force: args.force,
        inputs,
    }
}

/// The summary of a finished run of `job` (from `config`), as `summary.json` holds it.
pub fn summarize(config: &RunConfig, job: &Job, out: &RunOutput) -> Summary {
    let stats = out.total_stats();
    let e = job.ensembles as f64;
    let per1000 = |n: u64| n as f64 * 1000.0 / (e * job.iterations as f64);
    let window = job.options.scheme.window_code();
    let (pair_indicator_rate, pair_executed_swap_rate) = pair_rates(out, job.iterations);
    let advice = WindowAdvice::new(job.chains, window, &pair_indicator_rate);
    // Rates and buffer in the units of the configuration (per example for classifiers).
    let scale = job.target.energy_scale();
    let final_ladders: Vec<Vec<f64>> = out
        .ensembles
        .iter()
        .map(|r| r.ladder.iter().map(|eta| eta * scale).collect())
        .collect();
    let views: Vec<&[f64]> = final_ladders.iter().map(Vec::as_slice).collect();
    let (final_ladder_mean, final_ladder_sd) = nrpt_sampling::engine::ladder_spread(&views);
    Summary {
        config: config.clone(),
        backend: out.backend.clone(),
        math: if out.backend == "cuda" || config.math == nrpt_sampling::config::MathKind::Fast {
            config.math.name()
        } else {
            "exact"
        },
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
        final_buffer_mean: out.ensembles.iter().map(|r| r.buffer).sum::<f64>() / e / scale,
        final_ladder_mean,
        final_ladder_sd,
        final_ladders,
        pair_indicator_rate,
        pair_executed_swap_rate,
        accuracy: (job.target.is::<Modes2dTarget>() && !out.samples.is_empty())
            .then(|| Truth::new().accuracy(&out.samples)),
        classifier: job.target.downcast_ref::<Classifier>().map(|t| {
            let data = &t.data;
            let mut bma = nrpt_studies::deep::metrics::Bma::new(data.test.len(), data.classes);
            for theta in out.samples.chunks_exact(t.dim()) {
                bma.add(t, theta, &data.test.x);
            }
            bma.scores(&data.test.y)
        }),
        lemma1_at_measured_rate: advice,
        warnings: warnings(
            config,
            (job.chains * job.ensembles) as u64 * job.iterations,
            stats.nonfinite_energies,
            out.sample_iterations.len(),
        ),
    }
}

/// Runs the command: on `backend`, or segment by segment on `cpu` with checkpoints.
/// `loaded` is [`load_config`] of `args`, read once by the caller (a configuration file
/// may be a pipe); a resumed run takes its configuration from the checkpoint instead.
pub fn run(
    args: &RunArgs,
    loaded: Result<RunConfig>,
    backend: &dyn Backend,
    cpu: &CpuBackend,
    json: bool,
    quiet: bool,
) -> Result<()> {
    let Start {
        config,
        every,
        saved,
        inputs,
        resumed,
    } = start(args, loaded)?;
    let policy = out_policy(args, &config);
    if let Some(e) = super::classifier_exact::refused(&config) {
        return Err(e.into());
    }
    if super::classifier_exact::applies(&config) {
        if every.is_some() {
            return Err(ConfigError::new(
                "checkpoint_every",
                "applies to the SGD targets; an exact classifier run has no checkpoints",
            )
            .into());
        }
        return super::classifier_exact::run(&config, &policy, args.strict, json, quiet);
    }
    if super::gaussian_path::applies(&config) {
        if every.is_some() {
            return Err(ConfigError::new(
                "checkpoint_every",
                "applies to the SGD targets; a gaussian-path run has no checkpoints",
            )
            .into());
        }
        return super::gaussian_path::run(&config, &policy, args.strict, json, quiet);
    }
    // Iterations this process runs (a resumed run starts at its checkpoint).
    let resumed_at = saved.as_ref().map_or(0, |s| s.iteration);
    let ckpt = checkpoint::path_for(&config.out);
    if every.is_some() && saved.is_none() {
        check_checkpoint_place(&ckpt, args.force)?;
    }
    let out_dir = OutDir::prepare(&config.out, &policy)?;
    let job = config.job(config.record())?;
    if let Some(s) = &saved {
        s.check(&job).map_err(|m| {
            ConfigError::new(
                "resume",
                format!(
                    "the checkpoint {} does not fit its run: {m}",
                    ckpt.display()
                ),
            )
        })?;
    }
    let footprint = footprint(&config, &job, every.is_some());
    if every.is_some() {
        nrpt_sampling::engine::memory::check(&footprint, nrpt_sampling::config::RUN_MEMORY_ADVICE)
            .map_err(|m| ConfigError::new("max_memory", m))?;
        // Temporary files of checkpoint writers that were killed.
        nrpt_sampling::output::temp::clean_file_temps(&ckpt);
    }
    let started = Instant::now();
    // The checkpoint on disk at the end, which this run wrote or resumed from: the only
    // file it removes once its outputs are in place.
    let mut own_checkpoint = resumed;
    let out = match every {
        None => super::run_job(backend, &job, "run", quiet)?,
        Some(every) => {
            let progress =
                crate::progress::Progress::new("run", job.iterations * job.ensembles as u64, quiet);
            if backend.name() != "cpu" && !quiet {
                note!("note: runs with checkpoints run on the CPU engine");
            }
            let plan = checkpoint::Plan {
                path: &ckpt,
                every,
                config: &config,
                inputs: &inputs,
            };
            let done =
                checkpoint::run(cpu, &job, saved, &plan, &|n| progress.inc(n)).map_err(|e| {
                    match e {
                        // Stopped by a signal with a checkpoint kept: say how to continue.
                        StudyError::Stopped(stopped) => checkpoint::InterruptedWithCheckpoint {
                            checkpoint: stopped.path.display().to_string(),
                            iteration: stopped.iteration,
                            out: config.out.display().to_string(),
                        }
                        .into(),
                        e => anyhow::Error::from(e),
                    }
                })?;
            progress.finish();
            own_checkpoint = done.seal.or(own_checkpoint);
            cpu.finish(&job, done.state)
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let summary = summarize(&config, &job, &out);
    let scale = job.target.energy_scale();
    write_outputs(
        out_dir.path(),
        &config,
        job.target.dim(),
        scale,
        &out,
        &summary,
    )?;
    let folder = out_dir.commit()?;
    // The outputs are complete: the checkpoint has served (removed only if it is still
    // the file this run wrote or resumed from).
    if let Some(seal) = own_checkpoint {
        checkpoint::remove_own(&ckpt, &seal);
    }
    let chain_steps_per_sec = (job.chains * job.ensembles) as f64
        * (job.iterations - resumed_at.min(job.iterations)) as f64
        / seconds;
    super::after_commit(&folder, || {
        report(
            &summary,
            &job,
            seconds,
            chain_steps_per_sec,
            footprint.total(),
            args.strict,
            json,
        )
    })
}

/// The memory of `nrpt run` for `job` (made from `config`): the run and its outputs
/// ([`RunConfig::footprint`]), and with checkpoints the encoding of one (written while
/// the state is held; on `--resume`, the file read and then decoded).
pub fn footprint(
    config: &RunConfig,
    job: &Job,
    checkpoints: bool,
) -> nrpt_sampling::engine::memory::Footprint {
    let mut f = config.footprint(job);
    if checkpoints {
        f.add_during(
            &[nrpt_sampling::engine::memory::Phase::Checkpointing],
            "checkpoint",
            nrpt_sampling::engine::memory::checkpoint(job),
        );
    }
    f
}

/// Prints the warnings and results of a run whose outputs are written, and applies
/// `--strict`.
fn report(
    summary: &Summary,
    job: &Job,
    seconds: f64,
    chain_steps_per_sec: f64,
    memory_estimate_bytes: u64,
    strict: bool,
    json: bool,
) -> Result<()> {
    let window = summary.window;
    let config = &summary.config;
    // Warnings are not notes: --quiet keeps them.
    for w in &summary.warnings {
        note!("warning: {w}");
    }
    if json {
        let report = RunReport {
            summary,
            seconds,
            chain_steps_per_sec,
            memory_estimate_bytes,
            peak_memory_bytes: nrpt_sampling::limits::peak_memory(),
        };
        say!("{}", nrpt_sampling::json::to_string(&report)?)?;
    } else {
        say!(
            "{} backend: {} ensembles × {} chains × {} iterations in {:.2} s",
            summary.backend,
            job.ensembles,
            job.chains,
            job.iterations,
            seconds
        )?;
        say!(
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
        )?;
        if let Some(a) = summary.lemma1_at_measured_rate
            && a.optimal_window != window
        {
            say!(
                "at the measured swap rate {:.3}, Lemma 1 recommends W = {} for P = {} (E[T] {:.0} \
                 iterations against {:.0} with W = {window})",
                a.measured_swap_rate,
                a.optimal_window,
                a.chains,
                a.expected_round_trip_optimal,
                a.expected_round_trip_used
            )?;
        }
        if let Some(s) = summary.classifier {
            say!(
                "test set: accuracy {:.2}%, NLL {:.4} per example, ECE {:.2}% (Bayesian model average of {} samples)",
                100.0 * s.accuracy,
                s.nll,
                100.0 * s.ece,
                s.samples
            )?;
        }
        if let Some(a) = summary.accuracy {
            say!(
                "accuracy: TV {:.3} on the 50×50 grid, {:.3} over the 25 modes, {:.1}% of samples outside",
                a.tv_distance,
                a.tv_modes,
                100.0 * a.outside_share
            )?;
        }
        say!("wrote {}", config.out.display())?;
    }
    super::warnings::strict_verdict(strict, &summary.warnings)
}
