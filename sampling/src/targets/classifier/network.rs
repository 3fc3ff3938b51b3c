//! The network's passes over a batch of examples, as matrix products: the forward
//! pass (one product per layer, bias and ReLU in its epilogue), the backward pass (two
//! per layer: the weight gradient Aᵀδ and the input gradient δWᵀ), predictions on a
//! test set and the initial parameters.
//!
//! The inputs of every layer are kept in rows with one more column, of ones: the
//! weight gradient's product Aᵀδ then gives the bias gradient 1ᵀδ as its last row,
//! which is where θ keeps the bias, after the weights. Hidden layers' rows are padded
//! to whole vectors of 8 (the tiles read whole vectors); the scores and their δ lie in
//! rows of C, one after the other, which the softmax takes as one flat array.

use nrpt_core::model::Architecture;

use super::ClassifierTarget;
use super::matmul::{Epilogue, Kernel, Operand, padded, small_product};
use super::softmax;

/// The activations of a batch through the network.
#[derive(Clone, Debug, Default)]
pub(super) struct Activations {
    /// The batch's inputs (gathered rows): B rows of F values and a 1, at stride F + 1.
    pub(super) input: Vec<f32>,
    /// Outputs of every layer, B rows at the stride of [`stride`]: a hidden layer's
    /// values (ReLU applied) and a 1; the last layer's scores, with the softmax's slack
    /// after them.
    pub(super) layers: Vec<Vec<f32>>,
}

impl Activations {
    pub(super) fn new(arch: &Architecture, rows: usize) -> Self {
        let f = arch.features();
        let mut input = vec![0.0; rows * (f + 1)];
        for row in input.chunks_exact_mut(f + 1) {
            row[f] = 1.0;
        }
        let layers = arch
            .iter()
            .enumerate()
            .map(|(l, layer)| {
                let ld = stride(arch, l);
                let mut out = vec![0.0; rows * ld + softmax::SLACK];
                if l + 1 < arch.layers() {
                    for row in out.chunks_exact_mut(ld) {
                        row[layer.outputs] = 1.0;
                    }
                }
                out
            })
            .collect();
        Activations { input, layers }
    }

    /// Layer l's inputs and their row stride (its values, then the column of ones).
    fn input_of(&self, arch: &Architecture, l: usize) -> (&[f32], usize) {
        if l == 0 {
            (&self.input, arch.features() + 1)
        } else {
            (&self.layers[l - 1], stride(arch, l - 1))
        }
    }
}

/// The row stride of layer l's outputs: for a hidden layer, its values and the column
/// of ones rounded up to whole vectors (the tiles read δ's rows, which share the
/// stride, as their right operand, to whole vectors); the classes themselves for the
/// scores (the softmax reads them as one flat array).
pub(super) fn stride(arch: &Architecture, l: usize) -> usize {
    let out = arch.layer(l).map_or(0, |layer| layer.outputs);
    if l + 1 == arch.layers() {
        out
    } else {
        padded(out + 1)
    }
}

/// Weights and biases copied into the layouts the tiles read: a layer's weights in
/// rows padded to whole vectors where θ's own rows cannot be read that far, Wᵀ for the
/// backward pass, and the bias padded to whole vectors.
#[derive(Clone, Debug, Default)]
pub(super) struct Packed {
    weights: Vec<f32>,
    bias: Vec<f32>,
}

impl Packed {
    pub(super) fn new(arch: &Architecture) -> Self {
        let weights = arch
            .iter()
            .map(|l| (l.inputs * padded(l.outputs)).max(l.outputs * padded(l.inputs)))
            .max()
            .unwrap_or(0);
        Packed {
            weights: vec![0.0; weights],
            bias: vec![0.0; padded(arch.widest())],
        }
    }
}

/// The forward pass of `b` examples (`acts.input` filled): every layer's outputs.
pub(super) fn forward(
    kernel: Kernel,
    arch: &Architecture,
    theta: &[f32],
    acts: &mut Activations,
    packed: &mut Packed,
    b: usize,
) {
    let last = arch.layers() - 1;
    for (l, layer) in arch.iter().enumerate() {
        let (i_n, o_n) = (layer.inputs, layer.outputs);
        let op = padded(o_n);
        let ldc = stride(arch, l);
        let (before, rest) = acts.layers.split_at_mut(l);
        let out = &mut rest[0];
        let input = if l == 0 {
            Operand::strided(&acts.input, b, i_n, i_n + 1)
        } else {
            Operand::strided(&before[l - 1], b, i_n, stride(arch, l - 1))
        };
        // The tiles read W's rows to `op` columns: θ's own rows can be, the last one
        // reading on into the bias, unless that runs past the end of θ.
        let tail = &theta[layer.weights..];
        let w = if tail.len() >= (i_n - 1) * o_n + op {
            Operand::strided(tail, i_n, o_n, o_n)
        } else {
            let w = &mut packed.weights[..i_n * op];
            for (dst, src) in w.chunks_exact_mut(op).zip(tail.chunks_exact(o_n)) {
                dst[..o_n].copy_from_slice(src);
            }
            Operand::strided(w, i_n, o_n, op)
        };
        packed.bias[..o_n].copy_from_slice(&theta[layer.biases..layer.biases + o_n]);
        let epilogue = Epilogue::Bias {
            bias: &packed.bias,
            relu: l < last,
        };
        small_product(kernel, out, ldc, input, w, epilogue);
    }
}

