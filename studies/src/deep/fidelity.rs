//! How good a method's predictive is, and how close to the truth: per-example scores
//! against the labels and against a reference posterior's predictive, summarized over
//! seeds with paired-bootstrap intervals over test examples, and as curves against the
//! number of samples averaged.
//!
//! For a predictive p (test examples × classes, each row a distribution) and, when a
//! reference posterior is known, its predictive q:
//!
//! - **accuracy**: the share of examples whose top class is the label;
//! - **NLL**: −(1/n) Σ_i log p_i(y_i) (floored at 10⁻¹², see [`super::metrics::score`]),
//!   and its sum over the test set;
//! - **ECE**: expected calibration error over [`ECE_BINS`] equal-width
//!   bins of the top probability (Guo et al., ICML 2017);
//! - **agreement**: the share of examples whose top class under p is the top class under
//!   q (Izmailov, Vikram, Hoffman and Wilson, "What are Bayesian neural network
//!   posteriors really like?", ICML 2021; the NeurIPS 2021 approximate-inference
//!   competition scores by it);
//! - **total variation**: (1/n) Σ_i ½ Σ_k |p_ik − q_ik|, in [0, 1].
//!
//! Top classes break ties towards the lower class index, for p and q alike.
//!
//! # Seeds and intervals
//!
//! A row's value is the mean over seeds of the per-seed score, `_sd` its standard
//! deviation over seeds (the seed-to-seed noise of the method). `_ci` is a 95 %
//! percentile interval of that mean by a paired bootstrap over test examples: the same
//! resampled test sets (a [`Bootstrap`] drawn once per comparison) score every method,
//! so the intervals show how much the finite test set alone could move each number and
//! methods can be compared resample by resample. Every score but the ECE is a mean
//! over examples of a per-example value; for those the bootstrap resamples the
//! seed-averaged per-example values, for the ECE it recomputes the binned score of
//! every seed with the resample's weights. The binned ECE of a resample is biased
//! upward (repeated examples leave fewer distinct ones per bin), so its percentile
//! interval is shifted by the bootstrap's estimate of that bias, mean(ECE*) − ECE
//! (Efron and Tibshirani, "An Introduction to the Bootstrap", 1993, ch. 10).

use serde::{Deserialize, Serialize};

use nrpt_sampling::stats::{Bootstrap, Interval, StatsError, mean_sd};

/// Number of equal-width confidence bins of the calibration error (Guo et al. 2017).
pub const ECE_BINS: usize = 15;

/// Confidence level of the intervals.
pub(crate) const LEVEL: f64 = 0.95;

/// The top class of a distribution: the first index of the largest value.
pub(crate) fn top_class(p: &[f64]) -> usize {
    let mut best = 0;
    for (k, &v) in p.iter().enumerate() {
        if v > p[best] {
            best = k;
        }
    }
    best
}

/// Per-example scores of one predictive.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ExampleScores {
    /// 1 where the top class is the label, else 0.
    pub correct: Vec<f64>,
    /// −log p_i(y_i), floored at 10⁻¹² inside the logarithm.
    pub nll: Vec<f64>,
    /// 1 where the top class is the reference's (with a reference).
    pub agreement: Option<Vec<f64>>,
    /// ½ Σ_k |p_ik − q_ik| (with a reference).
    pub total_variation: Option<Vec<f64>>,
}

/// The per-example scores of `probs` (n × C) against `labels` and, when given, the
/// reference predictive `reference` (n × C).
pub(crate) fn example_scores(
    probs: &[f64],
    labels: &[u32],
    classes: usize,
    reference: Option<&[f64]>,
) -> ExampleScores {
    let rows = probs.chunks_exact(classes).zip(labels);
    let correct = rows
        .clone()
        .map(|(p, &y)| f64::from(u8::from(top_class(p) == y as usize)))
        .collect();
    let nll = rows
        .map(|(p, &y)| -p.get(y as usize).copied().unwrap_or(0.0).max(1e-12).ln())
        .collect();
    let against = |f: &dyn Fn(&[f64], &[f64]) -> f64| {
        reference.map(|q| {
            probs
                .chunks_exact(classes)
                .zip(q.chunks_exact(classes))
                .map(|(p, q)| f(p, q))
                .collect()
        })
    };
    ExampleScores {
        correct,
        nll,
        agreement: against(&|p, q| f64::from(u8::from(top_class(p) == top_class(q)))),
        total_variation: against(&|p, q| {
            0.5 * p.iter().zip(q).map(|(a, b)| (a - b).abs()).sum::<f64>()
        }),
    }
}

