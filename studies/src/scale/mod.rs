//! Scaling studies: round-trip time against the number of chains P and the window W,
//! measured beside the model of Lemma 1, in sweeps that split into shards.
//!
//! This module holds a sweep (its settings, points, Lemma 1's prediction, [`run`]);
//! `points` measures one point on each model, `fit` fits the power laws, [`simulator`]
//! is the Bernoulli index process in SIMD lanes.

pub mod bitsliced;
mod fit;
mod points;
pub mod simulator;

use serde::{Deserialize, Serialize};

use nrpt_sampling::config::{ConfigError, WindowSpec};
use nrpt_sampling::engine::{Backend, EngineError};

pub use fit::{Fit, fits, group_rate};
pub use points::check_points;
use points::{run_bernoulli_point, run_gaussian_point, run_sampler_point};

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

/// Which simulator runs the Bernoulli index process (`nrpt scale --simulator`, `nrpt
/// bench --simulator`). Both simulate the same process, with different random words:
/// their results agree statistically, not bit for bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Simulator {
    /// 64 ensembles per 64-bit word, one bit each; swap indicators from a bit-serial
    /// comparison of xoshiro256++ words; whole groups of 64 ensembles (the module
    /// `bitsliced`).
    #[default]
    Bitsliced,
    /// 4 to 32 ensembles in SIMD lanes, each drawing the Philox words of nrpt-core's
    /// IndexProcess and taking its decisions, bit for bit (the module `simulator`).
    Lanes,
}

impl Simulator {
    /// Its name on the command line and in results.json.
    pub fn name(self) -> &'static str {
        match self {
            Simulator::Bitsliced => "bitsliced",
            Simulator::Lanes => "lanes",
        }
    }

    /// The simulator of a results.json from before the choice existed.
    fn before_the_choice() -> Self {
        Simulator::Lanes
    }
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
    /// The simulator of the `bernoulli` points (the files of earlier releases, which
    /// have none, were measured with [`Simulator::Lanes`]).
    #[serde(default = "Simulator::before_the_choice")]
    pub simulator: Simulator,
}

/// Which part of a sweep a run covers: the points with `index % count == shard`
/// ([`Shard::holds`]).
pub use crate::shard::Shard;

/// The most points a sweep may have (chain counts × windows × swap rates).
pub(crate) const MAX_POINTS: usize = 10_000;
/// The most entries of each list of a sweep (chain counts, windows, swap rates, the rates
/// profile).
pub(crate) const MAX_LIST: usize = 4096;
/// The largest iteration count (cap or warm-up) of a point.
pub(crate) const MAX_ITERATIONS: u64 = 1 << 40;

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

/// Ensembles of a Bernoulli point: as asked, or by default, with the bit-sliced
/// simulator, 128 (two groups of 64 ensembles: both cores of a two-core machine busy,
/// at the cost of one ensemble each), and with the SIMD-lanes one 32 for P ≤ 64, 16
/// for P ≤ 256 and 8 beyond (large P gives many round trips per ensemble already, and
/// every ensemble pays for its own warm-up).
pub fn ensembles_for(s: &Settings, chains: usize) -> usize {
    if s.ensembles > 0 {
        s.ensembles
    } else if s.simulator == Simulator::Bitsliced {
        2 * bitsliced::ENSEMBLES
    } else if chains <= 64 {
        32
    } else if chains <= 256 {
        16
    } else {
        8
    }
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

    /// A results.json of earlier releases has no `simulator`: it was measured with the
    /// SIMD-lanes one, and reads so; today's files name theirs.
    #[test]
    fn settings_without_a_simulator_read_as_lanes() {
        let old = r#"{"target": "bernoulli", "chains": [8], "windows": ["1"],
            "swap_rates": [0.4], "profile": null, "ensembles": 0, "target_se": 0.01,
            "max_iterations": 1000, "warmup": null, "seed": 0, "dim": 2}"#;
        let s: Settings = serde_json::from_str(old).expect("an earlier file");
        assert_eq!(s.simulator, Simulator::Lanes);
        let mut today = s.clone();
        today.simulator = Simulator::Bitsliced;
        let text = serde_json::to_string(&today).expect("json");
        assert!(text.contains(r#""simulator":"bitsliced""#), "{text}");
        let back: Settings = serde_json::from_str(&text).expect("today's file");
        assert_eq!(back, today);
        assert_eq!(ensembles_for(&today, 1 << 16), 128);
        assert_eq!(ensembles_for(&s, 1 << 16), 8);
    }

    #[test]
    fn model_matches_lemma_1() {
        let et = model_expected_round_trip(&[0.4; 15], 1);
        assert!((et - 752.0).abs() < 1e-9);
        let et8 = model_expected_round_trip(&[0.4; 15], 8);
        let core = nrpt_core::optimal::expected_round_trip_u32(16, 8, 0.4).unwrap();
        assert!((et8 / core - 1.0).abs() < 1e-12);
    }
}
