//! A predictive computed outside nrpt, scored against a reference posterior: someone who
//! trains the reference's model with their own method (PyTorch, say) gives the
//! probabilities their method predicts on the reference's test examples, and gets the
//! same scores, with the same intervals, that `nrpt deep` reports for its own methods.
//!
//! # What is checked before anything is scored
//!
//! A comparison with a reference of another model, or on other test examples, would
//! give numbers that look like a result and mean nothing, so [`score_predictive`]
//! refuses it ([`ExternalError`], each message naming what differs):
//!
//! 1. **The model.** The caller states the model its predictive belongs to
//!    ([`StatedModel`]: the data set's name, the layer sizes, the prior's σ); each must
//!    equal the reference's ([`ModelKey`]).
//! 2. **The data and its split.** A reference's description holds a digest of its data
//!    ([`ModelKey::data_sha256`]), not its labels, so the test labels come from the
//!    bundled data set of that name (`digits`, `mnist1d`), whose digest must match.
//!    A reference of data that is not bundled cannot be checked, and is refused.
//! 3. **The labels the predictive was scored on** must be the reference's test labels,
//!    in order: a different count, or a label that differs at any position, means
//!    another split or another order (for the digits, example i of the file is a test
//!    example when i % 4 == 3).
//! 4. **The predictive** must be test examples × classes, every row a distribution:
//!    finite, non-negative, summing to 1 within [`SUM_TOLERANCE`].
//!
//! # The scores
//!
//! Accuracy, NLL (per example and summed), ECE, agreement with the reference's top class
//! and total variation from its predictive, as [`fidelity`] defines them, each with the
//! 95 % percentile interval of a bootstrap over test examples. The resamples are those
//! of `nrpt deep`: [`RESAMPLES`](super::experiment) resamples drawn from the run's
//! `--seed` (0 by default), so the intervals are over the very resampled test sets that
//! scored `nrpt deep`'s rows of that seed. With one predictive there is no spread over
//! seeds.
//!
//! Kept whole past 600 lines: the checks and the scoring are about 390 lines; the rest
//! are their tests, one per refusal.

use serde::Serialize;

use super::experiment::{RESAMPLES, ReferenceSummary};
use super::fidelity::{self, LEVEL};
use super::reference::{ModelKey, Reference, SUM_TOLERANCE, data_digest};
use nrpt_sampling::data::{self, Bundled, DataError, Dataset};
use nrpt_sampling::stats::{Bootstrap, StatsError};

/// The model a predictive belongs to, as its author states it: the fields of a
/// [`ModelKey`] that a user chooses (the rest follow from the data).
#[derive(Clone, Debug, PartialEq)]
pub struct StatedModel {
    /// The bundled data set's name, as `nrpt deep --dataset` takes it: `digits` or
    /// `mnist1d`.
    pub data: String,
    /// Layer sizes [F, hidden…, C]: features, the hidden layers' widths, classes
    /// (`[64, 64, 10]` for one hidden layer of 64 on the digits).
    pub layers: Vec<usize>,
    /// Standard deviation σ of the N(0, σ²) prior on every weight and bias.
    pub prior_sigma: f64,
}