/// The expected calibration error of `probs` (n × C) with example weights (every
/// example once when `None`): Σ_bins (w_bin/W) · |accuracy_bin − confidence_bin|, over
/// [`ECE_BINS`] equal-width bins of the top probability, with weighted counts.
pub fn ece(probs: &[f64], labels: &[u32], classes: usize, weights: Option<&[u32]>) -> f64 {
    let mut bins = [(0.0f64, 0.0f64, 0.0f64); ECE_BINS];
    let mut total = 0.0;
    for (i, (p, &y)) in probs.chunks_exact(classes).zip(labels).enumerate() {
        let w = weights.map_or(1.0, |w| f64::from(w.get(i).copied().unwrap_or(0)));
        if w == 0.0 {
            continue;
        }
        let top = top_class(p);
        let conf = p[top];
        let b = ((conf * ECE_BINS as f64) as usize).min(ECE_BINS - 1);
        bins[b].0 += w;
        bins[b].1 += w * f64::from(u8::from(top == y as usize));
        bins[b].2 += w * conf;
        total += w;
    }
    if total == 0.0 {
        return f64::NAN;
    }
    bins.iter()
        .filter(|b| b.0 > 0.0)
        .map(|&(count, hits, conf)| (count / total) * ((hits - conf) / count).abs())
        .sum()
}

/// One score of a row: mean over seeds, its spread over seeds, its interval over test
/// examples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Mean over seeds.
    pub value: f64,
    /// Standard deviation over seeds.
    pub sd: f64,
    /// 95 % paired-bootstrap interval over test examples.
    pub ci: [f64; 2],
}

/// Every score of a row (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fidelity {
    /// Accuracy.
    pub accuracy: Summary,
    /// NLL per test example.
    pub nll: Summary,
    /// NLL summed over the test set, mean over seeds.
    pub nll_sum: f64,
    /// Expected calibration error.
    pub ece: Summary,
    /// Agreement with the reference's top class (with a reference).
    pub agreement: Option<Summary>,
    /// Total variation from the reference's predictive (with a reference).
    pub total_variation: Option<Summary>,
    /// Per test example, the mean over seeds of the NLL: what a paired comparison of two
    /// methods resamples ([`paired_difference`]).
    #[serde(skip)]
    pub example_nll: Vec<f64>,
    /// The same of the total variation (with a reference).
    #[serde(skip)]
    pub example_total_variation: Option<Vec<f64>>,
}

/// The 95 % paired-bootstrap interval of mean(a) − mean(b) over the same resampled test
/// examples (`a`, `b` per-example scores of two methods), NaN where undefined. Tighter
/// than the two methods' own intervals because the examples that are hard for one are
/// hard for the other.
pub fn paired_difference(a: &[f64], b: &[f64], bootstrap: &Bootstrap) -> [f64; 2] {
    bounds(bootstrap.difference(a, b, LEVEL))
}

/// Mean over seeds of a per-example score, per example.
fn seed_mean(per_seed: &[&[f64]]) -> Vec<f64> {
    let n = per_seed.first().map_or(0, |s| s.len());
    let k = per_seed.len().max(1) as f64;
    (0..n)
        .map(|i| per_seed.iter().map(|s| s[i]).sum::<f64>() / k)
        .collect()
}

/// An interval's bounds, NaN where it is undefined (a non-finite score, no examples).
fn bounds(interval: Result<Interval, StatsError>) -> [f64; 2] {
    interval.map_or([f64::NAN; 2], |i| [i.lower, i.upper])
}

/// The summary of a per-example score given per seed.
fn summarize_mean(per_seed: &[&[f64]], bootstrap: &Bootstrap) -> Summary {
    let means: Vec<f64> = per_seed
        .iter()
        .map(|s| s.iter().sum::<f64>() / s.len().max(1) as f64)
        .collect();
    let (value, sd) = mean_sd(&means);
    let pooled = seed_mean(per_seed);
    Summary {
        value,
        sd,
        ci: bounds(bootstrap.interval(&pooled, LEVEL)),
    }
}

