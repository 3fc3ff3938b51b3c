//! Scaling studies: round-trip time against the number of chains P and the window W,
//! measured beside the model of Lemma 1, in sweeps that split into shards.

pub mod simulator;

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use nrpt_sampling::config::TargetName;
use nrpt_sampling::config::{ConfigError, RunConfig, WindowSpec};
use nrpt_sampling::engine::simd::Simd;
use nrpt_sampling::engine::{Backend, EngineError, Record};
use simulator::Group;

/// What is simulated at each point (`nrpt scale --target`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum SweepTarget {
    /// The index process alone, swap indicators Bernoulli with the given rates.
    Bernoulli,
    /// The full sampler on the 25-mode 2D target.
    Modes2d,
    /// The full sampler on the D-dimensional sum target.
    SumModes,
    /// Exact tempering on the Gaussian path N(0, I_D) → N(0, I_D/10) (`dim` sets D),
    /// with the β grid tuned to equal rejection; the swap rates follow from P and Λ,
    /// so the sweep's `swap_rates` are not used.
    GaussianPath,
}

/// One point of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Index of the point in the full sweep (fixed whatever the sharding).
    pub index: usize,
    /// P.
    pub chains: usize,
    /// The window as asked for (`1`, `opt`, `paper`, …).
    pub window_rule: String,
    /// The window used.
    pub window: u32,
    /// The swap rate S of the point as configured (with a profile, each pair's rate is
    /// S times its profile value; for the sampler models, the adaptation target).
    pub swap_rate: f64,
    /// Measured round trips per 1000 iterations of one ensemble.
    pub round_trips_per_1000: f64,
    /// Measured expected round-trip time `E[T]` = P / (round trips per iteration);
    /// infinite (`"inf"` in JSON) when no round trip was measured.
    #[serde(deserialize_with = "null_as_infinity")]
    pub expected_round_trip: f64,
    /// Its standard error (batch means over ensembles and time); infinite (`"inf"`)
    /// when it cannot be estimated.
    #[serde(deserialize_with = "null_as_infinity")]
    pub expected_round_trip_se: f64,
    /// Lemma 1: 2WP (1 + Σ_l r_l^W / (1 − r_l^W)), r_l = 1 − s_l.
    pub model_expected_round_trip: f64,
    /// Measured / model (infinite, `"inf"`, with no round trip).
    #[serde(deserialize_with = "null_as_infinity")]
    pub ratio: f64,
    /// Ensembles.
    pub ensembles: usize,
    /// Iterations before measuring.
    pub warmup: u64,
    /// Iterations measured.
    pub iterations: u64,
    /// Round trips counted while measuring (all ensembles).
    pub round_trips: u64,
    /// `true` when the iteration cap stopped the point before its target error.
    pub capped: bool,
    /// Seconds.
    pub seconds: f64,
    /// `gaussian-path`: the measured communication barrier Λ̂ (mean over ensembles).
    #[serde(default)]
    pub lambda: Option<f64>,
    /// `gaussian-path`: P (2 + 2Λ̂), the `E[T]` of DEO as P grows (Syed et al.'s limit
    /// 1/(2 + 2Λ) round trips per iteration).
    #[serde(default)]
    pub limit_expected_round_trip: Option<f64>,
}

