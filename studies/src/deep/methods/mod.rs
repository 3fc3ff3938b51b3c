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
//!
//! Here: the chain every method runs (`run_chain`), pre-training and the mSGD
//! ensemble; `cyclical` holds cyclical SGHMC (×T and ×P), `swag` SWAG and
//! MultiSWAG.

use std::ops::ControlFlow;
use std::sync::Arc;

use nrpt_core::explore::momentum_step;
use nrpt_core::rng::{PhiloxStream, fill_normals, streams};
use nrpt_core::target::EnergyOracle;
use rayon::prelude::*;
use serde::Serialize;

use super::metrics::{Samples, score};

mod cyclical;
mod swag;
pub(crate) use cyclical::{
    CyclicalSettings, cyclical_iterations, cyclical_sghmc, cyclical_sghmc_chains,
};
use nrpt_sampling::data::{Dataset, Split};
use nrpt_sampling::engine::EngineError;
use nrpt_sampling::targets::classifier::{ClassifierTarget, initial_parameters, predict};
pub(crate) use swag::{SwagSettings, multi_swag, swag};

/// The methods that are chains of their own (the tempering runs are engine jobs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Pre-training of the P starting networks.
    Pretrain,
    /// The mSGD ensemble.
    Ensemble,
    /// Cyclical SGHMC, one long chain (×T).
    CyclicalSghmc,
    /// SWAG, one long chain (×T).
    Swag,
    /// Cyclical SGHMC, a chain from each of the P pre-trained networks (×P).
    CyclicalSghmcChains,
    /// MultiSWAG: SWAG from each of the P pre-trained networks (×P).
    MultiSwag,
}

impl Method {
    /// The seed of this method's streams for base seed `seed`.
    pub fn seed(self, seed: u32) -> u32 {
        let offset = match self {
            Method::Pretrain => 0x5052_4554,
            Method::Ensemble => 0x454e_534d,
            Method::CyclicalSghmc => 0x4359_4353,
            Method::Swag => 0x5357_4147,
            Method::CyclicalSghmcChains => 0x4359_4350,
            Method::MultiSwag => 0x4d53_5741,
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
    from_every_network(c, start, |r, s| {
        let mut theta = s.to_vec();
        let mut v = vec![0.0f32; d];
        let mut samples = Samples::new(data.test.len(), data.classes);
        run_chain(
            &c.target,
            &mut theta,
            &mut v,
            (seed, e as u32),
            r,
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
}

/// A chain from every pre-trained network of `start` (P·D values), in parallel:
/// `chain(r, network)` runs replica r from network r; the chains' samples interleaved
/// (the first of every chain, then the second, …). The ensemble, cyclical SGHMC ×P and
/// MultiSWAG start so.
pub(crate) fn from_every_network(
    c: &ChainSettings,
    start: &[f32],
    chain: impl Fn(u32, &[f32]) -> Result<Samples, EngineError> + Sync + Send,
) -> Result<Samples, EngineError> {
    let members: Vec<Samples> = start
        .par_chunks(c.target.dim())
        .enumerate()
        .map(|(r, network)| chain(r as u32, network))
        .collect::<Result<_, EngineError>>()?;
    Ok(Samples::interleave(&members))
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
    fn the_validation_split_holds_every_tenth_example() {
        let d = nrpt_sampling::data::digits();
        let v = validation_split(&d, 10);
        assert_eq!(v.test.len(), d.train.len() / 10);
        assert_eq!(v.train.len() + v.test.len(), d.train.len());
        assert_eq!(v.test.row(0, 64), d.train.row(9, 64));
        assert_eq!(v.train.row(9, 64), d.train.row(10, 64));
    }
}
