//! The baselines of the deep experiment, and the pre-training every method starts
//! from: single momentum-SGD (or SGHMC) chains without swaps.
//!
//! Every chain draws from Philox streams keyed (seed, ensemble) and addressed by
//! (iteration, chain, STEP), like the sampler's replicas: its mini-batch for the
//! gradient, then its Langevin noise when it has any. Each method uses its own seed
//! (the run's seed plus a fixed offset, [`Method::seed`]), so no two methods share a
//! random number, and results do not depend on the number of threads.

use std::sync::Arc;

use nrpt_core::explore::momentum_step;
use nrpt_core::rng::{PhiloxStream, fill_normals, streams};
use nrpt_core::target::EnergyOracle;
use rayon::prelude::*;

use super::metrics::Bma;
use crate::engine::ClassifierTarget;
use crate::engine::classifier::initial_parameters;

/// The methods that are chains of their own (the tempering runs are engine jobs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Pre-training of the P starting networks.
    Pretrain,
    /// The mSGD ensemble.
    Ensemble,
    /// Cyclical SGHMC.
    CyclicalSghmc,
    /// SWAG.
    Swag,
}

impl Method {
    /// The seed of this method's streams for base seed `seed`.
    pub fn seed(self, seed: u32) -> u32 {
        let offset = match self {
            Method::Pretrain => 0x5052_4554,
            Method::Ensemble => 0x454e_534d,
            Method::CyclicalSghmc => 0x4359_4353,
            Method::Swag => 0x5357_4147,
        };
        seed.wrapping_add(offset)
    }
}

/// A learning rate and Langevin noise scale for iteration k.
pub type Schedule<'a> = &'a (dyn Fn(u64) -> (f64, f64) + Sync);

/// One chain: `iterations` momentum-SGD steps of θ (with velocity `v`) from iteration
/// `start`, the rate and noise of each from `schedule` (in the energy's units: η/N and
/// σ), calling `after(k, θ)` after every step. Streams are keyed `key` and addressed
/// (k, `chain`, STEP).
#[allow(clippy::too_many_arguments)]
pub fn run_chain(
    target: &Arc<ClassifierTarget>,
    theta: &mut [f32],
    v: &mut [f32],
    key: (u32, u32),
    chain: u32,
    start: u64,
    iterations: u64,
    momentum: f64,
    schedule: Schedule<'_>,
    mut after: impl FnMut(u64, &[f32]),
) {
    let mut oracle = target.oracle();
    let mut grad = vec![0.0f32; theta.len()];
    let mut noise = vec![0.0f32; theta.len()];
    for k in start..start + iterations {
        let mut rng = PhiloxStream::new(key.0, key.1, k, chain, streams::STEP);
        let Ok(()) = oracle.gradient(theta, &mut grad, &mut rng);
        let (eta, sigma) = schedule(k);
        if sigma > 0.0 {
            fill_normals(&mut rng, &mut noise);
        }
        momentum_step(
            theta,
            v,
            &grad,
            &noise,
            eta as f32,
            momentum as f32,
            sigma as f32,
        );
        after(k, theta);
    }
}

/// What pre-training, the ensemble and the single-chain methods share.
#[derive(Clone, Debug)]
pub struct ChainSettings {
    /// The target.
    pub target: Arc<ClassifierTarget>,
    /// Base seed of the run.
    pub seed: u32,
    /// Momentum μ.
    pub momentum: f64,
}

/// P networks per seed trained from scratch by momentum SGD at rate `eta` (energy
/// units) for `iterations`: the starting states of every method, E·P·D values (seed by
/// seed, network by network). Network r of seed e starts from W ~ N(0, 1/in), drawn
/// from the INIT stream of (seed, e, r).
pub fn pretrain(
    c: &ChainSettings,
    seeds: usize,
    chains: usize,
    iterations: u64,
    eta: f64,
) -> Vec<f32> {
    let d = c.target.dim();
    let seed = Method::Pretrain.seed(c.seed);
    let mut states = vec![0.0f32; seeds * chains * d];
    states.par_chunks_mut(d).enumerate().for_each(|(i, theta)| {
        let (e, r) = ((i / chains) as u32, (i % chains) as u32);
        initial_parameters(&c.target.arch, seed, e, r, theta);
        let mut v = vec![0.0f32; d];
        run_chain(
            &c.target,
            theta,
            &mut v,
            (seed, e),
            r,
            0,
            iterations,
            c.momentum,
            &|_| (eta, 0.0),
            |_, _| {},
        );
    });
    states
}

/// When to keep a sample: every `thin` iterations from `warmup` on.
#[derive(Clone, Copy, Debug)]
pub struct Thinning {
    /// Iterations before the first sample.
    pub warmup: u64,
    /// Iterations between samples (≥ 1).
    pub thin: u64,
}

impl Thinning {
    fn keeps(&self, k: u64) -> bool {
        k >= self.warmup && (k - self.warmup).is_multiple_of(self.thin.max(1))
    }
}