/// The scores of a method from its final predictive of every seed (`per_seed[s]` is
/// n × C), against `labels` and the reference predictive when there is one. `bootstrap`
/// must be drawn over the n test examples.
pub fn summarize(
    per_seed: &[Vec<f64>],
    labels: &[u32],
    classes: usize,
    reference: Option<&[f64]>,
    bootstrap: &Bootstrap,
) -> Fidelity {
    let scores: Vec<ExampleScores> = per_seed
        .iter()
        .map(|p| example_scores(p, labels, classes, reference))
        .collect();
    let pick = |f: &dyn Fn(&ExampleScores) -> Option<&[f64]>| -> Option<Summary> {
        let v: Option<Vec<&[f64]>> = scores.iter().map(f).collect();
        v.map(|v| summarize_mean(&v, bootstrap))
    };
    let nan = Summary {
        value: f64::NAN,
        sd: f64::NAN,
        ci: [f64::NAN; 2],
    };
    let eces: Vec<f64> = per_seed
        .iter()
        .map(|p| ece(p, labels, classes, None))
        .collect();
    let (ece_value, ece_sd) = mean_sd(&eces);
    // The binned ECE of a resample is biased upward (a resample repeats examples, and
    // fewer distinct examples per bin leave larger gaps): the percentile interval is
    // shifted down by the bootstrap's estimate of that bias, mean(ECE*) − ECE.
    let (mut total, mut count) = (0.0, 0usize);
    let raw = bootstrap.interval_with(
        |w| {
            let v = per_seed
                .iter()
                .map(|p| ece(p, labels, classes, Some(w)))
                .sum::<f64>()
                / per_seed.len().max(1) as f64;
            total += v;
            count += 1;
            v
        },
        LEVEL,
    );
    let bias = total / count.max(1) as f64 - ece_value;
    let ece_ci = bounds(raw).map(|b| (b - bias).max(0.0));
    let nll = pick(&|s| Some(&s.nll)).unwrap_or(nan);
    let example = |f: &dyn Fn(&ExampleScores) -> Option<&[f64]>| -> Option<Vec<f64>> {
        let v: Option<Vec<&[f64]>> = scores.iter().map(f).collect();
        v.map(|v| seed_mean(&v))
    };
    Fidelity {
        example_nll: example(&|s| Some(&s.nll)).unwrap_or_default(),
        example_total_variation: example(&|s| s.total_variation.as_deref()),
        accuracy: pick(&|s| Some(&s.correct)).unwrap_or(nan),
        nll_sum: nll.value * labels.len() as f64,
        nll,
        ece: Summary {
            value: ece_value,
            sd: ece_sd,
            ci: ece_ci,
        },
        agreement: pick(&|s| s.agreement.as_deref()),
        total_variation: pick(&|s| s.total_variation.as_deref()),
    }
}

/// Scores of the average of the first k samples, for a growing k: the curves of NLL
/// and agreement against the number of samples. Values are means over seeds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SampleCurve {
    /// Method.
    pub name: String,
    /// Samples averaged, k.
    pub samples: Vec<usize>,
    /// NLL per test example of the first k samples' average.
    pub nll: Vec<f64>,
    /// Its accuracy.
    pub accuracy: Vec<f64>,
    /// Its agreement with the reference (with a reference).
    pub agreement: Option<Vec<f64>>,
    /// Its total variation from the reference (with a reference).
    pub total_variation: Option<Vec<f64>>,
}

/// The numbers of samples a curve is scored at: 1, 2, 3, 5 times powers of ten below
/// `total`, and `total`.
pub fn curve_points(total: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut scale = 1usize;
    while scale <= total {
        for m in [1, 2, 3, 5] {
            let k = m * scale;
            if k < total {
                out.push(k);
            }
        }
        scale = scale.saturating_mul(10);
        if scale == usize::MAX {
            break;
        }
    }
    if total > 0 {
        out.push(total);
    }
    out
}