impl Point {
    /// Checks a point read back (a shard's `results.json`) against what a sweep with
    /// `settings` could have written as point `entry` of [`enumerate`]: its place in the
    /// sweep, every value in its range, and the values derived from others (the rate
    /// from the round trips, `E[T]` from the rate, the ratio) equal to them up to
    /// rounding. The message names the value.
    pub fn check(&self, s: &Settings, entry: &(usize, usize, String, f64)) -> Result<(), String> {
        let (index, chains, rule, rate) = entry;
        if self.index != *index || self.chains != *chains || &self.window_rule != rule {
            return Err(format!(
                "it is not point {index} of the sweep (P = {chains}, W = {rule})"
            ));
        }
        let bad = |what: &str, v: f64| Err(format!("{what} = {v} cannot be"));
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
        if s.target == SweepTarget::GaussianPath {
            if !(0.0..=1.0).contains(&self.swap_rate) {
                return bad("swap_rate", self.swap_rate);
            }
        } else if self.swap_rate.to_bits() != rate.to_bits() {
            return Err(format!(
                "swap_rate = {} where the sweep's point has {rate}",
                self.swap_rate
            ));
        }
        if self.ensembles == 0 {
            return Err("ensembles = 0 cannot be".into());
        }
        if self.iterations == 0 || self.iterations > s.max_iterations {
            return Err(format!(
                "iterations = {} is not between 1 and the sweep's cap {}",
                self.iterations, s.max_iterations
            ));
        }
        let rho = self.round_trips as f64 / (self.ensembles as f64 * self.iterations as f64);
        let per_1000 = self.round_trips_per_1000;
        // A round trip takes at least 2(P − 1) iterations.
        if !(per_1000.is_finite() && (0.0..=1000.0).contains(&per_1000)) {
            return bad("round_trips_per_1000", per_1000);
        }
        if !close(per_1000, 1000.0 * rho) {
            return Err(format!(
                "round_trips_per_1000 = {per_1000} does not follow from its {} round trips \
                 over {} ensembles × {} iterations",
                self.round_trips, self.ensembles, self.iterations
            ));
        }
        let et = self.expected_round_trip;
        let consistent = if per_1000 > 0.0 {
            close(et, 1000.0 * self.chains as f64 / per_1000)
        } else {
            et == f64::INFINITY
        };
        if !consistent {
            return Err(format!(
                "expected_round_trip = {et} does not follow from round_trips_per_1000 = {per_1000}"
            ));
        }
        if self.expected_round_trip_se.is_nan() || self.expected_round_trip_se < 0.0 {
            return bad("expected_round_trip_se", self.expected_round_trip_se);
        }
        let model = self.model_expected_round_trip;
        if model.is_nan() || model <= 0.0 {
            return bad("model_expected_round_trip", model);
        }
        let ratio_ok = if et.is_finite() && model.is_finite() {
            close(self.ratio, et / model)
        } else {
            self.ratio >= 0.0
        };
        if !ratio_ok {
            return Err(format!(
                "ratio = {} is not expected_round_trip / model_expected_round_trip",
                self.ratio
            ));
        }
        if !(self.seconds.is_finite() && self.seconds >= 0.0) {
            return bad("seconds", self.seconds);
        }
        let exact = s.target == SweepTarget::GaussianPath;
        match (exact, self.lambda, self.limit_expected_round_trip) {
            (true, Some(l), Some(t)) if l.is_finite() && l >= 0.0 && t.is_finite() && t > 0.0 => {
                Ok(())
            }
            (false, None, None) => Ok(()),
            (true, ..) => Err(format!(
                "lambda = {:?} and limit_expected_round_trip = {:?}: a gaussian-path point \
                 has a finite Λ ≥ 0 and a limit > 0",
                self.lambda, self.limit_expected_round_trip
            )),
            (false, ..) => Err("lambda is set, but only a gaussian-path point has one".into()),
        }
    }
}

/// A least-squares line through (ln P, ln `E[T]`) of one window rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// Window rule.
    pub window_rule: String,
    /// Swap rate (NaN, `"NaN"`, for the gaussian path, whose rates follow from P).
    #[serde(deserialize_with = "null_as_nan")]
    pub swap_rate: f64,
    /// Slope of ln `E[T]` against ln P.
    #[serde(deserialize_with = "null_as_nan")]
    pub slope: f64,
    /// Intercept.
    #[serde(deserialize_with = "null_as_nan")]
    pub intercept: f64,
    /// The same fit on Lemma 1's values at the same points.
    #[serde(deserialize_with = "null_as_nan")]
    pub model_slope: f64,
    /// Points used.
    pub points: usize,
}

/// A number as [`nrpt_sampling::json`] writes it, or `null`, read as +∞: what the
/// releases before the naming of non-finite numbers wrote for an infinite `E[T]`.
fn null_as_infinity<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

/// As [`null_as_infinity`], for values that are undefined rather than infinite (`null`
/// read as NaN).
fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// How a sweep runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// What is simulated (`model` in the files of earlier releases).
    #[serde(alias = "model")]
    pub target: SweepTarget,
    /// Chains of the sweep.
    pub chains: Vec<usize>,
    /// Window rules of the sweep.
    pub windows: Vec<String>,
    /// Swap rates of the sweep.
    pub swap_rates: Vec<f64>,
    /// Relative swap-rate profile of the pairs (multiplies S), if any.
    pub profile: Option<Vec<f64>>,
    /// Ensembles per point (0: chosen from P, see [`ensembles_for`]).
    pub ensembles: usize,
    /// Stop a point when the standard error of `E[T]` is below this share.
    pub target_se: f64,
    /// Most iterations per point (measuring), a cap reported when hit.
    pub max_iterations: u64,
    /// Warm-up: `None` for automatic (twice Lemma 1's `E[T]` for the Bernoulli model, a
    /// fifth of the cap for the sampler models).
    pub warmup: Option<u64>,
    /// Base seed.
    pub seed: u32,
    /// Dimension of `sum-modes`.
    pub dim: usize,
}

