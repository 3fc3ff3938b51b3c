//! Scores of a Bayesian model average on a test set: the class probabilities of the
//! collected samples averaged, then scored by accuracy, negative log-likelihood and
//! expected calibration error.

use serde::Serialize;

use crate::engine::ClassifierTarget;
use crate::engine::classifier::predict;

/// Number of equal-width confidence bins of the calibration error (Guo et al. 2017).
pub const ECE_BINS: usize = 15;

/// The running average of class probabilities over samples of θ.
#[derive(Clone, Debug)]
pub struct Bma {
    sum: Vec<f64>,
    samples: usize,
    classes: usize,
    scratch: Vec<f32>,
}

/// What a BMA scores on the test set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Scores {
    /// Share of test examples whose most probable class is the label.
    pub accuracy: f64,
    /// Mean negative log-likelihood per test example, −(1/n) Σ log p(y_i | x_i).
    pub nll: f64,
    /// The same summed over the test set (the paper reports sums).
    pub nll_sum: f64,
    /// Expected calibration error: Σ_bins (|bin|/n) · |accuracy − confidence| over 15
    /// equal-width bins of the top class's probability.
    pub ece: f64,
    /// Samples averaged.
    pub samples: usize,
}

impl Bma {
    /// An empty average over `examples` test examples of `classes` classes.
    pub fn new(examples: usize, classes: usize) -> Self {
        Bma {
            sum: vec![0.0; examples * classes],
            samples: 0,
            classes,
            scratch: vec![0.0; examples * classes],
        }
    }

    /// Adds the predictions of `theta` on the test set `x`.
    pub fn add(&mut self, target: &ClassifierTarget, theta: &[f32], x: &[f32]) {
        predict(target, theta, x, &mut self.scratch);
        for (s, &p) in self.sum.iter_mut().zip(&self.scratch) {
            *s += f64::from(p);
        }
        self.samples += 1;
    }

    /// Merges another average over the same test set (its samples count as this one's).
    pub fn merge(&mut self, other: &Bma) {
        for (s, &o) in self.sum.iter_mut().zip(&other.sum) {
            *s += o;
        }
        self.samples += other.samples;
    }

    /// Samples averaged so far.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// The scores against `labels` (NaN everywhere without samples).
    pub fn scores(&self, labels: &[u32]) -> Scores {
        let probs: Vec<f64> = self
            .sum
            .iter()
            .map(|&s| s / self.samples.max(1) as f64)
            .collect();
        let mut s = score(&probs, labels, self.classes);
        s.samples = self.samples;
        if self.samples == 0 {
            s = Scores {
                accuracy: f64::NAN,
                nll: f64::NAN,
                nll_sum: f64::NAN,
                ece: f64::NAN,
                samples: 0,
            };
        }
        s
    }
}

/// Accuracy, NLL and ECE of predicted probabilities (n × C) against the labels.
/// Probabilities are floored at 10⁻¹² in the logarithm, so one confident mistake costs
/// at most 27.6 nats instead of infinity.
pub fn score(probs: &[f64], labels: &[u32], classes: usize) -> Scores {
    let n = labels.len();
    let mut correct = 0usize;
    let mut nll = 0.0;
    let mut bins = [(0usize, 0usize, 0.0f64); ECE_BINS];
    for (p, &y) in probs.chunks_exact(classes).zip(labels) {
        let (top, conf) = p
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |(bi, bv), (i, &v)| {
                if v > bv { (i, v) } else { (bi, bv) }
            });
        let hit = top == y as usize;
        correct += usize::from(hit);
        nll -= p[y as usize].max(1e-12).ln();
        let b = ((conf * ECE_BINS as f64) as usize).min(ECE_BINS - 1);
        bins[b].0 += 1;
        bins[b].1 += usize::from(hit);
        bins[b].2 += conf;
    }
    let nf = n.max(1) as f64;
    let ece = bins
        .iter()
        .filter(|b| b.0 > 0)
        .map(|&(count, hits, conf)| {
            let c = count as f64;
            (c / nf) * (hits as f64 / c - conf / c).abs()
        })
        .sum();
    Scores {
        accuracy: correct as f64 / nf,
        nll: nll / nf,
        nll_sum: nll,
        ece,
        samples: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-computed cases.
    #[test]
    fn scores_of_known_predictions() {
        // Two examples, two classes: one confident hit (0.9), one unsure miss (0.6 on
        // the wrong class).
        let probs = [0.9, 0.1, 0.6, 0.4];
        let s = score(&probs, &[0, 1], 2);
        assert_eq!(s.accuracy, 0.5);
        let nll = -(0.9f64.ln() + 0.4f64.ln()) / 2.0;
        assert!((s.nll - nll).abs() < 1e-15 && (s.nll_sum - 2.0 * nll).abs() < 1e-15);
        // Bins: 0.9 → bin 13 (acc 1, conf 0.9), 0.6 → bin 9 (acc 0, conf 0.6):
        // ECE = ½·0.1 + ½·0.6.
        assert!((s.ece - 0.35).abs() < 1e-12, "{}", s.ece);
        // Perfect, fully confident predictions: accuracy 1, NLL 0, ECE 0.
        let s = score(&[1.0, 0.0, 0.0, 1.0], &[0, 1], 2);
        assert_eq!((s.accuracy, s.nll, s.ece), (1.0, 0.0, 0.0));
        // A certain mistake costs the floor, not infinity.
        let s = score(&[1.0, 0.0], &[1], 2);
        assert!((s.nll - 1e-12f64.ln().abs()).abs() < 1e-9);
    }

    #[test]
    fn an_empty_average_scores_nan() {
        let b = Bma::new(3, 2);
        assert!(b.scores(&[0, 1, 0]).accuracy.is_nan());
    }
}