/// Means over examples of a per-example score.
fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The scores of one seed's average of its first k samples: one point of a
/// [`SampleCurve`] before the mean over seeds (what a shard keeps of its seeds' curves).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PointScores {
    /// NLL per test example.
    #[serde(with = "super::lossless::one")]
    pub nll: f64,
    /// Accuracy.
    #[serde(with = "super::lossless::one")]
    pub accuracy: f64,
    /// Agreement with the reference (with a reference).
    #[serde(with = "super::lossless::opt")]
    pub agreement: Option<f64>,
    /// Total variation from the reference (with a reference).
    #[serde(with = "super::lossless::opt")]
    pub total_variation: Option<f64>,
}

impl PointScores {
    /// The scores of the predictive `p` (n × C).
    pub fn of(p: &[f64], labels: &[u32], classes: usize, reference: Option<&[f64]>) -> Self {
        let s = example_scores(p, labels, classes, reference);
        PointScores {
            nll: mean(&s.nll),
            accuracy: mean(&s.correct),
            agreement: s.agreement.as_deref().map(mean),
            total_variation: s.total_variation.as_deref().map(mean),
        }
    }
}

impl SampleCurve {
    /// The curve of a method from the prefix averages of every seed:
    /// `prefixes[s][j]` is seed s's average of its first `points[j]` samples (n × C).
    pub fn new(
        name: &str,
        points: &[usize],
        prefixes: &[Vec<Vec<f64>>],
        labels: &[u32],
        classes: usize,
        reference: Option<&[f64]>,
    ) -> Self {
        let scored: Vec<Vec<PointScores>> = prefixes
            .iter()
            .map(|seed| {
                seed.iter()
                    .take(points.len())
                    .map(|p| PointScores::of(p, labels, classes, reference))
                    .collect()
            })
            .collect();
        Self::from_points(name, points, &scored, reference.is_some())
    }

