//! The round trips of the tempering rows: over the whole run and in the steady state
//! after the burn-in, Lemma 1's prediction at each run's own pair rates, DEO⋆ over DEO
//! with its interval, and the curves of the figures.

use nrpt_core::window::Scheme;
use serde::Serialize;

use super::records::SeedTempering;
use super::row::{Curves, Row};
use crate::deep::Rates;
use crate::deep::fidelity;
use nrpt_sampling::engine::{EnsembleTrace, Trace};
use nrpt_sampling::stats::{
    RatioInterval, StatsError, fieller_ratio_interval, mean_sd, paired_t_interval,
};
use nrpt_sampling::targets::classifier::Classifier;

/// DEO⋆ against DEO: round trips per 100 epochs, ratio of the means over seeds.
#[derive(Clone, Debug, Serialize)]
pub struct RoundTripRatio {
    /// Over the whole sampling run, warm-up of the ladder included.
    pub whole_run: f64,
    /// In the steady state (after the burn-in).
    pub steady: f64,
    /// Its 95 % Fieller interval over the seeds, paired seed by seed; `null` when DEO's
    /// mean is not clearly above 0 (then the ratio has no bounded interval).
    pub steady_ci: Option<[f64; 2]>,
    /// Lemma 1's ratio at each run's own steady-state pair rates and window.
    pub lemma1: f64,
    /// DEO⋆'s steady-state round trips as a share of its Lemma 1 prediction.
    pub deo_star_share_of_lemma1: f64,
    /// DEO's.
    pub deo_share_of_lemma1: f64,
}

/// DEO⋆ over DEO from the main rows' round trips per seed (the mSGD target level).
pub(super) fn round_trip_ratio(main: &[Row]) -> Option<RoundTripRatio> {
    let find = |prefix: &str| {
        main.iter()
            .find(|r| r.name.starts_with(prefix))
            .and_then(|r| r.trips_per_seed.clone())
    };
    let [star_whole, star_steady, star_lemma] = find("DEO⋆-mSGD")?;
    let [deo_whole, deo_steady, deo_lemma] = find("DEO-mSGD")?;
    let m = |v: &[f64]| mean_sd(v).0;
    Some(RoundTripRatio {
        whole_run: m(&star_whole) / m(&deo_whole),
        steady: m(&star_steady) / m(&deo_steady),
        steady_ci: match fieller_ratio_interval(&star_steady, &deo_steady, fidelity::LEVEL) {
            Ok(RatioInterval::Bounded(i)) => Some([i.lower, i.upper]),
            _ => None,
        },
        lemma1: m(&star_lemma) / m(&deo_lemma),
        deo_star_share_of_lemma1: m(&star_steady) / m(&star_lemma),
        deo_share_of_lemma1: m(&deo_steady) / m(&deo_lemma),
    })
}

