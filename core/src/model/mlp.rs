//! The forward and backward passes of a multilayer perceptron, one example at a time,
//! over buffers the caller owns: the reference implementation of the model's energy
//! and gradient (see the [module docs](super) for the formulas).
//!
//! Hidden units are ReLU, the output a softmax over C classes, the loss of an example
//! `−log softmax(s)_y = logsumexp(s) − s_y` computed stably (the largest score is
//! subtracted first). Its gradient with respect to the scores is `softmax(s) − e_y`,
//! which backpropagates through the layers: for layer l with inputs a and output
//! gradient δ, `∂W_l[i, j] += a_i δ_j`, `∂b_l[j] += δ_j`, and the input gradient is
//! `Σ_j W_l[i, j] δ_j`, masked where the ReLU was off.

use super::arch::Architecture;
use super::data::DataView;
use crate::error::{Error, check_len};
use crate::float::Float;

/// Writes the activations of one example into `acts` (layer l's outputs at offset
/// Σ_{k<l} out_k: ReLU outputs for hidden layers, raw scores for the last) and
/// returns its loss `−log softmax(scores)_y`. `x` holds the F features, `acts` at least
/// Σ_l out_l values. Lengths are the caller's to check ([`energy`] does).
pub fn example_loss<F: Float>(
    arch: &Architecture,
    theta: &[F],
    x: &[f32],
    y: u32,
    acts: &mut [F],
) -> F {
    let mut start = 0;
    let mut prev_start = 0;
    let last = arch.layers() - 1;
    for (l, layer) in arch.iter().enumerate() {
        let w = &theta[layer.weights..layer.biases];
        let b = &theta[layer.biases..layer.biases + layer.outputs];
        let (done, rest) = acts.split_at_mut(start);
        let out = &mut rest[..layer.outputs];
        out.copy_from_slice(b);
        for i in 0..layer.inputs {
            let a = if l == 0 {
                F::from_f64(f64::from(x[i]))
            } else {
                done[prev_start + i]
            };
            if a == F::ZERO {
                continue;
            }
            let row = &w[i * layer.outputs..(i + 1) * layer.outputs];
            for (o, &wij) in out.iter_mut().zip(row) {
                *o += a * wij;
            }
        }
        if l < last {
            // ReLU; NaN stays NaN (and is then counted by the sampler).
            for o in out.iter_mut() {
                if *o < F::ZERO {
                    *o = F::ZERO;
                }
            }
        }
        prev_start = start;
        start += layer.outputs;
    }
    let scores = &acts[prev_start..start];
    log_sum_exp(scores) - scores[y as usize]
}

/// `log Σ_j exp(s_j)`, with the largest score taken out first.
fn log_sum_exp<F: Float>(s: &[F]) -> F {
    let mut m = s[0];
    for &v in s {
        if v > m {
            m = v;
        }
    }
    let mut sum = F::ZERO;
    for &v in s {
        sum += (v - m).exp();
    }
    m + sum.ln()
}

/// Adds `scale` times the gradient of one example's loss to `grad`, after
/// [`example_loss`] has filled `acts` for the same θ, x and y. `delta` and `next` are
/// scratch of the widest layer's size.
#[allow(clippy::too_many_arguments)]
pub fn example_backward<F: Float>(
    arch: &Architecture,
    theta: &[F],
    x: &[f32],
    y: u32,
    acts: &[F],
    scale: F,
    delta: &mut [F],
    next: &mut [F],
    grad: &mut [F],
) {
    let layers = arch.layers();
    let mut end: usize = arch.iter().map(|l| l.outputs).sum();
    // δ at the scores: scale · (softmax(s) − e_y).
    let c = arch.classes();
    let scores = &acts[end - c..end];
    let lse = log_sum_exp(scores);
    for (j, d) in delta[..c].iter_mut().enumerate() {
        let p = (scores[j] - lse).exp();
        *d = scale * if j == y as usize { p - F::ONE } else { p };
    }
    for l in (0..layers).rev() {
        let Some(layer) = arch.layer(l) else { break };
        let start = end - layer.outputs;
        let input = |i: usize| {
            if l == 0 {
                F::from_f64(f64::from(x[i]))
            } else {
                acts[start - layer.inputs + i]
            }
        };
        let d = &delta[..layer.outputs];
        for (gb, &dj) in grad[layer.biases..layer.biases + layer.outputs]
            .iter_mut()
            .zip(d)
        {
            *gb += dj;
        }
        for i in 0..layer.inputs {
            let a = input(i);
            if a == F::ZERO {
                continue;
            }
            let row = &mut grad[layer.weights + i * layer.outputs..][..layer.outputs];
            for (g, &dj) in row.iter_mut().zip(d) {
                *g += a * dj;
            }
        }
        if l > 0 {
            // δ of the layer below, masked by its ReLU (off where its output is 0).
            let w = &theta[layer.weights..layer.biases];
            for (i, n) in next[..layer.inputs].iter_mut().enumerate() {
                if input(i) > F::ZERO {
                    let row = &w[i * layer.outputs..(i + 1) * layer.outputs];
                    let mut s = F::ZERO;
                    for (&wij, &dj) in row.iter().zip(d) {
                        s += wij * dj;
                    }
                    *n = s;
                } else {
                    *n = F::ZERO;
                }
            }
            delta[..layer.inputs].copy_from_slice(&next[..layer.inputs]);
        }
        end = start;
    }
}

