//! The exact-sampling baseline of the deep comparison: what a model average of K
//! genuine posterior draws scores against the reference posterior.
//!
//! A method's total variation to the reference mixes two things: the noise of
//! averaging only K samples, which even exact sampling pays, and the method's bias.
//! Model averages of K of the reference run's own HMC draws ([`Draws`]) measure the
//! first alone, so the excess of a method over them at the same K is its bias (and
//! its samples' correlation), not its sample size.
//!
//! # Realisations
//!
//! At K, the M stored draws give R = ⌊M/K⌋ disjoint realisations: realisation r holds
//! draws r, r + R, r + 2R, …, r + (K − 1)R. The draws are stored chain by chain, evenly
//! spaced in each, so every realisation spreads over every chain and the whole run
//! (a systematic sample), and no draw serves two realisations at the same K. The
//! realisations are independent as far as the draws are (the reference's effective
//! sample sizes say how far: see [`super::reference::draws`]).
//!
//! The draws are part of the reference's own average, each with weight 1/(chains ·
//! samples) (1/5,000 for the bundled one): a realisation of K = 60 shares 1.2 % of the
//! reference, which pulls its total variation down by about as much, negligible beside
//! the spread between realisations.

use super::metrics::Samples;
use super::reference::Draws;

/// The realisations of exact sampling at K draws each.
pub struct ExactSampling<'a> {
    draws: &'a Draws,
    examples: usize,
    classes: usize,
}

impl<'a> ExactSampling<'a> {
    /// Over the reference's `draws` of `examples` test examples × `classes` classes.
    pub fn new(draws: &'a Draws, examples: usize, classes: usize) -> Self {
        ExactSampling {
            draws,
            examples,
            classes,
        }
    }

    /// Disjoint realisations of `k` draws: ⌊M/k⌋ (0 for k = 0 or k > M).
    pub fn realisations(&self, k: usize) -> usize {
        self.draws.count.checked_div(k).unwrap_or(0)
    }

    /// The draws of realisation `r` of `k`: r, r + R, …, r + (k − 1)R.
    pub fn members(&self, k: usize, r: usize) -> Vec<usize> {
        let big_r = self.realisations(k);
        if r >= big_r {
            return Vec::new();
        }
        (0..k).map(|j| r + j * big_r).collect()
    }

    /// Every realisation of `k` draws as the samples of a method's seed, in the order of
    /// their members.
    pub fn samples(&self, k: usize) -> Vec<Samples> {
        (0..self.realisations(k))
            .map(|r| {
                let mut s = Samples::new(self.examples, self.classes);
                for i in self.members(k, r) {
                    if let Some(p) = self.draws.draw(i) {
                        s.push_predictive(&p);
                    }
                }
                s
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Realisations are disjoint, of k draws each, spread over the whole set (every
    /// R-th), and as many as fit.
    #[test]
    fn realisations_are_disjoint_and_spread() {
        // 12 draws of one example, two classes: draw i puts i/12 on class 0.
        let probs: Vec<f32> = (0..12)
            .flat_map(|i| {
                let p = i as f32 / 12.0;
                [p, 1.0 - p]
            })
            .collect();
        let draws = Draws::quantize(&probs, 2);
        let e = ExactSampling::new(&draws, 1, 2);
        assert_eq!(e.realisations(5), 2);
        assert_eq!(e.realisations(12), 1);
        assert_eq!(e.realisations(13), 0);
        assert_eq!(e.realisations(0), 0);
        assert_eq!(e.members(5, 0), [0, 2, 4, 6, 8]);
        assert_eq!(e.members(5, 1), [1, 3, 5, 7, 9]);
        assert!(e.members(5, 2).is_empty());
        let mut seen: Vec<usize> = (0..4).flat_map(|r| e.members(3, r)).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..12).collect::<Vec<_>>());
        let s = e.samples(3);
        assert_eq!(s.len(), 4);
        assert!(s.iter().all(|one| one.len() == 3));
        // Realisation 1 of 3 holds draws 1, 5, 9: class 0 averages 15/36.
        let avg = s[1].average();
        assert!((avg[0] - 15.0 / 36.0).abs() < 1e-4, "{avg:?}");
    }
}