/// Which part of a sweep a run covers: the points with `index % count == shard`
/// ([`Shard::holds`]).
pub use crate::shard::Shard;

/// The most points a sweep may have (chain counts × windows × swap rates).
pub const MAX_POINTS: usize = 10_000;
/// The most entries of each list of a sweep (chain counts, windows, swap rates, the rates
/// profile).
pub const MAX_LIST: usize = 4096;
/// The largest iteration count (cap or warm-up) of a point.
pub const MAX_ITERATIONS: u64 = 1 << 40;

impl Settings {
    /// Checks every field as the sweep's flags are checked: a `results.json` edited by
    /// hand, or from another program, is refused by `scale merge` as a bad flag is by
    /// `scale`. Errors name the flag.
    pub fn check(&self) -> Result<(), ConfigError> {
        let list = |field: &str, len: usize| {
            if (1..=MAX_LIST).contains(&len) {
                Ok(())
            } else {
                Err(ConfigError::new(
                    field,
                    format!("needs between 1 and {MAX_LIST} entries, got {len}"),
                ))
            }
        };
        list("chains", self.chains.len())?;
        list("window", self.windows.len())?;
        list("swap_rate", self.swap_rates.len())?;
        if let Some(&p) = self
            .chains
            .iter()
            .find(|&&p| !(2..=nrpt_sampling::config::MAX_CHAINS).contains(&p))
        {
            return Err(ConfigError::new(
                "chains",
                format!(
                    "must be between 2 and {}, got {p}",
                    nrpt_sampling::config::MAX_CHAINS
                ),
            ));
        }
        if let Some(&r) = self.swap_rates.iter().find(|&&r| !(r > 0.0 && r < 1.0)) {
            return Err(ConfigError::new(
                "swap_rate",
                format!("must lie strictly between 0 and 1, got {r}"),
            ));
        }
        for w in &self.windows {
            window_of(w, 16, 0.4)?;
        }
        if let Some(prof) = &self.profile {
            list("rates_file", prof.len())?;
            if prof.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(ConfigError::new(
                    "rates_file",
                    "needs positive numbers (relative swap rates of the pairs)",
                ));
            }
        }
        if self.ensembles > 1 << 24 {
            return Err(ConfigError::new(
                "ensembles",
                format!("must be at most 2^24, got {}", self.ensembles),
            ));
        }
        if !(self.target_se > 0.0 && self.target_se < 1.0) {
            return Err(ConfigError::new(
                "target_se",
                "must lie strictly between 0 and 1",
            ));
        }
        if !(1..=MAX_ITERATIONS).contains(&self.max_iterations) {
            return Err(ConfigError::new(
                "max_iterations",
                "must be between 1 and 2^40",
            ));
        }
        if let Some(w) = self.warmup
            && w > MAX_ITERATIONS
        {
            return Err(ConfigError::new(
                "warmup",
                format!("must be at most 2^40 iterations, got {w}"),
            ));
        }
        if !(1..=nrpt_sampling::config::MAX_DIM).contains(&self.dim) {
            return Err(ConfigError::new(
                "dim",
                format!(
                    "must be between 1 and {}, got {}",
                    nrpt_sampling::config::MAX_DIM,
                    self.dim
                ),
            ));
        }
        let rates = if self.target == SweepTarget::GaussianPath {
            1
        } else {
            self.swap_rates.len()
        };
        let points = self.chains.len() * self.windows.len() * rates;
        if points > MAX_POINTS {
            return Err(ConfigError::new(
                "chains",
                format!(
                    "{} chain counts × {} windows × {rates} swap rates = {points} points: more \
                     than the {MAX_POINTS} a sweep may have",
                    self.chains.len(),
                    self.windows.len()
                ),
            ));
        }
        Ok(())
    }
}