/// Why a predictive cannot be scored against a reference.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExternalError {
    /// The stated model is not the reference's.
    #[error(
        "the reference {source_name} is of another model than the predictive: {field} {reference} against the predictive's {stated}; score a predictive of the reference's model, or compute a reference of yours with `nrpt reference` (same data set, hidden layers and prior σ)"
    )]
    OtherModel {
        /// Where the reference came from.
        source_name: String,
        /// The first field that differs: `data`, `layers` or `prior_sigma`.
        field: &'static str,
        /// The reference's value.
        reference: String,
        /// The stated one.
        stated: String,
    },
    /// The reference's data is not a bundled data set, so its test labels are unknown.
    #[error(
        "the reference {source_name} is of the data `{data}`, not of a bundled data set (digits, mnist1d): its description holds a digest of the data, not its test labels, so the labels of the predictive cannot be checked against it"
    )]
    UnbundledData {
        /// Where the reference came from.
        source_name: String,
        /// Its data's name.
        data: String,
    },
    /// The bundled data set of the reference's name is not the data it was computed on.
    #[error(
        "the reference {source_name} was computed on other data than this nrpt's bundled `{data}`: SHA-256 {reference} against {bundled}; use the nrpt version that wrote it ({version})"
    )]
    OtherData {
        /// Where the reference came from.
        source_name: String,
        /// The data set's name.
        data: String,
        /// The reference's digest of its data.
        reference: String,
        /// The bundled data set's digest.
        bundled: String,
        /// The version of nrpt that wrote the reference.
        version: String,
    },
    /// The bundled data set cannot be read.
    #[error(transparent)]
    Data(#[from] DataError),
    /// Not as many labels as the reference has test examples.
    #[error(
        "{given} labels, but the reference {source_name} has {expected} test examples: score the predictive on the reference's test split, in its order: {split}"
    )]
    LabelCount {
        /// Where the reference came from.
        source_name: String,
        /// Labels given.
        given: usize,
        /// The reference's test examples.
        expected: usize,
        /// The test split, in words.
        split: &'static str,
    },
    /// The labels are not the reference's test labels.
    #[error(
        "the labels differ from the test labels of the reference {source_name} at {differing} of {examples} positions (the first at position {first}: {given} where the reference's test split has {expected}); the predictive must be of the reference's test split, in its order: {split}"
    )]
    OtherLabels {
        /// Where the reference came from.
        source_name: String,
        /// Positions whose label differs.
        differing: usize,
        /// Test examples.
        examples: usize,
        /// The first of them (from 0).
        first: usize,
        /// The label given there.
        given: u32,
        /// The reference's label there.
        expected: u32,
        /// The test split, in words.
        split: &'static str,
    },
    /// The predictive is not test examples × classes.
    #[error(
        "the predictive has shape {given:?} ({values} values), but the reference {source_name} needs {expected:?}: one row per test example, one column per class"
    )]
    Shape {
        /// Where the reference came from.
        source_name: String,
        /// The shape given (rows, columns).
        given: [usize; 2],
        /// Values given.
        values: usize,
        /// The reference's (test examples, classes).
        expected: [usize; 2],
    },
    /// A row of the predictive is not a distribution.
    #[error(
        "row {row} of the predictive is not a distribution over the classes: {reason}; give probabilities (a softmax output), not logits or log-probabilities"
    )]
    NotADistribution {
        /// The row (test example), from 0.
        row: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// An interval that cannot be formed (no test examples).
    #[error(transparent)]
    Stats(#[from] StatsError),
}

/// The scores of a predictive against its labels and a reference posterior, each with
/// its 95 % interval over test examples (see the [module docs](self)). Fields as the
/// rows of `nrpt deep`'s `results.json` name them.
#[derive(Clone, Debug, Serialize)]
pub struct ExternalScores {
    /// The share of test examples whose top class is the label.
    pub accuracy: f64,
    /// Its interval.
    pub accuracy_ci: [f64; 2],
    /// Mean −log p_i(y_i) per test example (probabilities floored at 10⁻¹²).
    pub nll: f64,
    /// Its interval.
    pub nll_ci: [f64; 2],
    /// The NLL summed over the test set.
    pub nll_sum: f64,
    /// Expected calibration error (15 equal-width bins of the top probability).
    pub ece: f64,
    /// Its interval (corrected for the bootstrap's bias, as `nrpt deep`'s).
    pub ece_ci: [f64; 2],
    /// The share of test examples whose top class is the reference's.
    pub agreement: f64,
    /// Its interval.
    pub agreement_ci: [f64; 2],
    /// Mean over test examples of ½ Σ_k |p_k − q_k|, q the reference's predictive.
    pub total_variation: f64,
    /// Its interval.
    pub total_variation_ci: [f64; 2],
    /// Test examples scored.
    pub test_examples: usize,
    /// Confidence level of the intervals.
    pub level: f64,
    /// Resamples of the bootstrap.
    pub resamples: usize,
    /// The seed the resamples were drawn from (`nrpt deep --seed`).
    pub seed: u32,
    /// The reference scored against: where it came from and its description.
    pub reference: ReferenceSummary,
}

/// The test split of a bundled data set, in words.
fn split_rule(b: Bundled) -> &'static str {
    match b {
        Bundled::Digits => {
            "example i of the bundled digits, counted from 0 in its file's order, is a test example when i % 4 == 3 (449 of the 1,797)"
        }
        Bundled::Mnist1d => {
            "the bundled MNIST-1D's test examples are the mnist1d package's test split, 3,200 examples in the generator's order"
        }
    }
}

