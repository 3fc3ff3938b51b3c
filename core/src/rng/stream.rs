//! The keyed Philox streams the sampler draws from.
//!
//! Every random word the sampler uses is addressed by
//! `(seed, ensemble, iteration, replica, stream, block, lane)` and computed as
//!
//! ```text
//! key     = [seed, ensemble]
//! counter = [iteration mod 2^32, iteration div 2^32, stream · 2^24 + replica, block]
//! word    = philox4x32_10(counter, key)[lane]
//! ```
//!
//! The iteration takes two whole counter words, so no stream repeats however long a
//! run is (2^64 iterations). Replica indices take the low 24 bits of the third word
//! and the stream id its top 8 bits: an ensemble holds at most [`MAX_REPLICAS`]
//! replicas (the driver checks it), and [`ENSEMBLE_WIDE`] (2^24 − 1) marks draws that
//! concern the whole ensemble rather than one replica.
//!
//! A stream is the sequence of words for fixed `(seed, ensemble, iteration, replica,
//! stream)`: word `i` of the stream has `block = (i / 4) as u32` (modulo 2^32) and
//! `lane = i % 4`, so words are taken in the order block 0 lanes 0, 1, 2, 3, then block 1
//! lanes 0..3, and so on. A stream holds 2^32 blocks = 2^34 words = 16 GiB; after that the
//! block counter wraps to 0 and the stream repeats.
//!
//! The stream ids are in [`streams`]; [`counter`] builds a counter for engines that
//! compute blocks directly (SIMD lanes, GPU threads).

use super::philox::{impl_word_rng, philox4x32_10};

/// Bits of the third counter word that hold the replica index.
pub const REPLICA_BITS: u32 = 24;

/// The replica index of ensemble-wide draws (e.g. [`streams::SWAP`]): 2^24 − 1, the
/// largest value the replica field holds.
pub const ENSEMBLE_WIDE: u32 = (1 << REPLICA_BITS) - 1;

/// The most replicas one ensemble may hold (2^24 − 1): replica indices stay below
/// [`ENSEMBLE_WIDE`].
pub const MAX_REPLICAS: usize = ENSEMBLE_WIDE as usize;

/// The Philox counter of `block` of the stream `(iteration, replica, stream)`:
/// `[iteration mod 2^32, iteration div 2^32, stream · 2^24 + replica, block]`.
///
/// `replica` must be below 2^24 and `stream` below 2^8 (the driver guarantees both);
/// higher bits are masked off so that a wrong value can never reach another field.
#[inline(always)]
pub const fn counter(iteration: u64, replica: u32, stream: u32, block: u32) -> [u32; 4] {
    [
        iteration as u32,
        (iteration >> 32) as u32,
        (stream << REPLICA_BITS) | (replica & ENSEMBLE_WIDE),
        block,
    ]
}

/// Stream ids: the fourth counter word, one per purpose, so that draws for different
/// purposes never share bits.
pub mod streams {
    // Ids must stay below 2^8 (see [`counter`](super::counter)).
    /// Everything one replica draws in one iteration, in this order: the noise of its
    /// stochastic gradient (as many words as the oracle takes), the Langevin noise of
    /// its exploration step (`2·ceil(D/2)` words, only when its level's noise scale is
    /// above 0), then the noise of its stochastic energy. An oracle with additive
    /// Gaussian gradient noise
    /// ([`gaussian_gradient`](crate::target::EnergyOracle::gaussian_gradient), the toy
    /// targets) takes no words for its gradient: its noise and the Langevin noise are one
    /// normal vector (`2·ceil(D/2)` words, when
    /// [`merged_noise_scale`](crate::explore::merged_noise_scale) is above 0). One
    /// stream, so that for the 2D toy a step and its energy share a single Philox block
    /// at every level, the target level's SGLD step included.
    pub const STEP: u32 = 0;
    /// Uniforms of the Metropolis swap rule and the parities of stochastic even/odd (SEO)
    /// swaps; ensemble-wide, drawn with replica [`ENSEMBLE_WIDE`](super::ENSEMBLE_WIDE).
    pub const SWAP: u32 = 1;
    /// Initial states of the replicas, per replica (with iteration 0).
    pub const INIT: u32 = 2;
    /// The fresh energies of the pair tests of
    /// [`PairEnergies::FreshPerTest`](crate::rules::PairEnergies::FreshPerTest): the
    /// replica field holds the pair index l, and the stream gives the energy noise of
    /// the upper (hotter) side of pair (l, l + 1), then of the lower.
    pub const PAIR: u32 = 3;
    /// Exact tempering ([`crate::exact`]): everything one replica draws to explore at
    /// one iteration, per replica. At a level with β > 0, each MALA step takes the
    /// normals of its proposal ([`fill_normals`](crate::rng::fill_normals) over D
    /// values, `2·ceil(D/2)` words), then one word for its accept/reject uniform; at the
    /// reference level (β = 0), whatever
    /// [`AnnealingPath::sample_reference`](crate::exact::AnnealingPath::sample_reference)
    /// takes for one exact draw.
    pub const EXACT_EXPLORE: u32 = 4;
    /// Exact tempering: ensemble-wide (replica [`ENSEMBLE_WIDE`](super::ENSEMBLE_WIDE)),
    /// per iteration: for SEO first one word whose top bit is the parity, then one
    /// word per pair l = 0 … P − 2, in order, whose uniform decides the Metropolis swap
    /// of that pair (drawn for every pair, eligible or not).
    pub const EXACT_SWAP: u32 = 5;
    /// Exact tempering: the initial state of each replica, one exact draw from the
    /// reference, per replica with iteration 0.
    pub const EXACT_INIT: u32 = 6;
    /// Exact tempering on two legs ([`crate::exact::TwoLegTempering`]) with SEO:
    /// ensemble-wide, per iteration, of the fixed leg's key: one word whose top bit
    /// decides whether the two target levels exchange their states.
    pub const EXACT_LEG_EXCHANGE: u32 = 7;
}

