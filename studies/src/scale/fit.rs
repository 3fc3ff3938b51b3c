//! The fits of a sweep: least-squares lines of ln `E[T]` against ln P, one per window
//! rule and swap rate, beside the same fit of Lemma 1's values.

use serde::{Deserialize, Serialize};

use super::{Point, null_as_nan};

/// A least-squares line through (ln P, ln `E[T]`) of one window rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// Window rule.
    pub window_rule: String,
    /// Swap rate (NaN, `"NaN"`, for the gaussian path, whose rates follow from P).
    #[serde(deserialize_with = "null_as_nan")]
    pub swap_rate: f64,
    /// Slope of ln `E[T]` against ln P.
    #[serde(deserialize_with = "null_as_nan")]
    pub slope: f64,
    /// Intercept.
    #[serde(deserialize_with = "null_as_nan")]
    pub intercept: f64,
    /// The same fit on Lemma 1's values at the same points.
    #[serde(deserialize_with = "null_as_nan")]
    pub model_slope: f64,
    /// Points used.
    pub points: usize,
}

/// The swap rate that groups points into one fit (as bits): S, or NaN for the
/// gaussian path, whose swap rates follow from P.
pub fn group_rate(p: &Point) -> u64 {
    if p.lambda.is_some() {
        f64::NAN.to_bits()
    } else {
        p.swap_rate.to_bits()
    }
}

/// Least-squares slopes of ln `E[T]` against ln P, one per (window rule, swap rate) with
/// at least two chain counts (finite estimates only).
pub fn fits(points: &[Point]) -> Vec<Fit> {
    // (A fit of the gaussian path pools its P, whose swap rates differ: S is NaN.)
    let mut keys: Vec<(String, u64)> = Vec::new();
    for p in points {
        let k = (p.window_rule.clone(), group_rate(p));
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let line = |xy: &[(f64, f64)]| -> (f64, f64) {
        let n = xy.len() as f64;
        let mx = xy.iter().map(|p| p.0).sum::<f64>() / n;
        let my = xy.iter().map(|p| p.1).sum::<f64>() / n;
        let sxy: f64 = xy.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let sxx: f64 = xy.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
        let slope = sxy / sxx;
        (slope, my - slope * mx)
    };
    keys.into_iter()
        .filter_map(|(rule, bits)| {
            let mut sel: Vec<&Point> = points
                .iter()
                .filter(|p| {
                    p.window_rule == rule
                        && group_rate(p) == bits
                        && p.expected_round_trip.is_finite()
                        && p.expected_round_trip > 0.0
                })
                .collect();
            // Sums in the order of the sweep's points, whatever order the shards were
            // merged in: the same fit to the last bit.
            sel.sort_by_key(|p| p.index);
            let mut ps: Vec<usize> = sel.iter().map(|p| p.chains).collect();
            ps.sort_unstable();
            ps.dedup();
            if ps.len() < 2 {
                return None;
            }
            let xy: Vec<(f64, f64)> = sel
                .iter()
                .map(|p| ((p.chains as f64).ln(), p.expected_round_trip.ln()))
                .collect();
            let model: Vec<(f64, f64)> = sel
                .iter()
                .map(|p| ((p.chains as f64).ln(), p.model_expected_round_trip.ln()))
                .collect();
            let (slope, intercept) = line(&xy);
            Some(Fit {
                window_rule: rule,
                swap_rate: f64::from_bits(bits),
                slope,
                intercept,
                model_slope: line(&model).0,
                points: sel.len(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scale::Point;

    #[test]
    fn fits_recover_a_power_law() {
        let pts: Vec<Point> = [8usize, 16, 32, 64]
            .iter()
            .enumerate()
            .map(|(i, &p)| Point {
                index: i,
                chains: p,
                window_rule: "1".into(),
                window: 1,
                swap_rate: 0.1,
                round_trips_per_1000: 0.0,
                expected_round_trip: 3.0 * (p as f64).powi(2),
                expected_round_trip_se: 0.0,
                model_expected_round_trip: 2.0 * (p as f64).powf(1.5),
                ratio: 1.0,
                ensembles: 1,
                warmup: 0,
                iterations: 0,
                round_trips: 0,
                capped: false,
                seconds: 0.0,
                lambda: None,
                limit_expected_round_trip: None,
            })
            .collect();
        let f = fits(&pts);
        assert_eq!(f.len(), 1);
        assert!((f[0].slope - 2.0).abs() < 1e-12);
        assert!((f[0].model_slope - 1.5).abs() < 1e-12);
    }
}
