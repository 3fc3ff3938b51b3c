//! The baselines of the deep experiment, and the pre-training every method starts
//! from: single momentum-SGD (or SGHMC) chains without swaps.
//!
//! Every chain draws from Philox streams keyed (seed, ensemble) and addressed by
//! (iteration, chain, STEP), like the sampler's replicas: its mini-batch for the
//! gradient, then its Langevin noise when it has any. Each method uses its own seed
//! (the run's seed plus a fixed offset, [`Method::seed`]), so no two methods share a
//! random number, and results do not depend on the number of threads.
//!
//! Every method returns its samples' predictives on the test set in the order it
//! collected them ([`Samples`]), so that the comparison can average the same number
//! of samples for every method and draw curves against that number.

use std::ops::ControlFlow;
use std::sync::Arc;

use nrpt_core::explore::momentum_step;
use nrpt_core::rng::{PhiloxStream, fill_normals, streams};
use nrpt_core::target::EnergyOracle;
use rayon::prelude::*;
use serde::Serialize;

use super::metrics::{Samples, score};
use nrpt_sampling::data::{Dataset, Split};
use nrpt_sampling::engine::EngineError;
use nrpt_sampling::targets::classifier::{ClassifierTarget, initial_parameters, predict};

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
pub(crate) type Schedule<'a> = &'a (dyn Fn(u64) -> (f64, f64) + Sync);

/// One chain: `iterations` momentum-SGD steps of θ (with velocity `v`) from iteration
/// `start`, the rate and noise of each from `schedule` (in the energy's units: η/N and
/// σ), calling `after(k, θ)` after every step; the chain ends early when it returns
/// `Break`. Streams are keyed `key` and addressed (k, `chain`, STEP). The oracle polls
/// the stop request at every gradient: Ctrl-C or SIGTERM ends the chain with
/// [`EngineError::Interrupted`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_chain(
    target: &Arc<ClassifierTarget>,
    theta: &mut [f32],
    v: &mut [f32],
    key: (u32, u32),
    chain: u32,
    start: u64,
    iterations: u64,
    momentum: f64,
    schedule: Schedule<'_>,
    mut after: impl FnMut(u64, &[f32]) -> ControlFlow<()>,
) -> Result<(), EngineError> {
    let mut oracle = target.oracle();
    let mut grad = vec![0.0f32; theta.len()];
    let mut noise = vec![0.0f32; theta.len()];
    for k in start..start + iterations {
        let mut rng = PhiloxStream::new(key.0, key.1, k, chain, streams::STEP);
        oracle.gradient(theta, &mut grad, &mut rng)?;
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
        if after(k, theta).is_break() {
            return Ok(());
        }
    }
    Ok(())
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

/// How the starting networks are trained.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Pretraining {
    /// The most epochs: the length of the cosine schedule.
    pub max_epochs: f64,
    /// Training stops when the validation NLL has not improved for this many epochs.
    pub patience: f64,
    /// Every `validation_every`-th training example (i % v == v − 1) is held out to
    /// decide when to stop; the others train.
    pub validation_every: usize,
}

impl Default for Pretraining {
    fn default() -> Self {
        Pretraining {
            max_epochs: 200.0,
            patience: 20.0,
            validation_every: 10,
        }
    }
}

/// What pre-training one network gave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Pretrained {
    /// Epochs run.
    #[serde(with = "super::lossless::one")]
    pub epochs: f64,
    /// Epoch of the kept network (the best validation NLL).
    #[serde(with = "super::lossless::one")]
    pub best_epoch: f64,
    /// Its validation NLL per example.
    #[serde(with = "super::lossless::one")]
    pub validation_nll: f64,
}

