//! The round-trip book-keeping of the lanes on packed words: the replica at a level
//! and its trip state in one `u32` (so that a swap moves both), the arrivals at the
//! two ends (the only levels where an arrival changes a trip) and the authors'
//! counting, each the bits of nrpt-core's scalar functions (tested against them below).

// Lane loops index several arrays with one lane index on purpose.
#![allow(clippy::needless_range_loop)]

use super::mask;
use crate::index::{IndexStats, PHASE_MASK, SEEN_BOTH, SEEN_BOTTOM, SEEN_TOP, TripState};
#[cfg(doc)]
use crate::index::{authors_check, observe_arrival};
use crate::rng::ENSEMBLE_WIDE;
use crate::window::pair_eligible;

/// Where the trip state sits in a packed replica word ([`pack`]).
pub const TRIP_SHIFT: u32 = 24;

/// The replica index bits of a packed word: replica indices are below 2²⁴ (the
/// driver's limit, [`crate::rng::MAX_REPLICAS`]).
pub const REPLICA_MASK: u32 = ENSEMBLE_WIDE;

const _: () = assert!(REPLICA_MASK == (1 << TRIP_SHIFT) - 1);

/// The word that stores replica `replica` (below 2²⁴) and its trip state: the index in
/// the low 24 bits, the trip state in the high 8, so that a swap moves both at once.
#[inline(always)]
pub const fn pack(replica: u32, trip: TripState) -> u32 {
    (replica & REPLICA_MASK) | ((trip as u32) << TRIP_SHIFT)
}

/// The replica index of a packed word.
#[inline(always)]
pub const fn replica_of(word: u32) -> u32 {
    word & REPLICA_MASK
}

/// The trip state of a packed word.
#[inline(always)]
pub const fn trip_of(word: u32) -> TripState {
    (word >> TRIP_SHIFT) as TripState
}

/// Events of one iteration in every lane, added to the lanes' [`IndexStats`] at its end.
pub(super) struct Tally<const L: usize> {
    pub(super) round_trips: [u32; L],
    pub(super) restarts: [u32; L],
    pub(super) authors: [u32; L],
    pub(super) nonfinite: [u32; L],
}

impl<const L: usize> Tally<L> {
    pub(super) fn new() -> Self {
        Tally {
            round_trips: [0; L],
            restarts: [0; L],
            authors: [0; L],
            nonfinite: [0; L],
        }
    }

    /// Adds the events to `stats` (nothing to do in most iterations: one test).
    #[inline(always)]
    pub(super) fn add_to(&self, stats: &mut [IndexStats; L]) {
        let mut any = 0;
        for i in 0..L {
            any |= self.round_trips[i] | self.restarts[i] | self.authors[i] | self.nonfinite[i];
        }
        if any != 0 {
            for (i, s) in stats.iter_mut().enumerate() {
                s.round_trips += u64::from(self.round_trips[i]);
                s.restarts += u64::from(self.restarts[i]);
                s.authors_round_trips += u64::from(self.authors[i]);
                s.nonfinite_energies += u64::from(self.nonfinite[i]);
            }
        }
    }
}

/// [`observe_arrival`] at level 0 in the lanes of `arrived`, on packed words: a replica
/// whose last end was P − 1 restarts (and completes a round trip if it had come from
/// level 0); its phase becomes "last end: 0".
#[inline(always)]
pub(super) fn arrive_bottom<const L: usize>(
    words: &mut [u32; L],
    arrived: &[u32; L],
    tally: &mut Tally<L>,
) {
    const TOP_FROM_BOTTOM: u32 = 2;
    const BOTTOM: u32 = 1;
    let phase_bits = u32::from(PHASE_MASK) << TRIP_SHIFT;
    for i in 0..L {
        let phase = (words[i] & phase_bits) >> TRIP_SHIFT;
        let m = arrived[i];
        // Phases 2 and 3 are "last end: P − 1".
        tally.restarts[i] = tally.restarts[i].wrapping_sub(m & mask(phase & 2 != 0));
        tally.round_trips[i] =
            tally.round_trips[i].wrapping_sub(m & mask(phase == TOP_FROM_BOTTOM));
        let new = (words[i] & !phase_bits) | (BOTTOM << TRIP_SHIFT);
        words[i] ^= m & (words[i] ^ new);
    }
}

/// [`observe_arrival`] at level P − 1 in the lanes of `arrived`: phase "last end: 0"
/// (1) becomes "at P − 1 from 0" (2), "no end yet" (0) becomes "at P − 1, fresh" (3),
/// the others stay: 3 − phase for the first two.
#[inline(always)]
pub(super) fn arrive_top<const L: usize>(words: &mut [u32; L], arrived: &[u32; L]) {
    let phase_bits = u32::from(PHASE_MASK) << TRIP_SHIFT;
    for i in 0..L {
        let phase = (words[i] & phase_bits) >> TRIP_SHIFT;
        let new_phase = if phase < 2 { 3 - phase } else { phase };
        let new = (words[i] & !phase_bits) | (new_phase << TRIP_SHIFT);
        words[i] ^= arrived[i] & (words[i] ^ new);
    }
}

/// The "seen both ends" bits of a packed word.
const SEEN_BOTH_BITS: u32 = (SEEN_BOTH as u32) << TRIP_SHIFT;

