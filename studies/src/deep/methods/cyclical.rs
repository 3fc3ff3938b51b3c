//! Cyclical SGHMC (Zhang et al., 2020) as a baseline: one long chain from one
//! pre-trained network (×T) or a chain from each (×P), cosine cycles after the same
//! burn-in as every method, samples kept in each cycle's sampling stage.

use std::ops::ControlFlow;

use serde::Serialize;

use super::{ChainSettings, Method, evenly, from_every_network, run_chain};
use crate::deep::metrics::Samples;
use nrpt_sampling::engine::EngineError;

/// The iterations at which cyclical SGHMC keeps samples: `per_cycle` of them spaced
/// evenly over the sampling stage (the last `sampling` share) of each of the `cycles`
/// cycles of `length` iterations, the last at the cycle's end.
pub(crate) fn cycle_samples(cycles: u64, length: u64, sampling: f64, per_cycle: usize) -> Vec<u64> {
    let stage = ((sampling * length as f64).round() as u64).clamp(1, length.max(1));
    (0..cycles)
        .flat_map(|c| {
            let end = (c + 1) * length;
            evenly(end - stage, end, per_cycle)
        })
        .collect()
}

/// Cyclical SGHMC's settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct CyclicalSettings {
    /// Cycles after the burn-in (each keeps its samples).
    pub cycles: u64,
    /// Samples kept per cycle.
    pub per_cycle: usize,
    /// Share of each cycle that samples (the rest explores).
    pub sampling: f64,
    /// Iterations before the first cycle that keeps samples: the chain already runs
    /// its cycles (of the same length, the last of them ending where the burn-in does)
    /// but keeps nothing, as every method of the comparison collects after the same
    /// burn-in share of its run.
    pub burn_in: u64,
}

/// Cyclical SGHMC (Zhang, Li, Zhang, Chen and Wilson, "Cyclical stochastic gradient
/// MCMC for Bayesian deep learning", ICLR 2020): one chain (replica `chain` of the
/// streams) from `start`, `iterations` in all: `s.burn_in` of them first, then
/// `s.cycles` cycles of a cosine learning rate from `eta` down to 0 over the rest, plain
/// momentum SGD in the first `1 − s.sampling` of each cycle (exploration) and SGHMC at
/// temperature 1 (noise √(2(1 − μ)η) per coordinate) in the rest (sampling), where it
/// keeps `s.per_cycle` samples ([`cycle_samples`]), as Zhang et al. keep several per
/// cycle. The burn-in runs the same cycles, phased so that one ends where it does,
/// and keeps nothing.
pub(crate) fn cyclical_sghmc(
    c: &ChainSettings,
    e: usize,
    chain: u32,
    start: &[f32],
    iterations: u64,
    eta: f64,
    s: &CyclicalSettings,
) -> Result<Samples, EngineError> {
    let seed = Method::CyclicalSghmc.seed(c.seed);
    cycling(c, (seed, e as u32), chain, start, iterations, eta, s)
}

/// The burn-in, the cycles and their length of a cyclical chain of `iterations`.
fn cycle_plan(iterations: u64, s: &CyclicalSettings) -> (u64, u64, u64) {
    let warm = s.burn_in.min(iterations);
    let cycles = s.cycles.max(1);
    (warm, cycles, ((iterations - warm) / cycles).max(1))
}

/// The iterations a cyclical chain of `iterations` runs: its burn-in and whole cycles
/// (the cycles round down, so up to `s.cycles − 1` fewer).
pub(crate) fn cyclical_iterations(iterations: u64, s: &CyclicalSettings) -> u64 {
    let (warm, cycles, length) = cycle_plan(iterations, s);
    warm + cycles * length
}

/// The chain of [`cyclical_sghmc`] on the streams `key`.
fn cycling(
    c: &ChainSettings,
    key: (u32, u32),
    chain: u32,
    start: &[f32],
    iterations: u64,
    eta: f64,
    s: &CyclicalSettings,
) -> Result<Samples, EngineError> {
    let data = &c.target.data;
    let (warm, cycles, length) = cycle_plan(iterations, s);
    // The burn-in ends at the start of a cycle.
    let offset = (length - warm % length) % length;
    let kept: Vec<u64> = cycle_samples(cycles, length, s.sampling, s.per_cycle)
        .into_iter()
        .map(|k| k + warm)
        .collect();
    let (mu, sampling) = (c.momentum, s.sampling);
    let schedule = move |k: u64| {
        let phase = ((k + offset) % length) as f64 / length as f64;
        let lr = 0.5 * eta * ((std::f64::consts::PI * phase).cos() + 1.0);
        let sigma = if phase >= 1.0 - sampling {
            (2.0 * (1.0 - mu) * lr).sqrt()
        } else {
            0.0
        };
        (lr, sigma)
    };
    let mut theta = start.to_vec();
    let mut v = vec![0.0f32; theta.len()];
    let mut samples = Samples::new(data.test.len(), data.classes);
    run_chain(
        &c.target,
        &mut theta,
        &mut v,
        key,
        chain,
        0,
        warm + length * cycles,
        mu,
        &schedule,
        |k, th| {
            if kept.binary_search(&k).is_ok() {
                samples.push(&c.target, th, &data.test.x);
            }
            ControlFlow::Continue(())
        },
    )?;
    Ok(samples)
}

/// Cyclical SGHMC ×P: a chain of [`cyclical_sghmc`]'s rule from every pre-trained
/// network of `start` (P·D values), `iterations` each, with `s` per chain; the chains'
/// samples interleaved (the first of every chain, then the second, …).
pub(crate) fn cyclical_sghmc_chains(
    c: &ChainSettings,
    e: usize,
    start: &[f32],
    iterations: u64,
    eta: f64,
    s: &CyclicalSettings,
) -> Result<Samples, EngineError> {
    let seed = Method::CyclicalSghmcChains.seed(c.seed);
    from_every_network(c, start, |r, net| {
        cycling(c, (seed, e as u32), r, net, iterations, eta, s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_keep_their_samples_in_the_sampling_stage() {
        // Two cycles of 100, sampling in the last 20: 3 samples each, 6 apart.
        let k = cycle_samples(2, 100, 0.2, 3);
        assert_eq!(k, vec![87, 93, 99, 187, 193, 199]);
        assert!(k.iter().all(|&i| i % 100 >= 80));
    }

    /// The burn-in comes first, then whole cycles of the rest (rounded down); without a
    /// burn-in the plan is nrpt 0.1's: the cycles fill the run.
    #[test]
    fn cycles_follow_the_burn_in() {
        let s = |burn_in, cycles| CyclicalSettings {
            cycles,
            per_cycle: 3,
            sampling: 0.2,
            burn_in,
        };
        assert_eq!(cycle_plan(1000, &s(250, 3)), (250, 3, 250));
        assert_eq!(cyclical_iterations(1000, &s(250, 3)), 1000);
        assert_eq!(cycle_plan(1000, &s(250, 7)), (250, 7, 107));
        assert_eq!(cyclical_iterations(1000, &s(250, 7)), 999);
        assert_eq!(cycle_plan(1000, &s(0, 20)), (0, 20, 50));
        // A burn-in longer than the run leaves one-iteration cycles, never a panic.
        assert_eq!(cycle_plan(10, &s(50, 2)), (10, 2, 1));
    }
}
