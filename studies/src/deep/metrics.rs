//! Scores of a Bayesian model average on a test set: the class probabilities of the
//! collected samples averaged, then scored by accuracy, negative log-likelihood and
//! expected calibration error.

use serde::Serialize;

use super::fidelity::{ece, example_scores};
use nrpt_sampling::targets::classifier::{ClassifierTarget, predict};

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
    /// Share of test examples whose top class is the reference posterior's (with a
    /// reference; see [`super::fidelity`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement: Option<f64>,
    /// Mean total variation from the reference's predictive (with a reference).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_variation: Option<f64>,
    /// Mean entropy of the predictive, −(1/n) Σ_i Σ_k p_ik log p_ik (nats): below the
    /// reference posterior's, the average is too sure of itself (under-dispersed).
    pub entropy: f64,
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
                entropy: f64::NAN,
                ..Scores::default()
            };
        }
        s
    }
}

/// The predictive of every sample, kept in the order the samples came: the model
/// average of the first k samples for any k (curves against the number of samples),
/// or of all of them.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    probs: Vec<f32>,
    examples: usize,
    classes: usize,
}

impl Samples {
    /// No samples yet, over `examples` test examples of `classes` classes.
    pub fn new(examples: usize, classes: usize) -> Self {
        Samples {
            probs: Vec::new(),
            examples,
            classes,
        }
    }

    /// Adds the predictive of `theta` on the test set `x`.
    pub fn push(&mut self, target: &ClassifierTarget, theta: &[f32], x: &[f32]) {
        let at = self.probs.len();
        self.probs.resize(at + self.examples * self.classes, 0.0);
        predict(target, theta, x, &mut self.probs[at..]);
    }

    /// Adds a predictive computed elsewhere (n × C, as [`Samples::push`] would).
    pub fn push_predictive(&mut self, probs: &[f32]) {
        self.probs.extend_from_slice(probs);
    }

    /// Samples held.
    pub fn len(&self) -> usize {
        self.probs.len() / (self.examples * self.classes).max(1)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.probs.is_empty()
    }

    /// The averages of the first `points[j]` samples (n × C each), in one pass; a point
    /// beyond the samples held averages all of them. Points must not decrease.
    pub(crate) fn prefix_averages(&self, points: &[usize]) -> Vec<Vec<f64>> {
        let size = self.examples * self.classes;
        let mut sum = vec![0.0f64; size];
        let mut out = Vec::with_capacity(points.len());
        let mut done = 0;
        for &k in points {
            let k = k.min(self.len());
            while done < k {
                for (s, &p) in sum
                    .iter_mut()
                    .zip(&self.probs[done * size..(done + 1) * size])
                {
                    *s += f64::from(p);
                }
                done += 1;
            }
            let d = done.max(1) as f64;
            out.push(
                sum.iter()
                    .map(|&s| if done == 0 { f64::NAN } else { s / d })
                    .collect(),
            );
        }
        out
    }

    /// The average of all samples (n × C; NaN without samples).
    pub fn average(&self) -> Vec<f64> {
        self.prefix_averages(&[self.len()])
            .pop()
            .unwrap_or_default()
    }

    /// The samples of several chains in one sequence, round-robin (the first sample of
    /// every chain, then the second of every chain, …): the order in which a parallel
    /// run would have them.
    pub fn interleave(members: &[Samples]) -> Samples {
        let Some(first) = members.first() else {
            return Samples::default();
        };
        let size = first.examples * first.classes;
        let mut out = Samples::new(first.examples, first.classes);
        let longest = members.iter().map(Samples::len).max().unwrap_or(0);
        for j in 0..longest {
            for m in members.iter().filter(|m| j < m.len()) {
                out.probs
                    .extend_from_slice(&m.probs[j * size..(j + 1) * size]);
            }
        }
        out
    }

    /// The predictive of sample `j` alone (n × C; empty past the end).
    pub fn one(&self, j: usize) -> Vec<f64> {
        let size = self.examples * self.classes;
        self.probs
            .get(j * size..(j + 1) * size)
            .map_or_else(Vec::new, |p| p.iter().map(|&v| f64::from(v)).collect())
    }