/// The points of a sweep, in a fixed order: chains, then windows, then swap rates.
pub fn enumerate(s: &Settings) -> Vec<(usize, usize, String, f64)> {
    let mut out = Vec::new();
    // The exact path's swap rates follow from P and Λ: one point per (P, W).
    let rates = if s.target == SweepTarget::GaussianPath {
        vec![f64::NAN]
    } else {
        s.swap_rates.clone()
    };
    for &p in &s.chains {
        for w in &s.windows {
            for &rate in &rates {
                out.push((out.len(), p, w.clone(), rate));
            }
        }
    }
    out
}

/// The per-pair swap rates of P chains at swap rate S (with the profile, cycled or
/// stretched to P − 1 pairs by nearest index, then scaled by S and clipped to (0, 1)).
pub fn pair_rates(s: &Settings, chains: usize, rate: f64) -> Vec<f64> {
    let pairs = chains - 1;
    match &s.profile {
        None => vec![rate; pairs],
        Some(prof) => (0..pairs)
            .map(|l| {
                let j = if pairs > 1 {
                    l * (prof.len() - 1) / (pairs - 1)
                } else {
                    0
                };
                (rate * prof[j]).clamp(1e-9, 1.0 - 1e-9)
            })
            .collect(),
    }
}

/// Lemma 1 with per-pair rejection rates: `E[T]` = 2WP (1 + Σ_l r_l^W / (1 − r_l^W)).
pub fn model_expected_round_trip(rates: &[f64], window: u32) -> f64 {
    let p = (rates.len() + 1) as f64;
    let w = f64::from(window);
    let sum: f64 = rates
        .iter()
        .map(|&s| {
            let x = ((1.0 - s).ln() * w).exp();
            x / (1.0 - x)
        })
        .sum();
    2.0 * w * p * (1.0 + sum)
}

/// A deterministic seed for a point, so that shards and whole sweeps agree.
fn point_seed(base: u32, chains: usize, window: &str, rate: f64) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ u64::from(base);
    for b in (chains as u64)
        .to_le_bytes()
        .into_iter()
        .chain(window.bytes())
        .chain(rate.to_bits().to_le_bytes())
    {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h ^ (h >> 32)) as u32
}

/// The window of a rule for P chains at swap rate S.
pub fn window_of(rule: &str, chains: usize, rate: f64) -> Result<u32, ConfigError> {
    let spec: WindowSpec = rule
        .parse()
        .map_err(|e: String| ConfigError::new("window", e))?;
    match spec.scheme(chains, rate)? {
        nrpt_core::window::Scheme::Deo { window } => Ok(window),
        nrpt_core::window::Scheme::Seo => Err(ConfigError::new(
            "window",
            "scaling studies use DEO windows (a number, `opt` or `paper`), not `seo`",
        )),
    }
}

/// Mean and standard error of the mean of `values`.
fn mean_se(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, f64::INFINITY);
    }
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// Estimates from per-cell round-trip counts over `cell_iterations` each.
fn estimate(chains: usize, cells: &[u64], cell_iterations: u64) -> (f64, f64, f64) {
    let rates: Vec<f64> = cells
        .iter()
        .map(|&c| c as f64 / cell_iterations as f64)
        .collect();
    let (rho, se) = mean_se(&rates);
    if rho <= 0.0 {
        // No round trip: E[T] is beyond what was measured.
        return (rho, f64::INFINITY, f64::INFINITY);
    }
    let et = chains as f64 / rho;
    let et_se = et * se / rho;
    (rho, et, et_se)
}

/// Ensembles of a Bernoulli point: as asked, or by default 32 for P ≤ 64, 16 for
/// P ≤ 256 and 8 beyond (large P gives many round trips per ensemble already, and
/// every ensemble pays for its own warm-up).
pub fn ensembles_for(s: &Settings, chains: usize) -> usize {
    if s.ensembles > 0 {
        s.ensembles
    } else if chains <= 64 {
        32
    } else if chains <= 256 {
        16
    } else {
        8
    }
}

/// Runs one point of the Bernoulli model, with SIMD groups of a width that leaves
/// at least two groups (both cores busy).
fn run_bernoulli_point(
    s: &Settings,
    index: usize,
    chains: usize,
    rule: &str,
    rate: f64,
    interrupt: &(dyn Fn() -> bool + Sync),
) -> Result<Point, EngineError> {
    let e = ensembles_for(s, chains);
    match (e / 2).max(1) {
        0..=7 => bernoulli_point::<4>(s, index, chains, rule, rate, e, interrupt),
        8..=15 => bernoulli_point::<8>(s, index, chains, rule, rate, e, interrupt),
        16..=31 => bernoulli_point::<16>(s, index, chains, rule, rate, e, interrupt),
        _ => bernoulli_point::<32>(s, index, chains, rule, rate, e, interrupt),
    }
}