    /// The curve of a method from the scores of every seed at its points
    /// (`per_seed[s][j]` at `points[j]`; a seed with fewer points counts 0 beyond its
    /// last), `with_reference` when agreement and total variation were scored.
    pub(crate) fn from_points(
        name: &str,
        points: &[usize],
        per_seed: &[Vec<PointScores>],
        with_reference: bool,
    ) -> Self {
        let seeds = per_seed.len().max(1) as f64;
        let mut c = SampleCurve {
            name: name.to_string(),
            samples: points.to_vec(),
            agreement: with_reference.then(Vec::new),
            total_variation: with_reference.then(Vec::new),
            ..SampleCurve::default()
        };
        for j in 0..points.len() {
            let (mut nll, mut acc, mut agr, mut tv) = (0.0, 0.0, 0.0, 0.0);
            for seed in per_seed {
                let Some(s) = seed.get(j) else { continue };
                nll += s.nll;
                acc += s.accuracy;
                agr += s.agreement.unwrap_or(0.0);
                tv += s.total_variation.unwrap_or(0.0);
            }
            c.nll.push(nll / seeds);
            c.accuracy.push(acc / seeds);
            if let Some(a) = c.agreement.as_mut() {
                a.push(agr / seeds);
            }
            if let Some(t) = c.total_variation.as_mut() {
                t.push(tv / seeds);
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-computed per-example scores.
    #[test]
    fn example_scores_by_hand() {
        // Example 0: p = (0.7, 0.3), q = (0.4, 0.6), label 0: correct, disagrees,
        // TV = ½(0.3 + 0.3) = 0.3. Example 1: p = (0.2, 0.8), q = (0.1, 0.9), label 0:
        // wrong, agrees, TV = 0.1.
        let p = [0.7, 0.3, 0.2, 0.8];
        let q = [0.4, 0.6, 0.1, 0.9];
        let s = example_scores(&p, &[0, 0], 2, Some(&q));
        assert_eq!(s.correct, vec![1.0, 0.0]);
        assert_eq!(s.agreement, Some(vec![0.0, 1.0]));
        let tv = s.total_variation.unwrap();
        assert!((tv[0] - 0.3).abs() < 1e-15 && (tv[1] - 0.1).abs() < 1e-15);
        assert!((s.nll[0] + 0.7f64.ln()).abs() < 1e-15);
        assert!((s.nll[1] + 0.2f64.ln()).abs() < 1e-15);
        // Against itself: full agreement, zero total variation.
        let s = example_scores(&p, &[0, 0], 2, Some(&p));
        assert_eq!(s.agreement, Some(vec![1.0, 1.0]));
        assert_eq!(s.total_variation, Some(vec![0.0, 0.0]));
        assert!(example_scores(&p, &[0, 0], 2, None).agreement.is_none());
    }

    #[test]
    fn ties_go_to_the_lower_class() {
        assert_eq!(top_class(&[0.5, 0.5]), 0);
        assert_eq!(top_class(&[0.2, 0.4, 0.4]), 1);
    }

    /// The weighted ECE equals the unweighted ECE of the data with every example
    /// repeated its weight's number of times.
    #[test]
    fn weighted_ece_is_ece_of_the_repeated_data() {
        let p = [0.9, 0.1, 0.6, 0.4, 0.3, 0.7, 0.55, 0.45];
        let y = [0, 1, 1, 0];
        let w = [2u32, 0, 3, 1];
        let mut rp = Vec::new();
        let mut ry = Vec::new();
        for (i, &k) in w.iter().enumerate() {
            for _ in 0..k {
                rp.extend_from_slice(&p[2 * i..2 * i + 2]);
                ry.push(y[i]);
            }
        }
        let a = ece(&p, &y, 2, Some(&w));
        let b = ece(&rp, &ry, 2, None);
        assert!((a - b).abs() < 1e-15, "{a} vs {b}");
        // And the unweighted one is the metrics module's.
        let s = super::super::metrics::score(&p, &y, 2);
        assert!((ece(&p, &y, 2, None) - s.ece).abs() < 1e-15);
        assert!(ece(&p, &y, 2, Some(&[0, 0, 0, 0])).is_nan());
    }

    #[test]
    fn curve_points_are_increasing_and_end_at_the_total() {
        assert_eq!(curve_points(60), vec![1, 2, 3, 5, 10, 20, 30, 50, 60]);
        assert_eq!(curve_points(10), vec![1, 2, 3, 5, 10]);
        assert_eq!(curve_points(1), vec![1]);
        assert!(curve_points(0).is_empty());
    }

    /// Two seeds, a reference: values are seed means, intervals contain them, the
    /// spread is the seeds' standard deviation.
    #[test]
    fn summaries_of_two_seeds() {
        let labels: Vec<u32> = (0..40).map(|i| (i % 3) as u32).collect();
        let make = |shift: f64| -> Vec<f64> {
            labels
                .iter()
                .enumerate()
                .flat_map(|(i, &y)| {
                    let mut p = [0.2 - shift / 2.0, 0.2 - shift / 2.0, 0.2 - shift / 2.0];
                    // Right on 3 examples out of 4.
                    let top = if i % 4 == 3 {
                        (y as usize + 1) % 3
                    } else {
                        y as usize
                    };
                    p[top] = 0.6 + shift;
                    p
                })
                .collect()
        };
        let seeds = vec![make(0.0), make(0.1)];
        let reference = make(0.05);
        let b = Bootstrap::new(labels.len(), 400, 9).unwrap();
        let f = summarize(&seeds, &labels, 3, Some(&reference), &b);
        assert!((f.accuracy.value - 0.75).abs() < 1e-12 && f.accuracy.sd == 0.0);
        let agr = f.agreement.unwrap();
        assert_eq!(agr.value, 1.0);
        let tv = f.total_variation.unwrap();
        assert!((tv.value - 0.05).abs() < 1e-12, "{}", tv.value);
        for s in [f.accuracy, f.nll, f.ece, tv] {
            assert!(
                s.ci[0] <= s.value + 1e-12 && s.value <= s.ci[1] + 1e-12,
                "{s:?}"
            );
        }
        let nll0 = -(0.6f64.ln() * 30.0 + 0.2f64.ln() * 10.0) / 40.0;
        let nll1 = -(0.7f64.ln() * 30.0 + 0.15f64.ln() * 10.0) / 40.0;
        assert!((f.nll.value - (nll0 + nll1) / 2.0).abs() < 1e-12);
        assert!((f.nll_sum - 40.0 * f.nll.value).abs() < 1e-9);
    }
}