/// The training set split for pre-training: every `every`-th example (i % every ==
/// every − 1) held out as the validation set (the returned data set's "test" split),
/// the others kept for training.
pub fn validation_split(data: &Dataset, every: usize) -> Dataset {
    let f = data.features;
    let mut kept = Split::default();
    let mut held = Split::default();
    for (i, (x, y)) in data.train.rows(f).enumerate() {
        let to = if every > 1 && i % every == every - 1 {
            &mut held
        } else {
            &mut kept
        };
        to.x.extend_from_slice(x);
        to.y.push(y);
    }
    Dataset {
        name: format!("{} (pre-training split)", data.name),
        description: format!(
            "{}: training examples without every {every}th, which validate",
            data.description
        ),
        features: f,
        classes: data.classes,
        train: kept,
        test: held,
    }
}

/// P networks per seed trained from scratch by momentum SGD on `c.target` (the
/// training set without its validation examples, [`validation_split`]) with a cosine
/// learning rate from `eta` (energy units) to 0 over `p.max_epochs`, the validation
/// NLL measured after every epoch; a network stops when it has not improved for
/// `p.patience` epochs and is returned as it was at its best. The starting states of
/// every method: E·P·D values (seed by seed, network by network) for the E seeds of
/// `seeds` (all of a run's, or one shard's block). Network r of seed e starts from
/// W ~ N(0, 1/in), drawn from the INIT stream of (seed, e, r), whichever block holds e.
pub fn pretrain(
    c: &ChainSettings,
    seeds: std::ops::Range<usize>,
    chains: usize,
    p: &Pretraining,
    eta: f64,
) -> Result<(Vec<f32>, Vec<Pretrained>), EngineError> {
    let target = &c.target;
    let d = target.dim();
    let seed = Method::Pretrain.seed(c.seed);
    let per_epoch = target.iterations_per_epoch();
    let total = ((p.max_epochs * per_epoch).round() as u64).max(1);
    let epoch_len = (per_epoch.round() as u64).max(1);
    let validation = &target.data.test;
    let classes = target.data.classes;
    let mut states = vec![0.0f32; seeds.len() * chains * d];
    let outcomes: Vec<Pretrained> = states
        .par_chunks_mut(d)
        .enumerate()
        .map(|(i, theta)| {
            let (e, r) = ((seeds.start + i / chains) as u32, (i % chains) as u32);
            initial_parameters(&target.arch, seed, e, r, theta);
            let mut v = vec![0.0f32; d];
            let mut best = theta.to_vec();
            let mut out = Pretrained {
                validation_nll: f64::INFINITY,
                ..Pretrained::default()
            };
            let mut probs = vec![0.0f32; validation.len() * classes];
            let schedule = |k: u64| {
                let phase = k as f64 / total as f64;
                (
                    0.5 * eta * ((std::f64::consts::PI * phase).cos() + 1.0),
                    0.0,
                )
            };
            run_chain(
                target,
                theta,
                &mut v,
                (seed, e),
                r,
                0,
                total,
                c.momentum,
                &schedule,
                |k, th| {
                    let done = k + 1;
                    if !done.is_multiple_of(epoch_len) && done != total {
                        return ControlFlow::Continue(());
                    }
                    let epoch = done as f64 / per_epoch;
                    out.epochs = epoch;
                    predict(target, th, &validation.x, &mut probs);
                    let wide: Vec<f64> = probs.iter().map(|&q| f64::from(q)).collect();
                    let nll = score(&wide, &validation.y, classes).nll;
                    if nll < out.validation_nll {
                        out.validation_nll = nll;
                        out.best_epoch = epoch;
                        best.copy_from_slice(th);
                    }
                    if epoch - out.best_epoch >= p.patience {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                },
            )?;
            theta.copy_from_slice(&best);
            Ok(out)
        })
        .collect::<Result<_, EngineError>>()?;
    Ok((states, outcomes))
}

/// `count` iterations in [`first`, `end`) spaced evenly and ending with `end − 1`, in
/// increasing order (fewer when the range is shorter than `count`).
pub fn evenly(first: u64, end: u64, count: usize) -> Vec<u64> {
    if end <= first || count == 0 {
        return Vec::new();
    }
    let span = end - first;
    let count = (count as u64).min(span);
    let step = span / count;
    let mut out: Vec<u64> = (0..count).map(|j| end - 1 - j * step).collect();
    out.reverse();
    out
}

/// The mSGD ensemble ×P: every pre-trained network of seed `e` trained on at rate
/// `eta` for `iterations`, each keeping a sample at the iterations `keep` (increasing);
/// returns the members' samples interleaved (the first of every member, then the
/// second, …).
pub fn ensemble(
    c: &ChainSettings,
    e: usize,
    start: &[f32],
    iterations: u64,
    eta: f64,
    keep: &[u64],
) -> Result<Samples, EngineError> {
    let d = c.target.dim();
    let data = &c.target.data;
    let seed = Method::Ensemble.seed(c.seed);
    let members: Vec<Samples> = start
        .par_chunks(d)
        .enumerate()
        .map(|(r, s)| {
            let mut theta = s.to_vec();
            let mut v = vec![0.0f32; d];
            let mut samples = Samples::new(data.test.len(), data.classes);
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
                    if keep.binary_search(&k).is_ok() {
                        samples.push(&c.target, th, &data.test.x);
                    }
                    ControlFlow::Continue(())
                },
            )?;
            Ok(samples)
        })
        .collect::<Result<_, EngineError>>()?;
    Ok(Samples::interleave(&members))
}

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
    /// Cycles over the run.
    pub cycles: u64,
    /// Samples kept per cycle.
    pub per_cycle: usize,
    /// Share of each cycle that samples (the rest explores).
    pub sampling: f64,
}

