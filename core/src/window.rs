//! Window arithmetic of generalized deterministic even–odd swaps (DEO_W) and the
//! reversible stochastic even–odd baseline (SEO).
//!
//! Iterations are counted from k = 0. With a window of W iterations, iteration k lies
//! in window `w = floor(k / W)` of parity `π = w mod 2`. The adjacent pair of levels
//! (l, l + 1) is *eligible* in that window iff `(l + 1) mod 2 == π`, so even and odd
//! pairs take turns, one window each. Every pair has a *gate*: all gates open at the
//! first iteration of a window (`k mod W == 0`), and a gate closes once its pair has
//! swapped, so each pair swaps at most once per window. W = 1 is the vanilla DEO scheme
//! of Okabe et al. and Syed et al.; W > 1 is the generalization of Deng et al. (AAAI
//! 2023), which waits for one cheap swap per window instead of demanding one every
//! iteration. SEO draws the parity at random every iteration and has no gates.

use crate::error::Error;

/// How the pairs allowed to swap are chosen at each iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Deterministic even–odd swaps with a window of `window` iterations (DEO_W).
    /// `window = 1` is vanilla DEO.
    Deo {
        /// Window length W in iterations, at least 1.
        window: u32,
    },
    /// Stochastic even–odd swaps: the parity is drawn uniformly every iteration and
    /// there are no gates (the reversible baseline).
    Seo,
}

impl Scheme {
    /// Vanilla DEO (window 1).
    pub const VANILLA_DEO: Scheme = Scheme::Deo { window: 1 };

    /// Checks the window length.
    pub fn validate(self) -> Result<Self, Error> {
        match self {
            Scheme::Deo { window: 0 } => Err(Error::ZeroWindow),
            other => Ok(other),
        }
    }

    /// Numeric code used in `#[repr(C)]` parameter blocks: the window for DEO, 0 for SEO.
    pub fn window_code(self) -> u32 {
        match self {
            Scheme::Deo { window } => window,
            Scheme::Seo => 0,
        }
    }

    /// Inverse of [`Scheme::window_code`].
    pub fn from_window_code(code: u32) -> Self {
        if code == 0 {
            Scheme::Seo
        } else {
            Scheme::Deo { window: code }
        }
    }
}

/// Index of the window that contains iteration `k`: `floor(k / W)`.
///
/// `window` must be at least 1 (see [`Scheme::validate`]); 0 is treated as 1.
#[inline]
pub fn window_index(k: u64, window: u32) -> u64 {
    k / u64::from(window.max(1))
}

/// Parity (0 or 1) of the window that contains iteration `k`.
#[inline]
pub fn window_parity(k: u64, window: u32) -> u32 {
    (window_index(k, window) & 1) as u32
}

/// `true` when iteration `k` opens a window: all gates reopen (`k mod W == 0`).
#[inline]
pub fn is_window_start(k: u64, window: u32) -> bool {
    k.is_multiple_of(u64::from(window.max(1)))
}

/// `true` when the pair (l, l + 1) may swap under parity `parity`:
/// `(l + 1) mod 2 == parity`.
#[inline]
pub fn pair_eligible(pair: usize, parity: u32) -> bool {
    ((pair + 1) & 1) as u32 == parity
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vanilla_deo_alternates_every_iteration() {
        for k in 0..10u64 {
            assert_eq!(window_parity(k, 1), (k % 2) as u32);
            assert!(is_window_start(k, 1));
        }
        // Parity 0 (even windows): pairs 1, 3, 5 …; parity 1: pairs 0, 2, 4 …
        assert!(!pair_eligible(0, 0));
        assert!(pair_eligible(1, 0));
        assert!(pair_eligible(0, 1));
        assert!(!pair_eligible(1, 1));
    }

    #[test]
    fn every_pair_is_eligible_in_alternating_windows() {
        for window in [1u32, 2, 3, 8, 17] {
            for pair in 0..9usize {
                let mut last: Option<bool> = None;
                for w in 0..20u64 {
                    // Eligibility is constant within a window…
                    let first = pair_eligible(pair, window_parity(w * u64::from(window), window));
                    for j in 0..u64::from(window) {
                        let k = w * u64::from(window) + j;
                        assert_eq!(pair_eligible(pair, window_parity(k, window)), first);
                        assert_eq!(is_window_start(k, window), j == 0, "k {k} W {window}");
                    }
                    // …and flips from one window to the next.
                    if let Some(prev) = last {
                        assert_ne!(prev, first, "pair {pair} window {window} w {w}");
                    }
                    last = Some(first);
                }
            }
        }
    }

    #[test]
    fn zero_window_is_an_error() {
        assert_eq!(Scheme::Deo { window: 0 }.validate(), Err(Error::ZeroWindow));
        assert!(Scheme::Deo { window: 3 }.validate().is_ok());
        assert!(Scheme::Seo.validate().is_ok());
        assert_eq!(
            Scheme::from_window_code(Scheme::Seo.window_code()),
            Scheme::Seo
        );
        assert_eq!(
            Scheme::from_window_code(Scheme::Deo { window: 7 }.window_code()),
            Scheme::Deo { window: 7 }
        );
    }
}