/// The mSGD ensemble ×P: every pre-trained network of seed `e` trained on at rate
/// `eta` for `iterations`, a sample of every member kept by `thinning`; returns the
/// BMA of all of them on the test set.
pub fn ensemble(
    c: &ChainSettings,
    e: usize,
    start: &[f32],
    iterations: u64,
    eta: f64,
    thinning: Thinning,
) -> Bma {
    let d = c.target.dim();
    let data = &c.target.data;
    let seed = Method::Ensemble.seed(c.seed);
    let members: Vec<Bma> = start
        .par_chunks(d)
        .enumerate()
        .map(|(r, s)| {
            let mut theta = s.to_vec();
            let mut v = vec![0.0f32; d];
            let mut bma = Bma::new(data.test.len(), data.classes);
            run_chain(
                &c.target,
                &mut theta,
                &mut v,
                (seed, e as u32),
                r as u32,
                0,
                iterations,
                c.momentum,
                &|_| (eta, 0.0),
                |k, th| {
                    if thinning.keeps(k) {
                        bma.add(&c.target, th, &data.test.x);
                    }
                },
            );
            bma
        })
        .collect();
    let mut all = Bma::new(data.test.len(), data.classes);
    for m in &members {
        all.merge(m);
    }
    all
}

/// Cyclical SGHMC (Zhang et al., ICLR 2020) ×T: one chain from `start`, `iterations`
/// in `cycles` cycles of a cosine learning rate from `eta` down to 0, plain momentum
/// SGD in the first `1 − sampling` of each cycle and SGHMC at temperature 1 (noise
/// √(2(1 − μ)η) per coordinate) in the rest, one sample at the end of each cycle.
pub fn cyclical_sghmc(
    c: &ChainSettings,
    e: usize,
    start: &[f32],
    iterations: u64,
    cycles: u64,
    eta: f64,
    sampling: f64,
) -> Bma {
    let data = &c.target.data;
    let seed = Method::CyclicalSghmc.seed(c.seed);
    let length = (iterations / cycles.max(1)).max(1);
    let mu = c.momentum;
    let schedule = move |k: u64| {
        let phase = (k % length) as f64 / length as f64;
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
    let mut bma = Bma::new(data.test.len(), data.classes);
    run_chain(
        &c.target,
        &mut theta,
        &mut v,
        (seed, e as u32),
        0,
        0,
        iterations,
        mu,
        &schedule,
        |k, th| {
            if (k + 1) % length == 0 {
                bma.add(&c.target, th, &data.test.x);
            }
        },
    );
    bma
}

/// SWAG (Maddox et al., NeurIPS 2019) ×T: one chain from `start` at the constant rate
/// `eta` for `iterations`; every `every` iterations its state updates the running mean
/// and second moment of θ and joins the last `rank` deviations; then `draws` networks
/// θ = θ̄ + Σ_diag^{1/2} z₁/√2 + D z₂/√(2(K − 1)) (z₁, z₂ standard normal, D the K
/// deviations θ_i − θ̄_i) are averaged. The normals come from the INIT stream of the
/// method's seed.
#[allow(clippy::too_many_arguments)]
pub fn swag(
    c: &ChainSettings,
    e: usize,
    start: &[f32],
    iterations: u64,
    eta: f64,
    every: u64,
    rank: usize,
    draws: usize,
) -> Bma {
    let data = &c.target.data;
    let d = start.len();
    let seed = Method::Swag.seed(c.seed);
    let (mut mean, mut sq) = (vec![0.0f64; d], vec![0.0f64; d]);
    let mut deviations: Vec<Vec<f32>> = Vec::with_capacity(rank);
    let mut n = 0.0f64;
    let mut theta = start.to_vec();
    let mut v = vec![0.0f32; d];
    run_chain(
        &c.target,
        &mut theta,
        &mut v,
        (seed, e as u32),
        0,
        0,
        iterations,
        c.momentum,
        &|_| (eta, 0.0),
        |k, th| {
            if (k + 1) % every.max(1) != 0 {
                return;
            }
            n += 1.0;
            for ((m, s), &t) in mean.iter_mut().zip(sq.iter_mut()).zip(th) {
                let t = f64::from(t);
                *m += (t - *m) / n;
                *s += (t * t - *s) / n;
            }
            if deviations.len() == rank {
                deviations.remove(0);
            }
            deviations.push(th.iter().zip(&mean).map(|(&t, &m)| t - m as f32).collect());
        },
    );
    let mut bma = Bma::new(data.test.len(), data.classes);
    let k = deviations.len();
    let mut rng = PhiloxStream::new(seed, e as u32, 0, 0, streams::INIT);
    let mut z1 = vec![0.0f32; d];
    let mut z2 = vec![0.0f32; k.max(1)];
    let mut sample = vec![0.0f32; d];
    let low_rank = if k > 1 {
        (2.0 * (k - 1) as f64).sqrt().recip()
    } else {
        0.0
    };
    for _ in 0..draws {
        fill_normals(&mut rng, &mut z1);
        fill_normals(&mut rng, &mut z2);
        for (j, s) in sample.iter_mut().enumerate() {
            let var = (sq[j] - mean[j] * mean[j]).max(0.0);
            let mut x = mean[j] + var.sqrt() * f64::from(z1[j]) / std::f64::consts::SQRT_2;
            for (dev, &z) in deviations.iter().zip(&z2) {
                x += low_rank * f64::from(dev[j]) * f64::from(z);
            }
            *s = x as f32;
        }
        bma.add(&c.target, &sample, &data.test.x);
    }
    bma
}
