//! The pilots of an exact run: vanilla DEO at a first number of chains for a quarter of
//! the budget and, with `--chains auto`, larger ones while the last is too coarse; the
//! last pilot's Λ̂ chooses P and the window, and its grid starts the main run.

use nrpt_core::exact::{AnnealingPath, PairRecord, ScheduleOptions};
use nrpt_core::window::Scheme;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::buffers::Owned;
use super::rounds::{Rounds, initial_grid, options, rounds_for, run_rounds};
use super::{ExactSettings, PathMaker, check_memory, gaussian_corrected_barrier};
use nrpt_sampling::engine::OnProgress;

/// Chains of the first pilot run of `--chains auto`.
pub const PILOT_CHAINS: usize = 16;

/// A pilot of `--chains auto` whose pairs reject more than this on average
/// (Λ̂/(P − 1), pooled over ensembles) is followed by a larger one ([`pilot_too_coarse`]).
pub const PILOT_MAX_MEAN_REJECTION: f64 = 0.5;

/// The barrier per pair an enlarged pilot is given chains for ([`next_pilot_chains`]).
pub const PILOT_TARGET_SHARE: f64 = 0.4;

/// The most pilots of one run (the first included): each runs a quarter of the budget.
pub const MAX_PILOTS: usize = 4;

/// The most chains of an enlarged pilot (Λ up to about 100 at [`PILOT_TARGET_SHARE`]).
pub const MAX_PILOT_CHAINS: usize = 256;

/// Whether a pilot with mean pair rejection `mean_rejection` (Λ̂/(P − 1)) is too coarse
/// for its Λ̂ to choose P: `mean_rejection > PILOT_MAX_MEAN_REJECTION` (NaN counts as too
/// coarse).
///
/// The criterion is the rule's own: P − 1 ≈ 2Λ̂ puts every pair of an equal-barrier grid
/// at rejection 0.5, and Λ̂/(P − 1) > 0.5 is exactly 2Λ̂ > P − 1, a pilot that asks for
/// more chains than it ran. Its Λ̂ = Σ r̂ then rests on pairs outside the linear regime
/// (r ≈ the pair's share of Λ holds for small r; each r̂ ≤ 1, so Σ r̂ saturates as
/// rejections approach 1: 13.1 for Λ = 19.0 at D = 400 with 16 chains), and P would be
/// extrapolated beyond any grid measured. At or below 0.5 the final P is at most about the
/// pilot's, and Σ r̂ is at most 7.6 % low if the swap log-ratios are Gaussian (the
/// per-pair barrier at r = 0.5 is √(2/π) Φ⁻¹(0.75) = 0.538; see [`mod@super::diagnostics`]).
pub fn pilot_too_coarse(mean_rejection: f64) -> bool {
    mean_rejection.is_nan() || mean_rejection > PILOT_MAX_MEAN_REJECTION
}

/// Chains of the pilot after one with `chains` chains, barrier Λ̂ `lambda` and Gaussian-swap
/// correction `corrected`: enough that each pair carries [`PILOT_TARGET_SHARE`] of the
/// barrier, P = 1 + ⌈Λ̃/0.4⌉, with Λ̃ the correction (Σ r̂ saturates, the correction does
/// not) or, when it is undefined (a pair rejected every swap), 2Λ̂; at least `chains` + 1,
/// at most `cap`. A share of 0.4 leaves room below [`PILOT_MAX_MEAN_REJECTION`] (Gaussian
/// swaps: r = erf(0.4 √π/2) = 0.38) for a Λ̃ up to 25 % low, so one enlargement usually
/// suffices.
pub fn next_pilot_chains(chains: usize, lambda: f64, corrected: Option<f64>, cap: usize) -> usize {
    let target = corrected.unwrap_or(2.0 * lambda);
    let want = if target.is_finite() && target > 0.0 {
        let n = (target / PILOT_TARGET_SHARE).ceil();
        if n < cap as f64 { 1 + n as usize } else { cap }
    } else {
        2 * chains
    };
    want.max(chains + 1).min(cap)
}

