//! The two baselines of the paper's 2D experiment, without tempering: independent SGLD
//! chains, and one cyclical SGLD chain (Zhang et al., ICLR 2020, "Cyclical stochastic
//! gradient MCMC for Bayesian deep learning").
//!
//! Both draw from the same Philox streams as the tempering driver (key (seed, e),
//! counter (iteration, chain, block, STEP)), use the same noisy oracle and
//! nrpt-core's SGLD step (`explore_replica`, the driver's own), in `f32`.

use nrpt_core::driver::{ReplicaStep, TemperingOptions, explore_replica};
use nrpt_core::explore::Explorer;
use nrpt_core::rng::{PhiloxStream, Rng, streams, uniform_f64};
use nrpt_core::target::{Modes2d, Noisy};
use rayon::prelude::*;

use nrpt_sampling::engine::{EngineError, Flow, OnProgress};
use nrpt_sampling::targets::Toy;

/// Settings shared by the baselines.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Baseline {
    /// Base seed.
    pub seed: u32,
    /// Independent repetitions (one Philox ensemble index each).
    pub seeds: usize,
    /// The ensemble index of the first repetition (0 but for a shard of a run, which
    /// runs repetitions `first .. first + seeds` of it).
    pub first: usize,
    /// Noise scale of the oracle.
    pub noise: f64,
    /// Keep a sample every `thin` iterations.
    pub thin: u64,
    /// No samples before this iteration.
    pub warmup: u64,
}

fn oracle(noise: f64) -> Noisy<Modes2d> {
    Toy::modes2d(noise).noisy()
}

/// x₀ ~ U(−1, 1)², from the INIT stream, as the tempering driver starts its replicas.
fn start(seed: u32, e: u32, chain: u32) -> [f32; 2] {
    let mut rng = PhiloxStream::new(seed, e, 0, chain, streams::INIT);
    let mut x = [0.0f32; 2];
    for v in &mut x {
        *v = (-1.0 + 2.0 * uniform_f64(rng.next_u32())) as f32;
    }
    x
}

/// One SGLD step at learning rate `eta` and temperature `t` of chain `chain`: the
/// tempering driver's own step (`explore_replica`, its energy not computed).
fn sgld_step(
    x: &mut [f32; 2],
    o: &mut Noisy<Modes2d>,
    key: (u32, u32),
    k: u64,
    chain: u32,
    eta: f64,
    t: f64,
) {
    let options = TemperingOptions {
        explorer: Explorer::Langevin,
        seed: key.0,
        ensemble: key.1,
        ..TemperingOptions::default()
    };
    let step = ReplicaStep {
        iteration: k,
        replica: chain,
        eta,
        temperature: t,
    };
    let mut scratch = [0.0f32; 4];
    explore_replica(&options, o, step, x, &mut [], &mut scratch, false)
        .expect("two coordinates and a scratch of four values fit the 2D toy");
}

/// Every 1024 iterations: reports progress, and stops when told to.
fn tick(k: u64, iterations: u64, progress: OnProgress<'_>) -> Result<(), EngineError> {
    if k.is_multiple_of(1024) && progress(1024.min(iterations - k)) == Flow::Stop {
        return Err(EngineError::Interrupted);
    }
    Ok(())
}

/// SGLD×P: `chains` independent SGLD chains at learning rate `eta` and temperature 1
/// for `iterations`, all chains' samples pooled (`[x, y]` pairs).
pub(crate) fn parallel_sgld(
    b: Baseline,
    chains: usize,
    iterations: u64,
    eta: f64,
    progress: OnProgress<'_>,
) -> Result<Vec<f32>, EngineError> {
    let per_seed: Vec<Vec<f32>> = (b.first..b.first + b.seeds)
        .into_par_iter()
        .map(|e| {
            let mut o = oracle(b.noise);
            let mut xs: Vec<[f32; 2]> = (0..chains)
                .map(|c| start(b.seed, e as u32, c as u32))
                .collect();
            let mut samples = Vec::new();
            for k in 0..iterations {
                for (c, x) in xs.iter_mut().enumerate() {
                    sgld_step(x, &mut o, (b.seed, e as u32), k, c as u32, eta, 1.0);
                    if k >= b.warmup && k.is_multiple_of(b.thin) {
                        samples.extend_from_slice(x);
                    }
                }
                tick(k, iterations, progress)?;
            }
            Ok(samples)
        })
        .collect::<Result<_, EngineError>>()?;
    Ok(per_seed.concat())
}

/// cycSGLD×T: one chain for `iterations` with the cosine learning rate
/// `η_k = η₀/2 · (cos(π · (k mod L)/L) + 1)`, L = iterations / cycles; SGD in the
/// first 95% of each cycle (exploration), SGLD at temperature 1 in the last 5%
/// (sampling), where samples are kept every `thin` iterations.
pub(crate) fn cyclical_sgld(
    b: Baseline,
    iterations: u64,
    cycles: u64,
    eta0: f64,
    progress: OnProgress<'_>,
) -> Result<Vec<f32>, EngineError> {
    let len = (iterations / cycles.max(1)).max(1);
    let per_seed: Vec<Vec<f32>> = (b.first..b.first + b.seeds)
        .into_par_iter()
        .map(|e| {
            let mut o = oracle(b.noise);
            let mut x = start(b.seed, e as u32, 0);
            let mut samples = Vec::new();
            for k in 0..iterations {
                let phase = (k % len) as f64 / len as f64;
                let eta = eta0 / 2.0 * ((std::f64::consts::PI * phase).cos() + 1.0);
                let sampling = phase >= 0.95;
                sgld_step(
                    &mut x,
                    &mut o,
                    (b.seed, e as u32),
                    k,
                    0,
                    eta,
                    if sampling { 1.0 } else { 0.0 },
                );
                if sampling && k.is_multiple_of(b.thin) {
                    samples.extend_from_slice(&x);
                }
                tick(k, iterations, progress)?;
            }
            Ok(samples)
        })
        .collect::<Result<_, EngineError>>()?;
    Ok(per_seed.concat())
}