#[allow(clippy::too_many_arguments)]
fn bernoulli_point<const N: usize>(
    s: &Settings,
    index: usize,
    chains: usize,
    rule: &str,
    rate: f64,
    ensembles: usize,
    interrupt: &(dyn Fn() -> bool + Sync),
) -> Result<Point, EngineError> {
    let started = Instant::now();
    let window = window_of(rule, chains, rate).map_err(|e| EngineError::Backend {
        backend: "scale",
        message: e.to_string(),
    })?;
    let rates = pair_rates(s, chains, rate);
    let model = model_expected_round_trip(&rates, window);
    let seed = point_seed(s.seed, chains, rule, rate);
    let groups_n = ensembles.div_ceil(N);
    let mut groups: Vec<Group<N>> = (0..groups_n)
        .map(|g| Group::new(&rates, window, seed, (g * N) as u32))
        .collect();
    // Two model round-trip times of warm-up: from the identity start the round-trip
    // rate needs about that long to settle (with one, E[T] came out 3–4% high at
    // P = 1024); a different --warmup can be asked for.
    let warmup = s
        .warmup
        .unwrap_or_else(|| (2.0 * model).ceil().min(s.max_iterations as f64) as u64);
    // Batches of one model round-trip time: round-trip counts of successive batches of
    // an ensemble are then nearly independent, so batch means give the error.
    // (max/min, not clamp: a cap below 256 is allowed and must not panic.)
    let batch = (model.ceil() as u64).max(256).min(s.max_iterations).max(1);
    // Each group asks `interrupt` every few milliseconds (`Group::run_or_stop`).
    let advance = |groups: &mut Vec<Group<N>>, n: u64| {
        groups
            .par_iter_mut()
            .try_for_each(|g| g.run_or_stop(n, Simd::Auto, interrupt))
    };
    advance(&mut groups, warmup)?;
    let lanes_used = |g: usize| N.min(ensembles - g * N);
    let totals = |groups: &Vec<Group<N>>| -> Vec<u64> {
        groups
            .iter()
            .enumerate()
            .flat_map(|(gi, g)| (0..lanes_used(gi)).map(move |i| g.trips(i).round_trips))
            .collect()
    };
    let warm: u64 = totals(&groups).iter().sum();
    let mut last = totals(&groups);
    let mut cells: Vec<u64> = Vec::new();
    let mut measured = 0u64;
    let capped = loop {
        let n = batch.min(s.max_iterations - measured);
        advance(&mut groups, n)?;
        measured += n;
        let now = totals(&groups);
        // Only whole batches become cells; a last partial batch still counts in the rate.
        if n == batch {
            cells.extend(now.iter().zip(&last).map(|(a, b)| a - b));
        }
        last = now;
        // At least four batches per ensemble before the error may stop the point.
        if cells.len() >= 8.max(4 * ensembles) {
            let (_, et, et_se) = estimate(chains, &cells, batch);
            if et.is_finite() && et_se / et < s.target_se {
                break false;
            }
        }
        if measured >= s.max_iterations {
            break true;
        }
    };
    let trips = last.iter().sum::<u64>() - warm;
    let rho = trips as f64 / (ensembles as f64 * measured as f64);
    let et = chains as f64 / rho;
    // The relative error of the batch means carries over to the whole-run estimate.
    let et_se = if cells.len() >= 2 && et.is_finite() {
        let (_, et_cells, se_cells) = estimate(chains, &cells, batch);
        et * se_cells / et_cells
    } else {
        f64::INFINITY
    };
    Ok(Point {
        index,
        chains,
        window_rule: rule.to_string(),
        window,
        swap_rate: rate,
        round_trips_per_1000: 1000.0 * rho,
        expected_round_trip: et,
        expected_round_trip_se: et_se,
        model_expected_round_trip: model,
        ratio: et / model,
        ensembles,
        warmup,
        iterations: measured,
        round_trips: trips,
        capped,
        seconds: started.elapsed().as_secs_f64(),
        lambda: None,
        limit_expected_round_trip: None,
    })
}