/// Cyclical SGHMC (Zhang, Li, Zhang, Chen and Wilson, "Cyclical stochastic gradient
/// MCMC for Bayesian deep learning", ICLR 2020) ×T: one chain from `start`,
/// `iterations` in `s.cycles` cycles of a cosine learning rate from `eta` down to 0,
/// plain momentum SGD in the first `1 − s.sampling` of each cycle (exploration) and
/// SGHMC at temperature 1 (noise √(2(1 − μ)η) per coordinate) in the rest (sampling),
/// where it keeps `s.per_cycle` samples ([`cycle_samples`]), as Zhang et al. keep
/// several per cycle.
pub(crate) fn cyclical_sghmc(
    c: &ChainSettings,
    e: usize,
    start: &[f32],
    iterations: u64,
    eta: f64,
    s: &CyclicalSettings,
) -> Result<Samples, EngineError> {
    let data = &c.target.data;
    let seed = Method::CyclicalSghmc.seed(c.seed);
    let cycles = s.cycles.max(1);
    let length = (iterations / cycles).max(1);
    let keep = cycle_samples(cycles, length, s.sampling, s.per_cycle);
    let (mu, sampling) = (c.momentum, s.sampling);
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
    let mut samples = Samples::new(data.test.len(), data.classes);
    run_chain(
        &c.target,
        &mut theta,
        &mut v,
        (seed, e as u32),
        0,
        0,
        length * cycles,
        mu,
        &schedule,
        |k, th| {
            if keep.binary_search(&k).is_ok() {
                samples.push(&c.target, th, &data.test.x);
            }
            ControlFlow::Continue(())
        },
    )?;
    Ok(samples)
}

/// SWAG's settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct SwagSettings {
    /// Share of the run before the first moment is collected (SWA's burn-in; Maddox et
    /// al. start collecting after 75 % of a run from scratch, here the run starts from
    /// pre-trained networks).
    pub burn_in: f64,
    /// Iterations between collected moments.
    pub every: u64,
    /// Rank K of the low-rank part (the last K deviations).
    pub rank: usize,
    /// Networks drawn from the fitted Gaussian.
    pub draws: usize,
}

