//! One point of a sweep, measured: the Bernoulli index process in bit-sliced or SIMD
//! groups (until the error of `E[T]` is small enough), the sampler on an engine, exact
//! tempering on the Gaussian path; and the estimates of `E[T]` and its error from
//! round-trip counts.

use std::time::Instant;

use rayon::prelude::*;

use super::bitsliced::{self, BitGroup};
use super::simulator::Group;
use super::{
    Point, Settings, Simulator, SweepTarget, ensembles_for, enumerate, model_expected_round_trip,
    pair_rates, window_of,
};
use nrpt_sampling::config::{ConfigError, RunConfig, TargetName, WindowSpec};
use nrpt_sampling::engine::simd::Simd;
use nrpt_sampling::engine::{Backend, EngineError, Record};

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

/// What a Bernoulli point needs of a simulator: groups of a fixed number of ensembles,
/// run in parallel, and the round trips of each ensemble.
trait IndexGroups: Send + Sized {
    /// Ensembles per group.
    const WIDTH: usize;
    /// Group `index` (ensembles `WIDTH · index …`) of P = `rates.len() + 1` chains.
    fn build(rates: &[f64], window: u32, seed: u32, index: usize) -> Result<Self, EngineError>;
    /// `n` more iterations, asking `stop` every few milliseconds.
    fn advance(&mut self, n: u64, stop: &(dyn Fn() -> bool + Sync)) -> Result<(), EngineError>;
    /// Round trips of ensemble `lane` of the group.
    fn round_trips(&self, lane: usize) -> u64;
}

impl<const N: usize> IndexGroups for Group<N> {
    const WIDTH: usize = N;
    fn build(rates: &[f64], window: u32, seed: u32, index: usize) -> Result<Self, EngineError> {
        Ok(Group::new(rates, window, seed, (index * N) as u32))
    }
    fn advance(&mut self, n: u64, stop: &(dyn Fn() -> bool + Sync)) -> Result<(), EngineError> {
        self.run_or_stop(n, Simd::Auto, stop)
    }
    fn round_trips(&self, lane: usize) -> u64 {
        self.trips(lane).round_trips
    }
}

impl IndexGroups for BitGroup {
    const WIDTH: usize = bitsliced::ENSEMBLES;
    fn build(rates: &[f64], window: u32, seed: u32, index: usize) -> Result<Self, EngineError> {
        let group = u32::try_from(index).map_err(|_| EngineError::Backend {
            backend: "scale",
            message: format!("group {index} is past the last group a seed has (2^32)"),
        })?;
        BitGroup::new(rates, window, seed, group).map_err(|e| EngineError::Backend {
            backend: "scale",
            message: e.to_string(),
        })
    }
    fn advance(&mut self, n: u64, stop: &(dyn Fn() -> bool + Sync)) -> Result<(), EngineError> {
        self.run_or_stop(n, Simd::Auto, stop)
    }
    fn round_trips(&self, lane: usize) -> u64 {
        self.trips(lane).map_or(0, |t| t.round_trips)
    }
}

/// Runs one point of the Bernoulli model with the sweep's simulator: bit-sliced groups
/// of 64 ensembles, or SIMD groups of a width that leaves at least two groups (both
/// cores busy).
pub(super) fn run_bernoulli_point(
    s: &Settings,
    index: usize,
    chains: usize,
    rule: &str,
    rate: f64,
    interrupt: &(dyn Fn() -> bool + Sync),
) -> Result<Point, EngineError> {
    let e = ensembles_for(s, chains);
    let at = (s, index, chains, rule, rate, e);
    match s.simulator {
        Simulator::Bitsliced => bernoulli_point::<BitGroup>(at, interrupt),
        Simulator::Lanes => match (e / 2).max(1) {
            0..=7 => bernoulli_point::<Group<4>>(at, interrupt),
            8..=15 => bernoulli_point::<Group<8>>(at, interrupt),
            16..=31 => bernoulli_point::<Group<16>>(at, interrupt),
            _ => bernoulli_point::<Group<32>>(at, interrupt),
        },
    }
}

/// A Bernoulli point: the sweep's settings, the point's index, P, window rule, S and
/// ensembles.
type At<'a> = (&'a Settings, usize, usize, &'a str, f64, usize);

fn bernoulli_point<G: IndexGroups>(
    (s, index, chains, rule, rate, ensembles): At<'_>,
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
    let groups_n = ensembles.div_ceil(G::WIDTH);
    let mut groups: Vec<G> = (0..groups_n)
        .map(|g| G::build(&rates, window, seed, g))
        .collect::<Result<_, _>>()?;
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
    let advance = |groups: &mut Vec<G>, n: u64| {
        groups
            .par_iter_mut()
            .try_for_each(|g| g.advance(n, interrupt))
    };
    advance(&mut groups, warmup)?;
    let lanes_used = |g: usize| G::WIDTH.min(ensembles - g * G::WIDTH);
    let totals = |groups: &Vec<G>| -> Vec<u64> {
        groups
            .iter()
            .enumerate()
            .flat_map(|(gi, g)| (0..lanes_used(gi)).map(move |i| g.round_trips(i)))
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

pub(super) fn run_sampler_point(
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
pub(super) fn run_gaussian_point(
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
        reference: nrpt_sampling::config::ReferenceKind::Fixed,
    };
    let out = crate::exact::run(&settings, &nrpt_sampling::interrupt::flow).map_err(|e| {
        if e.is_interrupted() {
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