/// Runs one point of the full sampler on `backend` (fixed length: warm-up, then the
/// cap; `E[T]` from the round trips after the warm-up, its error from the ensembles).
/// The job of one point of a sampler model (and its warm-up): refused, as `nrpt run`
/// refuses it, when it does not fit `--max-memory`.
fn sampler_job(
    s: &Settings,
    chains: usize,
    rule: &str,
    rate: f64,
) -> Result<(nrpt_sampling::engine::Job, u64), ConfigError> {
    let window: WindowSpec = rule
        .parse()
        .map_err(|e: String| ConfigError::new("window", e))?;
    let warmup = s.warmup.unwrap_or(s.max_iterations / 5);
    let ensembles = if s.ensembles > 0 { s.ensembles } else { 16 };
    let config = RunConfig {
        target: if s.target == SweepTarget::SumModes {
            TargetName::of(&nrpt_sampling::targets::sum_modes::SUM_MODES)
        } else {
            TargetName::default()
        },
        dim: s.dim,
        chains,
        ensembles,
        iterations: warmup + s.max_iterations,
        window,
        swap_rate: rate,
        seed: point_seed(s.seed, chains, rule, rate),
        ..RunConfig::default()
    };
    let record = Record {
        thin: 0,
        warmup: 0,
        trace_every: warmup.max(1),
        path_iterations: 0,
    };
    let job = config.job_advising(record, "--ensembles, --chains, --max-iterations or --dim")?;
    Ok((job, warmup))
}

/// Checks, before any point runs, that every point of `indices` can run: for the
/// sampler models, each point's job as `nrpt run` checks it (its memory against
/// `--max-memory` included).
pub fn check_points(s: &Settings, indices: &[usize]) -> Result<(), ConfigError> {
    if !matches!(s.target, SweepTarget::Modes2d | SweepTarget::SumModes) {
        return Ok(());
    }
    let all = enumerate(s);
    for &i in indices {
        if let Some((_, chains, rule, rate)) = all.get(i) {
            sampler_job(s, *chains, rule, *rate)?;
        }
    }
    Ok(())
}

fn run_sampler_point(
    s: &Settings,
    index: usize,
    chains: usize,
    rule: &str,
    rate: f64,
    backend: &dyn Backend,
) -> Result<Point, EngineError> {
    let started = Instant::now();
    let (job, warmup) = sampler_job(s, chains, rule, rate).map_err(|e| EngineError::Backend {
        backend: "scale",
        message: e.to_string(),
    })?;
    let ensembles = job.ensembles;
    let out = backend.run(&job, &nrpt_sampling::interrupt::flow)?;
    let total = out.total_stats().round_trips;
    let at_warmup = if warmup > 0 {
        out.trace.round_trips.first().copied().unwrap_or(0)
    } else {
        0
    };
    let trips = total - at_warmup;
    let rho = trips as f64 / (ensembles as f64 * s.max_iterations as f64);
    let et = chains as f64 / rho;
    let per_ensemble: Vec<u64> = out.ensembles.iter().map(|e| e.stats.round_trips).collect();
    let (_, _, et_se_all) = estimate(chains, &per_ensemble, job.iterations);
    let w = job.options.scheme.window_code();
    let model = model_expected_round_trip(&vec![rate; chains - 1], w.max(1));
    Ok(Point {
        index,
        chains,
        window_rule: rule.to_string(),
        window: w,
        swap_rate: rate,
        round_trips_per_1000: 1000.0 * rho,
        expected_round_trip: et,
        expected_round_trip_se: et_se_all,
        model_expected_round_trip: model,
        ratio: et / model,
        ensembles,
        warmup,
        iterations: s.max_iterations,
        round_trips: trips,
        capped: true,
        seconds: started.elapsed().as_secs_f64(),
        lambda: None,
        limit_expected_round_trip: None,
    })
}

