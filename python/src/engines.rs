//! The commands that run the sampler, with NumPy arrays and dicts instead of files:
//! `nrpt run`, `reproduce`, `deep` and `scale`. Each parses its flags with the command
//! line's parser, computes with the host library's compute-only functions (the same
//! that the command runs before it writes its folder), and releases the GIL meanwhile.

use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use nrpt::cli::{Command, EngineArgs};
use nrpt::commands::{self, gaussian_path};
use nrpt::config::RunConfig;
use nrpt::engine::cpu::{CpuBackend, Simd};
use nrpt::engine::{Backend, Job, RunOutput};
use nrpt_core::exact::GaussianPath;

use crate::config::parse;
use crate::convert::{array1, array2, array3, reshape2, to_dict};
use crate::errors::{command_error, value_error};
use crate::interrupt::interruptible;

/// Runs `f` in a pool of `threads` workers (rayon's default pool without one), as the
/// command's `--threads` does.
fn in_pool<T: Send>(
    threads: Option<usize>,
    f: impl FnOnce() -> anyhow::Result<T> + Send,
) -> anyhow::Result<T> {
    match threads {
        None => f(),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| anyhow::anyhow!("cannot start {n} threads: {e}"))?
            .install(f),
    }
}

/// The backend of `--backend`, `--device` and `--threads` (silent: the result says
/// which backend ran).
fn backend_of(e: &EngineArgs) -> anyhow::Result<Box<dyn Backend>> {
    let cpu = CpuBackend {
        threads: e.threads(),
        simd: Simd::Auto,
    };
    Ok(commands::select_backend(e.backend, e.device, cpu, true)?)
}

/// A finished `nrpt run`.
enum Ran {
    /// An SGD target: its configuration, job, output, summary and seconds.
    Sgd(Box<(RunConfig, Job, RunOutput, commands::run::Summary, f64)>),
    /// The gaussian path (exact tempering).
    Exact(Box<(RunConfig, gaussian_path::Computed)>),
}

/// `nrpt run` with the flags `argv`: the summary (as `summary.json`, flattened into
/// the dict) with arrays for what the files hold (samples, traces, ladders, counts).
#[pyfunction]
#[pyo3(signature = (argv, progress = false))]
pub fn run<'py>(
    py: Python<'py>,
    argv: Vec<String>,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let Command::Run(args) = parse("run", &argv)? else {
        return Err(value_error("not a run"));
    };
    if args.config.is_none() && args.resume.is_some() {
        return Err(value_error(
            "resume: a Python run writes no checkpoint to resume",
        ));
    }
    let quiet = !progress;
    let ran = interruptible(py, || {
        in_pool(args.engine.threads(), || {
            let config = commands::run::load_config(&args)?;
            if gaussian_path::applies(&config) {
                let c = gaussian_path::compute(&config, quiet)?;
                return Ok(Ran::Exact(Box::new((config, c))));
            }
            let job = config.job(commands::run::record_for(&config))?;
            let backend = backend_of(&args.engine)?;
            let started = Instant::now();
            let out = commands::run_job(backend.as_ref(), &job, "run", quiet)?;
            let seconds = started.elapsed().as_secs_f64();
            let summary = commands::run::summarize(&config, &job, &out);
            Ok(Ran::Sgd(Box::new((config, job, out, summary, seconds))))
        })
    })?
    .map_err(command_error)?;
    match ran {
        Ran::Sgd(b) => {
            let (config, job, out, summary, seconds) = *b;
            let d = sgd_result(py, &job, out, &summary, seconds)?;
            d.set_item("memory_estimate_bytes", config.footprint(&job).total())?;
            d.set_item("peak_memory_bytes", nrpt::limits::peak_memory())?;
            Ok(d)
        }
        Ran::Exact(b) => {
            let (config, c) = *b;
            exact_result(py, &config, &c)
        }
    }
}

