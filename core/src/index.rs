//! The index process: which replica sits at which level, and the round trips, restarts
//! and per-pair swap counts that measure how well replicas travel along the ladder.
//!
//! Replicas never move in memory; a swap exchanges two entries of the permutation
//! `replica_at[level]` and its inverse `level_of[replica]`, O(1) whatever the dimension.
//!
//! A *round trip* (Syed, Bouchard-Côté, Deligiannidis and Doucet, "Non-reversible
//! parallel tempering: a scalable highly parallel MCMC scheme", JRSS-B 2021) is
//! completed when a replica that was at level 0 (the target) reaches level P − 1 (the
//! hottest explorer) and then returns to level 0. A *restart* is any arrival at level 0
//! of a replica whose last visited end was P − 1, so every round trip ends with a
//! restart but a replica that started high can restart without a round trip.
//!
//! The authors' code for Deng et al. (AAAI 2023) counts differently: a trip when a
//! replica has seen both ends and is back at the level it started from. Both counts are
//! kept; the first is the standard one.

use bytemuck::{Pod, Zeroable};

/// Per-replica travel state, one byte: bits 0–1 the standard round-trip phase, bit 2
/// "seen level 0" and bit 3 "seen level P − 1" for the authors' counting.
pub type TripState = u8;

const PHASE_MASK: u8 = 0b11;
/// No end visited yet.
const PHASE_NONE: u8 = 0;
/// Last end visited was level 0.
const PHASE_BOTTOM: u8 = 1;
/// Last end visited was P − 1, and level 0 was visited before it: a trip is under way.
const PHASE_TOP_FROM_BOTTOM: u8 = 2;
/// Last end visited was P − 1, with no visit to level 0 before it.
const PHASE_TOP_FRESH: u8 = 3;
const SEEN_BOTTOM: u8 = 1 << 2;
const SEEN_TOP: u8 = 1 << 3;

/// What one arrival of a replica at a new level completed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TripEvents {
    /// A standard round trip 0 → P − 1 → 0 ended.
    pub round_trip: bool,
    /// The replica arrived at level 0 with P − 1 as its last visited end.
    pub restart: bool,
    /// A round trip in the authors' counting ended.
    pub authors_round_trip: bool,
}

/// Running totals of the index process of one ensemble.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct IndexStats {
    /// Standard round trips completed (all replicas).
    pub round_trips: u64,
    /// Restarts: arrivals at level 0 from level P − 1.
    pub restarts: u64,
    /// Round trips in the authors' counting.
    pub authors_round_trips: u64,
    /// Energy evaluations that gave a non-finite value (they never win a swap).
    pub nonfinite_energies: u64,
}

/// Counts of one adjacent pair (l, l + 1).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct PairStats {
    /// Iterations at which the swap indicator was 1 (whatever the eligibility).
    pub indicators: u64,
    /// Iterations at which the pair was eligible with an open gate.
    pub attempts: u64,
    /// Swaps executed.
    pub swaps: u64,
    /// Iterations at which one of the two energies was not finite.
    pub nonfinite: u64,
}

impl PairStats {
    /// Share of iterations with indicator 1, given the number of iterations observed.
    pub fn indicator_rate(&self, iterations: u64) -> f64 {
        ratio(self.indicators, iterations)
    }

    /// Executed swaps per iteration, given the number of iterations observed.
    pub fn swap_rate(&self, iterations: u64) -> f64 {
        ratio(self.swaps, iterations)
    }
}

fn ratio(count: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        count as f64 / total as f64
    }
}

/// Sets the identity permutation (replica r at level r) and the matching initial trip
/// states; the slices must all have length P.
pub fn init_identity(replica_at: &mut [u32], level_of: &mut [u32], trips: &mut [TripState]) {
    let top = replica_at.len().saturating_sub(1);
    for (r, ((at, lv), t)) in replica_at
        .iter_mut()
        .zip(level_of.iter_mut())
        .zip(trips.iter_mut())
        .enumerate()
    {
        *at = r as u32;
        *lv = r as u32;
        *t = initial_trip_state(r, top);
    }
}

/// Trip state of a replica that starts at `level` on a ladder whose top is `top = P − 1`.
pub fn initial_trip_state(level: usize, top: usize) -> TripState {
    if level == 0 {
        PHASE_BOTTOM | SEEN_BOTTOM
    } else if level == top {
        PHASE_TOP_FRESH | SEEN_TOP
    } else {
        PHASE_NONE
    }
}

/// Exchanges the replicas at levels `pair` and `pair + 1`.
#[inline]
pub fn swap_levels(pair: usize, replica_at: &mut [u32], level_of: &mut [u32]) {
    let a = replica_at[pair];
    let b = replica_at[pair + 1];
    replica_at[pair] = b;
    replica_at[pair + 1] = a;
    level_of[b as usize] = pair as u32;
    level_of[a as usize] = (pair + 1) as u32;
}