/// Round trips, swap rates and curves of a tempering run of `iterations` iterations
/// from its seeds' records, into its row.
#[allow(clippy::too_many_arguments)]
pub(super) fn tempering_details(
    model: &Classifier,
    iterations: u64,
    warmup: u64,
    scheme: Scheme,
    rates: Rates,
    name: &str,
    per_seed: &[SeedTempering],
    r: &mut Row,
) -> Curves {
    let e = per_seed.len();
    let p = per_seed.first().map_or(0, |t| t.accuracy_by_level.len());
    let per_epoch = model.iterations_per_epoch();
    let epochs = iterations as f64 / per_epoch;
    let trips: Vec<f64> = per_seed
        .iter()
        .map(|t| t.round_trips as f64 * 100.0 / epochs)
        .collect();
    let (rt, rt_sd) = mean_sd(&trips);
    let pair_rates: Vec<f64> = (0..p.saturating_sub(1))
        .map(|l| {
            per_seed
                .iter()
                .map(|t| t.indicators[l] as f64 / iterations as f64)
                .sum::<f64>()
                / e as f64
        })
        .collect();
    let steady: Vec<Steady> = per_seed
        .iter()
        .map(|t| steady_state(&t.trace, warmup, scheme.window_code(), per_epoch))
        .collect();
    let steady_trips: Vec<f64> = steady
        .iter()
        .map(|s| s.round_trips_per_100_epochs)
        .collect();
    r.steady_round_trips_per_100_epochs = Some(mean_sd(&steady_trips).0);
    r.steady_round_trips_per_100_epochs_ci = Some(
        mean_interval(&steady_trips, fidelity::LEVEL).map_or([f64::NAN; 2], |i| [i.lower, i.upper]),
    );
    r.lemma1_round_trips_per_100_epochs =
        Some(steady.iter().map(|s| s.lemma1_per_100_epochs).sum::<f64>() / e.max(1) as f64);
    r.steady_pair_indicator_rates = Some(
        (0..p.saturating_sub(1))
            .map(|l| {
                steady
                    .iter()
                    .map(|s| s.pair_rates.get(l).copied().unwrap_or(f64::NAN))
                    .sum::<f64>()
                    / e.max(1) as f64
            })
            .collect(),
    );
    r.trips_per_seed = Some([
        trips.clone(),
        steady_trips,
        steady.iter().map(|s| s.lemma1_per_100_epochs).collect(),
    ]);
    r.window = Some(scheme.window_code());
    r.swap_rate = Some(rates.swap_rate);
    r.round_trips_per_100_epochs = Some(rt);
    r.round_trips_per_100_epochs_sd = Some(rt_sd);
    r.pair_indicator_rates = Some(pair_rates);
    let n = model.examples() as f64;
    let accuracy_by_level = (0..p)
        .map(|l| {
            let accs: Vec<f64> = per_seed.iter().map(|t| t.accuracy_by_level[l]).collect();
            mean_sd(&accs).0
        })
        .collect();
    let traces: Vec<EnsembleTrace> = per_seed.iter().map(|t| t.trace.clone()).collect();
    let t = Trace::merge(&traces);
    Curves {
        name: name.to_string(),
        epochs: t.iterations.iter().map(|&k| k as f64 / per_epoch).collect(),
        round_trips: t.round_trips.iter().map(|&r| r as f64 / e as f64).collect(),
        ladder: t
            .ladder
            .iter()
            .map(|l| l.iter().map(|&eta| eta * n).collect())
            .collect(),
        pair_indicator_rates: t.indicator_rate,
        accuracy_by_level,
    }
}

/// What a seed of a tempering run did after its burn-in.
#[derive(Clone, Debug, PartialEq)]
struct Steady {
    /// Round trips per 100 epochs from the first trace entry at or after the burn-in to
    /// the last (NaN when no two entries are after it).
    round_trips_per_100_epochs: f64,
    /// Per pair, the share of those iterations with indicator 1.
    pair_rates: Vec<f64>,
    /// Lemma 1's round trips per 100 epochs at those rates and the window.
    lemma1_per_100_epochs: f64,
}

/// The steady state of one seed's trace: round trips and pair rates between the first
/// entry at or after `warmup` and the last (each entry's rates cover the iterations
/// since the previous one), and Lemma 1 at those rates ([`crate::exact::lemma1_rate`]:
/// round trips per iteration 1/(2W(1 + Σ_l r_l^W/(1 − r_l^W))), r_l = 1 − rate_l).
fn steady_state(t: &EnsembleTrace, warmup: u64, window: u32, per_epoch: f64) -> Steady {
    let pairs = t.rates.first().map_or(0, Vec::len);
    let nan = Steady {
        round_trips_per_100_epochs: f64::NAN,
        pair_rates: vec![f64::NAN; pairs],
        lemma1_per_100_epochs: f64::NAN,
    };
    let Some(from) = t.iterations.iter().position(|&k| k >= warmup) else {
        return nan;
    };
    let last = t.iterations.len() - 1;
    if from >= last {
        return nan;
    }
    let span = (t.iterations[last] - t.iterations[from]) as f64;
    let trips = t.trips[last]
        .round_trips
        .saturating_sub(t.trips[from].round_trips) as f64;
    // Entries after `from` cover (iterations[from], iterations[last]]; weight each by
    // the iterations it covers.
    let mut pair_rates = vec![0.0; pairs];
    for i in from + 1..=last {
        let w = (t.iterations[i] - t.iterations[i - 1]) as f64 / span;
        for (acc, &rate) in pair_rates.iter_mut().zip(&t.rates[i]) {
            *acc += w * rate;
        }
    }
    let rejections: Vec<f64> = pair_rates.iter().map(|r| 1.0 - r).collect();
    let per_100_epochs = 100.0 * per_epoch;
    Steady {
        round_trips_per_100_epochs: trips / span * per_100_epochs,
        lemma1_per_100_epochs: crate::exact::lemma1_rate(&rejections, window)
            .map_or(f64::NAN, |rate| rate * per_100_epochs),
        pair_rates,
    }
}

