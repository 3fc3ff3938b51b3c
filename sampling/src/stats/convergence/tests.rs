//! The diagnostics against ArviZ, and the behaviour on inputs ArviZ leaves undefined.

use super::rhat::normal_quantile;
use super::*;

/// `sampling/tests/fixtures/stats-arviz.json`, written by `scripts/stats-fixtures.py`: fixed
/// draws and ArviZ 0.23.4's `arviz.rhat(draws, method=…)` ("rank", "z_scale", "folded",
/// "split") and `arviz.ess(draws, method=…, relative=False)` ("bulk", "tail", "mean").
const ARVIZ: &str = include_str!("../../../tests/fixtures/stats-arviz.json");

/// Relative tolerance against ArviZ. The algorithms are the same step for step (split,
/// median, average ranks, Blom's 3/8 offset, type-7 quantiles, Geyer's sequences); what
/// differs is rounding: FFT sizes (a power of two here, `scipy.fft.next_fast_len` in
/// ArviZ), summation orders and the normal quantile (statrs's inverse erfc here, SciPy's
/// `ndtri` there). The largest difference measured is 1e-15; the tolerance leaves room
/// for other platforms' libm without hiding an algorithmic difference (another rank
/// offset, or one lag more or less in Geyer's sum, moves the results far more).
const TOLERANCE: f64 = 1e-10;

struct Case {
    name: String,
    draws: Vec<Vec<f64>>,
    expected: serde_json::Value,
}

fn arviz_cases() -> Vec<Case> {
    let file: serde_json::Value = serde_json::from_str(ARVIZ).expect("fixture is JSON");
    assert_eq!(file["arviz"], "0.23.4", "the tests' docs name the version");
    let cases = file["cases"].as_array().expect("cases");
    cases
        .iter()
        .map(|c| Case {
            name: c["name"].as_str().expect("name").to_string(),
            draws: serde_json::from_value(c["draws"].clone()).expect("draws"),
            expected: c.clone(),
        })
        .collect()
}

fn assert_close(case: &str, what: &str, got: f64, want: f64) {
    let rel = ((got - want) / want).abs();
    assert!(
        rel <= TOLERANCE,
        "{case}: {what} = {got:.15}, ArviZ {want:.15} (relative difference {rel:.2e})"
    );
}

#[test]
fn every_rhat_and_ess_matches_arviz() {
    let cases = arviz_cases();
    assert!(cases.len() >= 9);
    let mut d = Diagnoser::new();
    for case in &cases {
        let (name, want) = (case.name.as_str(), &case.expected);
        let number = |key: &str| want[key].as_f64().expect(key);
        let all = d.diagnose(&case.draws).expect("valid draws");
        assert_close(name, "rhat", all.rhat, number("rhat_rank"));
        assert_close(name, "rhat_bulk", all.rhat_bulk, number("rhat_z_scale"));
        assert_close(name, "rhat_tail", all.rhat_tail, number("rhat_folded"));
        assert_close(name, "split_rhat", all.split_rhat, number("rhat_split"));
        assert_close(name, "ess_bulk", all.ess_bulk, number("ess_bulk"));
        assert_close(name, "ess_tail", all.ess_tail, number("ess_tail"));
        let ess_mean = d.ess_mean(&case.draws).expect("valid draws");
        assert_close(name, "ess_mean", ess_mean, number("ess_mean"));
        // The single-number functions give the same as the whole set.
        assert_eq!(rhat(&case.draws), Ok(all.rhat), "{name}");
        assert_eq!(split_rhat(&case.draws), Ok(all.split_rhat), "{name}");
        assert_eq!(ess_bulk(&case.draws), Ok(all.ess_bulk), "{name}");
        assert_eq!(ess_tail(&case.draws), Ok(all.ess_tail), "{name}");
        assert!(!all.constant);
    }
}

#[test]
fn chains_that_disagree_are_not_converged_and_agreeing_ones_are() {
    let cases = arviz_cases();
    let find = |name: &str| {
        let case = cases.iter().find(|c| c.name == name).expect(name);
        diagnose(&case.draws).expect("valid draws")
    };
    assert!(find("student_t1.5_4x1000").converged());
    assert!(
        !find("ar1_phi0.3_4x100").converged(),
        "ESS below 100 per chain"
    );
    let shifted = find("shifted_means_4x100");
    assert!(shifted.rhat > 1.2 && !shifted.converged());
    // Only the fourth chain's scale differs: the bulk misses it, the tail sees it.
    let scales = find("scales_4x200");
    assert!(
        scales.rhat_bulk < RHAT_LIMIT && scales.rhat_tail > 1.1,
        "{scales:?}"
    );
}

#[test]
fn constant_draws_have_rhat_one_and_ess_of_all_draws() {
    let draws = vec![vec![0.1; 50]; 3];
    let d = diagnose(&draws).expect("valid draws");
    assert!(d.constant);
    assert_eq!(
        (d.rhat, d.rhat_bulk, d.rhat_tail, d.split_rhat),
        (1.0, 1.0, 1.0, 1.0)
    );
    assert_eq!((d.ess_bulk, d.ess_tail), (150.0, 150.0));
}

#[test]
fn constant_chains_that_differ_have_infinite_rhat() {
    let draws = [vec![0.1; 20], vec![0.1; 20], vec![0.3; 20]];
    let d = diagnose(&draws).expect("valid draws");
    assert!(!d.constant);
    assert_eq!((d.rhat, d.split_rhat), (f64::INFINITY, f64::INFINITY));
    assert!(d.ess_bulk.is_finite() && d.ess_bulk < 10.0, "{d:?}");
    assert!(!d.converged());
}

