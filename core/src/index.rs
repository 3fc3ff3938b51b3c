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
//! replica has seen both ends and is back at the level it started from, checked at one
//! point of each iteration's pass over the levels ([`authors_pass`] replays that pass
//! exactly). Both counts are kept; the first is the standard one.

/// Per-replica travel state, one byte: bits 0–1 the standard round-trip phase, bit 2
/// "seen level 0" and bit 3 "seen level P − 1" for the authors' counting.
pub type TripState = u8;

/// The bits of the standard round-trip phase.
pub const PHASE_MASK: u8 = 0b11;
/// No end visited yet.
const PHASE_NONE: u8 = 0;
/// Last end visited was level 0.
const PHASE_BOTTOM: u8 = 1;
/// Last end visited was P − 1, and level 0 was visited before it: a trip is under way.
const PHASE_TOP_FROM_BOTTOM: u8 = 2;
/// Last end visited was P − 1, with no visit to level 0 before it.
const PHASE_TOP_FRESH: u8 = 3;
/// The authors' counting: the replica has been at level 0.
pub const SEEN_BOTTOM: u8 = 1 << 2;
/// The authors' counting: the replica has been at level P − 1.
pub const SEEN_TOP: u8 = 1 << 3;
/// Both "seen an end" marks.
pub const SEEN_BOTH: u8 = SEEN_BOTTOM | SEEN_TOP;

/// What one arrival of a replica at a new level completed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TripEvents {
    /// A standard round trip 0 → P − 1 → 0 ended.
    pub round_trip: bool,
    /// The replica arrived at level 0 with P − 1 as its last visited end.
    pub restart: bool,
}

/// Running totals of the index process of one ensemble.
#[repr(C)]
#[cfg_attr(feature = "gpu", derive(bytemuck::Pod, bytemuck::Zeroable))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
#[cfg_attr(feature = "gpu", derive(bytemuck::Pod, bytemuck::Zeroable))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

/// Updates the standard round-trip phase of a replica that has just arrived at
/// `level` (`top = P − 1`).
#[inline]
pub fn observe_arrival(state: &mut TripState, level: usize, top: usize) -> TripEvents {
    let mut events = TripEvents::default();
    let phase = *state & PHASE_MASK;
    let seen = *state & !PHASE_MASK;
    let phase = if level == 0 {
        events.restart = phase == PHASE_TOP_FROM_BOTTOM || phase == PHASE_TOP_FRESH;
        events.round_trip = phase == PHASE_TOP_FROM_BOTTOM;
        PHASE_BOTTOM
    } else if level == top {
        match phase {
            PHASE_BOTTOM => PHASE_TOP_FROM_BOTTOM,
            PHASE_NONE => PHASE_TOP_FRESH,
            kept => kept,
        }
    } else {
        phase
    };
    *state = phase | seen;
    events
}

/// The authors' round-trip counting for one iteration, after its swaps: returns the
/// trips it counts and updates the "seen an end" bits of `trips` (by replica).
///
/// Their code walks the levels idx = 0 … P − 1 once per iteration; at each idx it
/// first tests (and maybe swaps) the pair (idx − 1, idx), then marks the replicas at
/// level 0 and at level P − 1 as having seen that end, then counts a trip for replica
/// idx if it has seen both ends and sits at level idx (where it started), clearing its
/// marks. This replays that walk from the permutation after the sweep (`replica_at`)
/// and the [`crate::swap::flags`] of each pair, which is exact because the pairs that
/// swap in one iteration are disjoint: at step idx, level idx holds the replica now at
/// idx + 1 if pair (idx, idx + 1) swapped (that swap comes later in the walk), and the
/// replica now at idx otherwise. A replica that reaches its start level from above is
/// therefore counted only at a later iteration, and not at all if it leaves again
/// first, which makes this count a few percent lower than counting on arrival.
///
/// The slices must have lengths P ≥ 2 and P − 1 (the driver checks them).
pub fn authors_pass(trips: &mut [TripState], replica_at: &[u32], flags: &[u8]) -> u32 {
    let top = replica_at.len() - 1;
    let swapped = |pair: usize| flags[pair] & crate::swap::flags::SWAPPED != 0;
    let mut count = 0;
    let mut check = |trips: &mut [TripState], idx: usize| {
        let at = if idx < top && swapped(idx) {
            replica_at[idx + 1]
        } else {
            replica_at[idx]
        };
        // Cleared on a trip; a replica at home at the top is marked again at once (the
        // next walk marks it before anything can move it).
        let keep = if idx == top { SEEN_TOP } else { 0 };
        let (hit, t) = authors_check(idx as u32, at, trips[idx], keep);
        trips[idx] = t;
        count += u32::from(hit);
    };
    check(trips, 0);
    // From step 1 on, level 0 holds the replica that is there after the sweep.
    trips[replica_at[0] as usize] |= SEEN_BOTTOM;
    for idx in 1..top {
        check(trips, idx);
    }
    trips[replica_at[top] as usize] |= SEEN_TOP;
    check(trips, top);
    count
}