/// The first field in which the reference's key and the stated model differ, as
/// (field, reference's value, stated value).
fn difference(key: &ModelKey, stated: &StatedModel) -> Option<(&'static str, String, String)> {
    if key.data != stated.data {
        return Some((
            "data",
            format!("`{}`", key.data),
            format!("`{}`", stated.data),
        ));
    }
    if key.layers != stated.layers {
        return Some((
            "layers",
            format!("{:?}", key.layers),
            format!("{:?}", stated.layers),
        ));
    }
    // Compared as numbers: −0 and 0 are one σ, and NaN is no σ of any reference.
    if key.prior_sigma != stated.prior_sigma {
        return Some((
            "prior_sigma",
            format!("{:?}", key.prior_sigma),
            format!("{:?}", stated.prior_sigma),
        ));
    }
    None
}

/// The data set a reference was computed on, and its test split in words: the bundled
/// data set of the reference's data name, checked against the reference's digest.
pub fn reference_data(reference: &Reference) -> Result<(Dataset, &'static str), ExternalError> {
    let key = &reference.meta.model;
    let Ok(bundled) = key.data.parse::<Bundled>() else {
        return Err(ExternalError::UnbundledData {
            source_name: reference.source.clone(),
            data: key.data.clone(),
        });
    };
    let d = data::load(&bundled.into())?;
    let digest = data_digest(&d);
    if digest != key.data_sha256 {
        return Err(ExternalError::OtherData {
            source_name: reference.source.clone(),
            data: key.data.clone(),
            reference: key.data_sha256.clone(),
            bundled: digest,
            version: reference.meta.nrpt_version.clone(),
        });
    }
    Ok((d, split_rule(bundled)))
}

/// Checks that every row of `probs` (rows of `classes` values) is a distribution.
fn check_rows(probs: &[f64], classes: usize) -> Result<(), ExternalError> {
    for (row, p) in probs.chunks_exact(classes.max(1)).enumerate() {
        let bad = |reason: String| Err(ExternalError::NotADistribution { row, reason });
        if let Some(k) = p.iter().position(|v| !v.is_finite()) {
            return bad(format!("its value for class {k} is {}", p[k]));
        }
        if let Some(k) = p.iter().position(|&v| v < 0.0) {
            return bad(format!("its value for class {k} is negative ({})", p[k]));
        }
        let sum: f64 = p.iter().sum();
        if (sum - 1.0).abs() > SUM_TOLERANCE {
            return bad(format!(
                "it sums to {sum}, not to 1 within {SUM_TOLERANCE:e}"
            ));
        }
    }
    Ok(())
}