#[test]
fn a_saturated_tail_counts_all_draws_for_that_quantile() {
    // A probability at exactly 1 in over 5% of the draws: the 95% quantile is 1, its
    // indicator is constant, and the tail ESS is the 5% quantile's.
    let draws: Vec<Vec<f64>> = (0..4)
        .map(|c| {
            (0..100)
                .map(|i| {
                    if i % 10 == 0 {
                        1.0
                    } else {
                        0.5 + 0.004 * ((i * 37 + c * 11) % 100) as f64
                    }
                })
                .collect()
        })
        .collect();
    let mut d = Diagnoser::new();
    let tail = d.ess_tail(&draws).expect("valid draws");
    let all = d.diagnose(&draws).expect("valid draws");
    assert!(tail.is_finite() && tail > 0.0 && tail == all.ess_tail);
}

#[test]
fn wrong_shapes_and_values_are_errors() {
    let four = [1.0, 2.0, 3.0, 4.0];
    assert_eq!(rhat(&[four]), Err(StatsError::TooFewChains { chains: 1 }));
    let none: [&[f64]; 0] = [];
    assert_eq!(ess_bulk(&none), Err(StatsError::TooFewChains { chains: 0 }));
    assert_eq!(
        ess_tail(&[[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]),
        Err(StatsError::TooFewDraws { draws: 3 })
    );
    assert_eq!(
        split_rhat(&[&four[..], &four[..3]]),
        Err(StatsError::UnequalChains {
            chain: 1,
            draws: 3,
            expected: 4
        })
    );
    let err = diagnose(&[four, [1.0, f64::NAN, 0.0, 0.0]]).expect_err("NaN");
    assert!(
        matches!(err, StatsError::NonFiniteDraw { chain: 1, draw: 1, value } if value.is_nan())
    );
    let err = rhat(&[four, [1.0, 2.0, f64::INFINITY, 0.0]]).expect_err("infinity");
    assert!(matches!(
        err,
        StatsError::NonFiniteDraw {
            chain: 1,
            draw: 2,
            ..
        }
    ));
}

#[test]
fn a_summary_finds_the_worst_quantity() {
    let cases = arviz_cases();
    let mut d = Diagnoser::new();
    // Items as `&[&[f64]]`.
    let slices: Vec<Vec<&[f64]>> = cases
        .iter()
        .map(|c| c.draws.iter().map(Vec::as_slice).collect())
        .collect();
    let summary = d
        .summarize(slices.iter().map(Vec::as_slice))
        .expect("valid");
    // Items as `&Vec<Vec<f64>>`: the same numbers.
    assert_eq!(
        summarize(cases.iter().map(|c| &c.draws)),
        Ok(summary.clone())
    );

    let each: Vec<Diagnostics> = cases
        .iter()
        .map(|c| diagnose(&c.draws).expect("valid"))
        .collect();
    assert_eq!(summary.quantities, cases.len());
    assert_eq!(summary.constant, 0);
    let worst = each
        .iter()
        .map(|d| d.rhat)
        .fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(summary.rhat_max, worst);
    assert_eq!(each[summary.rhat_max_at].rhat, worst);
    assert_eq!(cases[summary.rhat_max_at].name, "ar1_phi0.2_2x4");
    let fewest = each
        .iter()
        .map(|d| d.ess_bulk)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(
        (summary.ess_bulk_min, each[summary.ess_bulk_min_at].ess_bulk),
        (fewest, fewest)
    );
    let fewest = each
        .iter()
        .map(|d| d.ess_tail)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(
        (summary.ess_tail_min, each[summary.ess_tail_min_at].ess_tail),
        (fewest, fewest)
    );
    let mut rhats: Vec<f64> = each.iter().map(|d| d.rhat).collect();
    rhats.sort_by(f64::total_cmp);
    assert_eq!(summary.rhat_median, rhats[rhats.len() / 2]);
    let above = each.iter().filter(|d| d.rhat >= RHAT_LIMIT).count();
    assert_eq!(summary.rhat_above_limit, above);
    let below = each
        .iter()
        .filter(|d| !d.converged() && d.rhat < RHAT_LIMIT)
        .count();
    assert!(summary.ess_below_limit >= below);
    assert!(!summary.converged());
}

#[test]
fn a_summary_names_the_quantity_that_is_wrong() {
    let good = vec![vec![0.0, 1.0, 2.0, 3.0], vec![1.0, 2.0, 3.0, 0.0]];
    let bad = vec![vec![0.0, 1.0, 2.0, 3.0]];
    assert_eq!(
        summarize([&good, &good, &bad]),
        Err(StatsError::Quantity {
            index: 2,
            source: Box::new(StatsError::TooFewChains { chains: 1 })
        })
    );
    assert_eq!(
        summarize(Vec::<Vec<Vec<f64>>>::new()),
        Err(StatsError::NoQuantities)
    );
    let constant = vec![vec![0.5; 4]; 2];
    let s = summarize([&good, &constant]).expect("valid");
    assert_eq!((s.quantities, s.constant), (2, 1));
}

#[test]
fn the_normal_quantile_is_accurate() {
    // Φ⁻¹ at a few probabilities (values from the inverse of Φ to 16 digits).
    for (p, z) in [
        (0.5, 0.0),
        (0.975, 1.959963984540054),
        (0.025, -1.959963984540054),
        (0.001, -3.090232306167813),
        (0.8413447460685429, 1.0),
    ] {
        let got = normal_quantile(p);
        assert!(
            (got - z).abs() <= 1e-14 * z.abs().max(1.0),
            "Φ⁻¹({p}) = {got}, want {z}"
        );
    }
}