/// The authors' check at step `idx` of their walk (see [`authors_pass`]): `at` is the
/// replica level idx holds at that step and `trip` its trip state. A round trip when it
/// is replica idx (back at its start) with both ends seen; its marks then clear down to
/// `keep`. Returns whether it counted and the new trip state. The one definition every
/// engine applies (by replica in [`authors_pass`], by level in [`crate::lanes`]).
#[inline(always)]
pub fn authors_check(idx: u32, at: u32, trip: TripState, keep: TripState) -> (bool, TripState) {
    let hit = at == idx && trip & SEEN_BOTH == SEEN_BOTH;
    (
        hit,
        if hit {
            (trip & PHASE_MASK) | keep
        } else {
            trip
        },
    )
}

impl IndexStats {
    /// Adds the events of one arrival.
    #[inline]
    pub fn record(&mut self, events: TripEvents) {
        self.round_trips += u64::from(events.round_trip);
        self.restarts += u64::from(events.restart);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swap::flags::SWAPPED;
    use crate::swap::swap_levels;
    use std::vec::Vec;

    /// Feeds a hand-built sequence of levels for one replica (the standard counting).
    fn walk(levels: &[usize], top: usize) -> IndexStats {
        let start = levels[0];
        let mut state = initial_trip_state(start, top);
        let mut stats = IndexStats::default();
        for pair in levels.windows(2) {
            if pair[1] != pair[0] {
                stats.record(observe_arrival(&mut state, pair[1], top));
            }
        }
        stats
    }

    #[test]
    fn round_trip_from_the_bottom() {
        let s = walk(&[0, 1, 2, 3, 2, 1, 0], 3);
        assert_eq!((s.round_trips, s.restarts), (1, 1));
    }

    #[test]
    fn going_up_without_reaching_the_top_is_no_trip() {
        let s = walk(&[0, 1, 2, 1, 0, 1, 2, 1, 0], 3);
        assert_eq!((s.round_trips, s.restarts), (0, 0));
    }

    #[test]
    fn starting_at_the_top_gives_a_restart_before_the_first_round_trip() {
        let s = walk(&[3, 2, 1, 0, 1, 2, 3, 2, 1, 0], 3);
        assert_eq!((s.round_trips, s.restarts), (1, 2));
    }

    #[test]
    fn two_round_trips_in_a_row() {
        let s = walk(&[0, 1, 2, 1, 2, 1, 0, 1, 2, 1, 0], 2);
        assert_eq!((s.round_trips, s.restarts), (2, 2));
    }

    /// A literal transcription of the authors' walk (positions hold replica ids, a
    /// swap exchanges two positions, marks are sets), for comparison.
    struct Literal {
        index_set: Vec<usize>,
        last_visited: Vec<[bool; 2]>,
        trips: u32,
    }

    impl Literal {
        fn new(p: usize) -> Self {
            Literal {
                index_set: (0..p).collect(),
                last_visited: vec![[false; 2]; p],
                trips: 0,
            }
        }

        fn iterate(&mut self, swaps: &[bool]) {
            let p = self.index_set.len();
            for idx in 0..p {
                if idx > 0 && swaps[idx - 1] {
                    self.index_set.swap(idx - 1, idx);
                }
                self.last_visited[self.index_set[0]][0] = true;
                self.last_visited[self.index_set[p - 1]][1] = true;
                if self.last_visited[idx] == [true, true] && self.index_set[idx] == idx {
                    self.last_visited[idx] = [false, false];
                    self.trips += 1;
                }
            }
        }
    }

    /// The replay equals the literal walk on random disjoint swap patterns, for many
    /// ladder sizes and thousands of iterations.
    #[test]
    fn authors_pass_equals_the_literal_walk() {
        use crate::rng::{PhiloxStream, Rng};
        for p in [2usize, 3, 4, 7, 16] {
            let mut rng = PhiloxStream::new(9, p as u32, 0, 0, 0);
            let mut lit = Literal::new(p);
            let (mut at, mut of, mut trips) = (vec![0u32; p], vec![0u32; p], vec![0u8; p]);
            init_identity(&mut at, &mut of, &mut trips);
            let mut total = 0;
            for k in 0..20_000u32 {
                // Disjoint pairs of one parity, each swapping with probability 1/2.
                let parity = (k & 1) as usize;
                let mut fl = vec![0u8; p - 1];
                let mut swaps = vec![false; p - 1];
                for pair in (0..p - 1).filter(|q| (q + 1) % 2 == parity) {
                    if rng.next_u32() & 1 == 1 {
                        swaps[pair] = true;
                        fl[pair] = SWAPPED;
                        swap_levels(pair, &mut at, &mut of);
                    }
                }
                lit.iterate(&swaps);
                total += authors_pass(&mut trips, &at, &fl);
                assert_eq!(total, lit.trips, "P {p} k {k}");
            }
            assert!(total > 0, "P {p}");
        }
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