/// One keyed Philox stream (see the [module docs](self) for the exact formula).
///
/// * `next_u32`: the next word of the stream (word `i`, then `i + 1`, …).
/// * `next_u64`: two consecutive words, the first one in the low half.
/// * `fill_bytes`: consecutive words written little-endian; a trailing partial chunk of
///   `n < 4` bytes uses the first `n` bytes of one more word and discards the rest.
///
/// [`word`](Self::word) gives random access to word `i` without moving the stream, as a
/// GPU thread would compute it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhiloxStream {
    key: [u32; 2],
    iteration: u64,
    replica: u32,
    stream: u32,
    /// Index of the next word.
    position: u64,
    /// Block `position / 4`, valid whenever `position % 4 != 0`.
    buf: [u32; 4],
}

impl PhiloxStream {
    /// The stream of `(seed, ensemble, iteration, replica, stream)`, at word 0.
    ///
    /// Use [`ENSEMBLE_WIDE`] as `replica` for ensemble-wide draws and a constant of
    /// [`streams`] as `stream` (see [`counter`] for the ranges).
    pub const fn new(seed: u32, ensemble: u32, iteration: u64, replica: u32, stream: u32) -> Self {
        Self {
            key: [seed, ensemble],
            iteration,
            replica,
            stream,
            position: 0,
            buf: [0; 4],
        }
    }

    /// The Philox key `[seed, ensemble]`.
    pub const fn key(&self) -> [u32; 2] {
        self.key
    }

    /// The Philox counter of block `block` (see [`counter`]).
    pub const fn counter(&self, block: u32) -> [u32; 4] {
        counter(self.iteration, self.replica, self.stream, block)
    }

    /// Block `block` of the stream: `philox4x32_10(self.counter(block), self.key())`.
    pub const fn block(&self, block: u32) -> [u32; 4] {
        philox4x32_10(self.counter(block), self.key)
    }

    /// Word `index` of the stream: lane `index % 4` of block `(index / 4) as u32`
    /// (the block number wraps modulo 2^32). Does not move the stream.
    pub const fn word(&self, index: u64) -> u32 {
        self.block((index >> 2) as u32)[(index & 3) as usize]
    }

    /// Index of the next word `next_u32` will return.
    pub const fn position(&self) -> u64 {
        self.position
    }

    /// Moves the stream so that the next word is word `index`.
    pub fn seek(&mut self, index: u64) {
        self.position = index;
        if index & 3 != 0 {
            self.buf = self.block((index >> 2) as u32);
        }
    }

    #[inline]
    fn next_word(&mut self) -> u32 {
        let lane = (self.position & 3) as usize;
        if lane == 0 {
            self.buf = self.block((self.position >> 2) as u32);
        }
        self.position = self.position.wrapping_add(1);
        self.buf[lane]
    }
}