fn sgd_result<'py>(
    py: Python<'py>,
    job: &Job,
    out: RunOutput,
    summary: &commands::run::Summary,
    seconds: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let d = to_dict(py, summary)?;
    let (p, e, dim) = (job.chains, out.ensembles.len(), job.target.dim());
    let scale = job.target.energy_scale();
    d.set_item("seconds", seconds)?;
    d.set_item(
        "chain_steps_per_sec",
        (p * e) as f64 * job.iterations as f64 / seconds,
    )?;
    let totals = out.total_stats();
    d.set_item("round_trips", totals.round_trips)?;
    d.set_item("authors_round_trips", totals.authors_round_trips)?;
    d.set_item("restarts", totals.restarts)?;
    // The summary's vectors as arrays.
    d.set_item(
        "final_ladder_mean",
        array1(py, summary.final_ladder_mean.clone()),
    )?;
    d.set_item(
        "final_ladder_sd",
        array1(py, summary.final_ladder_sd.clone()),
    )?;
    d.set_item("final_ladders", array2(py, &summary.final_ladders, p)?)?;
    d.set_item(
        "pair_indicator_rate",
        array1(py, summary.pair_indicator_rate.clone()),
    )?;
    d.set_item(
        "pair_executed_swap_rate",
        array1(py, summary.pair_executed_swap_rate.clone()),
    )?;
    // samples.npy: (samples, ensembles, D).
    let kept = out.sample_iterations.len();
    d.set_item("samples", array3(py, out.samples, (kept, e, dim))?)?;
    d.set_item("sample_iterations", array1(py, out.sample_iterations))?;
    // trace.csv and ladder.csv, in the configuration's units.
    let t = out.trace;
    let trace = PyDict::new(py);
    trace.set_item("iterations", array1(py, t.iterations))?;
    trace.set_item("round_trips", array1(py, t.round_trips))?;
    trace.set_item("authors_round_trips", array1(py, t.authors_round_trips))?;
    trace.set_item(
        "buffer",
        array1(py, t.buffer.iter().map(|b| b / scale).collect()),
    )?;
    trace.set_item("indicator_rate", array2(py, &t.indicator_rate, p - 1)?)?;
    let scaled = |rows: &[Vec<f64>]| -> Vec<Vec<f64>> {
        rows.iter()
            .map(|r| r.iter().map(|v| v * scale).collect())
            .collect()
    };
    trace.set_item("ladder", array2(py, &scaled(&t.ladder), p)?)?;
    trace.set_item("ladder_sd", array2(py, &scaled(&t.ladder_sd), p)?)?;
    d.set_item("trace", trace)?;
    // Every ensemble's counts and final state.
    let ens = PyDict::new(py);
    let column = |f: &dyn Fn(&nrpt::engine::EnsembleResult) -> u64| -> Vec<u64> {
        out.ensembles.iter().map(f).collect()
    };
    ens.set_item("round_trips", array1(py, column(&|r| r.stats.round_trips)))?;
    ens.set_item(
        "authors_round_trips",
        array1(py, column(&|r| r.stats.authors_round_trips)),
    )?;
    ens.set_item("restarts", array1(py, column(&|r| r.stats.restarts)))?;
    ens.set_item(
        "nonfinite_energies",
        array1(py, column(&|r| r.stats.nonfinite_energies)),
    )?;
    ens.set_item(
        "buffer",
        array1(py, out.ensembles.iter().map(|r| r.buffer / scale).collect()),
    )?;
    let pairs = |f: &dyn Fn(&nrpt_core::index::PairStats) -> u64| -> Vec<u64> {
        out.ensembles
            .iter()
            .flat_map(|r| r.pairs.iter().map(f))
            .collect()
    };
    ens.set_item(
        "pair_indicators",
        reshape2(py, pairs(&|s| s.indicators), (e, p - 1))?,
    )?;
    ens.set_item(
        "pair_attempts",
        reshape2(py, pairs(&|s| s.attempts), (e, p - 1))?,
    )?;
    ens.set_item("pair_swaps", reshape2(py, pairs(&|s| s.swaps), (e, p - 1))?)?;
    ens.set_item(
        "pair_nonfinite",
        reshape2(py, pairs(&|s| s.nonfinite), (e, p - 1))?,
    )?;
    let levels: Vec<f32> = out
        .ensembles
        .iter()
        .flat_map(|r| r.levels.iter().copied())
        .collect();
    ens.set_item("levels", array3(py, levels, (e, p, dim))?)?;
    d.set_item("ensembles", ens)?;
    Ok(d)
}

