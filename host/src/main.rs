//! The `nrpt` command: see `nrpt --help`.

use std::process::ExitCode;

use nrpt::cli::{Cli, Command, EngineArgs, MAX_THREADS};
use nrpt::commands;
use nrpt::errors::{all, find};
use nrpt_sampling::config::{MathKind, PrecisionKind};
use nrpt_sampling::console::StdoutError;
use nrpt_sampling::engine::EngineError;
use nrpt_sampling::engine::cpu::{CpuBackend, Simd};
use nrpt_sampling::limits::Limits;
use nrpt_sampling::output::{Committed, OutputError};

/// The worker threads of the global pool: `--threads`, else `RAYON_NUM_THREADS` (held to
/// the same bound as `--threads`, with a note), else one per core.
fn thread_count(flag: Option<usize>, quiet: bool) -> usize {
    if let Some(n) = flag {
        return n;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match std::env::var("RAYON_NUM_THREADS")
        .ok()
        .map(|v| v.trim().parse::<usize>())
    {
        Some(Ok(n)) if (1..=MAX_THREADS).contains(&n) => n,
        Some(Ok(0)) | None => cores.min(MAX_THREADS),
        Some(_) => {
            let n = cores.min(MAX_THREADS);
            if !quiet {
                nrpt_sampling::note!(
                    "note: RAYON_NUM_THREADS is not a thread count from 1 to {MAX_THREADS}: \
                     using {n} threads"
                );
            }
            n
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    let quiet = cli.quiet || cli.json;
    // The CPU engine of a command's --threads, and one global pool of that size (what
    // rayon would otherwise size from RAYON_NUM_THREADS, without a bound).
    let cpu = |e: &EngineArgs| {
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(thread_count(e.threads(), quiet))
            .build_global();
        CpuBackend {
            threads: e.threads(),
            simd: Simd::Auto,
            fast_math: false,
        }
    };
    let backend_storing = |e: &EngineArgs, math: Option<MathKind>, silent, precision| {
        commands::select_backend(
            e.backend,
            e.device,
            cpu(e),
            silent,
            math.unwrap_or_default(),
            precision,
        )
    };
    let backend = |e: &EngineArgs, math: Option<MathKind>, silent: bool| {
        backend_storing(e, math, silent, PrecisionKind::F32)
    };
    match &cli.command {
        Command::Window(a) => commands::window::run(a, cli.json),
        Command::Devices => commands::devices::run(cli.json),
        Command::Run(a) => {
            // The kernels' math from the configuration (file and --math); a
            // configuration that does not load is reported by the command itself.
            // Read once (a configuration file may be a pipe).
            let loaded = commands::run::load_config(a);
            let math = loaded.as_ref().ok().map(|c| c.math);
            let precision = loaded.as_ref().map_or(PrecisionKind::F32, |c| c.precision);
            let b = backend_storing(&a.engine, math, quiet, precision)?;
            commands::run::run(a, loaded, b.as_ref(), &cpu(&a.engine), cli.json, cli.quiet)
        }
        Command::Reproduce(a) => match &a.action {
            Some(nrpt::cli::ReproduceAction::Merge(m)) => commands::reproduce::merge(m, cli.json),
            None => {
                let b = backend(&a.engine, a.math, quiet)?;
                commands::reproduce::run(a, b.as_ref(), cli.json, cli.quiet)
            }
        },
        Command::Deep(a) => match &a.action {
            Some(nrpt::cli::DeepAction::Merge(m)) => commands::deep::merge(m, cli.json),
            None => {
                let b = backend(&a.engine, a.math, quiet)?;
                commands::deep::run(a, b.as_ref(), cli.json, cli.quiet)
            }
        },
        Command::Reference(a) => {
            cpu(&EngineArgs {
                threads: a.threads,
                ..EngineArgs::default()
            });
            commands::reference::run(a, cli.json, cli.quiet)
        }
        Command::Scale(a) => match &a.action {
            Some(nrpt::cli::ScaleAction::Merge(m)) => commands::scale::merge(m, cli.json),
            None => {
                let b = backend(&a.sweep.engine, a.sweep.math, true)?;
                commands::scale::run(&a.sweep, b.as_ref(), cli.json, cli.quiet)
            }
        },
        Command::Bench(a) if a.target == nrpt::cli::BenchTarget::Bernoulli => {
            cpu(&a.engine);
            commands::bench::bernoulli(a, cli.json)
        }
        Command::Bench(a) if a.target == nrpt::cli::BenchTarget::Classifier => {
            commands::bench::mlp(a, &cpu(&a.engine), cli.json, cli.quiet)
        }
        Command::Bench(a) => {
            let b: Box<dyn nrpt_sampling::engine::Backend> = if a.scalar {
                Box::new(CpuBackend {
                    threads: a.engine.threads(),
                    simd: Simd::Scalar,
                    fast_math: false,
                })
            } else {
                backend(&a.engine, a.math, quiet)?
            };
            commands::bench::run(a, b.as_ref(), a.engine.threads(), cli.json, cli.quiet)
        }
    }
}

/// Whether `e` or anything it wraps is an `E`.
fn main() -> ExitCode {
    nrpt_sampling::engine::memory::return_freed_memory();
    let cli = match nrpt::cli::try_parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        // Help, version and usage errors: clap's text and status (0 or 2), or 1 (141 for
        // a closed pipe) when the text cannot be written.
        Err(e) => {
            return match e.print() {
                Ok(()) => ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)),
                Err(io) if io.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(141),
                Err(_) => ExitCode::FAILURE,
            };
        }
    };
    if !cli.quiet {
        for n in &cli.notes {
            nrpt_sampling::note!("{n}");
        }
    }
    nrpt_sampling::interrupt::install();
    let defaults = Limits::default();
    nrpt_sampling::limits::set(Limits {
        max_memory: cli.max_memory.unwrap_or(defaults.max_memory),
        allow_special_files: cli.allow_special_files,
    });
    let Err(e) = run(&cli) else {
        return ExitCode::SUCCESS;
    };
    // After the outputs were put in place: the message says so, never "nothing was
    // written".
    if let Some(Committed(folder)) = e.downcast_ref::<Committed>() {
        let cause: Vec<String> = e.chain().skip(1).map(|c| c.to_string()).collect();
        if e.chain().any(|c| {
            c.downcast_ref::<StdoutError>()
                .is_some_and(StdoutError::is_broken_pipe)
        }) {
            // The reader went away (`| head`): nothing to report, the usual status.
            return ExitCode::from(141);
        }
        nrpt_sampling::note!(
            "error: {}; the outputs are complete in {}",
            cause.join(": "),
            folder.display()
        );
        return ExitCode::FAILURE;
    }
    if let Some(w) = e.downcast_ref::<nrpt_studies::checkpoint::InterruptedWithCheckpoint>() {
        nrpt_sampling::note!("{w}");
        return ExitCode::from(130);
    }
    if let Some(w) = all::<OutputError>(&e).find(|o| o.is_interrupted()) {
        nrpt_sampling::note!("{w}");
        return ExitCode::from(130);
    }
    if matches!(find::<EngineError>(&e), Some(EngineError::Interrupted))
        || nrpt_sampling::interrupt::requested()
    {
        nrpt_sampling::note!(
            "interrupted (Ctrl-C or SIGTERM) before the outputs were complete: \
             nothing was written; an existing output folder is as it was"
        );
        return ExitCode::from(130);
    }
    if e.chain().any(|c| {
        c.downcast_ref::<StdoutError>()
            .is_some_and(StdoutError::is_broken_pipe)
    }) {
        return ExitCode::from(141);
    }
    nrpt_sampling::note!("error: {e:#}");
    // Bad input (flags, configuration, data files, a reference posterior, ...) exits with 2.
    if nrpt::errors::is_bad_input(&e) {
        ExitCode::from(2)
    } else {
        ExitCode::FAILURE
    }
}
