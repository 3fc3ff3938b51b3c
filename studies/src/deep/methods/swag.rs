//! SWAG (Maddox et al., 2019) as a baseline: one chain from one pre-trained network
//! (×T), or MultiSWAG (Wilson and Izmailov, 2020): SWAG from each (×P).

use std::ops::ControlFlow;

use nrpt_core::rng::{PhiloxStream, fill_normals, streams};
use serde::Serialize;

use super::{ChainSettings, Method, from_every_network, run_chain};
use crate::deep::metrics::Samples;
use nrpt_sampling::engine::EngineError;

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
    swag_chain(
        c,
        (Method::Swag.seed(c.seed), e as u32),
        0,
        start,
        iterations,
        eta,
        s,
    )
}

/// MultiSWAG (Wilson and Izmailov, "Bayesian deep learning and a probabilistic
/// perspective of generalization", NeurIPS 2020): [`swag`] from every pre-trained
/// network of `start` (P·D values), `iterations` each, `s.draws` draws from each fitted
/// Gaussian; the draws interleaved (the first of every network's, then the second, …).
pub(crate) fn multi_swag(
    c: &ChainSettings,
    e: usize,
    start: &[f32],
    iterations: u64,
    eta: f64,
    s: &SwagSettings,
) -> Result<Samples, EngineError> {
    let seed = Method::MultiSwag.seed(c.seed);
    from_every_network(c, start, |r, net| {
        swag_chain(c, (seed, e as u32), r, net, iterations, eta, s)
    })
}

/// One SWAG chain on the streams `key`, replica `chain`: its mini-batches from the STEP
/// stream, its draws' normals from the INIT stream of (key, 0, `chain`).
fn swag_chain(
    c: &ChainSettings,
    key: (u32, u32),
    chain: u32,
    start: &[f32],
    iterations: u64,
    eta: f64,
    s: &SwagSettings,
) -> Result<Samples, EngineError> {
    let data = &c.target.data;
    let d = start.len();
    let (seed, e) = key;
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
        key,
        chain,
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
    let mut rng = PhiloxStream::new(seed, e, 0, chain, streams::INIT);
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
