//! The index process alone, with swap indicators drawn as independent Bernoulli
//! variables: the model behind Lemma 1 of Deng et al. (AAAI 2023) and behind Syed et
//! al.'s analysis, used to check round-trip theory against simulation without running
//! any sampler.
//!
//! It runs exactly the windowed sweep of the sampler ([`crate::swap::sweep_with`]) and
//! the same round-trip book-keeping; only the indicators come from `u < s_l` with u
//! uniform instead of from energies.

use crate::error::{Error, check_chains, check_len};
use crate::index::{IndexStats, TripState, authors_pass, init_identity, observe_arrival};
use crate::rng::{ENSEMBLE_WIDE, PhiloxStream, streams, uniform_f64};
use crate::swap::{FnTest, SwapBuffers, flags, sweep_unchecked};
use crate::window::Scheme;
use rand_core::Rng;

/// The indicator threshold of a pair with swap probability `rate`: the number of 32-bit
/// words `w` with `uniform_f64(w) < rate`, so that the indicator is 1 iff
/// `u64::from(w) < indicator_threshold(rate)`: an integer comparison, exactly
/// equivalent to the floating-point one (uniform_f64(w) = (w + ½)·2⁻³², so the
/// condition is w < rate·2³² − ½, and both sides are exact in `f64`). Rates at or below
/// 0 (or NaN) give 0, rates at or above 1 give 2³².
pub fn indicator_threshold(rate: f64) -> u64 {
    if rate.is_nan() || rate <= 0.0 {
        return 0;
    }
    let t = rate * 4_294_967_296.0 - 0.5;
    if t >= 4_294_967_296.0 {
        return 1 << 32;
    }
    libm::ceil(t).max(0.0) as u64
}

/// An index-process simulation of one ensemble over caller-owned buffers.
#[derive(Debug)]
pub struct IndexProcess<'a> {
    swap: SwapBuffers<'a>,
    trips: &'a mut [TripState],
    scheme: Scheme,
    seed: u32,
    ensemble: u32,
    iteration: u64,
    stats: IndexStats,
}

impl<'a> IndexProcess<'a> {
    /// Checks the lengths (P from `trips`, P − 1 for gates and flags) and the scheme,
    /// and starts from the identity permutation.
    pub fn new(
        scheme: Scheme,
        swap: SwapBuffers<'a>,
        trips: &'a mut [TripState],
        seed: u32,
        ensemble: u32,
    ) -> Result<Self, Error> {
        let scheme = scheme.validate()?;
        let p = trips.len();
        check_chains(p)?;
        check_len("replica_at", swap.replica_at.len(), p)?;
        check_len("level_of", swap.level_of.len(), p)?;
        check_len("gates", swap.gates.len(), p - 1)?;
        check_len("flags", swap.flags.len(), p - 1)?;
        init_identity(swap.replica_at, swap.level_of, trips);
        swap.gates.fill(true);
        Ok(IndexProcess {
            swap,
            trips,
            scheme,
            seed,
            ensemble,
            iteration: 0,
            stats: IndexStats::default(),
        })
    }

    /// One iteration with indicator probabilities `rate(l)` for pair l (values outside
    /// [0, 1] act as 0 or 1). Words come from the SWAP stream of the iteration: the SEO
    /// parity first when the scheme is SEO, then one word per pair in order.
    pub fn step(&mut self, rate: impl Fn(usize) -> f64) {
        let k = self.iteration;
        let mut rng = PhiloxStream::new(self.seed, self.ensemble, k, ENSEMBLE_WIDE, streams::SWAP);
        let Ok(summary) = sweep_unchecked(
            k,
            self.scheme,
            self.swap.reborrow(),
            &mut rng,
            &mut FnTest(|pair, rng: &mut PhiloxStream| {
                Some(uniform_f64(rng.next_u32()) < rate(pair))
            }),
        );
        if summary.swaps > 0 {
            let top = self.trips.len() - 1;
            for (pair, &f) in self.swap.flags.iter().enumerate() {
                if f & flags::SWAPPED != 0 {
                    for level in [pair, pair + 1] {
                        let r = self.swap.replica_at[level] as usize;
                        self.stats
                            .record(observe_arrival(&mut self.trips[r], level, top));
                    }
                }
            }
        }
        self.stats.authors_round_trips += u64::from(authors_pass(
            self.trips,
            self.swap.replica_at,
            self.swap.flags,
        ));
        self.iteration += 1;
    }

    /// Iterations done.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// Round trips and restarts so far.
    pub fn stats(&self) -> IndexStats {
        self.stats
    }

    /// Level of each replica.
    pub fn level_of(&self) -> &[u32] {
        self.swap.level_of
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_comparison_equals_the_uniform_comparison() {
        let mut rng = PhiloxStream::new(8, 8, 8, 8, 8);
        let rates = [
            0.0,
            1e-12,
            0.005,
            0.1,
            0.25,
            0.4,
            0.5,
            0.9,
            0.999_999_9,
            1.0,
            1.5,
            -0.3,
            f64::NAN,
        ];
        for &rate in &rates {
            let t = indicator_threshold(rate);
            for w in [0u32, 1, 2, u32::MAX, u32::MAX - 1, 1 << 31, (1 << 31) - 1] {
                assert_eq!(u64::from(w) < t, uniform_f64(w) < rate, "rate {rate} w {w}");
            }
            // Words right at the threshold.
            for d in 0..3u64 {
                for w in [t.saturating_sub(d), t + d] {
                    if let Ok(w) = u32::try_from(w) {
                        assert_eq!(u64::from(w) < t, uniform_f64(w) < rate, "rate {rate} w {w}");
                    }
                }
            }
            for _ in 0..20_000 {
                let w = rng.next_u32();
                assert_eq!(u64::from(w) < t, uniform_f64(w) < rate, "rate {rate} w {w}");
            }
        }
        // Random rates too.
        for _ in 0..20_000 {
            let rate = uniform_f64(rng.next_u32());
            let t = indicator_threshold(rate);
            let w = rng.next_u32();
            assert_eq!(u64::from(w) < t, uniform_f64(w) < rate);
        }
    }
}
