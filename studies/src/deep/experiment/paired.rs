//! Every row against DEO⋆ at the same rates: the paired differences of its NLL and total
//! variation over the test set's bootstrap resamples and over the seeds, and which of
//! the two sources of error limits the comparisons more.

use super::row::Row;
use crate::deep::fidelity;
use crate::deep::metrics::Scores;
use nrpt_sampling::stats::{Bootstrap, paired_t_interval};

/// Fills every row's paired differences against the DEO⋆ row of the same rates (the
/// main rows' DEO⋆ for the swap sweep).
pub(super) fn pair_with_deo_star(
    bootstrap: &Bootstrap,
    main: &mut [Row],
    sweep: &mut [Row],
    swaps: &mut [Row],
) {
    let stars: Vec<Row> = main
        .iter()
        .chain(sweep.iter())
        .filter(|r| r.name.starts_with("DEO⋆-mSGD"))
        .cloned()
        .collect();
    for r in main
        .iter_mut()
        .chain(sweep.iter_mut())
        .chain(swaps.iter_mut())
    {
        let Some(star) = stars.iter().find(|s| s.eta_factor == r.eta_factor) else {
            continue;
        };
        r.nll_minus_deo_star_ci = Some(fidelity::paired_difference(
            &r.example_nll,
            &star.example_nll,
            bootstrap,
        ));
        r.total_variation_minus_deo_star_ci =
            match (&r.example_total_variation, &star.example_total_variation) {
                (Some(a), Some(b)) => Some(fidelity::paired_difference(a, b, bootstrap)),
                _ => None,
            };
        let by_seed = |row: &Row, f: fn(&Scores) -> Option<f64>| -> Option<Vec<f64>> {
            row.per_seed.iter().map(f).collect()
        };
        let seed_ci = |f: fn(&Scores) -> Option<f64>| match (by_seed(r, f), by_seed(star, f)) {
            (Some(a), Some(b)) => Some(
                paired_t_interval(&a, &b, fidelity::LEVEL)
                    .map_or([f64::NAN; 2], |i| [i.lower, i.upper]),
            ),
            _ => None,
        };
        if r.exact_sampling {
            // Realisations of exact sampling are not seeds: nothing to pair.
            continue;
        }
        let (nll, tv) = (seed_ci(|s| Some(s.nll)), seed_ci(|s| s.total_variation));
        r.nll_minus_deo_star_seed_ci = nll;
        r.total_variation_minus_deo_star_seed_ci = tv;
    }
}