/// The backward pass from `delta` (B rows of C, set by the loss) into `grad`
/// (overwritten).
#[allow(clippy::too_many_arguments)]
pub(super) fn backward(
    kernel: Kernel,
    arch: &Architecture,
    theta: &[f32],
    acts: &Activations,
    delta: &mut [f32],
    below: &mut [f32],
    packed: &mut Packed,
    b: usize,
    grad: &mut [f32],
) {
    let mut delta = delta;
    let mut below = below;
    for l in (0..arch.layers()).rev() {
        let Some(layer) = arch.layer(l) else { break };
        let (i_n, o_n) = (layer.inputs, layer.outputs);
        let (ip, op) = (padded(i_n), stride(arch, l));
        let (input, ld) = acts.input_of(arch, l);
        // The tiles read δ's rows to whole vectors: the last row reads into the slack.
        let d = &delta[..b * op + softmax::SLACK];
        // [∂W; ∂b] = [A 1]ᵀ δ ((in + 1) × out: the bias follows the weights in θ).
        small_product(
            kernel,
            &mut grad[layer.weights..layer.biases + o_n],
            o_n,
            Operand::strided(input, b, i_n + 1, ld).t(),
            Operand::strided(d, b, o_n, op),
            Epilogue::Set,
        );
        if l > 0 {
            // δ below = (δ Wᵀ) ⊙ 1[a > 0], with Wᵀ copied into rows of `ip` (the tiles
            // read their right operand row by row).
            let wt = &mut packed.weights[..o_n * ip];
            let w = &theta[layer.weights..layer.biases];
            for (h, row) in w.chunks_exact(o_n).enumerate() {
                for (c, &v) in row.iter().enumerate() {
                    wt[c * ip + h] = v;
                }
            }
            small_product(
                kernel,
                &mut below[..b * ld],
                ld,
                Operand::strided(d, b, o_n, op),
                Operand::strided(wt, o_n, i_n, ip),
                Epilogue::Gate(input),
            );
            std::mem::swap(&mut delta, &mut below);
        }
    }
}

/// Class probabilities of `theta` on every example of `x` (n × F), written into
/// `probs` (n × C): the forward pass in chunks of `chunk` examples.
pub fn predict(target: &ClassifierTarget, theta: &[f32], x: &[f32], probs: &mut [f32]) {
    let arch = &target.arch;
    let (f, c) = (arch.features(), arch.classes());
    let n = x.len() / f;
    const CHUNK: usize = 256;
    let kernel = Kernel::detect();
    let mut acts = Activations::new(arch, CHUNK);
    let mut packed = Packed::new(arch);
    for start in (0..n).step_by(CHUNK) {
        let m = CHUNK.min(n - start);
        let rows = x[start * f..(start + m) * f].chunks_exact(f);
        for (row, src) in acts.input.chunks_exact_mut(f + 1).zip(rows) {
            row[..f].copy_from_slice(src);
        }
        forward(kernel, arch, theta, &mut acts, &mut packed, m);
        let scores = &acts.layers[arch.layers() - 1][..m * c];
        for (s, p) in scores
            .chunks_exact(c)
            .zip(probs[start * c..(start + m) * c].chunks_exact_mut(c))
        {
            let mx = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut sum = 0.0;
            for (pj, &v) in p.iter_mut().zip(s) {
                *pj = (v - mx).exp();
                sum += *pj;
            }
            for pj in p.iter_mut() {
                *pj /= sum;
            }
        }
    }
}

/// Initial parameters: W ~ N(0, 1/in) (He-like scaling for ReLU would be 2/in; 1/in
/// keeps the scores of a fresh network small), biases 0, from the INIT stream of
/// (seed, ensemble, replica).
pub fn initial_parameters(
    arch: &Architecture,
    seed: u32,
    ensemble: u32,
    replica: u32,
    out: &mut [f32],
) {
    use nrpt_core::rng::{PhiloxStream, fill_normals, streams};
    let mut rng = PhiloxStream::new(seed, ensemble, 0, replica, streams::INIT);
    out.fill(0.0);
    for layer in arch.iter() {
        let w = &mut out[layer.weights..layer.biases];
        fill_normals(&mut rng, w);
        let s = (1.0 / layer.inputs as f64).sqrt() as f32;
        for v in w.iter_mut() {
            *v *= s;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use nrpt_core::model::mlp;

    fn target(sizes: &[usize], batch: usize) -> Arc<ClassifierTarget> {
        Arc::new(ClassifierTarget {
            data: Arc::new(crate::data::digits()),
            arch: Architecture::new(sizes).unwrap(),
            batch,
            prior_sigma: 1.0,
        })
    }


    #[test]
    fn predictions_are_distributions_and_match_the_loss() {
        let t = target(&[64, 20, 10], 32);
        let mut theta = vec![0.0f32; t.arch.parameters()];
        initial_parameters(&t.arch, 1, 0, 0, &mut theta);
        let test = &t.data.test;
        let mut probs = vec![0.0f32; test.len() * 10];
        predict(&t, &theta, &test.x, &mut probs);
        for (i, p) in probs.chunks_exact(10).enumerate() {
            let s: f32 = p.iter().sum();
            assert!((s - 1.0).abs() < 1e-5, "example {i}: {s}");
            let mut acts = vec![0.0f32; t.arch.scratch_len()];
            let x = test.row(i, 64).unwrap();
            let loss = mlp::example_loss(&t.arch, &theta, x, test.y[i], &mut acts);
            let ours = -p[test.y[i] as usize].ln();
            assert!(
                (ours - loss).abs() < 1e-4 * loss.max(1.0),
                "{ours} vs {loss}"
            );
        }
    }
}
