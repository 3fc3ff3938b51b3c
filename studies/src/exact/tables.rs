//! The tables of an exact tempering run, for any path: `lambda.csv` (λ̂(β) and Λ̂(β) on a
//! grid of β, beside the closed forms where the path has them), `grid.csv` (by level:
//! β, the explorer's step and acceptance, the pair's rejection and swap rates) and
//! `rounds.csv` (by round: Λ̂, log Z, round trips), each a mean over ensembles; on the
//! stabilized ladder those are the variational leg's, `lambda.csv` adds the fixed leg's
//! profile and `fixed-leg-grid.csv` and `fixed-leg-rounds.csv` hold its records. What
//! `nrpt run --target gaussian-path` writes beside `summary.json`, and what a program
//! running its own path through [`super::run_path`] can write the same way
//! (`host/examples/own_path.rs`).

use std::path::Path;

use crate::error::Result;
use nrpt_core::exact::{PairRecord, RoundReport};

use super::{EnsembleOutcome, ExactOutcome, log_z_mean};
use nrpt_sampling::output::{Cell, Column, OutputSet, Table, Values};

/// Points of β in [0, 1] where `lambda.csv` gives λ̂(β) and Λ̂(β).
pub const PROFILE_POINTS: usize = 101;

/// A path's closed forms at β: (λ(β), Λ(β)).
pub(crate) type ClosedProfile<'a> = &'a dyn Fn(f64) -> (f64, f64);

/// The three tables of `out`, described once: the files `lambda.csv` (Python's
/// `lambda_profile`), `grid.csv` (`grid`) and `rounds.csv` (`rounds`). `lambda.csv` has
/// the columns `lambda_closed_form` and `cumulative_closed_form` when `closed` gives the
/// path's closed forms. Also returns the estimated profile (β, λ̂(β), Λ̂(β)) at the
/// [`PROFILE_POINTS`] of `lambda.csv`.
pub fn outputs(
    out: &ExactOutcome,
    closed: Option<ClosedProfile<'_>>,
) -> (OutputSet, Vec<(f64, f64, f64)>) {
    let betas: Vec<f64> = (0..PROFILE_POINTS)
        .map(|i| i as f64 / (PROFILE_POINTS - 1) as f64)
        .collect();
    let profile = out.profile(&betas);
    let sci = |v: Vec<f64>| Values::F64(v, Cell::Sci(6));
    let mut columns = vec![
        Column::new("beta", Values::F64(betas.clone(), Cell::Fixed(4))),
        Column::new(
            "lambda_estimated",
            sci(profile.iter().map(|p| p.1).collect()),
        ),
    ];
    let forms: Option<Vec<(f64, f64)>> = closed.map(|f| betas.iter().map(|&b| f(b)).collect());
    if let Some(f) = &forms {
        columns.push(Column::new(
            "lambda_closed_form",
            sci(f.iter().map(|c| c.0).collect()),
        ));
    }
    columns.push(Column::new(
        "cumulative_estimated",
        sci(profile.iter().map(|p| p.2).collect()),
    ));
    if let Some(f) = &forms {
        columns.push(Column::new(
            "cumulative_closed_form",
            sci(f.iter().map(|c| c.1).collect()),
        ));
    }
    // The stabilized ladder: `*_estimated` are the variational leg's, and the fixed leg's
    // profile follows.
    let leg = out.fixed_leg.as_deref();
    if let Some(leg) = leg {
        let fixed = leg.profile(&betas);
        columns.push(Column::new(
            "lambda_fixed_leg",
            sci(fixed.iter().map(|p| p.1).collect()),
        ));
        columns.push(Column::new(
            "cumulative_fixed_leg",
            sci(fixed.iter().map(|p| p.2).collect()),
        ));
    }
    let lambda = Table {
        name: "lambda_profile",
        file: Some("lambda.csv"),
        in_python: true,
        columns,
    };
    let mut tables = vec![lambda, grid(out), rounds(out)];
    if let Some(leg) = leg {
        tables.push(Table {
            name: "fixed_leg_grid",
            file: Some("fixed-leg-grid.csv"),
            in_python: false,
            ..grid(leg)
        });
        tables.push(Table {
            name: "fixed_leg_rounds",
            file: Some("fixed-leg-rounds.csv"),
            in_python: false,
            ..rounds(leg)
        });
    }
    let set = OutputSet {
        tables,
        ..OutputSet::default()
    };
    (set, profile)
}

/// Writes `lambda.csv`, `grid.csv` and `rounds.csv` of `out` into `dir` ([`outputs`]);
/// returns the estimated profile.
///
/// # Errors
///
/// A file that cannot be written.
pub fn write(
    dir: &Path,
    out: &ExactOutcome,
    closed: Option<ClosedProfile<'_>>,
) -> Result<Vec<(f64, f64, f64)>> {
    let (set, profile) = outputs(out, closed);
    set.write(dir)?;
    Ok(profile)
}