/// One point of the exact sampler on the Gaussian path: [`crate::exact::run`] with
/// `max_iterations` as its budget; `E[T]` from the round trips of the measurement round
/// (grid and step sizes frozen), its error from the spread over ensembles, Lemma 1 from
/// the measured pair rejections and the window.
fn run_gaussian_point(
    s: &Settings,
    index: usize,
    chains: usize,
    rule: &str,
    rate: f64,
) -> Result<Point, EngineError> {
    let started = Instant::now();
    let fail = |message: String| EngineError::Backend {
        backend: "scale",
        message,
    };
    let window: WindowSpec = rule.parse().map_err(fail)?;
    let settings = crate::exact::ExactSettings {
        dim: s.dim,
        chains: crate::exact::Chains::Fixed(chains),
        ensembles: if s.ensembles > 0 { s.ensembles } else { 8 },
        iterations: s.max_iterations,
        window,
        seed: point_seed(s.seed, chains, rule, rate),
        explorer: nrpt_core::exact::ExactExplorer::default(),
    };
    let out = crate::exact::run(&settings, &nrpt_sampling::interrupt::flow).map_err(|e| {
        if e.downcast_ref::<EngineError>()
            .is_some_and(|x| matches!(x, EngineError::Interrupted))
        {
            EngineError::Interrupted
        } else {
            fail(e.to_string())
        }
    })?;
    let pooled = out.pooled();
    let last: Vec<&nrpt_core::exact::RoundReport> =
        out.ensembles.iter().filter_map(|e| e.last()).collect();
    let measured = last.first().map_or(0, |r| r.iterations);
    let cells: Vec<u64> = last.iter().map(|r| r.round_trips).collect();
    let (rho_e, et, et_se) = estimate(chains, &cells, measured);
    let rejections: Vec<f64> = out
        .ensembles
        .iter()
        .flat_map(|e| {
            e.pairs
                .iter()
                .map(nrpt_core::exact::PairRecord::rejection_rate)
        })
        .collect();
    let mean_rejection = rejections.iter().sum::<f64>() / rejections.len().max(1) as f64;
    let w = out.window.max(1);
    let model = pooled
        .lemma1_round_trips_per_1000
        .map_or(f64::INFINITY, |r| chains as f64 * 1000.0 / r);
    Ok(Point {
        index,
        chains,
        window_rule: rule.to_string(),
        window: w,
        swap_rate: 1.0 - mean_rejection,
        round_trips_per_1000: 1000.0 * rho_e,
        expected_round_trip: et,
        expected_round_trip_se: et_se,
        model_expected_round_trip: model,
        ratio: et / model,
        ensembles: settings.ensembles,
        warmup: out.iterations_run - measured
            + out.pilots.iter().map(|p| p.iterations).sum::<u64>(),
        iterations: measured,
        round_trips: cells.iter().sum(),
        capped: true,
        seconds: started.elapsed().as_secs_f64(),
        lambda: Some(pooled.lambda),
        limit_expected_round_trip: Some(chains as f64 * (2.0 + 2.0 * pooled.lambda)),
    })
}

/// Runs the points `indices` of the sweep (a shard, or all of it).
pub fn run(
    s: &Settings,
    indices: &[usize],
    backend: &dyn Backend,
    progress: &(dyn Fn(&Point) + Sync),
) -> Result<Vec<Point>, EngineError> {
    let all = enumerate(s);
    let mut points = Vec::new();
    for &i in indices {
        let (index, chains, ref rule, rate) = all[i];
        let p = match s.target {
            SweepTarget::Bernoulli => run_bernoulli_point(
                s,
                index,
                chains,
                rule,
                rate,
                &nrpt_sampling::interrupt::requested,
            )?,
            SweepTarget::GaussianPath => run_gaussian_point(s, index, chains, rule, rate)?,
            _ => run_sampler_point(s, index, chains, rule, rate, backend)?,
        };
        progress(&p);
        points.push(p);
    }
    Ok(points)
}

/// The swap rate that groups points into one fit (as bits): S, or NaN for the
/// gaussian path, whose swap rates follow from P.
pub fn group_rate(p: &Point) -> u64 {
    if p.lambda.is_some() {
        f64::NAN.to_bits()
    } else {
        p.swap_rate.to_bits()
    }
}

