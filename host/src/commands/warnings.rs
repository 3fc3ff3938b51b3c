//! What a run warns about (non-finite energies, no kept samples, settings without
//! effect), and `--strict`, which makes warnings an error once the outputs are written.

use serde::Serialize;

use nrpt_sampling::config::RunConfig;

/// Non-finite energies above this share of the chain-steps give a warning.
pub const NONFINITE_WARNING_SHARE: f64 = 0.01;

/// The warnings of a run (see [`Summary::warnings`](crate::commands::run::Summary::warnings)).
pub fn warnings(
    config: &RunConfig,
    chain_steps: u64,
    nonfinite: u64,
    samples: usize,
) -> Vec<String> {
    let mut w = Vec::new();
    let share = nonfinite as f64 / chain_steps.max(1) as f64;
    if share > NONFINITE_WARNING_SHARE {
        w.push(format!(
            "{nonfinite} energies were not finite ({:.1} per 100 chain-steps): the explorers \
             diverge (lower --eta-max or --noise); those replicas never swap",
            100.0 * share
        ));
    }
    if samples == 0 {
        w.push(format!(
            "no samples were kept: --warmup {} leaves none of the {} iterations (or --thin {} \
             is larger than what remains)",
            config.warmup, config.iterations, config.thin
        ));
    }
    for key in config.ignored_settings() {
        w.push(if !config.target.sgd() {
            format!(
                "--{} has no effect with target {} (exact tempering: MALA or HMC, Metropolis \
                 swaps, a β grid tuned to equal rejection)",
                key.replace('_', "-"),
                config.target
            )
        } else {
            format!(
                "--{} has no effect with target {} and explorer {}",
                key.replace('_', "-"),
                config.target,
                config.explorer.name()
            )
        });
    }
    w
}

/// `--strict` and a run with warnings: the outputs are written, the status is 1.
#[derive(Debug, thiserror::Error)]
#[error("--strict: the run gave {warnings} warning(s)")]
pub struct StrictError {
    /// How many.
    pub warnings: usize,
}

/// `--strict`'s verdict once the outputs are written: a [`StrictError`] when there are
/// warnings, else nothing.
pub(crate) fn strict_verdict(strict: bool, warnings: &[String]) -> anyhow::Result<()> {
    if strict && !warnings.is_empty() {
        return Err(StrictError {
            warnings: warnings.len(),
        }
        .into());
    }
    Ok(())
}

/// Reports a finished run whose outputs are written: its warnings on standard error
/// (kept by `--quiet`), then the summary as one JSON object with `seconds` (`json`) or
/// as `text`, then `--strict`'s verdict ([`strict_verdict`]).
pub(crate) fn report_summary<S: Serialize>(
    summary: &S,
    warnings: &[String],
    seconds: f64,
    (strict, json): (bool, bool),
    text: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    for w in warnings {
        note!("warning: {w}");
    }
    if json {
        #[derive(Serialize)]
        struct Report<'a, S> {
            #[serde(flatten)]
            summary: &'a S,
            seconds: f64,
        }
        say!(
            "{}",
            nrpt_sampling::json::to_string(&Report { summary, seconds })?
        )?;
    } else {
        text()?;
    }
    strict_verdict(strict, warnings)
}