fn exact_result<'py>(
    py: Python<'py>,
    config: &RunConfig,
    c: &gaussian_path::Computed,
) -> PyResult<Bound<'py, PyDict>> {
    let d = to_dict(py, &c.summary)?;
    d.set_item("seconds", c.seconds)?;
    // lambda.csv: λ̂(β) and its closed form on 101 points.
    let path = GaussianPath::standard(config.dim).map_err(value_error)?;
    let betas: Vec<f64> = (0..=100).map(|i| f64::from(i) / 100.0).collect();
    let profile = c.outcome.profile(&betas);
    let lambda = PyDict::new(py);
    lambda.set_item("beta", array1(py, betas.clone()))?;
    lambda.set_item(
        "estimated",
        array1(py, profile.iter().map(|p| p.1).collect()),
    )?;
    lambda.set_item(
        "cumulative_estimated",
        array1(py, profile.iter().map(|p| p.2).collect()),
    )?;
    lambda.set_item(
        "closed_form",
        array1(py, betas.iter().map(|&b| path.local_barrier(b)).collect()),
    )?;
    lambda.set_item(
        "cumulative_closed_form",
        array1(
            py,
            betas.iter().map(|&b| path.cumulative_barrier(b)).collect(),
        ),
    )?;
    d.set_item("lambda_profile", lambda)?;
    Ok(d)
}

/// `nrpt reproduce` with the flags `argv`: `results.json` as a dict (no figures).
#[pyfunction]
#[pyo3(signature = (argv, progress = false))]
pub fn reproduce<'py>(
    py: Python<'py>,
    argv: Vec<String>,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let Command::Reproduce(args) = parse("reproduce", &argv)? else {
        return Err(value_error("not a reproduction"));
    };
    let results = interruptible(py, || {
        in_pool(args.engine.threads(), || {
            let s = commands::reproduce::settings(&args)?;
            let backend = backend_of(&args.engine)?;
            commands::reproduce::compute(s, backend.as_ref(), !progress)
        })
    })?
    .map_err(command_error)?;
    to_dict(py, &results)
}

/// `nrpt deep` with the flags `argv`: `results.json` as a dict (no figures).
#[pyfunction]
#[pyo3(signature = (argv, progress = false))]
pub fn deep<'py>(
    py: Python<'py>,
    argv: Vec<String>,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let Command::Deep(args) = parse("deep", &argv)? else {
        return Err(value_error("not a deep comparison"));
    };
    let report = interruptible(py, || {
        in_pool(args.engine.threads(), || {
            let backend = backend_of(&args.engine)?;
            let say = |what: &str| {
                if progress {
                    eprintln!("deep: {what}");
                }
            };
            commands::deep::compute(&args, backend.as_ref(), &say)
        })
    })?
    .map_err(command_error)?;
    to_dict(py, &report)
}

/// `nrpt scale` with the flags `argv`: `results.json` as a dict (no figures).
#[pyfunction]
#[pyo3(signature = (argv, progress = false))]
pub fn scale<'py>(
    py: Python<'py>,
    argv: Vec<String>,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let Command::Scale(args) = parse("scale", &argv)? else {
        return Err(value_error("not a scaling sweep"));
    };
    if args.action.is_some() {
        return Err(value_error(
            "`scale merge` joins result folders; from Python, run the sweep (or each shard) and join the dicts",
        ));
    }
    let sweep = &args.sweep;
    let results = interruptible(py, || {
        in_pool(sweep.engine.threads(), || {
            let backend = backend_of(&sweep.engine)?;
            commands::scale::compute(sweep, backend.as_ref(), !progress, &|_| {})
        })
    })?
    .map_err(command_error)?;
    to_dict(py, &results)
}