/// SWAG (Maddox, Izmailov, Garipov, Vetrov and Wilson, "A simple baseline for
/// Bayesian uncertainty in deep learning", NeurIPS 2019) ×T: one chain from `start` at
/// the constant rate `eta` for `iterations`; after the burn-in, every `s.every`
/// iterations its state updates the running mean and second moment of θ and joins the
/// last `s.rank` deviations; then `s.draws` networks
/// θ = θ̄ + Σ_diag^{1/2} z₁/√2 + D z₂/√(2(K − 1)) (z₁, z₂ standard normal, D the K
/// deviations θ_i − θ̄_i) are drawn. The normals come from the INIT stream of the
/// method's seed.
pub(crate) fn swag(
    c: &ChainSettings,
    e: usize,
    start: &[f32],
    iterations: u64,
    eta: f64,
    s: &SwagSettings,
) -> Result<Samples, EngineError> {
    let data = &c.target.data;
    let d = start.len();
    let seed = Method::Swag.seed(c.seed);
    let (mut mean, mut sq) = (vec![0.0f64; d], vec![0.0f64; d]);
    let mut deviations: Vec<Vec<f32>> = Vec::with_capacity(s.rank);
    let mut n = 0.0f64;
    let mut theta = start.to_vec();
    let mut v = vec![0.0f32; d];
    let first = (s.burn_in * iterations as f64) as u64;
    let every = s.every.max(1);
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
            if k < first || !(k + 1 - first).is_multiple_of(every) {
                return ControlFlow::Continue(());
            }
            n += 1.0;
            for ((m, q), &t) in mean.iter_mut().zip(sq.iter_mut()).zip(th) {
                let t = f64::from(t);
                *m += (t - *m) / n;
                *q += (t * t - *q) / n;
            }
            if deviations.len() == s.rank {
                deviations.remove(0);
            }
            deviations.push(th.iter().zip(&mean).map(|(&t, &m)| t - m as f32).collect());
            ControlFlow::Continue(())
        },
    )?;
    let mut samples = Samples::new(data.test.len(), data.classes);
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
    for _ in 0..s.draws {
        fill_normals(&mut rng, &mut z1);
        fill_normals(&mut rng, &mut z2);
        for (j, out) in sample.iter_mut().enumerate() {
            let var = (sq[j] - mean[j] * mean[j]).max(0.0);
            let mut x = mean[j] + var.sqrt() * f64::from(z1[j]) / std::f64::consts::SQRT_2;
            for (dev, &z) in deviations.iter().zip(&z2) {
                x += low_rank * f64::from(dev[j]) * f64::from(z);
            }
            *out = x as f32;
        }
        samples.push(&c.target, &sample, &data.test.x);
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evenly_spaced_iterations_end_at_the_end() {
        assert_eq!(evenly(0, 10, 5), vec![1, 3, 5, 7, 9]);
        assert_eq!(evenly(4, 10, 2), vec![6, 9]);
        assert_eq!(evenly(0, 3, 5), vec![0, 1, 2]);
        assert!(evenly(5, 5, 3).is_empty());
        assert!(evenly(0, 5, 0).is_empty());
    }

    #[test]
    fn cycles_keep_their_samples_in_the_sampling_stage() {
        // Two cycles of 100, sampling in the last 20: 3 samples each, 6 apart.
        let k = cycle_samples(2, 100, 0.2, 3);
        assert_eq!(k, vec![87, 93, 99, 187, 193, 199]);
        assert!(k.iter().all(|&i| i % 100 >= 80));
    }

    #[test]
    fn the_validation_split_holds_every_tenth_example() {
        let d = nrpt_sampling::data::digits();
        let v = validation_split(&d, 10);
        assert_eq!(v.test.len(), d.train.len() / 10);
        assert_eq!(v.train.len() + v.test.len(), d.train.len());
        assert_eq!(v.test.row(0, 64), d.train.row(9, 64));
        assert_eq!(v.train.row(9, 64), d.train.row(10, 64));
    }
}
