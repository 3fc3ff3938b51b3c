//! The random words of the bit-sliced simulator: eight xoshiro256++ generators side by
//! side, one per pair of a batch, each seeded from nrpt-core's Philox4x32-10.
//!
//! The bit-serial comparison of [`super::indicator`] takes about eight random 64-bit
//! words per batch of 64 indicators, so the generator is most of the simulator's work.
//! Philox4x32-10, the sampler's generator, costs ten rounds of 32 × 32-bit products per
//! 128 bits; xoshiro256++ (Blackman and Vigna, "Scrambled linear pseudorandom number
//! generators", ACM TOMS 2021; <https://prng.di.unimi.it/xoshiro256plusplus.c>) costs
//! eleven shifts, rotations, additions and exclusive ors per 64 bits, which the
//! compiler runs on eight generators at once in one AVX-512 register (two AVX2 ones).
//! It passes every statistical test its authors know of in all 64 bits, which matters
//! here: every bit of a word decides one ensemble.
//!
//! Each generator is a per-group stream, not a counter-based one: the words a group
//! draws depend only on its seed and on what it drew before, so a run gives the same
//! bits whatever the number of threads (a group always runs on one thread at a time).
//! Generator `i` of group `g` under seed `s` starts from the 256 bits of two Philox
//! blocks, `philox4x32_10([i, b, STREAM, 0], [s, g])` for b = 0, 1, as four
//! little-endian 64-bit words (words 0–1 of block 0, then 2–3, then block 1). The
//! streams of different groups and generators are therefore random starting points on
//! the one cycle of period 2²⁵⁶ − 1: n streams of L words each overlap with probability
//! below n²L/2²⁵⁶, 2⁻¹⁶² for 2²⁷ streams (2²⁴ groups) of 2⁴⁰ words.

use nrpt_core::rng::philox4x32_10;

/// Generators side by side: one per pair of a batch.
pub(crate) const WIDTH: usize = 8;

/// The third Philox counter word of the seeding blocks ("bits" in ASCII): in the
/// sampler's layout (`nrpt_core::rng::counter`) stream 0x62, which none of
/// `nrpt_core::rng::streams` is.
const STREAM: u32 = 0x6269_7473;

/// Eight xoshiro256++ generators, state word j of generator i at `s[j][i]` (so that
/// the step is the same lane operation on four arrays).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Words8 {
    s: [[u64; WIDTH]; 4],
}

impl Words8 {
    /// The generators of group `group` under `seed` (see the [module docs](self)).
    pub(crate) fn seeded(seed: u32, group: u32) -> Self {
        let mut s = [[0u64; WIDTH]; 4];
        for i in 0..WIDTH {
            let mut words = [0u64; 4];
            for b in 0..2u32 {
                let w = philox4x32_10([i as u32, b, STREAM, 0], [seed, group]);
                let j = 2 * b as usize;
                words[j] = u64::from(w[0]) | (u64::from(w[1]) << 32);
                words[j + 1] = u64::from(w[2]) | (u64::from(w[3]) << 32);
            }
            // The all-zero state is the one xoshiro never leaves; Philox gives it with
            // probability 2⁻²⁵⁶, and then the generator starts from 1 instead.
            if words == [0; 4] {
                words[0] = 1;
            }
            for (j, w) in words.into_iter().enumerate() {
                s[j][i] = w;
            }
        }
        Words8 { s }
    }

    /// Generators started from the given states (`states[i]` for generator i, as the
    /// reference implementation's `s[0..4]`), for the reference test.
    #[cfg(test)]
    pub(crate) fn from_states(states: [[u64; 4]; WIDTH]) -> Self {
        let mut s = [[0u64; WIDTH]; 4];
        for (i, st) in states.iter().enumerate() {
            for (j, &w) in st.iter().enumerate() {
                s[j][i] = w;
            }
        }
        Words8 { s }
    }

    /// The next word of every generator.
    #[inline(always)]
    pub(crate) fn next(&mut self) -> [u64; WIDTH] {
        let [s0, s1, s2, s3] = &mut self.s;
        let mut out = [0u64; WIDTH];
        for i in 0..WIDTH {
            out[i] = s0[i]
                .wrapping_add(s3[i])
                .rotate_left(23)
                .wrapping_add(s0[i]);
            let t = s1[i] << 17;
            s2[i] ^= s0[i];
            s3[i] ^= s1[i];
            s1[i] ^= s2[i];
            s0[i] ^= s3[i];
            s2[i] ^= t;
            s3[i] = s3[i].rotate_left(45);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every generator gives the reference implementation's words: the test vector of
    /// rand_xoshiro's `Xoshiro256PlusPlus` (state [1, 2, 3, 4], values "produced with
    /// the reference implementation" xoshiro256plusplus.c, per that crate), here in
    /// generator 0 and, shifted by one state word, checked against a plain scalar
    /// transcription of the C code in the other seven.
    #[test]
    fn words_are_the_reference_xoshiro256plusplus() {
        let expected: [u64; 10] = [
            41_943_041,
            58_720_359,
            3_588_806_011_781_223,
            3_591_011_842_654_386,
            9_228_616_714_210_784_205,
            9_973_669_472_204_895_162,
            14_011_001_112_246_962_877,
            12_406_186_145_184_390_807,
            15_849_039_046_786_891_736,
            10_450_023_813_501_588_000,
        ];
        let mut states = [[0u64; 4]; WIDTH];
        for (i, st) in states.iter_mut().enumerate() {
            let i = i as u64;
            *st = [1 + 7 * i, 2 + 11 * i, 3 + 13 * i, 4 + 17 * i];
        }
        let mut scalar = states;
        let mut w = Words8::from_states(states);
        // The C code, one generator at a time.
        let next = |s: &mut [u64; 4]| {
            let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
            let t = s[1] << 17;
            s[2] ^= s[0];
            s[3] ^= s[1];
            s[1] ^= s[2];
            s[0] ^= s[3];
            s[2] ^= t;
            s[3] = s[3].rotate_left(45);
            result
        };
        for (n, &e) in expected.iter().enumerate() {
            let words = w.next();
            assert_eq!(words[0], e, "word {n}");
            for (i, s) in scalar.iter_mut().enumerate() {
                assert_eq!(words[i], next(s), "generator {i} word {n}");
            }
        }
    }

    /// Seeding: fixed for a (seed, group), different between groups, seeds and
    /// generators.
    #[test]
    fn seeding_is_fixed_and_distinct() {
        assert_eq!(Words8::seeded(3, 9), Words8::seeded(3, 9));
        let mut seen = Vec::new();
        for (seed, group) in [(0, 0), (0, 1), (1, 0), (7, 123_456)] {
            let w = Words8::seeded(seed, group);
            for i in 0..WIDTH {
                let st = [w.s[0][i], w.s[1][i], w.s[2][i], w.s[3][i]];
                assert!(
                    !seen.contains(&st),
                    "seed {seed} group {group} generator {i}"
                );
                seen.push(st);
            }
        }
    }
}