/// The `level` t interval of a mean over seeds (the paired interval of the values
/// against zero).
fn mean_interval(values: &[f64], level: f64) -> Result<nrpt_sampling::stats::Interval, StatsError> {
    paired_t_interval(values, &vec![0.0; values.len()], level)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deep::experiment::row::row_of;

    /// A trace of 4 entries every 100 iterations (per epoch 10): the steady state
    /// starts at the first entry at or after the burn-in (150 → entry at 200) and runs
    /// to the last (400): 6 round trips over 200 iterations = 20 epochs, so 30 per 100
    /// epochs; the pair rates are those of the last two entries (each 100 iterations);
    /// Lemma 1 at those rates and W = 1 is 1/(2(1 + Σ r/(1 − r))) per iteration.
    #[test]
    fn the_steady_state_starts_after_the_burn_in() {
        use nrpt_core::index::IndexStats;
        let trips = |n| IndexStats {
            round_trips: n,
            ..IndexStats::default()
        };
        let t = EnsembleTrace {
            iterations: vec![100, 200, 300, 400],
            ladder: vec![vec![1.0, 2.0, 3.0]; 4],
            buffer: vec![0.0; 4],
            trips: vec![trips(1), trips(4), trips(7), trips(10)],
            rates: vec![
                vec![0.9, 0.9],
                vec![0.8, 0.8],
                vec![0.5, 0.7],
                vec![0.7, 0.5],
            ],
        };
        let s = steady_state(&t, 150, 1, 10.0);
        assert!((s.round_trips_per_100_epochs - 30.0).abs() < 1e-12, "{s:?}");
        assert_eq!(s.pair_rates, vec![0.6, 0.6]);
        let r: f64 = 0.4;
        let per_iteration = 1.0 / (2.0 * (1.0 + 2.0 * r / (1.0 - r)));
        assert!((s.lemma1_per_100_epochs - per_iteration * 1000.0).abs() < 1e-9);
        // A burn-in past the last entry but one: no steady state to measure.
        assert!(
            steady_state(&t, 350, 1, 10.0)
                .round_trips_per_100_epochs
                .is_nan()
        );
    }

    /// DEO⋆ over DEO: ratios of the means over seeds, the Fieller interval over the
    /// paired seeds; none without both rows.
    #[test]
    fn the_round_trip_ratio_pairs_deo_star_with_deo() {
        let mut star = row_of("DEO⋆-mSGD×P4", 1.0, 1.0, 3);
        star.trips_per_seed = Some([
            vec![30.0, 32.0, 34.0],
            vec![20.0, 22.0, 24.0],
            vec![25.0, 25.0, 25.0],
        ]);
        let mut deo = row_of("DEO-mSGD×P4", 1.0, 1.0, 3);
        deo.trips_per_seed = Some([
            vec![10.0, 11.0, 12.0],
            vec![10.0, 10.5, 12.5],
            vec![12.5, 12.5, 12.5],
        ]);
        let q = round_trip_ratio(&[star.clone(), deo]).unwrap();
        assert!((q.whole_run - 32.0 / 11.0).abs() < 1e-12);
        assert!((q.steady - 22.0 / 11.0).abs() < 1e-12);
        assert_eq!(q.lemma1, 2.0);
        assert!((q.deo_star_share_of_lemma1 - 22.0 / 25.0).abs() < 1e-12);
        let ci = q.steady_ci.unwrap();
        assert!(ci[0] < q.steady && q.steady < ci[1], "{ci:?}");
        assert!(round_trip_ratio(&[star]).is_none());
    }
}