/// What a pilot found (pooled over ensembles).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PilotSummary {
    /// Its chains.
    pub chains: usize,
    /// Its iterations per ensemble.
    pub iterations: u64,
    /// Λ̂ = Σ r̂ of its last round, mean over ensembles.
    pub lambda: f64,
    /// The Gaussian-swap correction of its last round ([`gaussian_corrected_barrier`]),
    /// mean over ensembles; `None` when a pair rejected every swap.
    pub barrier_gaussian_corrected: Option<f64>,
    /// Mean pair rejection of its last round, Λ̂/(P − 1): above
    /// [`PILOT_MAX_MEAN_REJECTION`] another pilot follows (while pilots remain).
    pub mean_rejection: f64,
    /// Wall-clock seconds it took (all ensembles).
    pub seconds: f64,
}

/// One pilot: its summary and, per ensemble, its rounds (whose knots start the next run).
pub(super) struct Pilot {
    pub(super) summary: PilotSummary,
    pub(super) runs: Vec<Rounds>,
}

/// Runs a pilot of `chains` chains and `budget` iterations per ensemble (vanilla DEO),
/// each ensemble starting from the grid of `previous`'s (uniform without one).
pub(super) fn run_pilot<P: AnnealingPath>(
    s: &ExactSettings,
    make: &PathMaker<'_, P>,
    chains: usize,
    budget: u64,
    previous: Option<&Pilot>,
    progress: OnProgress<'_>,
) -> crate::error::Result<Pilot> {
    check_memory(s, chains, 0)?;
    let started = std::time::Instant::now();
    let (first, rounds) = rounds_for(budget);
    let runs: crate::error::Result<Vec<(Rounds, Option<f64>)>> = (0..s.ensembles)
        .into_par_iter()
        .map(|e| {
            let mut owned = Owned::new(chains, s.dim, &s.explorer)?;
            let initial_grid = initial_grid(&mut owned, previous.and_then(|p| p.runs.get(e)))?;
            let schedule = ScheduleOptions {
                first_round: first,
                adapt_grid: true,
                initial_grid,
            };
            let o = options(s, e, Scheme::VANILLA_DEO, schedule);
            let done = run_rounds(o, make()?, &mut owned, rounds, 0, progress)?;
            let rejections: Vec<f64> = owned.pairs.iter().map(PairRecord::rejection_rate).collect();
            Ok((done, gaussian_corrected_barrier(&rejections)))
        })
        .collect();
    let (runs, corrected): (Vec<Rounds>, Vec<Option<f64>>) = runs?.into_iter().unzip();
    let n = runs.len().max(1) as f64;
    let lambda = runs
        .iter()
        .map(|x| x.reports.last().map_or(f64::NAN, |r| r.global_barrier))
        .sum::<f64>()
        / n;
    let corrected: Option<Vec<f64>> = corrected.into_iter().collect();
    Ok(Pilot {
        summary: PilotSummary {
            chains,
            iterations: first * ((1u64 << rounds) - 1),
            lambda,
            barrier_gaussian_corrected: corrected
                .filter(|c| !c.is_empty())
                .map(|c| c.iter().sum::<f64>() / c.len() as f64),
            mean_rejection: lambda / chains.saturating_sub(1).max(1) as f64,
            seconds: started.elapsed().as_secs_f64(),
        },
        runs,
    })
}

