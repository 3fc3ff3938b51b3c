//! The tables of an exact tempering run, for any path: `lambda.csv` (λ̂(β) and Λ̂(β) on a
//! grid of β, beside the closed forms where the path has them), `grid.csv` (by level:
//! β, the explorer's step and acceptance, the pair's rejection and swap rates) and
//! `rounds.csv` (by round: Λ̂, log Z, round trips), each a mean over ensembles. What
//! `nrpt run --target gaussian-path` writes beside `summary.json`, and what a program
//! running its own path through [`super::run_path`] can write the same way
//! (`host/examples/own_path.rs`).

use std::path::Path;

use anyhow::Result;
use nrpt_core::exact::{PairRecord, RoundReport};

use super::{EnsembleOutcome, ExactOutcome, log_z_mean};
use crate::output::Csv;

/// Points of β in [0, 1] where `lambda.csv` gives λ̂(β) and Λ̂(β).
pub const PROFILE_POINTS: usize = 101;

/// A path's closed forms at β: (λ(β), Λ(β)).
pub type ClosedProfile<'a> = &'a dyn Fn(f64) -> (f64, f64);

/// Writes `lambda.csv`, `grid.csv` and `rounds.csv` of `out` into `dir`; `lambda.csv`
/// has the columns `lambda_closed_form` and `cumulative_closed_form` when `closed` gives
/// the path's closed forms. Returns the estimated profile (β, λ̂(β), Λ̂(β)) at the
/// [`PROFILE_POINTS`] of `lambda.csv`.
///
/// # Errors
///
/// A file that cannot be written.
pub fn write(
    dir: &Path,
    out: &ExactOutcome,
    closed: Option<ClosedProfile<'_>>,
) -> Result<Vec<(f64, f64, f64)>> {
    let betas: Vec<f64> = (0..PROFILE_POINTS)
        .map(|i| i as f64 / (PROFILE_POINTS - 1) as f64)
        .collect();
    let profile = out.profile(&betas);
    let mut header = vec!["beta", "lambda_estimated"];
    if closed.is_some() {
        header.push("lambda_closed_form");
    }
    header.push("cumulative_estimated");
    if closed.is_some() {
        header.push("cumulative_closed_form");
    }
    let mut csv = Csv::new(&header);
    for &(b, local, cumulative) in &profile {
        let mut row = vec![format!("{b:.4}"), format!("{local:.6e}")];
        let cf = closed.map(|f| f(b));
        if let Some((l, _)) = cf {
            row.push(format!("{l:.6e}"));
        }
        row.push(format!("{cumulative:.6e}"));
        if let Some((_, c)) = cf {
            row.push(format!("{c:.6e}"));
        }
        csv.row(row);
    }
    csv.write(&dir.join("lambda.csv"))?;
    write_grid_and_rounds(dir, out)?;
    Ok(profile)
}

/// `grid.csv` and `rounds.csv`: the grid and the per-level and per-pair records of the
/// measurement round, and every round's estimates, mean over ensembles.
fn write_grid_and_rounds(dir: &Path, out: &ExactOutcome) -> Result<()> {
    let e = out.ensembles.len() as f64;
    let chains = out.chains;
    let mean = |f: &dyn Fn(&EnsembleOutcome) -> f64| -> f64 {
        out.ensembles.iter().map(f).sum::<f64>() / e
    };
    let mut csv = Csv::new(&[
        "level",
        "beta",
        "explorer_step",
        "explorer_acceptance",
        "pair_rejection_rate",
        "pair_swap_rate",
    ]);
    for l in 0..chains {
        let pair = |f: fn(&PairRecord) -> f64| {
            if l + 1 < chains {
                format!("{:.6}", mean(&|en| f(&en.pairs[l])))
            } else {
                String::new()
            }
        };
        csv.row([
            l.to_string(),
            format!("{:.6}", mean(&|en| en.betas[l])),
            format!("{:.6e}", mean(&|en| en.levels[l].step_size())),
            format!("{:.4}", mean(&|en| en.levels[l].acceptance_rate())),
            pair(PairRecord::rejection_rate),
            pair(|p| {
                if p.attempts() == 0 {
                    f64::NAN
                } else {
                    p.accepted() as f64 / p.attempts() as f64
                }
            }),
        ]);
    }
    csv.write(&dir.join("grid.csv"))?;
    let rounds = out.ensembles.first().map_or(0, |en| en.rounds.len());
    let mut csv = Csv::new(&[
        "round",
        "iterations",
        "lambda",
        "log_z",
        "log_z_se",
        "log_z_forward",
        "log_z_reverse",
        "round_trips_per_1000",
        "explorer_acceptance",
        "grid_adapted",
    ]);
    for r in 0..rounds {
        let m = |f: &dyn Fn(&RoundReport) -> f64| mean(&|en| f(&en.rounds[r]));
        let first = &out.ensembles[0].rounds[r];
        let se = |f: fn(&RoundReport) -> f64| {
            out.ensembles
                .iter()
                .map(|en| f(&en.rounds[r]).powi(2))
                .sum::<f64>()
                .sqrt()
                / e
        };
        let forward = (
            m(&|x| x.log_normalizer.value),
            se(|x| x.log_normalizer.standard_error),
        );
        let reverse = (
            m(&|x| x.log_normalizer_reverse.value),
            se(|x| x.log_normalizer_reverse.standard_error),
        );
        let (log_z, log_z_se) = log_z_mean(forward, reverse);
        csv.row([
            r.to_string(),
            first.iterations.to_string(),
            format!("{:.6}", m(&|x| x.global_barrier)),
            format!("{log_z:.6}"),
            format!("{log_z_se:.6}"),
            format!("{:.6}", forward.0),
            format!("{:.6}", reverse.0),
            format!(
                "{:.3}",
                m(&|x| 1000.0 * x.round_trips as f64 / x.iterations as f64)
            ),
            format!("{:.4}", m(&|x| x.explorer_acceptance)),
            first.grid_adapted.to_string(),
        ]);
    }
    csv.write(&dir.join("rounds.csv"))?;
    Ok(())
}
