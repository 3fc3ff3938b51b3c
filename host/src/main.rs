//! The `nrpt` command: see `nrpt --help`.

use std::process::ExitCode;

use clap::Parser;
use nrpt::cli::{Cli, Command, EngineArgs};
use nrpt::commands;
use nrpt::config::ConfigError;
use nrpt::engine::EngineError;
use nrpt::engine::cpu::{CpuBackend, Simd};

fn run(cli: &Cli) -> anyhow::Result<()> {
    let quiet = cli.quiet || cli.json;
    // The CPU engine of a command's --threads (and one pool for all the command runs in
    // parallel).
    let cpu = |e: &EngineArgs| {
        if let Some(n) = e.threads() {
            let _ = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build_global();
        }
        CpuBackend {
            threads: e.threads(),
            simd: Simd::Auto,
        }
    };
    let backend = |e: &EngineArgs, silent: bool| {
        commands::select_backend(e.backend, e.device, cpu(e), silent)
    };
    match &cli.command {
        Command::Window(a) => commands::window::run(a, cli.json),
        Command::Devices => commands::devices::run(cli.json),
        Command::Run(a) => {
            let b = backend(&a.engine, quiet)?;
            commands::run::run(a, b.as_ref(), &cpu(&a.engine), cli.json, cli.quiet)
        }
        Command::Reproduce(a) => {
            let b = backend(&a.engine, quiet)?;
            commands::reproduce::run(a, b.as_ref(), cli.json, cli.quiet)
        }
        Command::Deep(a) => {
            let b = backend(&a.engine, quiet)?;
            commands::deep::run(a, b.as_ref(), cli.json, cli.quiet)
        }
        Command::Scale(a) => match &a.action {
            Some(nrpt::cli::ScaleAction::Merge(m)) => commands::scale::merge(m, cli.json),
            None => {
                let b = backend(&a.sweep.engine, true)?;
                commands::scale::run(&a.sweep, b.as_ref(), cli.json, cli.quiet)
            }
        },
        Command::Bench(a) if a.model == nrpt::cli::BenchModel::Bernoulli => {
            cpu(&a.engine);
            commands::bench::bernoulli(a, cli.json)
        }
        Command::Bench(a) if a.model == nrpt::cli::BenchModel::Mlp => {
            commands::bench::mlp(a, &cpu(&a.engine), cli.json, cli.quiet)
        }
        Command::Bench(a) => {
            let b: Box<dyn nrpt::engine::Backend> = if a.scalar {
                Box::new(CpuBackend {
                    threads: a.engine.threads(),
                    simd: Simd::Scalar,
                })
            } else {
                backend(&a.engine, quiet)?
            };
            commands::bench::run(a, b.as_ref(), a.engine.threads(), cli.json, cli.quiet)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    nrpt::interrupt::install();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(w) = e.downcast_ref::<nrpt::checkpoint::InterruptedWithCheckpoint>() {
                eprintln!("{w}");
                return ExitCode::from(130);
            }
            if let Some(w) = e.downcast_ref::<nrpt::output::InterruptedWhileWriting>() {
                eprintln!("{w}");
                return ExitCode::from(130);
            }
            if matches!(
                e.downcast_ref::<EngineError>(),
                Some(EngineError::Interrupted)
            ) || nrpt::interrupt::requested()
            {
                eprintln!(
                    "interrupted (Ctrl-C or SIGTERM) before the outputs were complete: \
                     nothing was written; an existing output folder is as it was"
                );
                return ExitCode::from(130);
            }
            eprintln!("error: {e:#}");
            // Bad input (flags, configuration, data files) exits with 2.
            if e.downcast_ref::<ConfigError>().is_some()
                || e.downcast_ref::<nrpt::data::DataError>().is_some()
            {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
