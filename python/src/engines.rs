//! The commands that run the sampler, with NumPy arrays and dicts instead of files:
//! `nrpt run`, `reproduce`, `deep` and `scale`. Each parses its flags with the command
//! line's parser, computes with the host library's compute-only functions (the same
//! that the command runs before it writes its folder), and releases the GIL meanwhile.

use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use nrpt::cli::{Command, EngineArgs};
use nrpt::commands::{self, gaussian_path};
use nrpt_core::exact::GaussianPath;
use nrpt_sampling::config::{MathKind, PrecisionKind, RunConfig};
use nrpt_sampling::engine::cpu::{CpuBackend, Simd};
use nrpt_sampling::engine::{Backend, Job, RunOutput};
use nrpt_sampling::output::{OutDir, OutPolicy};

use crate::config::parse;
use crate::convert::{add_outputs, lists_to_arrays, to_dict};
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

/// The backend of `--backend`, `--device` and `--threads`, its kernels under `math`
/// (`--math`; exact when not given) and its states stored as `precision` says
/// (`--precision`) (silent: the result says which backend ran).
fn backend_of(
    e: &EngineArgs,
    math: Option<MathKind>,
    precision: PrecisionKind,
) -> anyhow::Result<Box<dyn Backend>> {
    let cpu = CpuBackend {
        threads: e.threads(),
        simd: Simd::Auto,
        fast_math: false,
    };
    commands::select_backend(
        e.backend,
        e.device,
        cpu,
        true,
        math.unwrap_or_default(),
        precision,
    )
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
            // Chosen first, as the command chooses it: a storage the engine cannot
            // keep is refused whatever the target.
            let backend = backend_of(&args.engine, Some(config.math), config.precision)?;
            if gaussian_path::applies(&config) {
                let c = gaussian_path::compute(&config, quiet)?;
                return Ok(Ran::Exact(Box::new((config, c))));
            }
            let job = config.job(config.record())?;
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
            let d = sgd_result(py, &config, &job, out, &summary, seconds)?;
            d.set_item("memory_estimate_bytes", config.footprint(&job).total())?;
            d.set_item("peak_memory_bytes", nrpt_sampling::limits::peak_memory())?;
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
    config: &RunConfig,
    job: &Job,
    out: RunOutput,
    summary: &commands::run::Summary,
    seconds: f64,
) -> PyResult<Bound<'py, PyDict>> {
    // The summary (its vectors as arrays), then what the files hold, from the one
    // description the command writes them from.
    let d = to_dict(py, summary)?;
    let json = nrpt_sampling::json::to_value(summary).map_err(value_error)?;
    lists_to_arrays(py, &d, &json)?;
    let (p, e) = (job.chains, out.ensembles.len());
    d.set_item("seconds", seconds)?;
    d.set_item(
        "chain_steps_per_sec",
        (p * e) as f64 * job.iterations as f64 / seconds,
    )?;
    let set = commands::run::outputs(
        config,
        job.target.dim(),
        job.target.energy_scale(),
        &out,
        summary,
    );
    add_outputs(py, &d, set)?;
    Ok(d)
}

fn exact_result<'py>(
    py: Python<'py>,
    config: &RunConfig,
    c: &gaussian_path::Computed,
) -> PyResult<Bound<'py, PyDict>> {
    let d = to_dict(py, &c.summary)?;
    d.set_item("seconds", c.seconds)?;
    // What lambda.csv, grid.csv and rounds.csv hold, from the description the command
    // writes them from.
    let path = GaussianPath::standard(config.dim).map_err(value_error)?;
    let closed = |b: f64| (path.local_barrier(b), path.cumulative_barrier(b));
    let (set, _) = nrpt_studies::exact::tables::outputs(&c.outcome, Some(&closed));
    add_outputs(py, &d, set)?;
    Ok(d)
}

/// `nrpt reproduce` with the flags `argv`: `results.json` as a dict. With `write`, the
/// command's folder (`--out`, figures included) is written as the command writes it,
/// and `out` in the dict names it; without, nothing is written (no figures).
#[pyfunction]
#[pyo3(signature = (argv, progress = false, write = false))]
pub fn reproduce<'py>(
    py: Python<'py>,
    argv: Vec<String>,
    progress: bool,
    write: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let Command::Reproduce(args) = parse("reproduce", &argv)? else {
        return Err(value_error("not a reproduction"));
    };
    let (results, folder) = interruptible(py, || {
        in_pool(args.engine.threads(), || {
            let s = commands::reproduce::settings(&args)?;
            let out = if write {
                Some(OutDir::prepare(
                    &args.out,
                    &policy("reproduce", args.force, Vec::new()),
                )?)
            } else {
                None
            };
            let backend = backend_of(&args.engine, args.math, PrecisionKind::F32)?;
            match out {
                None => Ok((
                    commands::reproduce::compute(s, args.shard, backend.as_ref(), !progress)?,
                    None,
                )),
                Some(out) => {
                    let r = commands::reproduce::reproduce(
                        s,
                        args.shard,
                        out.path(),
                        backend.as_ref(),
                        !progress,
                    )?;
                    Ok((r, Some(out.commit()?)))
                }
            }
        })
    })?
    .map_err(command_error)?;
    let d = to_dict(py, &results)?;
    set_out(&d, folder)?;
    Ok(d)
}

