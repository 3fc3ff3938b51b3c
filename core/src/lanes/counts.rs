//! The counts of each adjacent pair in every lane: `u32` lanes that one vector
//! instruction per count and iteration updates, flushed into `u64` totals.

// Lane loops index several arrays with one lane index on purpose.
#![allow(clippy::needless_range_loop)]

use crate::index::PairStats;

/// Which of a pair's counts ([`PairStats`]) a row of [`PairLanes`] holds.
const INDICATORS: usize = 0;
const ATTEMPTS: usize = 1;
const SWAPS: usize = 2;
const NONFINITE: usize = 3;

/// Iterations after which a pair's `u32` counts are added to its `u64` totals: each
/// count grows by at most one per iteration, so the `u32` lanes never wrap.
pub const FLUSH_EVERY: u32 = 1 << 30;

/// The counts of one adjacent pair in every lane ([`PairStats`] by lane): the counts
/// of the last iterations in `u32` lanes (one vector instruction per count and
/// iteration), added to `u64` totals every [`FLUSH_EVERY`] iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairLanes<const L: usize> {
    /// Totals up to the last flush: indicators, attempts, swaps, non-finite tests.
    totals: [[u64; L]; 4],
    /// Counts since the last flush, in the same order.
    recent: [[u32; L]; 4],
    /// Iterations since the last flush.
    since_flush: u32,
}

impl<const L: usize> Default for PairLanes<L> {
    fn default() -> Self {
        PairLanes {
            totals: [[0; L]; 4],
            recent: [[0; L]; 4],
            since_flush: 0,
        }
    }
}

impl<const L: usize> PairLanes<L> {
    /// Count `which` of lane `i` (`i < L`).
    #[inline]
    fn count(&self, which: usize, i: usize) -> u64 {
        self.totals[which][i] + u64::from(self.recent[which][i])
    }

    /// The counts of lane `i` (`None` past the last lane).
    pub fn lane(&self, i: usize) -> Option<PairStats> {
        (i < L).then(|| PairStats {
            indicators: self.count(INDICATORS, i),
            attempts: self.count(ATTEMPTS, i),
            swaps: self.count(SWAPS, i),
            nonfinite: self.count(NONFINITE, i),
        })
    }

    /// Iterations at which lane `i`'s swap indicator was 1 (0 past the last lane).
    pub fn indicators(&self, i: usize) -> u64 {
        if i < L { self.count(INDICATORS, i) } else { 0 }
    }

    /// Sets the counts of lane `i` (nothing past the last lane).
    pub fn set_lane(&mut self, i: usize, s: PairStats) {
        if i < L {
            let values = [s.indicators, s.attempts, s.swaps, s.nonfinite];
            for (which, v) in values.into_iter().enumerate() {
                self.totals[which][i] = v;
                self.recent[which][i] = 0;
            }
        }
    }

    /// Counts one iteration: `(indicator, attempt, swap, nonfinite)` masks of every
    /// lane (`attempt` and `swap` `None` for a pair that was not eligible).
    #[inline(always)]
    pub(super) fn add(
        &mut self,
        indicator: &[u32; L],
        eligible: Option<(&[u32; L], &[u32; L])>,
        bad: &[u32; L],
    ) {
        // A mask is ON = −1 where set: subtracting it adds one.
        sub_lanes(&mut self.recent[INDICATORS], indicator);
        sub_lanes(&mut self.recent[NONFINITE], bad);
        if let Some((attempt, swap)) = eligible {
            sub_lanes(&mut self.recent[ATTEMPTS], attempt);
            sub_lanes(&mut self.recent[SWAPS], swap);
        }
        self.since_flush += 1;
        if self.since_flush >= FLUSH_EVERY {
            self.flush();
        }
    }

    /// Moves the `u32` counts into the totals.
    #[cold]
    pub(super) fn flush(&mut self) {
        for (total, recent) in self.totals.iter_mut().zip(&mut self.recent) {
            for (t, r) in total.iter_mut().zip(recent.iter_mut()) {
                *t += u64::from(*r);
                *r = 0;
            }
        }
        self.since_flush = 0;
    }
}

/// `a[i] −= m[i]` (wrapping): adds 1 where a mask is [`ON`].
#[inline(always)]
fn sub_lanes<const L: usize>(a: &mut [u32; L], m: &[u32; L]) {
    for i in 0..L {
        a[i] = a[i].wrapping_sub(m[i]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::ON;

    #[test]
    fn counts_survive_a_flush() {
        let mut c = PairLanes::<2>::default();
        c.set_lane(
            1,
            PairStats {
                indicators: 10,
                attempts: 20,
                swaps: 5,
                nonfinite: 1,
            },
        );
        let (ind, att, sw, bad) = ([ON, 0], [ON, ON], [0, ON], [0, ON]);
        for _ in 0..3 {
            c.add(&ind, Some((&att, &sw)), &bad);
        }
        c.add(&ind, None, &bad);
        let before = (c.lane(0), c.lane(1));
        c.flush();
        assert_eq!((c.lane(0), c.lane(1)), before);
        assert_eq!(c.recent, [[0; 2]; 4]);
        assert_eq!(
            c.lane(1),
            Some(PairStats {
                indicators: 10,
                attempts: 23,
                swaps: 8,
                nonfinite: 5
            })
        );
        assert_eq!(
            c.lane(0).map(|s| (s.indicators, s.attempts, s.swaps)),
            Some((4, 3, 0))
        );
        assert_eq!(c.lane(2), None);
        assert_eq!(c.indicators(2), 0);
    }
}