/// Least-squares slopes of ln `E[T]` against ln P, one per (window rule, swap rate) with
/// at least two chain counts (finite estimates only).
pub fn fits(points: &[Point]) -> Vec<Fit> {
    // (A fit of the gaussian path pools its P, whose swap rates differ: S is NaN.)
    let mut keys: Vec<(String, u64)> = Vec::new();
    for p in points {
        let k = (p.window_rule.clone(), group_rate(p));
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let line = |xy: &[(f64, f64)]| -> (f64, f64) {
        let n = xy.len() as f64;
        let mx = xy.iter().map(|p| p.0).sum::<f64>() / n;
        let my = xy.iter().map(|p| p.1).sum::<f64>() / n;
        let sxy: f64 = xy.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let sxx: f64 = xy.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
        let slope = sxy / sxx;
        (slope, my - slope * mx)
    };
    keys.into_iter()
        .filter_map(|(rule, bits)| {
            let mut sel: Vec<&Point> = points
                .iter()
                .filter(|p| {
                    p.window_rule == rule
                        && group_rate(p) == bits
                        && p.expected_round_trip.is_finite()
                        && p.expected_round_trip > 0.0
                })
                .collect();
            // Sums in the order of the sweep's points, whatever order the shards were
            // merged in: the same fit to the last bit.
            sel.sort_by_key(|p| p.index);
            let mut ps: Vec<usize> = sel.iter().map(|p| p.chains).collect();
            ps.sort_unstable();
            ps.dedup();
            if ps.len() < 2 {
                return None;
            }
            let xy: Vec<(f64, f64)> = sel
                .iter()
                .map(|p| ((p.chains as f64).ln(), p.expected_round_trip.ln()))
                .collect();
            let model: Vec<(f64, f64)> = sel
                .iter()
                .map(|p| ((p.chains as f64).ln(), p.model_expected_round_trip.ln()))
                .collect();
            let (slope, intercept) = line(&xy);
            Some(Fit {
                window_rule: rule,
                swap_rate: f64::from_bits(bits),
                slope,
                intercept,
                model_slope: line(&model).0,
                points: sel.len(),
            })
        })
        .collect()
}

/// Parses `8,16,64` or a geometric range `8..4096` (doubling) or `8..4096x4`.
pub fn parse_chains(text: &str) -> Result<Vec<usize>, String> {
    let bad = || {
        format!(
            "`{text}` is not a list of chain counts (8,16,64) or a range (8..4096 or 8..4096x4)"
        )
    };
    let mut out = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if let Some((a, rest)) = part.split_once("..") {
            let (b, factor) = match rest.split_once('x') {
                Some((b, f)) => (b, f.parse::<usize>().map_err(|_| bad())?),
                None => (rest, 2),
            };
            let (a, b) = (
                a.parse::<usize>().map_err(|_| bad())?,
                b.parse::<usize>().map_err(|_| bad())?,
            );
            if factor < 2 || a < 2 || b < a {
                return Err(bad());
            }
            let mut p = a;
            while p <= b {
                out.push(p);
                p = p.saturating_mul(factor);
            }
        } else {
            out.push(part.parse::<usize>().map_err(|_| bad())?);
        }
    }
    if out
        .iter()
        .any(|&p| !(2..=nrpt_sampling::config::MAX_CHAINS).contains(&p))
    {
        return Err(format!(
            "chains must be between 2 and {}, got {text}",
            nrpt_sampling::config::MAX_CHAINS
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_parse() {
        assert_eq!(parse_chains("8,16,64"), Ok(vec![8, 16, 64]));
        assert_eq!(parse_chains("8..64"), Ok(vec![8, 16, 32, 64]));
        assert_eq!(parse_chains("8..4096x8"), Ok(vec![8, 64, 512, 4096]));
        assert!(parse_chains("1,2").is_err());
        assert!(parse_chains("8..4").is_err());
        assert!(parse_chains("x").is_err());
    }

    #[test]
    fn model_matches_lemma_1() {
        let et = model_expected_round_trip(&[0.4; 15], 1);
        assert!((et - 752.0).abs() < 1e-9);
        let et8 = model_expected_round_trip(&[0.4; 15], 8);
        let core = nrpt_core::optimal::expected_round_trip_u32(16, 8, 0.4).unwrap();
        assert!((et8 / core - 1.0).abs() < 1e-12);
    }

    #[test]
    fn fits_recover_a_power_law() {
        let pts: Vec<Point> = [8usize, 16, 32, 64]
            .iter()
            .enumerate()
            .map(|(i, &p)| Point {
                index: i,
                chains: p,
                window_rule: "1".into(),
                window: 1,
                swap_rate: 0.1,
                round_trips_per_1000: 0.0,
                expected_round_trip: 3.0 * (p as f64).powi(2),
                expected_round_trip_se: 0.0,
                model_expected_round_trip: 2.0 * (p as f64).powf(1.5),
                ratio: 1.0,
                ensembles: 1,
                warmup: 0,
                iterations: 0,
                round_trips: 0,
                capped: false,
                seconds: 0.0,
                lambda: None,
                limit_expected_round_trip: None,
            })
            .collect();
        let f = fits(&pts);
        assert_eq!(f.len(), 1);
        assert!((f[0].slope - 2.0).abs() < 1e-12);
        assert!((f[0].model_slope - 1.5).abs() < 1e-12);
    }
}