/// The stochastic energy of θ on the mini-batch `batch` (indices into `data`),
/// `N/|B| · Σ_{i∈B} −log softmax(f_θ(x_i))_{y_i} + |θ|²/(2σ²)`, and, when `grad` is
/// given, its gradient written into it. `scratch` holds
/// [`Architecture::scratch_len`] values. Checks every length, the indices and the
/// architecture against the data.
pub fn energy<F: Float>(
    arch: &Architecture,
    theta: &[F],
    data: &DataView<'_>,
    batch: &[u32],
    prior_sigma: F,
    grad: Option<&mut [F]>,
    scratch: &mut [F],
) -> Result<F, Error> {
    energy_parts(arch, theta, data, batch, prior_sigma, grad, scratch).map(|p| p.data + p.prior)
}

/// The two terms of [`energy`]: their sum is its value, bit for bit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EnergyParts<F> {
    /// The data term `N/|B| · Σ_{i∈B} −log softmax(f_θ(x_i))_{y_i}`.
    pub data: F,
    /// The prior term `|θ|²/(2σ²)`.
    pub prior: F,
}

/// [`energy`] as its two terms (the gradient, when asked, is the whole energy's).
pub fn energy_parts<F: Float>(
    arch: &Architecture,
    theta: &[F],
    data: &DataView<'_>,
    batch: &[u32],
    prior_sigma: F,
    grad: Option<&mut [F]>,
    scratch: &mut [F],
) -> Result<EnergyParts<F>, Error> {
    check_len("theta", theta.len(), arch.parameters())?;
    check_len("scratch", scratch.len(), arch.scratch_len())?;
    check_len("features", data.features(), arch.features())?;
    check_len("classes", data.classes(), arch.classes())?;
    if batch.is_empty() {
        return Err(Error::InvalidValue {
            name: "batch",
            value: 0.0,
            allowed: ">= 1 example",
        });
    }
    if let Some(&bad) = batch.iter().find(|&&i| i as usize >= data.len()) {
        return Err(Error::InvalidValue {
            name: "batch index",
            value: f64::from(bad),
            allowed: "below the number of training examples",
        });
    }
    let scale = F::from_f64(data.len() as f64 / batch.len() as f64);
    let widest = arch.widest();
    let (acts, rest) = scratch.split_at_mut(scratch.len() - 2 * widest);
    let (delta, next) = rest.split_at_mut(widest);
    let mut grad = grad;
    if let Some(g) = grad.as_deref_mut() {
        check_len("grad", g.len(), theta.len())?;
        g.fill(F::ZERO);
    }
    let mut loss = F::ZERO;
    for &i in batch {
        let (x, y) = data.example(i as usize);
        loss += example_loss(arch, theta, x, y, acts);
        if let Some(g) = grad.as_deref_mut() {
            example_backward(arch, theta, x, y, acts, scale, delta, next, g);
        }
    }
    // The prior: |θ|²/(2σ²) and θ/σ².
    let inv_var = F::ONE / (prior_sigma * prior_sigma);
    let mut sq = F::ZERO;
    for &t in theta {
        sq += t * t;
    }
    if let Some(g) = grad {
        for (gi, &t) in g.iter_mut().zip(theta) {
            *gi += t * inv_var;
        }
    }
    Ok(EnergyParts {
        data: scale * loss,
        prior: F::from_f64(0.5) * sq * inv_var,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{PhiloxStream, Rng, UnitDraw};
    use std::vec::Vec;

    /// A small random problem: n examples of f features in [0, 1), c classes.
    fn problem(n: usize, f: usize, c: usize, seed: u32) -> (Vec<f32>, Vec<u32>) {
        let mut rng = PhiloxStream::new(seed, 0, 0, 0, 0);
        let x = (0..n * f).map(|_| f32::uniform(rng.next_u32())).collect();
        let y = (0..n).map(|_| rng.next_u32() % c as u32).collect();
        (x, y)
    }

    fn theta(arch: &Architecture, seed: u32) -> Vec<f64> {
        let mut rng = PhiloxStream::new(seed, 1, 0, 0, 0);
        (0..arch.parameters())
            .map(|_| 2.0 * f64::uniform(rng.next_u32()) - 1.0)
            .collect()
    }

    /// The gradient against central differences of the energy, in f64, for softmax
    /// regression and a two-hidden-layer MLP. With h = 1e-6 the truncation error is
    /// O(h²) ≈ 1e-12 relative and the rounding error O(ε/h) ≈ 1e-10: agreement within
    /// 1e-6 of max(1, |∂|) leaves room for both (ReLU kinks are not hit: no
    /// pre-activation of these random problems lies within h of 0, checked by the
    /// agreement itself).
    #[test]
    fn gradient_matches_central_differences() {
        for sizes in [&[5usize, 3][..], &[5, 7, 4, 3][..]] {
            let arch = Architecture::new(sizes).unwrap();
            let (x, y) = problem(9, 5, 3, 7);
            let data = DataView::new(&x, &y, 5, 3).unwrap();
            let batch = [0u32, 3, 3, 8, 1];
            let mut th = theta(&arch, 3);
            let mut scratch = vec![0.0f64; arch.scratch_len()];
            let mut grad = vec![0.0f64; arch.parameters()];
            energy(
                &arch,
                &th,
                &data,
                &batch,
                0.7,
                Some(&mut grad),
                &mut scratch,
            )
            .unwrap();
            let h = 1e-6;
            for k in 0..th.len() {
                let t0 = th[k];
                th[k] = t0 + h;
                let up = energy(&arch, &th, &data, &batch, 0.7, None, &mut scratch).unwrap();
                th[k] = t0 - h;
                let down = energy(&arch, &th, &data, &batch, 0.7, None, &mut scratch).unwrap();
                th[k] = t0;
                let fd = (up - down) / (2.0 * h);
                assert!(
                    (fd - grad[k]).abs() <= 1e-6 * grad[k].abs().max(1.0),
                    "{sizes:?} θ[{k}]: analytic {} vs {fd}",
                    grad[k]
                );
            }
        }
    }

    /// Energies at θ = 0: every class equally likely, so the loss is N · ln C.
    #[test]
    fn energy_at_zero_is_n_log_c() {
        let arch = Architecture::new(&[4, 6, 5]).unwrap();
        let (x, y) = problem(20, 4, 5, 1);
        let data = DataView::new(&x, &y, 4, 5).unwrap();
        let th = vec![0.0f64; arch.parameters()];
        let mut scratch = vec![0.0; arch.scratch_len()];
        let e = energy(&arch, &th, &data, &[1, 2, 3, 4], 1.0, None, &mut scratch).unwrap();
        assert!((e - 20.0 * 5f64.ln()).abs() < 1e-12, "{e}");
    }

    /// f32 agrees with f64 to single-precision accuracy.
    #[test]
    fn f32_agrees_with_f64() {
        let arch = Architecture::new(&[5, 8, 3]).unwrap();
        let (x, y) = problem(30, 5, 3, 2);
        let data = DataView::new(&x, &y, 5, 3).unwrap();
        let t64 = theta(&arch, 5);
        let t32: Vec<f32> = t64.iter().map(|&v| v as f32).collect();
        let batch: Vec<u32> = (0..16).collect();
        let (mut s64, mut s32) = (
            vec![0.0f64; arch.scratch_len()],
            vec![0.0f32; arch.scratch_len()],
        );
        let (mut g64, mut g32) = (vec![0.0f64; t64.len()], vec![0.0f32; t64.len()]);
        let e64 = energy(&arch, &t64, &data, &batch, 1.0, Some(&mut g64), &mut s64).unwrap();
        let e32 = energy(&arch, &t32, &data, &batch, 1.0, Some(&mut g32), &mut s32).unwrap();
        assert!((f64::from(e32) - e64).abs() < 1e-5 * e64.abs());
        for (a, b) in g32.iter().zip(&g64) {
            assert!((f64::from(*a) - b).abs() < 1e-4 * b.abs().max(1.0));
        }
    }

    #[test]
    fn bad_lengths_and_indices_are_errors() {
        let arch = Architecture::new(&[4, 3]).unwrap();
        let (x, y) = problem(5, 4, 3, 1);
        let data = DataView::new(&x, &y, 4, 3).unwrap();
        let th = vec![0.0f32; arch.parameters()];
        let mut s = vec![0.0f32; arch.scratch_len()];
        assert!(energy(&arch, &th, &data, &[5], 1.0, None, &mut s).is_err());
        assert!(energy(&arch, &th, &data, &[], 1.0, None, &mut s).is_err());
        assert!(energy(&arch, &th[1..], &data, &[0], 1.0, None, &mut s).is_err());
        let other = Architecture::new(&[5, 3]).unwrap();
        let mut s2 = vec![0.0f32; other.scratch_len()];
        let th2 = vec![0.0f32; other.parameters()];
        assert!(energy(&other, &th2, &data, &[0], 1.0, None, &mut s2).is_err());
    }
}