    /// Keeps the first `k` samples.
    pub fn truncate(&mut self, k: usize) {
        self.probs.truncate(k * self.examples * self.classes);
    }
}

/// Accuracy, NLL and ECE of predicted probabilities (n × C) against the labels.
/// Probabilities are floored at 10⁻¹² in the logarithm, so one confident mistake costs
/// at most 27.6 nats instead of infinity.
pub fn score(probs: &[f64], labels: &[u32], classes: usize) -> Scores {
    score_against(probs, labels, classes, None)
}

/// [`score`], and the agreement and total variation against the reference predictive
/// `reference` (n × C) when there is one.
pub(crate) fn score_against(
    probs: &[f64],
    labels: &[u32],
    classes: usize,
    reference: Option<&[f64]>,
) -> Scores {
    let s = example_scores(probs, labels, classes, reference);
    let n = labels.len().max(1) as f64;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / n;
    let nll: f64 = s.nll.iter().sum();
    Scores {
        accuracy: mean(&s.correct),
        nll: nll / n,
        nll_sum: nll,
        ece: if labels.is_empty() {
            0.0
        } else {
            ece(probs, labels, classes, None)
        },
        agreement: s.agreement.as_deref().map(mean),
        total_variation: s.total_variation.as_deref().map(mean),
        entropy: mean_entropy(probs, classes),
        samples: 0,
    }
}

/// The mean over rows of a predictive (n × C) of its entropy −Σ_k p_k log p_k, in nats,
/// with 0 log 0 = 0; 0 for no rows.
pub fn mean_entropy(probs: &[f64], classes: usize) -> f64 {
    let rows = probs.chunks_exact(classes.max(1));
    let n = rows.len();
    if n == 0 {
        return 0.0;
    }
    rows.map(|row| {
        -row.iter()
            .filter(|&&p| p > 0.0)
            .map(|&p| p * p.ln())
            .sum::<f64>()
    })
    .sum::<f64>()
        / n as f64
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

    /// Prefix averages by hand; round-robin order of interleaved chains.
    #[test]
    fn samples_average_in_order() {
        let mk = |vals: &[[f32; 2]]| {
            let mut s = Samples::new(1, 2);
            for v in vals {
                s.probs.extend_from_slice(v);
            }
            s
        };
        let s = mk(&[[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]);
        assert_eq!(s.len(), 3);
        let p = s.prefix_averages(&[1, 2, 3, 9]);
        assert_eq!(p[0], vec![1.0, 0.0]);
        assert_eq!(p[1], vec![0.5, 0.5]);
        assert_eq!(p[2], vec![0.5, 0.5]);
        assert_eq!(p[3], s.average());
        let both = Samples::interleave(&[mk(&[[1.0, 0.0], [0.9, 0.1]]), mk(&[[0.0, 1.0]])]);
        assert_eq!(both.probs, vec![1.0, 0.0, 0.0, 1.0, 0.9, 0.1]);
        assert!(Samples::new(1, 2).average().iter().all(|v| v.is_nan()));
    }

    /// Entropy by hand: a uniform row over 4 classes has log 4, a certain row 0; the
    /// mean of the two.
    #[test]
    fn entropy_of_known_rows() {
        let probs = [0.25, 0.25, 0.25, 0.25, 0.0, 1.0, 0.0, 0.0];
        assert!((mean_entropy(&probs, 4) - 4f64.ln() / 2.0).abs() < 1e-15);
        assert_eq!(mean_entropy(&[], 4), 0.0);
        let s = score(&probs, &[0, 1], 4);
        assert_eq!(s.entropy, mean_entropy(&probs, 4));
    }

    #[test]
    fn an_empty_average_scores_nan() {
        let b = Bma::new(3, 2);
        assert!(b.scores(&[0, 1, 0]).accuracy.is_nan());
    }
}