/// Which source of error the differences to DEO⋆ are most uncertain from: for every
/// paired difference with both intervals (NLL and total variation, every row but a
/// DEO⋆ row against itself), whether the seeds' t interval is wider than the test-set bootstrap's.
pub(super) fn interval_sources(rows: &[&Row]) -> String {
    let mut pairs = Vec::new();
    for r in rows {
        pairs.push((r.nll_minus_deo_star_seed_ci, r.nll_minus_deo_star_ci));
        pairs.push((
            r.total_variation_minus_deo_star_seed_ci,
            r.total_variation_minus_deo_star_ci,
        ));
    }
    let both: Vec<(f64, f64)> = pairs
        .into_iter()
        .filter_map(|(seed, test)| {
            let (seed, test) = (seed?, test?);
            let (ws, wt) = (seed[1] - seed[0], test[1] - test[0]);
            // A DEO⋆ row against itself has two points: no comparison.
            (ws.is_finite() && wt.is_finite() && (ws > 0.0 || wt > 0.0)).then_some((ws, wt))
        })
        .collect();
    if both.is_empty() {
        return "no difference to DEO⋆ has both intervals (one seed, or no DEO⋆ row)".to_string();
    }
    let seeds_wider = both.iter().filter(|(ws, wt)| ws > wt).count();
    let verdict = if 2 * seeds_wider > both.len() {
        "the seeds dominate: a second test set would move these differences less than a second set of seeds"
    } else {
        "the test set dominates: a second set of seeds would move these differences less than a second test set"
    };
    format!(
        "of {} differences to DEO⋆ (NLL and total variation, every row), the seeds' t interval is wider than the test-set bootstrap's in {seeds_wider}: {verdict}; a difference is settled where both intervals exclude 0",
        both.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deep::experiment::row::row_of;

    /// Every row is compared with the DEO⋆ row of its own rates (the main one for the
    /// swap sweep), over the same resampled examples; a row at rates without a DEO⋆ row
    /// gets no comparison.
    #[test]
    fn rows_are_paired_with_the_deo_star_row_of_their_rates() {
        let n = 20;
        let bootstrap = Bootstrap::new(n, 200, 1).unwrap();
        let mut main = vec![
            row_of("DEO⋆-mSGD×P4", 1.0, 1.0, n),
            row_of("mSGD×P4", 1.0, 1.5, n),
        ];
        let mut sweep = vec![
            row_of("DEO⋆-mSGD×P4, η×2", 2.0, 3.0, n),
            row_of("mSGD×P4, η×2", 2.0, 2.0, n),
        ];
        let mut swaps = vec![
            row_of("DEO⋆-mSGD×P4, S = 0.3", 1.0, 1.25, n),
            row_of("mSGD×P4, η×0.5", 0.5, 2.0, n),
        ];
        pair_with_deo_star(&bootstrap, &mut main, &mut sweep, &mut swaps);
        let close = |r: &Row, d: f64| {
            let ci = r
                .nll_minus_deo_star_ci
                .unwrap_or_else(|| panic!("{}", r.name));
            assert!(
                (ci[0] - d).abs() < 1e-12 && (ci[1] - d).abs() < 1e-12,
                "{}: {ci:?} vs {d}",
                r.name
            );
        };
        close(&main[0], 0.0);
        close(&main[1], 0.5);
        close(&sweep[0], 0.0);
        close(&sweep[1], -1.0);
        close(&swaps[0], 0.25);
        assert_eq!(swaps[1].nll_minus_deo_star_ci, None);
        assert!(
            main.iter()
                .all(|r| r.total_variation_minus_deo_star_ci.is_none())
        );
    }

    /// The seeds' interval of a difference is the t interval of the per-seed
    /// differences, seed with seed; which source dominates follows from the widths.
    #[test]
    fn seed_intervals_pair_the_same_seeds() {
        let n = 20;
        let bootstrap = Bootstrap::new(n, 200, 1).unwrap();
        let seeds = |nll: &[f64]| -> Vec<Scores> {
            nll.iter()
                .map(|&v| Scores {
                    nll: v,
                    ..Scores::default()
                })
                .collect()
        };
        let mut star = row_of("DEO⋆-mSGD×P4", 1.0, 1.0, n);
        star.per_seed = seeds(&[1.0, 1.2, 0.9, 1.1]);
        let mut other = row_of("DEO-mSGD×P4", 1.0, 1.5, n);
        other.per_seed = seeds(&[1.5, 1.6, 1.5, 1.4]);
        let mut main = vec![star, other];
        pair_with_deo_star(&bootstrap, &mut main, &mut [], &mut []);
        let want = paired_t_interval(&[1.5, 1.6, 1.5, 1.4], &[1.0, 1.2, 0.9, 1.1], 0.95).unwrap();
        assert_eq!(
            main[1].nll_minus_deo_star_seed_ci,
            Some([want.lower, want.upper])
        );
        assert_eq!(main[0].nll_minus_deo_star_seed_ci, Some([0.0, 0.0]));
        // No reference: no total variation, so no interval of its difference.
        assert_eq!(main[1].total_variation_minus_deo_star_seed_ci, None);
        // Every example has the same NLL, so the test-set bootstrap's interval is a point
        // and the seeds' (wider) dominates.
        let text = interval_sources(&main.iter().collect::<Vec<_>>());
        assert!(text.starts_with("of 1 differences"), "{text}");
        assert!(
            text.contains("wider than the test-set bootstrap's in 1"),
            "{text}"
        );
        assert!(text.contains("the seeds dominate"), "{text}");
        // One seed: no seed interval (NaN), and the text says so when nothing has both.
        let mut one = vec![
            row_of("DEO⋆-mSGD×P4", 1.0, 1.0, n),
            row_of("SWAG", 1.0, 2.0, n),
        ];
        one[0].per_seed = seeds(&[1.0]);
        one[1].per_seed = seeds(&[2.0]);
        pair_with_deo_star(&bootstrap, &mut one, &mut [], &mut []);
        assert!(one[1].nll_minus_deo_star_seed_ci.unwrap()[0].is_nan());
        assert!(interval_sources(&one.iter().collect::<Vec<_>>()).starts_with("no difference"));
    }
}