/// The policy of a command's output folder, as the command line's.
fn policy(command: &'static str, force: bool, inputs: Vec<std::path::PathBuf>) -> OutPolicy {
    OutPolicy {
        command,
        force,
        inputs,
    }
}

/// `out`: the folder written (`None` when nothing was).
fn set_out(d: &Bound<'_, PyDict>, folder: Option<std::path::PathBuf>) -> PyResult<()> {
    let shown = folder.map(|f| f.display().to_string());
    d.set_item("out", shown)
}

/// `nrpt deep` with the flags `argv`: `results.json` as a dict; with `write`, the
/// command's folder too (as [`reproduce`]).
#[pyfunction]
#[pyo3(signature = (argv, progress = false, write = false))]
pub fn deep<'py>(
    py: Python<'py>,
    argv: Vec<String>,
    progress: bool,
    write: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let Command::Deep(args) = parse("deep", &argv)? else {
        return Err(value_error("not a deep comparison"));
    };
    if args.action.is_some() {
        return Err(value_error(
            "`deep merge` joins shard folders; run it on the command line",
        ));
    }
    // The command line that computes the same (not the Python interpreter's).
    let command = format!("nrpt deep {}", argv.join(" "));
    let (report, folder) = interruptible(py, || {
        in_pool(args.engine.threads(), || {
            let out = if write {
                commands::deep::settings(&args, 1.0)?;
                let mut inputs = args.data.files();
                inputs.extend(args.reference.clone());
                Some(OutDir::prepare(
                    &args.out,
                    &policy("deep", args.force, inputs),
                )?)
            } else {
                None
            };
            let backend = backend_of(&args.engine, args.math, PrecisionKind::F32)?;
            let say = |what: &str| {
                if progress {
                    eprintln!("deep: {what}");
                }
            };
            let (report, shard) =
                commands::deep::compute_with_records(&args, backend.as_ref(), &say)?;
            let report = nrpt_studies::deep::experiment::Report { command, ..report };
            let folder = match out {
                None => None,
                Some(out) => {
                    if let Some(files) = &shard {
                        commands::deep::write_shard(out.path(), files)?;
                    }
                    commands::deep::write_outputs(out.path(), &report)?;
                    Some(out.commit()?)
                }
            };
            Ok((report, folder))
        })
    })?
    .map_err(command_error)?;
    let d = to_dict(py, &report)?;
    set_out(&d, folder)?;
    Ok(d)
}

/// `nrpt scale` with the flags `argv`: `results.json` as a dict; with `write`, the
/// command's folder too (as [`reproduce`]).
#[pyfunction]
#[pyo3(signature = (argv, progress = false, write = false))]
pub fn scale<'py>(
    py: Python<'py>,
    argv: Vec<String>,
    progress: bool,
    write: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let Command::Scale(args) = parse("scale", &argv)? else {
        return Err(value_error("not a scaling sweep"));
    };
    if args.action.is_some() {
        return Err(value_error(
            "`scale merge` joins result folders; from Python, run the sweep (or each part) and join the dicts",
        ));
    }
    let sweep = &args.sweep;
    let (results, folder) = interruptible(py, || {
        in_pool(sweep.engine.threads(), || {
            let out = if write {
                let inputs = sweep.rates_file.iter().cloned().collect();
                Some(OutDir::prepare(
                    &sweep.out,
                    &policy("scale", sweep.force, inputs),
                )?)
            } else {
                None
            };
            let backend = backend_of(&sweep.engine, sweep.math, PrecisionKind::F32)?;
            let results = commands::scale::compute(sweep, backend.as_ref(), !progress, &|_| {})?;
            let folder = match out {
                None => None,
                Some(out) => {
                    commands::scale::write_outputs(out.path(), &results)?;
                    Some(out.commit()?)
                }
            };
            Ok((results, folder))
        })
    })?
    .map_err(command_error)?;
    let d = to_dict(py, &results)?;
    set_out(&d, folder)?;
    Ok(d)
}