/// The authors' round-trip counting of this iteration in every lane:
/// [`crate::index::authors_pass`] on packed words stored by level (`parity`: the window's). At step idx of their walk level idx holds the replica now at idx + 1
/// if pair idx swapped, else the one now at idx; both candidates are read and blended.
/// A step counts replica idx when it is the one checked and has seen both ends
/// ([`authors_check`]: the replica and its two marks are compared at once).
#[inline(always)]
pub(super) fn authors_pass<const L: usize>(
    words: &mut [[u32; L]],
    swapped: &[[u32; L]],
    parity: u32,
    count: &mut [u32; L],
) {
    let top = words.len() - 1;
    let seen_bottom = u32::from(SEEN_BOTTOM) << TRIP_SHIFT;
    let seen_top = u32::from(SEEN_TOP) << TRIP_SHIFT;
    for idx in 0..=top {
        if idx == 1 {
            mark(&mut words[0], seen_bottom);
        }
        if idx == top {
            mark(&mut words[top], seen_top);
        }
        // A hit clears both marks; at the top the replica is marked again at once.
        let clear = if idx == top {
            SEEN_BOTH_BITS ^ seen_top
        } else {
            SEEN_BOTH_BITS
        };
        if idx < top && pair_eligible(idx, parity) {
            let (lo, hi) = words.split_at_mut(idx + 1);
            check_pair(idx as u32, &swapped[idx], (&mut lo[idx], &mut hi[0]), count);
        } else {
            check_level(idx as u32, clear, &mut words[idx], count);
        }
    }
}

/// Sets `bits` in every lane's word.
#[inline(always)]
fn mark<const L: usize>(words: &mut [u32; L], bits: u32) {
    for w in words.iter_mut() {
        *w |= bits;
    }
}

/// Whether a packed word is replica `idx` with both ends seen, as a mask.
#[inline(always)]
fn hit(idx: u32, word: u32) -> u32 {
    mask(word & (REPLICA_MASK | SEEN_BOTH_BITS) == idx | SEEN_BOTH_BITS)
}

/// The authors' check of replica `idx` where level idx holds it (no swap of pair idx
/// this iteration); a hit flips the bits of `clear`.
#[inline(always)]
fn check_level<const L: usize>(idx: u32, clear: u32, words: &mut [u32; L], count: &mut [u32; L]) {
    for i in 0..L {
        let h = hit(idx, words[i]);
        count[i] = count[i].wrapping_sub(h);
        words[i] ^= h & clear;
    }
}

/// The same where pair (idx, idx + 1) may have swapped: the replica checked is the one
/// now at idx + 1 in the lanes that swapped, the one at idx in the others. `idx` is
/// below the top, so a hit clears both marks.
#[inline(always)]
fn check_pair<const L: usize>(
    idx: u32,
    swapped: &[u32; L],
    (lo, hi): (&mut [u32; L], &mut [u32; L]),
    count: &mut [u32; L],
) {
    for i in 0..L {
        let sw = swapped[i];
        let w = lo[i] ^ (sw & (lo[i] ^ hi[i]));
        let h = hit(idx, w);
        count[i] = count[i].wrapping_sub(h);
        lo[i] ^= h & !sw & SEEN_BOTH_BITS;
        hi[i] ^= h & sw & SEEN_BOTH_BITS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{authors_check, observe_arrival};
    use crate::lanes::ON;

    #[test]
    fn packed_words_keep_the_replica_and_its_trip_state() {
        for r in [0u32, 1, 77, REPLICA_MASK] {
            for t in 0..=u8::MAX {
                let w = pack(r, t);
                assert_eq!((replica_of(w), trip_of(w)), (r, t));
            }
        }
    }

    /// The arrivals on packed words against `observe_arrival`, for every trip state.
    #[test]
    fn arrivals_at_the_ends_are_observe_arrival() {
        let top = 5;
        for t in 0..=u8::MAX {
            for arrived in [0, ON] {
                let mut words = [pack(3, t); 1];
                let mut tally = Tally::<1>::new();
                arrive_bottom(&mut words, &[arrived], &mut tally);
                let mut want = t;
                let ev = if arrived == ON {
                    observe_arrival(&mut want, 0, top)
                } else {
                    Default::default()
                };
                assert_eq!(trip_of(words[0]), want, "bottom, state {t}");
                assert_eq!(replica_of(words[0]), 3);
                assert_eq!(tally.round_trips[0], u32::from(ev.round_trip));
                assert_eq!(tally.restarts[0], u32::from(ev.restart));
                let mut words = [pack(3, t); 1];
                arrive_top(&mut words, &[arrived]);
                let mut want = t;
                if arrived == ON {
                    let ev = observe_arrival(&mut want, top, top);
                    assert_eq!(ev, Default::default());
                }
                assert_eq!(trip_of(words[0]), want, "top, state {t}");
            }
        }
    }

    /// The authors' check on packed words against `authors_check`, for every trip
    /// state (its four bits: phase and the two marks), replica and clear pattern.
    #[test]
    fn the_packed_check_is_authors_check() {
        for t in 0..=(PHASE_MASK | SEEN_BOTH) {
            for r in [0u32, 1, 2, 9] {
                for (keep, clear) in [
                    (0, SEEN_BOTH_BITS),
                    (
                        SEEN_TOP,
                        SEEN_BOTH_BITS ^ (u32::from(SEEN_TOP) << TRIP_SHIFT),
                    ),
                ] {
                    let mut words = [pack(r, t)];
                    let mut count = [0u32];
                    check_level(2, clear, &mut words, &mut count);
                    let (hit, want) = authors_check(2, r, t, keep);
                    assert_eq!((count[0], trip_of(words[0])), (u32::from(hit), want));
                    assert_eq!(replica_of(words[0]), r);
                }
            }
        }
    }
}
