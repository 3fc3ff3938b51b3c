//! What scores the methods of a comparison: a seed's samples into what the report keeps
//! of them ([`SeedScores`]), a row's seeds into its scores and its curve against the
//! number of samples.

use super::records::{MethodRecords, SeedScores};
use super::row::{Row, row};
use crate::deep::fidelity::{self, PointScores, SampleCurve};
use crate::deep::metrics::{Samples, Scores, score_against};
use nrpt_sampling::stats::Bootstrap;

/// What scores the methods: the test labels, the reference, the bootstrap.
pub(super) struct Scorer<'a> {
    pub(super) labels: &'a [u32],
    pub(super) classes: usize,
    pub(super) reference: Option<&'a [f64]>,
    pub(super) bootstrap: Bootstrap,
    pub(super) points: Vec<usize>,
}

impl Scorer<'_> {
    /// What the report keeps of one seed's samples.
    pub(super) fn seed(&self, s: &Samples) -> SeedScores {
        let curve = s
            .prefix_averages(&self.points_for(s.len()))
            .iter()
            .map(|p| PointScores::of(p, self.labels, self.classes, self.reference))
            .collect();
        SeedScores {
            samples: s.len(),
            predictive: s.average(),
            curve,
        }
    }

    /// The row and the curve of a method from its seeds' scores.
    pub(super) fn score(
        &self,
        name: &str,
        c: &MethodRecords,
        eta_factor: f64,
    ) -> (Row, SampleCurve) {
        let finals: Vec<Vec<f64>> = c.seeds.iter().map(|s| s.predictive.clone()).collect();
        let f = fidelity::summarize(
            &finals,
            self.labels,
            self.classes,
            self.reference,
            &self.bootstrap,
        );
        let per_seed = finals
            .iter()
            .zip(&c.seeds)
            .map(|(p, s)| Scores {
                samples: s.samples,
                ..score_against(p, self.labels, self.classes, self.reference)
            })
            .collect();
        let points = self.points_for(c.seeds.iter().map(|s| s.samples).max().unwrap_or(0));
        let scored: Vec<Vec<PointScores>> = c.seeds.iter().map(|s| s.curve.clone()).collect();
        let curve = SampleCurve::from_points(name, &points, &scored, self.reference.is_some());
        let samples = c.seeds.first().map_or(0, |s| s.samples);
        (
            row(name, &f, per_seed, samples, c.seconds, eta_factor),
            curve,
        )
    }

    /// The curve's points for a method of `n` samples: the common points up to `n`,
    /// and `n` itself.
    pub(super) fn points_for(&self, n: usize) -> Vec<usize> {
        let mut points: Vec<usize> = self.points.iter().copied().filter(|&k| k < n).collect();
        if n > 0 {
            points.push(n);
        }
        points
    }

    /// Whether `s` is a seed's scores of at most `most` samples over this test set.
    pub(super) fn check(&self, s: &SeedScores, most: usize) -> Result<(), String> {
        if s.samples > most {
            return Err(format!(
                "{} samples, the run keeps at most {most}",
                s.samples
            ));
        }
        if s.predictive.len() != self.labels.len() * self.classes {
            return Err(format!(
                "a predictive of {} values for {} test examples of {} classes",
                s.predictive.len(),
                self.labels.len(),
                self.classes
            ));
        }
        let points = self.points_for(s.samples).len();
        if s.curve.len() != points {
            return Err(format!(
                "{} points of the sample curve, {} samples have {points}",
                s.curve.len(),
                s.samples
            ));
        }
        let with = self.reference.is_some();
        if s.curve
            .iter()
            .any(|p| p.agreement.is_some() != with || p.total_variation.is_some() != with)
        {
            return Err(if with {
                "scores without the reference posterior the run scores against".into()
            } else {
                "scores against a reference posterior the run does not have".into()
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A method of n samples is scored at the common points below n and at n itself.
    #[test]
    fn a_curve_ends_at_the_methods_own_samples() {
        let labels = [0u32, 1, 1];
        let scorer = Scorer {
            labels: &labels,
            classes: 2,
            reference: None,
            bootstrap: Bootstrap::new(labels.len(), 10, 0).unwrap(),
            points: vec![1, 2, 3, 5, 10],
        };
        assert_eq!(scorer.points_for(4), [1, 2, 3, 4]);
        assert_eq!(scorer.points_for(5), [1, 2, 3, 5]);
        assert_eq!(scorer.points_for(12), [1, 2, 3, 5, 10, 12]);
        assert_eq!(scorer.points_for(1), [1]);
        assert!(scorer.points_for(0).is_empty());
    }
}
