//! Python keyword arguments reach the engines as the command line's flags: parsed by
//! the command's own parser (clap) and validated by its own code, so a Python caller
//! gets the same defaults, the same checks and the same messages.

use pyo3::prelude::*;

use nrpt::cli::Command;
use nrpt_sampling::config::RunConfig;

use crate::errors::{command_error, parse_error, value_error};

/// Parses `nrpt <command> <argv…>`.
pub fn parse(command: &str, argv: &[String]) -> PyResult<Command> {
    let args = ["nrpt", command]
        .into_iter()
        .map(String::from)
        .chain(argv.iter().cloned());
    let cli = nrpt::cli::try_parse_from(args).map_err(|e| parse_error(&e))?;
    Ok(cli.command)
}

/// The configuration of `nrpt run <argv…>`: defaults of the target, then the flags.
pub fn run_config(argv: &[String]) -> PyResult<RunConfig> {
    match parse("run", argv)? {
        Command::Run(args) => nrpt::commands::run::load_config(&args).map_err(command_error),
        _ => Err(value_error("not a run configuration")),
    }
}

/// The long flags of a command (`run`, `reproduce`, `deep`, `scale`, `window`) and
/// whether each takes a value (`False`: a switch such as `quick`), as
/// `{"swap-rate": True, …}`; the global `json`, `quiet`, `help` and `version` left out.
#[pyfunction]
pub fn flags(command: &str) -> PyResult<Vec<(String, bool)>> {
    let mut cli = nrpt::cli::command();
    cli.build();
    let sub = cli
        .find_subcommand(command)
        .ok_or_else(|| value_error(format!("no command `{command}`")))?;
    Ok(sub
        .get_arguments()
        .filter_map(|a| {
            let long = a.get_long()?;
            let global = matches!(long, "json" | "quiet" | "help" | "version");
            (!global).then(|| (long.to_string(), a.get_action().takes_values()))
        })
        .collect())
}
