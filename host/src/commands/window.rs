//! `nrpt window`: the optimal window and the round-trip model of Lemma 1.

use anyhow::Result;
use nrpt_core::optimal;
use serde::Serialize;

use crate::cli::WindowArgs;
use nrpt_sampling::config::ConfigError;

/// The answer of `nrpt window`.
#[derive(Debug, Serialize)]
pub struct WindowReport {
    /// P.
    pub chains: usize,
    /// S.
    pub swap_rate: f64,
    /// The exact minimizer W⋆ over real windows W ≥ 1 (1 when P ≤ 3).
    pub w_exact: f64,
    /// The best integer window (the one `--window opt` uses).
    pub w_opt: u32,
    /// The paper's asymptotic formula ⌈(ln P + ln ln P) / −ln(1 − S)⌉.
    pub w_paper: u32,
    /// Root x⋆ = r^W⋆ of the stationarity equation (null for P ≤ 3: no interior root).
    pub x_star: Option<f64>,
    /// Expected round-trip time (iterations) with W = 1.
    pub expected_round_trip_w1: f64,
    /// Expected round-trip time with the integer optimal window.
    pub expected_round_trip_opt: f64,
    /// Expected round-trip time with the paper's window.
    pub expected_round_trip_paper: f64,
    /// Model round trips per 1000 iterations of one ensemble with W = 1 (`P / E[T]`).
    pub round_trips_per_1000_w1: f64,
    /// Model round trips per 1000 iterations with the integer optimal window.
    pub round_trips_per_1000_opt: f64,
}

fn invalid(e: nrpt_core::Error) -> anyhow::Error {
    let field = match e {
        nrpt_core::Error::SwapRateOutOfRange { .. } | nrpt_core::Error::WindowTooLong { .. } => {
            "swap_rate"
        }
        nrpt_core::Error::InvalidValue {
            name: "swap_rate", ..
        } => "swap_rate",
        _ => "chains",
    };
    ConfigError::new(field, e.to_string()).into()
}

/// Computes the report.
pub fn report(chains: usize, swap_rate: f64) -> Result<WindowReport> {
    let w_exact = optimal::w_star(chains, swap_rate).map_err(invalid)?;
    let w_opt = optimal::optimal_window(chains, swap_rate).map_err(invalid)?;
    let w_paper = optimal::paper_window(chains, swap_rate).map_err(invalid)?;
    let x_star = optimal::x_star(chains).map_err(invalid)?.root();
    let t = |w: u32| optimal::expected_round_trip_u32(chains, w, swap_rate).map_err(invalid);
    let (t1, topt, tpaper) = (t(1)?, t(w_opt)?, t(w_paper)?);
    Ok(WindowReport {
        chains,
        swap_rate,
        w_exact,
        w_opt,
        w_paper,
        x_star,
        expected_round_trip_w1: t1,
        expected_round_trip_opt: topt,
        expected_round_trip_paper: tpaper,
        round_trips_per_1000_w1: 1000.0 * chains as f64 / t1,
        round_trips_per_1000_opt: 1000.0 * chains as f64 / topt,
    })
}

/// Runs the command.
pub fn run(args: &WindowArgs, json: bool) -> Result<()> {
    let r = report(args.chains, args.swap_rate)?;
    if json {
        say!("{}", nrpt_sampling::json::to_string(&r)?)?;
        return Ok(());
    }
    say!("P = {} chains, swap rate S = {}", r.chains, r.swap_rate)?;
    match r.x_star {
        Some(x) => say!("x⋆ = r^W⋆ = {x:.6e}  (root of g(x) = 0, depends on P only)"),
        None => say!("P ≤ 3: the round-trip time grows with W, so the best window is 1"),
    }?;
    say!(
        "optimal window W⋆ = {:.4}  →  use W = {}",
        r.w_exact,
        r.w_opt
    )?;
    say!("paper's formula    W = {}", r.w_paper)?;
    say!(
        "expected round trip: {:.1} iterations at W = 1, {:.1} at W = {}, {:.1} at W = {}",
        r.expected_round_trip_w1,
        r.expected_round_trip_opt,
        r.w_opt,
        r.expected_round_trip_paper,
        r.w_paper
    )?;
    say!(
        "round trips per 1000 iterations (one ensemble): {:.2} at W = 1, {:.2} at W = {}",
        r.round_trips_per_1000_w1,
        r.round_trips_per_1000_opt,
        r.w_opt
    )?;
    Ok(())
}
