//! Mini-batches: example indices drawn uniformly with replacement from a random stream.

use rand_core::Rng;

/// Fills `out` with indices uniform in 0 … n − 1, one 32-bit word each:
/// `⌊w · n / 2³²⌋` (Lemire's multiply-shift; each index has probability within
/// n/2³² of 1/n, below 10⁻⁵ relative for any training set under 40,000 examples, and
/// the map is the same on every platform, which a rejection loop would not keep
/// aligned with the GPU). `n = 0` fills zeros.
#[inline]
pub fn draw<R: Rng + ?Sized>(rng: &mut R, n: u32, out: &mut [u32]) {
    for i in out.iter_mut() {
        *i = index(rng.next_u32(), n);
    }
}

/// The index of one word (see [`draw`]).
#[inline(always)]
pub fn index(word: u32, n: u32) -> u32 {
    ((u64::from(word) * u64::from(n)) >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::PhiloxStream;

    #[test]
    fn indices_are_in_range_and_uniform() {
        assert_eq!(index(0, 10), 0);
        assert_eq!(index(u32::MAX, 10), 9);
        assert_eq!(index(u32::MAX, 0), 0);
        let mut rng = PhiloxStream::new(1, 2, 3, 4, 0);
        let mut out = [0u32; 7_000];
        draw(&mut rng, 7, &mut out);
        let mut counts = [0u32; 7];
        for &i in &out {
            counts[i as usize] += 1;
        }
        // 1000 expected each; binomial sd ≈ 29: allow 5 sd.
        for c in counts {
            assert!((855..1145).contains(&c), "{counts:?}");
        }
    }
}