/// Updates the trip state of a replica that has just arrived at `level`.
///
/// `start` is the level the replica started from (its index under the identity start)
/// and `top = P − 1`.
#[inline]
pub fn observe_arrival(
    state: &mut TripState,
    level: usize,
    start: usize,
    top: usize,
) -> TripEvents {
    let mut events = TripEvents::default();
    let mut phase = *state & PHASE_MASK;
    let mut seen = *state & !PHASE_MASK;
    if level == 0 {
        events.restart = phase == PHASE_TOP_FROM_BOTTOM || phase == PHASE_TOP_FRESH;
        events.round_trip = phase == PHASE_TOP_FROM_BOTTOM;
        phase = PHASE_BOTTOM;
        seen |= SEEN_BOTTOM;
    } else if level == top {
        phase = match phase {
            PHASE_BOTTOM => PHASE_TOP_FROM_BOTTOM,
            PHASE_NONE => PHASE_TOP_FRESH,
            kept => kept,
        };
        seen |= SEEN_TOP;
    }
    if level == start && seen == SEEN_BOTTOM | SEEN_TOP {
        events.authors_round_trip = true;
        // Start a fresh trip from here: the start level may itself be an end.
        seen = initial_trip_state(level, top) & !PHASE_MASK;
    }
    *state = phase | seen;
    events
}

impl IndexStats {
    /// Adds the events of one arrival.
    #[inline]
    pub fn record(&mut self, events: TripEvents) {
        self.round_trips += u64::from(events.round_trip);
        self.restarts += u64::from(events.restart);
        self.authors_round_trips += u64::from(events.authors_round_trip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds a hand-built sequence of levels for one replica and totals the events.
    fn walk(levels: &[usize], top: usize) -> IndexStats {
        let start = levels[0];
        let mut state = initial_trip_state(start, top);
        let mut stats = IndexStats::default();
        for pair in levels.windows(2) {
            if pair[1] != pair[0] {
                stats.record(observe_arrival(&mut state, pair[1], start, top));
            }
        }
        stats
    }

    #[test]
    fn round_trip_from_the_bottom() {
        let s = walk(&[0, 1, 2, 3, 2, 1, 0], 3);
        assert_eq!(
            (s.round_trips, s.restarts, s.authors_round_trips),
            (1, 1, 1)
        );
    }

    #[test]
    fn going_up_without_reaching_the_top_is_no_trip() {
        let s = walk(&[0, 1, 2, 1, 0, 1, 2, 1, 0], 3);
        assert_eq!(
            (s.round_trips, s.restarts, s.authors_round_trips),
            (0, 0, 0)
        );
    }

    #[test]
    fn starting_at_the_top_gives_a_restart_before_the_first_round_trip() {
        let s = walk(&[3, 2, 1, 0, 1, 2, 3, 2, 1, 0], 3);
        assert_eq!((s.round_trips, s.restarts), (1, 2));
        // Authors: back at level 3 after seeing 0 → one trip; not back at 3 again.
        assert_eq!(s.authors_round_trips, 1);
    }

    #[test]
    fn middle_start_full() {
        let s = walk(&[2, 1, 0, 1, 2, 3, 4, 3, 2, 1, 0, 1, 2], 4);
        // Standard: 0 → 4 → 0 completed once. Authors: back at 2 after both ends, once
        // (at index 8), then 0 is seen again but not 4 before returning to 2.
        assert_eq!(
            (s.round_trips, s.restarts, s.authors_round_trips),
            (1, 1, 1)
        );
    }

    #[test]
    fn two_round_trips_in_a_row() {
        let s = walk(&[0, 1, 2, 1, 2, 1, 0, 1, 2, 1, 0], 2);
        assert_eq!(
            (s.round_trips, s.restarts, s.authors_round_trips),
            (2, 2, 2)
        );
    }

    #[test]
    fn swap_levels_keeps_the_permutation_inverse() {
        let mut at = [0u32; 5];
        let mut of = [0u32; 5];
        let mut trips = [0u8; 5];
        init_identity(&mut at, &mut of, &mut trips);
        for pair in [0, 1, 3, 2, 0, 3, 1] {
            swap_levels(pair, &mut at, &mut of);
            for level in 0..5 {
                assert_eq!(of[at[level] as usize] as usize, level);
            }
        }
        assert_eq!(trips[0], PHASE_BOTTOM | SEEN_BOTTOM);
        assert_eq!(trips[4], PHASE_TOP_FRESH | SEEN_TOP);
    }
}