/// The pilots of `--chains auto` from the `first`: while the last is too coarse
/// ([`pilot_too_coarse`]), fewer than [`MAX_PILOTS`] have run and it has fewer than `cap`
/// chains, `run` runs one with [`next_pilot_chains`] chains (given the last pilot).
pub(super) fn enlarge_pilots<T>(
    first: T,
    summary: impl Fn(&T) -> &PilotSummary,
    cap: usize,
    mut run: impl FnMut(usize, &T) -> crate::error::Result<T>,
) -> crate::error::Result<Vec<T>> {
    let mut pilots = vec![first];
    while pilots.len() < MAX_PILOTS {
        let Some(last) = pilots.last() else { break };
        let p = summary(last);
        if !pilot_too_coarse(p.mean_rejection) || p.chains >= cap {
            break;
        }
        let next = next_pilot_chains(p.chains, p.lambda, p.barrier_gaussian_corrected, cap);
        let pilot = run(next, last)?;
        pilots.push(pilot);
    }
    Ok(pilots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::AUTO_RULE;
    use nrpt_core::exact::recommended_chains;

    /// A pilot of `chains` chains on an equal-barrier grid of a path with barrier `lambda`
    /// whose swap log-ratios are Gaussian: each pair rejects r = erf(√π b/2), b = Λ/(P − 1).
    fn model_pilot(chains: usize, lambda: f64) -> PilotSummary {
        let n = (chains - 1) as f64;
        let r = statrs::function::erf::erf(std::f64::consts::PI.sqrt() * lambda / n / 2.0);
        PilotSummary {
            chains,
            iterations: 100,
            lambda: n * r,
            barrier_gaussian_corrected: gaussian_corrected_barrier(&vec![r; chains - 1]),
            mean_rejection: r,
            seconds: 0.0,
        }
    }

    fn model_pilots(lambda: f64, cap: usize) -> Vec<PilotSummary> {
        enlarge_pilots(
            model_pilot(PILOT_CHAINS, lambda),
            |p| p,
            cap,
            |chains, _| Ok(model_pilot(chains, lambda)),
        )
        .unwrap()
    }

    #[test]
    fn the_pilot_enlarges_only_while_its_pairs_reject_more_than_half() {
        assert!(!pilot_too_coarse(0.5) && !pilot_too_coarse(0.2));
        assert!(pilot_too_coarse(0.500_001) && pilot_too_coarse(f64::NAN));
        // Λ = 3.6 (D = 16): 16 chains reject 0.24 each; one pilot.
        let p = model_pilots(3.6, MAX_PILOT_CHAINS);
        assert_eq!(p.len(), 1, "{p:?}");
        // Λ = 9.16 (D = 100): 16 chains reject 0.56; then 1 + ⌈9.16/0.4⌉ = 24 chains at 0.38.
        let p = model_pilots(9.163, MAX_PILOT_CHAINS);
        assert_eq!(p.iter().map(|x| x.chains).collect::<Vec<_>>(), [16, 24]);
        assert!(
            p[0].mean_rejection > 0.5 && p[1].mean_rejection < 0.4,
            "{p:?}"
        );
        // Λ = 18.4 (D = 400): Σ r̂ saturates at 16 chains, the correction does not.
        let p = model_pilots(18.36, MAX_PILOT_CHAINS);
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(
            p[1].chains,
            1 + (18.36f64 / PILOT_TARGET_SHARE).ceil() as usize
        );
        assert!(recommended_chains(p[1].lambda, AUTO_RULE).unwrap() >= 30);
    }

    #[test]
    fn pilots_are_bounded_in_number_and_chains() {
        // A barrier beyond what the cap can resolve: pilots stop at the cap.
        let p = model_pilots(500.0, MAX_PILOT_CHAINS);
        assert!(p.len() <= MAX_PILOTS, "{p:?}");
        assert_eq!(p.last().unwrap().chains, MAX_PILOT_CHAINS);
        assert!(p.iter().all(|x| x.chains <= MAX_PILOT_CHAINS));
        // A lower cap (memory), and no pilot larger than it.
        let p = model_pilots(500.0, 40);
        assert_eq!(p.iter().map(|x| x.chains).collect::<Vec<_>>(), [16, 40]);
        // A pilot that never gets fine enough: at most MAX_PILOTS, each larger.
        let mut calls = 0;
        let p = enlarge_pilots(
            model_pilot(PILOT_CHAINS, 9.0),
            |p| p,
            1 << 20,
            |chains, _| {
                calls += 1;
                Ok(PilotSummary {
                    mean_rejection: 0.9,
                    ..model_pilot(chains, 9.0)
                })
            },
        )
        .unwrap();
        assert_eq!((p.len(), calls), (MAX_PILOTS, MAX_PILOTS - 1));
        assert!(p.windows(2).all(|w| w[1].chains > w[0].chains), "{p:?}");
        // Without a correction (a pair always rejected), twice Λ̂ stands in for it.
        assert_eq!(next_pilot_chains(16, 14.0, None, 256), 1 + 70);
        assert_eq!(next_pilot_chains(16, f64::NAN, None, 256), 32);
        assert_eq!(next_pilot_chains(16, 1e300, Some(1e300), 256), 256);
        assert_eq!(next_pilot_chains(16, 0.1, Some(0.1), 256), 17);
    }
}