/// The mean over ensembles of `f`.
fn mean_of(out: &ExactOutcome, f: &dyn Fn(&EnsembleOutcome) -> f64) -> f64 {
    out.ensembles.iter().map(f).sum::<f64>() / out.ensembles.len() as f64
}

/// `grid.csv`: the grid and the per-level and per-pair records of the measurement round,
/// mean over ensembles; the pair columns are empty at the top level (no pair above it).
fn grid(out: &ExactOutcome) -> Table {
    let chains = out.chains;
    let by_level = |f: &dyn Fn(&EnsembleOutcome, usize) -> f64| -> Vec<f64> {
        (0..chains).map(|l| mean_of(out, &|en| f(en, l))).collect()
    };
    let by_pair = |f: fn(&PairRecord) -> f64| -> Vec<f64> {
        (0..chains)
            .map(|l| {
                if l + 1 < chains {
                    mean_of(out, &|en| f(&en.pairs[l]))
                } else {
                    f64::NAN
                }
            })
            .collect()
    };
    let swap_rate = |p: &PairRecord| {
        if p.attempts() == 0 {
            f64::NAN
        } else {
            p.accepted() as f64 / p.attempts() as f64
        }
    };
    Table {
        name: "grid",
        file: Some("grid.csv"),
        in_python: true,
        columns: vec![
            Column::new("level", Values::U64((0..chains as u64).collect())),
            Column::new(
                "beta",
                Values::F64(by_level(&|en, l| en.betas[l]), Cell::Fixed(6)),
            ),
            Column::new(
                "explorer_step",
                Values::F64(by_level(&|en, l| en.levels[l].step_size()), Cell::Sci(6)),
            ),
            Column::new(
                "explorer_acceptance",
                Values::F64(
                    by_level(&|en, l| en.levels[l].acceptance_rate()),
                    Cell::Fixed(4),
                ),
            ),
            Column::new(
                "pair_rejection_rate",
                Values::F64(by_pair(PairRecord::rejection_rate), Cell::FixedOrBlank(6)),
            ),
            Column::new(
                "pair_swap_rate",
                Values::F64(by_pair(swap_rate), Cell::FixedOrBlank(6)),
            ),
        ],
    }
}

/// `rounds.csv`: every round's estimates, mean over ensembles.
fn rounds(out: &ExactOutcome) -> Table {
    let e = out.ensembles.len() as f64;
    let count = out.ensembles.first().map_or(0, |en| en.rounds.len());
    let mut rows = RoundColumns::default();
    for r in 0..count {
        let m = |f: &dyn Fn(&RoundReport) -> f64| mean_of(out, &|en| f(&en.rounds[r]));
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
        rows.round.push(r as u64);
        rows.iterations.push(first.iterations);
        rows.lambda.push(m(&|x| x.global_barrier));
        rows.log_z.push(log_z);
        rows.log_z_se.push(log_z_se);
        rows.forward.push(forward.0);
        rows.reverse.push(reverse.0);
        rows.trips
            .push(m(&|x| 1000.0 * x.round_trips as f64 / x.iterations as f64));
        rows.acceptance.push(m(&|x| x.explorer_acceptance));
        rows.adapted.push(first.grid_adapted);
    }
    let fixed = |v: Vec<f64>, n: usize| Values::F64(v, Cell::Fixed(n));
    Table {
        name: "rounds",
        file: Some("rounds.csv"),
        in_python: true,
        columns: vec![
            Column::new("round", Values::U64(rows.round)),
            Column::new("iterations", Values::U64(rows.iterations)),
            Column::new("lambda", fixed(rows.lambda, 6)),
            Column::new("log_z", fixed(rows.log_z, 6)),
            Column::new("log_z_se", fixed(rows.log_z_se, 6)),
            Column::new("log_z_forward", fixed(rows.forward, 6)),
            Column::new("log_z_reverse", fixed(rows.reverse, 6)),
            Column::new("round_trips_per_1000", fixed(rows.trips, 3)),
            Column::new("explorer_acceptance", fixed(rows.acceptance, 4)),
            Column::new("grid_adapted", Values::Bool(rows.adapted)),
        ],
    }
}

/// The columns of `rounds.csv`, filled round by round.
#[derive(Default)]
struct RoundColumns {
    round: Vec<u64>,
    iterations: Vec<u64>,
    lambda: Vec<f64>,
    log_z: Vec<f64>,
    log_z_se: Vec<f64>,
    forward: Vec<f64>,
    reverse: Vec<f64>,
    trips: Vec<f64>,
    acceptance: Vec<f64>,
    adapted: Vec<bool>,
}
