//! The `nrpt` command: see `nrpt --help`.

use std::process::ExitCode;

use clap::Parser;
use nrpt::cli::{Cli, Command};
use nrpt::commands;
use nrpt::config::ConfigError;
use nrpt::engine::EngineError;
use nrpt::engine::cpu::{CpuBackend, Simd};

fn run(cli: &Cli) -> anyhow::Result<()> {
    if let Some(n) = cli.threads
        && n > 0
    {
        // One pool for everything the command runs in parallel.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global();
    }
    let cpu = || CpuBackend {
        threads: cli.threads,
        simd: Simd::Auto,
    };
    match &cli.command {
        Command::Window(a) => commands::window::run(a, cli.json),
        Command::Devices => commands::devices::run(cli.json),
        Command::Run(a) => {
            let backend =
                commands::select_backend(cli.backend, cli.device, cpu(), cli.quiet || cli.json)?;
            commands::run::run(a, backend.as_ref(), cli.json, cli.quiet)
        }
        Command::Reproduce(a) => {
            let backend =
                commands::select_backend(cli.backend, cli.device, cpu(), cli.quiet || cli.json)?;
            commands::reproduce::run(a, backend.as_ref(), cli.json, cli.quiet)
        }
        Command::Deep(a) => {
            let backend =
                commands::select_backend(cli.backend, cli.device, cpu(), cli.quiet || cli.json)?;
            commands::deep::run(a, backend.as_ref(), cli.json, cli.quiet)
        }
        Command::Scale(a) => match &a.action {
            Some(nrpt::cli::ScaleAction::Merge(m)) => commands::scale::merge(m, cli.json),
            None => {
                let backend = commands::select_backend(cli.backend, cli.device, cpu(), true)?;
                commands::scale::run(&a.sweep, backend.as_ref(), cli.json, cli.quiet)
            }
        },
        Command::Bench(a) if a.model == nrpt::cli::BenchModel::Bernoulli => {
            commands::bench::bernoulli(a, cli.json)
        }
        Command::Bench(a) if a.model == nrpt::cli::BenchModel::Mlp => {
            commands::bench::mlp(a, &cpu(), cli.json, cli.quiet)
        }
        Command::Bench(a) => {
            let backend: Box<dyn nrpt::engine::Backend> = if a.scalar {
                Box::new(CpuBackend {
                    threads: cli.threads,
                    simd: Simd::Scalar,
                })
            } else {
                commands::select_backend(cli.backend, cli.device, cpu(), cli.quiet || cli.json)?
            };
            commands::bench::run(a, backend.as_ref(), cli.threads, cli.json, cli.quiet)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    nrpt::interrupt::install();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if matches!(
                e.downcast_ref::<EngineError>(),
                Some(EngineError::Interrupted)
            ) || nrpt::interrupt::requested()
            {
                eprintln!("interrupted: nothing was written");
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