impl_word_rng!(PhiloxStream);

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::Rng;

    const SEED: u32 = 0x1234_5678;
    const ENS: u32 = 7;
    const IT: u64 = 42;
    const REP: u32 = 3;

    #[test]
    fn word_order_matches_counters() {
        let mut s = PhiloxStream::new(SEED, ENS, IT, REP, streams::STEP);
        for b in 0u32..5 {
            let expected = philox4x32_10([IT as u32, 0, REP, b], [SEED, ENS]);
            for w in expected {
                assert_eq!(s.next_u32(), w);
            }
        }
        assert_eq!(s.position(), 20);
    }

    #[test]
    fn random_access_matches_sequential() {
        let mut s = PhiloxStream::new(SEED, ENS, IT, ENSEMBLE_WIDE, streams::SWAP);
        let r = s.clone();
        for i in 0u64..41 {
            assert_eq!(s.next_u32(), r.word(i));
        }
        // Seek to a mid-block word and to a far block.
        for &i in &[5u64, 8, 1_000_003, (1u64 << 34) - 1] {
            let mut t = r.clone();
            t.seek(i);
            assert_eq!(t.next_u32(), r.word(i));
            assert_eq!(t.next_u32(), r.word(i.wrapping_add(1)));
        }
    }

    #[test]
    fn block_counter_wraps_after_2_pow_32_blocks() {
        let s = PhiloxStream::new(SEED, ENS, IT, REP, streams::STEP);
        assert_eq!(s.word(1 << 34), s.word(0));
        assert_eq!(s.word((1 << 34) + 5), s.word(5));
        let mut t = s.clone();
        t.seek((1 << 34) - 1);
        t.next_u32();
        assert_eq!(t.next_u32(), s.word(0));
    }

    #[test]
    fn streams_and_replicas_differ() {
        let a = PhiloxStream::new(SEED, ENS, IT, REP, streams::STEP);
        let b = PhiloxStream::new(SEED, ENS, IT, REP, streams::SWAP);
        let c = PhiloxStream::new(SEED, ENS, IT, REP + 1, streams::STEP);
        let d = PhiloxStream::new(SEED, ENS + 1, IT, REP, streams::STEP);
        assert_ne!(a.block(0), b.block(0));
        assert_ne!(a.block(0), c.block(0));
        assert_ne!(a.block(0), d.block(0));
        assert_eq!(a.counter(9), [IT as u32, 0, REP, 9]);
        assert_eq!(b.counter(9), [IT as u32, 0, (streams::SWAP << 24) | REP, 9]);
        assert_eq!(a.key(), [SEED, ENS]);
    }

    /// The iteration enters the counter with all 64 bits: the streams of iterations
    /// 2³² − 1, 2³² and 2³² + 1 are all different from each other and from those of
    /// iterations 0 and 1 (a 32-bit counter would repeat 0 and 1 at 2³² and 2³² + 1).
    #[test]
    fn iterations_past_2_pow_32_never_repeat() {
        let ks = [0u64, 1, (1 << 32) - 1, 1 << 32, (1 << 32) + 1, u64::MAX];
        for (i, &a) in ks.iter().enumerate() {
            let sa = PhiloxStream::new(SEED, ENS, a, REP, streams::STEP);
            assert_eq!(sa.counter(0)[0], a as u32);
            assert_eq!(sa.counter(0)[1], (a >> 32) as u32);
            for &b in &ks[i + 1..] {
                let sb = PhiloxStream::new(SEED, ENS, b, REP, streams::STEP);
                assert_ne!(sa.block(0), sb.block(0), "iterations {a} and {b}");
            }
        }
        // Replica and stream fields never spill into each other.
        assert_eq!(counter(5, ENSEMBLE_WIDE, streams::SWAP, 0)[2], 0x01FF_FFFF);
        assert_eq!(counter(5, u32::MAX, 0, 0)[2], ENSEMBLE_WIDE);
    }

    #[test]
    fn next_u64_composition() {
        let mut s = PhiloxStream::new(SEED, ENS, IT, REP, streams::INIT);
        let r = s.clone();
        assert_eq!(s.next_u32(), r.word(0));
        for i in 0u64..6 {
            let lo = r.word(1 + 2 * i) as u64;
            let hi = r.word(2 + 2 * i) as u64;
            assert_eq!(s.next_u64(), lo | (hi << 32));
        }
    }

    #[test]
    fn fill_bytes_little_endian() {
        let mut s = PhiloxStream::new(SEED, ENS, IT, REP, streams::SWAP);
        let r = s.clone();
        let mut bytes = [0u8; 23];
        s.fill_bytes(&mut bytes);
        for i in 0..5 {
            assert_eq!(bytes[4 * i..4 * i + 4], r.word(i as u64).to_le_bytes());
        }
        assert_eq!(bytes[20..23], r.word(5).to_le_bytes()[..3]);
        assert_eq!(s.position(), 6);
        assert_eq!(s.next_u32(), r.word(6));
    }
}
