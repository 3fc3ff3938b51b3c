//! What a saved controller must satisfy beyond what nrpt-core checks when it resumes
//! one (lengths, a permutation and its inverse, finite positive rates): the bounds and
//! relations of the counters that every reachable state keeps, shared by
//! `nrpt.Controller` and `nrpt.ExactController`. A state that breaks one was edited
//! (or damaged) and is refused with the rule it breaks.

use nrpt_core::index::{IndexStats, PHASE_MASK, SEEN_BOTTOM, SEEN_TOP, TripState, observe_arrival};
use nrpt_core::swap::flags;

/// The most iterations a loaded controller may have told: 2⁵³. Every count is then
/// exact as a float64 (the rates divide by it), the next tell cannot wrap the counter
/// (2⁶⁴ − 1 + 1 would be 0), and no counter can come near 2⁶⁴ (each grows by at most
/// P ≤ 2¹⁶ per tell, 2⁶⁹ in all only after 2⁵³ tells: at a million tells a second,
/// 285 years).
pub const MAX_ITERATION: u64 = 1 << 53;

/// Checks an iteration count against [`MAX_ITERATION`].
pub fn check_iteration(iteration: u64) -> Result<(), String> {
    if iteration > MAX_ITERATION {
        return Err(format!(
            "iteration {iteration} is past the most a controller can have told (2^53 = \
             {MAX_ITERATION})"
        ));
    }
    Ok(())
}

/// The run's totals against the iterations told by P chains: a restart is an
/// arrival at level 0 (at most one per iteration), every round trip ends with one, and
/// at most P non-finite energies and P trips of the authors' counting come per
/// iteration.
pub fn check_stats(stats: &IndexStats, iteration: u64, chains: usize) -> Result<(), String> {
    let most = u128::from(iteration) * chains as u128;
    if stats.restarts > iteration {
        return Err(format!(
            "{} restarts in {iteration} iterations (at most one per iteration)",
            stats.restarts
        ));
    }
    if stats.round_trips > stats.restarts {
        return Err(format!(
            "{} round trips but {} restarts (every round trip ends with a restart)",
            stats.round_trips, stats.restarts
        ));
    }
    for (name, count) in [
        ("authors_round_trips", stats.authors_round_trips),
        ("nonfinite_energies", stats.nonfinite_energies),
    ] {
        if u128::from(count) > most {
            return Err(format!(
                "{name} = {count} in {iteration} iterations of {chains} chains (at most \
                 one per replica and iteration)"
            ));
        }
    }
    Ok(())
}

/// The flags of the last iteration's pairs ([`flags`]): only the four bits; a swap
/// only where it was attempted and its indicator was 1; an indicator only with finite
/// energies; attempts only on pairs of one parity (never two neighbours); none before
/// the first iteration.
pub fn check_flags(pair_flags: &[u8], iteration: u64) -> Result<(), String> {
    let known = flags::INDICATOR | flags::ATTEMPT | flags::SWAPPED | flags::NONFINITE;
    for (pair, &f) in pair_flags.iter().enumerate() {
        let bad = |why: &str| Err(format!("flags of pair {pair} = {f}: {why}"));
        if f & !known != 0 {
            return bad("bits beyond the four flags");
        }
        if iteration == 0 && f != 0 {
            return bad("set before the first iteration");
        }
        let swapped = f & flags::SWAPPED != 0;
        if swapped && f & (flags::ATTEMPT | flags::INDICATOR) != flags::ATTEMPT | flags::INDICATOR {
            return bad("a swap without an attempt and an indicator of 1");
        }
        if f & flags::NONFINITE != 0 && f & flags::INDICATOR != 0 {
            return bad("an indicator of 1 with a non-finite energy");
        }
        if pair > 0 && f & pair_flags[pair - 1] & flags::ATTEMPT != 0 {
            return bad("attempted together with its neighbour (pairs of one parity only)");
        }
    }
    Ok(())
}

/// The travel states of the chains ([`nrpt_core::index`]): only the four bits in
/// use; the replica at level 0 and the one at level P − 1 carry the phase an arrival
/// there leaves and have seen that end.
pub fn check_trips(trips: &[TripState], replica_at: &[u32]) -> Result<(), String> {
    let known = PHASE_MASK | SEEN_BOTTOM | SEEN_TOP;
    if let Some((r, t)) = trips.iter().enumerate().find(|(_, t)| **t & !known != 0) {
        return Err(format!(
            "trip state {t} of replica {r}: bits beyond the four in use"
        ));
    }
    let top = replica_at.len().saturating_sub(1);
    for (level, seen) in [(0, SEEN_BOTTOM), (top, SEEN_TOP)] {
        let r = replica_at.get(level).map_or(0, |&r| r as usize);
        let Some(&t) = trips.get(r) else { continue };
        // The phases an arrival at this end leaves, from any phase.
        let arrived = (0..=PHASE_MASK).any(|phase| {
            let mut s = phase;
            observe_arrival(&mut s, level, top);
            s & PHASE_MASK == t & PHASE_MASK
        });
        if !arrived || t & seen == 0 {
            return Err(format!(
                "trip state {t} of replica {r} at level {level}: not one a replica at that \
                 end can have"
            ));
        }
    }
    Ok(())
}
