//! The β grid and the rounds that tune it (the round-based tuning of Syed et al., JRSS-B 2022).
//!
//! A run is a sequence of rounds; round r (from 0) lasts `first_round · 2^r` iterations,
//! with a fixed β grid. At the end of a round, the pair rejection rates of that round
//! give the barrier (see [`super::barrier`]) and, unless the grid is frozen, the next
//! round's grid places the P points at equal barrier, so that every pair rejects about
//! Λ̂/(P − 1). Doubling the length makes the last round as long as all earlier ones
//! together (plus `first_round`), so tuning costs at most half of the run, and each
//! new grid is estimated from twice the data of the previous one. The estimates of a
//! round (Λ̂, log Z) come from that round alone.
//!
//! A grid is valid when it has P ≥ 2 finite points, β_0 = 1 (level 0, the target),
//! β_{P−1} = 0 (the reference), strictly decreasing in between.

use crate::error::{Error, check_chains};

/// Where the first round's grid comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum InitialGrid {
    /// β_l = 1 − l/(P − 1).
    #[default]
    Uniform,
    /// The grid the caller wrote into the buffer (checked by the driver): for instance
    /// [`Barrier::equal_barrier_grid`](super::Barrier::equal_barrier_grid) of an earlier
    /// run with another number of chains.
    Keep,
}

/// How the rounds run. `Default`: a first round of 2 iterations (as Pigeons.jl), the
/// grid re-placed after every round, uniform to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScheduleOptions {
    /// Iterations of round 0 (≥ 1); round r lasts `first_round · 2^r`.
    pub first_round: u64,
    /// Re-place the grid at equal barrier after every round.
    pub adapt_grid: bool,
    /// The first round's grid.
    pub initial_grid: InitialGrid,
}

impl Default for ScheduleOptions {
    fn default() -> Self {
        ScheduleOptions {
            first_round: 2,
            adapt_grid: true,
            initial_grid: InitialGrid::Uniform,
        }
    }
}

impl ScheduleOptions {
    /// Checks `first_round ≥ 1`.
    pub fn validate(self) -> Result<Self, Error> {
        if self.first_round == 0 {
            return Err(Error::InvalidValue {
                name: "schedule.first_round",
                value: 0.0,
                allowed: ">= 1 iteration",
            });
        }
        Ok(self)
    }

    /// Iterations of round `round`: `first_round · 2^round`, saturating at `u64::MAX`.
    pub fn round_length(&self, round: u32) -> u64 {
        match 1u64.checked_shl(round) {
            Some(f) if u128::from(f) * u128::from(self.first_round) <= u128::from(u64::MAX) => {
                f * self.first_round
            }
            _ => u64::MAX,
        }
    }
}

/// Checks a β grid in level order (see the [module docs](self)); returns P.
///
/// # Errors
///
/// [`Error::TooFewChains`] for P < 2; [`Error::InvalidValue`] (`"betas"`) naming the
/// first point that breaks the rule.
pub fn check_grid(betas: &[f64]) -> Result<usize, Error> {
    let p = betas.len();
    check_chains(p)?;
    let bad = |value| Error::InvalidValue {
        name: "betas",
        value,
        allowed: "strictly decreasing from 1 (level 0) to 0 (level P - 1)",
    };
    if betas[0] != 1.0 {
        return Err(bad(betas[0]));
    }
    if betas[p - 1] != 0.0 {
        return Err(bad(betas[p - 1]));
    }
    for w in betas.windows(2) {
        // NaN fails the comparison.
        if w[1].is_nan() || w[1] >= w[0] {
            return Err(bad(w[1]));
        }
    }
    Ok(p)
}

/// Writes the uniform grid β_l = 1 − l/(P − 1) (exactly 1 and 0 at the ends).
///
/// # Errors
///
/// [`Error::TooFewChains`] for P < 2.
pub fn uniform_grid(out: &mut [f64]) -> Result<(), Error> {
    check_chains(out.len())?;
    let top = (out.len() - 1) as f64;
    for (l, b) in out.iter_mut().enumerate() {
        *b = (top - l as f64) / top;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_are_checked() {
        let mut g = [0.0; 5];
        uniform_grid(&mut g).unwrap();
        assert_eq!(g, [1.0, 0.75, 0.5, 0.25, 0.0]);
        assert_eq!(check_grid(&g), Ok(5));
        assert_eq!(check_grid(&[1.0]), Err(Error::TooFewChains { chains: 1 }));
        assert_eq!(check_grid(&[]), Err(Error::TooFewChains { chains: 0 }));
        for bad in [
            [0.9, 0.5, 0.0],
            [1.0, 0.5, 0.1],
            [1.0, 1.0, 0.0],
            [1.0, 0.0, 0.0],
            [1.0, f64::NAN, 0.0],
            [1.0, 1.5, 0.0],
            [0.0, 0.5, 1.0],
        ] {
            assert!(
                matches!(
                    check_grid(&bad),
                    Err(Error::InvalidValue { name: "betas", .. })
                ),
                "{bad:?}"
            );
        }
        assert!(uniform_grid(&mut g[..1]).is_err());
    }

    #[test]
    fn rounds_double() {
        let s = ScheduleOptions::default();
        assert_eq!((s.round_length(0), s.round_length(3)), (2, 16));
        assert_eq!(s.round_length(63), u64::MAX);
        assert_eq!(s.round_length(200), u64::MAX);
        assert!(
            ScheduleOptions {
                first_round: 0,
                ..s
            }
            .validate()
            .is_err()
        );
    }
}