/// Scores the predictive `probs` (row-major, `shape` = [test examples, classes]), which
/// its author scored on `labels` and states to belong to `model`, against `reference`,
/// with the bootstrap resamples of `nrpt deep --seed seed` (0 by default there).
///
/// Refuses, before scoring anything, another model, data that cannot be checked or
/// differs, labels that are not the reference's test labels in order, a predictive of
/// another shape and a row that is not a distribution (see the [module docs](self)).
pub fn score_predictive(
    probs: &[f64],
    shape: [usize; 2],
    labels: &[u32],
    model: &StatedModel,
    reference: &Reference,
    seed: u32,
) -> Result<ExternalScores, ExternalError> {
    let source_name = || reference.source.clone();
    let key = &reference.meta.model;
    if let Some((field, reference, stated)) = difference(key, model) {
        return Err(ExternalError::OtherModel {
            source_name: source_name(),
            field,
            reference,
            stated,
        });
    }
    let (d, split) = reference_data(reference)?;
    let expected = &d.test.y;
    if labels.len() != expected.len() {
        return Err(ExternalError::LabelCount {
            source_name: source_name(),
            given: labels.len(),
            expected: expected.len(),
            split,
        });
    }
    let mut differing = labels
        .iter()
        .zip(expected)
        .enumerate()
        .filter(|(_, (a, b))| a != b);
    if let Some((first, (&given, &want))) = differing.next() {
        return Err(ExternalError::OtherLabels {
            source_name: source_name(),
            differing: 1 + differing.count(),
            examples: expected.len(),
            first,
            given,
            expected: want,
            split,
        });
    }
    let classes = key.layers.last().copied().unwrap_or(0);
    let want = [key.test_examples, classes];
    if shape != want || shape[0].checked_mul(shape[1]) != Some(probs.len()) {
        return Err(ExternalError::Shape {
            source_name: source_name(),
            given: shape,
            values: probs.len(),
            expected: want,
        });
    }
    check_rows(probs, classes)?;

    let bootstrap = Bootstrap::new(labels.len(), RESAMPLES, u64::from(seed))?;
    let f = fidelity::summarize(
        &[probs.to_vec()],
        labels,
        classes,
        Some(&reference.predictive),
        &bootstrap,
    );
    let (agreement, total_variation) = match (f.agreement, f.total_variation) {
        (Some(a), Some(t)) => (a, t),
        // `summarize` scores both whenever it is given a reference.
        _ => return Err(StatsError::NoExamples.into()),
    };
    Ok(ExternalScores {
        accuracy: f.accuracy.value,
        accuracy_ci: f.accuracy.ci,
        nll: f.nll.value,
        nll_ci: f.nll.ci,
        nll_sum: f.nll_sum,
        ece: f.ece.value,
        ece_ci: f.ece.ci,
        agreement: agreement.value,
        agreement_ci: agreement.ci,
        total_variation: total_variation.value,
        total_variation_ci: total_variation.ci,
        test_examples: labels.len(),
        level: LEVEL,
        resamples: RESAMPLES,
        seed,
        reference: ReferenceSummary::of(reference),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deep::reference::bundled_named;

    fn digits_model() -> StatedModel {
        StatedModel {
            data: "digits".to_string(),
            layers: vec![64, 64, 10],
            prior_sigma: 1.0,
        }
    }

    fn reference() -> Reference {
        bundled_named("digits-mlp64").unwrap()
    }

    fn test_labels() -> Vec<u32> {
        data::digits().test.y
    }

    /// The most probable class of a row, first on ties, written out again here.
    fn argmax(row: &[f64]) -> usize {
        let mut best = 0;
        for k in 1..row.len() {
            if row[k] > row[best] {
                best = k;
            }
        }
        best
    }

    /// The reference's own predictive: it agrees with itself everywhere and is at total
    /// variation 0, exactly, intervals included; its accuracy and NLL are the ones its
    /// description records.
    #[test]
    fn the_reference_scores_perfectly_against_itself() {
        let r = reference();
        let s = score_predictive(
            &r.predictive,
            [449, 10],
            &test_labels(),
            &digits_model(),
            &r,
            0,
        )
        .unwrap();
        assert_eq!((s.agreement, s.agreement_ci), (1.0, [1.0, 1.0]));
        assert_eq!((s.total_variation, s.total_variation_ci), (0.0, [0.0, 0.0]));
        assert!((s.accuracy - r.meta.accuracy).abs() < 1e-15, "{s:?}");
        assert!(
            (s.nll - r.meta.nll).abs() < 1e-12,
            "{} vs {}",
            s.nll,
            r.meta.nll
        );
        assert!((s.nll_sum - 449.0 * s.nll).abs() < 1e-9);
        for (v, ci) in [
            (s.accuracy, s.accuracy_ci),
            (s.nll, s.nll_ci),
            (s.ece, s.ece_ci),
        ] {
            assert!(ci[0] <= v && v <= ci[1] && ci[0] < ci[1], "{v} {ci:?}");
        }
        assert_eq!(
            (s.test_examples, s.resamples, s.seed, s.level),
            (449, 1000, 0, 0.95)
        );
        assert_eq!(s.reference.source, "bundled digits-mlp64");
        assert_eq!(s.reference.meta, r.meta);
    }

    /// Two predictives whose scores are computed by hand: the labels with probability
    /// 0.9, and the uniform distribution.
    #[test]
    fn scores_by_hand() {
        let r = reference();
        let y = test_labels();
        let n = y.len() as f64;
        let q: Vec<&[f64]> = r.predictive.chunks_exact(10).collect();
        let tv_to = |p: &[f64]| -> f64 {
            q.iter()
                .enumerate()
                .map(|(i, qi)| {
                    let pi = &p[10 * i..10 * i + 10];
                    (0..10).map(|k| (pi[k] - qi[k]).abs()).sum::<f64>() / 2.0
                })
                .sum::<f64>()
                / n
        };
        let reference_top: Vec<usize> = q.iter().map(|qi| argmax(qi)).collect();

        // 0.9 on the label, 0.1/9 on every other class: always right; NLL −ln 0.9 on
        // every example; every top probability 0.9 in one bin, where the accuracy is 1:
        // ECE 0.1; agreement where the reference's top class is the label.
        let sure: Vec<f64> = y
            .iter()
            .flat_map(|&l| (0..10).map(move |k| if k == l as usize { 0.9 } else { 0.1 / 9.0 }))
            .collect();
        let s = score_predictive(&sure, [449, 10], &y, &digits_model(), &r, 0).unwrap();
        assert_eq!((s.accuracy, s.accuracy_ci), (1.0, [1.0, 1.0]));
        let nll = -(0.9f64.ln());
        assert!((s.nll - nll).abs() < 1e-15, "{}", s.nll);
        assert!((s.nll_ci[0] - nll).abs() < 1e-15 && (s.nll_ci[1] - nll).abs() < 1e-15);
        assert!((s.ece - 0.1).abs() < 1e-12, "{}", s.ece);
        let agree = (0..y.len())
            .filter(|&i| reference_top[i] == y[i] as usize)
            .count();
        assert!((s.agreement - agree as f64 / n).abs() < 1e-15);
        assert!((s.agreement - r.meta.accuracy).abs() < 1e-15);
        assert!((s.total_variation - tv_to(&sure)).abs() < 1e-12);

        // Uniform: the top class is 0 (ties go to the lower class), NLL ln 10, every
        // top probability 0.1, so ECE |accuracy − 0.1|.
        let uniform = vec![0.1; 4490];
        let s = score_predictive(&uniform, [449, 10], &y, &digits_model(), &r, 0).unwrap();
        let zeros = y.iter().filter(|&&l| l == 0).count() as f64 / n;
        assert!((s.accuracy - zeros).abs() < 1e-15);
        assert!((s.nll - 10f64.ln()).abs() < 1e-12);
        assert!((s.ece - (zeros - 0.1).abs()).abs() < 1e-12, "{}", s.ece);
        let top0 = reference_top.iter().filter(|&&k| k == 0).count() as f64 / n;
        assert!((s.agreement - top0).abs() < 1e-15);
        assert!((s.total_variation - tv_to(&uniform)).abs() < 1e-12);
        for (v, ci) in [
            (s.accuracy, s.accuracy_ci),
            (s.agreement, s.agreement_ci),
            (s.total_variation, s.total_variation_ci),
        ] {
            assert!(ci[0] <= v && v <= ci[1] && ci[0] < ci[1], "{v} {ci:?}");
        }

        // Another seed: other resamples, the same values.
        let other = score_predictive(&uniform, [449, 10], &y, &digits_model(), &r, 1).unwrap();
        assert_eq!((other.accuracy, other.seed), (s.accuracy, 1));
        assert_ne!(other.accuracy_ci, s.accuracy_ci);
    }

    /// The intervals are those of `nrpt deep`'s scorer for the same predictive: the
    /// same resamples (1,000, from the run's seed) through the same summary.
    #[test]
    fn intervals_are_nrpt_deep_s() {
        let r = reference();
        let y = test_labels();
        let b = Bootstrap::new(449, 1000, 7).unwrap();
        let f = fidelity::summarize(
            std::slice::from_ref(&r.predictive),
            &y,
            10,
            Some(&r.predictive),
            &b,
        );
        let s = score_predictive(&r.predictive, [449, 10], &y, &digits_model(), &r, 7).unwrap();
        assert_eq!(
            (s.accuracy_ci, s.nll_ci, s.ece_ci),
            (f.accuracy.ci, f.nll.ci, f.ece.ci)
        );
    }

    fn refusal(
        probs: &[f64],
        shape: [usize; 2],
        labels: &[u32],
        model: &StatedModel,
        r: &Reference,
    ) -> ExternalError {
        match score_predictive(probs, shape, labels, model, r, 0) {
            Err(e) => e,
            Ok(s) => panic!("scored: {s:?}"),
        }
    }

    /// Another model, another split, another shape or rows that are not distributions
    /// are refused, each with a message that names what differs.
    #[test]
    fn mismatches_are_refused_with_what_differs() {
        let r = reference();
        let y = test_labels();
        let p = r.predictive.clone();
        let shape = [449, 10];

        let with = |f: &dyn Fn(&mut StatedModel)| {
            let mut m = digits_model();
            f(&mut m);
            m
        };
        for (model, field, shown) in [
            (
                with(&|m| m.layers = vec![64, 32, 10]),
                "layers",
                "[64, 32, 10]",
            ),
            (with(&|m| m.prior_sigma = 0.5), "prior_sigma", "0.5"),
            (with(&|m| m.data = "mnist1d".into()), "data", "`mnist1d`"),
        ] {
            let e = refusal(&p, shape, &y, &model, &r);
            assert!(
                matches!(&e, ExternalError::OtherModel { field: f, .. } if *f == field),
                "{e:?}"
            );
            let text = e.to_string();
            assert!(
                text.contains(&format!("than the predictive: {field} "))
                    && text.contains(&format!("the predictive's {shown}")),
                "{text}"
            );
        }

        // The first 449 training labels: another split, refused with the count of
        // positions that differ.
        let train = data::digits().train.y;
        let differing = train[..449].iter().zip(&y).filter(|(a, b)| a != b).count();
        let e = refusal(&p, shape, &train[..449], &digits_model(), &r);
        let text = e.to_string();
        assert!(
            matches!(e, ExternalError::OtherLabels { differing: d, examples: 449, .. } if d == differing),
            "{text}"
        );
        assert!(
            text.contains(&format!("at {differing} of 449 positions")),
            "{text}"
        );
        assert!(text.contains("i % 4 == 3"), "{text}");
        // One label changed: one position, named.
        let mut one = y.clone();
        one[17] = (one[17] + 1) % 10;
        let text = refusal(&p, shape, &one, &digits_model(), &r).to_string();
        assert!(
            text.contains("at 1 of 449 positions (the first at position 17"),
            "{text}"
        );
        // The whole data set's labels, or one example short.
        let text = refusal(&p, shape, &train, &digits_model(), &r).to_string();
        assert!(
            text.starts_with("1348 labels") && text.contains("449 test examples"),
            "{text}"
        );
        assert!(matches!(
            refusal(&p, shape, &y[..448], &digits_model(), &r),
            ExternalError::LabelCount {
                given: 448,
                expected: 449,
                ..
            }
        ));

        // Shapes: a row short, a class more, values that do not fill the shape.
        for (values, shape) in [
            (&p[..4480], [448, 10]),
            (&p[..], [449, 11]),
            (&p[..4480], [449, 10]),
        ] {
            let e = refusal(values, shape, &y, &digits_model(), &r);
            assert!(matches!(e, ExternalError::Shape { .. }), "{e:?}");
            assert!(e.to_string().contains("needs [449, 10]"), "{e}");
        }

        // Rows that are not distributions: the row is named.
        for (change, words) in [
            (0.01, "sums to"),
            (f64::NAN, "is NaN"),
            (f64::INFINITY, "is inf"),
        ] {
            let mut bad = p.clone();
            bad[10 * 5 + 3] += change;
            let e = refusal(&bad, shape, &y, &digits_model(), &r);
            let text = e.to_string();
            assert!(
                matches!(e, ExternalError::NotADistribution { row: 5, .. }),
                "{text}"
            );
            assert!(text.contains(words), "{text}");
        }
        let mut negative = p.clone();
        negative[20] = -0.25;
        negative[21] += 0.25 + p[20];
        let text = refusal(&negative, shape, &y, &digits_model(), &r).to_string();
        assert!(
            text.contains("row 2 ") && text.contains("negative"),
            "{text}"
        );
        // Within the tolerance: scored.
        let mut close = p.clone();
        close[0] += 0.5e-6;
        score_predictive(&close, shape, &y, &digits_model(), &r, 0).unwrap();
    }

    /// A reference of data that is not bundled, or of bundled data that has changed,
    /// cannot be checked and is refused.
    #[test]
    fn references_of_unknown_data_are_refused() {
        let y = test_labels();
        let mut r = reference();
        r.meta.model.data_sha256 = "0".repeat(64);
        let e = refusal(&r.predictive.clone(), [449, 10], &y, &digits_model(), &r);
        assert!(matches!(e, ExternalError::OtherData { .. }), "{e:?}");
        assert!(e.to_string().contains(&"0".repeat(64)), "{e}");

        let mut r = reference();
        r.meta.model.data = "mine.csv".into();
        let mut model = digits_model();
        model.data = "mine.csv".into();
        let e = refusal(&r.predictive.clone(), [449, 10], &y, &model, &r);
        assert!(matches!(e, ExternalError::UnbundledData { .. }), "{e:?}");
        assert!(e.to_string().contains("`mine.csv`"), "{e}");
    }

    /// The bundled data set of a reference is the one its digest names, split as the
    /// words of the messages say.
    #[test]
    fn reference_data_is_the_bundled_split() {
        let (d, split) = reference_data(&reference()).unwrap();
        assert_eq!(d, data::digits());
        assert!(split.contains("i % 4 == 3") && split.contains("449 of the 1,797"));
        assert!(split_rule(Bundled::Mnist1d).contains("3,200"));
    }
}
