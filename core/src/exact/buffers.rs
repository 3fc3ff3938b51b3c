//! The caller-owned buffers of an exact tempering run, and the records kept per level
//! and per pair.

use crate::error::{Error, check_chains, check_len};
use crate::index::TripState;

use super::evidence::LogMeanExp;
use super::options::ExactExplorer;

/// The buffers of one ensemble of P replicas in D dimensions, handed to
/// [`ExactTempering::new`](super::ExactTempering::new), which checks every length once.
/// Contents on entry do not matter, except `states` with
/// [`StartStates::Keep`](super::StartStates::Keep) and `betas` with
/// [`InitialGrid::Keep`](super::InitialGrid::Keep).
///
/// Lengths: P·D for `states`, S·D for `scratch` (S = 4 for MALA, 5 for HMC:
/// [`ExactExplorer::scratch_vectors`]), P − 1 for `gates`, `flags` and `pairs`, P for the
/// rest ([`ExactBuffers::lengths`]).
#[derive(Debug)]
pub struct ExactBuffers<'a> {
    /// States, replica-major: replica r is `states[r·D .. (r+1)·D]`.
    pub states: &'a mut [f64],
    /// ℓ of each replica's state, by replica.
    pub log_likelihoods: &'a mut [f64],
    /// β of each level (level 0: β = 1, level P − 1: β = 0).
    pub betas: &'a mut [f64],
    /// Step size and acceptance of each level.
    pub levels: &'a mut [LevelRecord],
    /// Replica at each level.
    pub replica_at: &'a mut [u32],
    /// Level of each replica.
    pub level_of: &'a mut [u32],
    /// Round-trip state of each replica.
    pub trips: &'a mut [TripState],
    /// Gate of each pair (DEO windows).
    pub gates: &'a mut [bool],
    /// [`crate::swap::flags`] of each pair at the last iteration.
    pub flags: &'a mut [u8],
    /// Rejection, swap and stepping-stone records of each pair.
    pub pairs: &'a mut [PairRecord],
    /// The grid of the last completed round (the barrier's knots).
    pub barrier_betas: &'a mut [f64],
    /// Λ̂ at those knots, by level.
    pub barrier_values: &'a mut [f64],
    /// Scratch of the explorer (S·D, [`ExactExplorer::scratch_vectors`]).
    pub scratch: &'a mut [f64],
}

/// The length of every buffer for P chains in D dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lengths {
    /// P·D: `states`.
    pub states: usize,
    /// P: `log_likelihoods`, `betas`, `levels`, `replica_at`, `level_of`, `trips`,
    /// `barrier_betas`, `barrier_values`.
    pub per_level: usize,
    /// P − 1: `gates`, `flags`, `pairs`.
    pub per_pair: usize,
    /// S·D: `scratch` (S = [`ExactExplorer::scratch_vectors`]).
    pub scratch: usize,
}

impl ExactBuffers<'_> {
    /// The lengths for `chains = P ≥ 2`, `dim = D ≥ 1` and `explorer`.
    pub fn lengths(chains: usize, dim: usize, explorer: &ExactExplorer) -> Result<Lengths, Error> {
        check_chains(chains)?;
        if dim == 0 {
            return Err(Error::InvalidValue {
                name: "dim",
                value: 0.0,
                allowed: ">= 1",
            });
        }
        let too_big = Error::InvalidValue {
            name: "dim",
            value: dim as f64,
            allowed: "small enough that P·D and the scratch fit in memory",
        };
        Ok(Lengths {
            states: chains.checked_mul(dim).ok_or(too_big)?,
            per_level: chains,
            per_pair: chains - 1,
            scratch: dim.checked_mul(explorer.scratch_vectors()).ok_or(too_big)?,
        })
    }

    /// The lengths for `chains = P ≥ 2` of a run told its log-likelihoods
    /// ([`ExactTempering::told`](super::ExactTempering::told)): no states and no scratch
    /// (`states` and `scratch` empty), the rest as [`ExactBuffers::lengths`].
    pub fn told_lengths(chains: usize) -> Result<Lengths, Error> {
        check_chains(chains)?;
        Ok(Lengths {
            states: 0,
            per_level: chains,
            per_pair: chains - 1,
            scratch: 0,
        })
    }

    /// Checks every length against P (from `betas`), `dim` and `explorer`; returns P.
    pub fn check(&self, dim: usize, explorer: &ExactExplorer) -> Result<usize, Error> {
        let n = Self::lengths(self.betas.len(), dim, explorer)?;
        self.check_lengths(n)
    }

    /// Checks every length against P (from `betas`) for a run told its log-likelihoods
    /// ([`ExactBuffers::told_lengths`]); returns P.
    pub fn check_told(&self) -> Result<usize, Error> {
        let n = Self::told_lengths(self.betas.len())?;
        self.check_lengths(n)
    }

    fn check_lengths(&self, n: Lengths) -> Result<usize, Error> {
        let p = n.per_level;
        check_len("states", self.states.len(), n.states)?;
        check_len("scratch", self.scratch.len(), n.scratch)?;
        for (name, len) in [
            ("log_likelihoods", self.log_likelihoods.len()),
            ("levels", self.levels.len()),
            ("replica_at", self.replica_at.len()),
            ("level_of", self.level_of.len()),
            ("trips", self.trips.len()),
            ("barrier_betas", self.barrier_betas.len()),
            ("barrier_values", self.barrier_values.len()),
        ] {
            check_len(name, len, p)?;
        }
        check_len("gates", self.gates.len(), p - 1)?;
        check_len("flags", self.flags.len(), p - 1)?;
        check_len("pairs", self.pairs.len(), p - 1)?;
        Ok(p)
    }
}

/// The explorer (MALA or HMC) of one level: its step size (kept over the run) and its
/// acceptance in the current round.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LevelRecord {
    pub(crate) step: f64,
    pub(crate) updates: u64,
    pub(crate) acceptance_sum: f64,
    pub(crate) proposals: u64,
    pub(crate) accepted: u64,
}

impl LevelRecord {
    /// Step size ε of the level's explorer (the nominal one for HMC, before jitter;
    /// unused at β = 0).
    pub fn step_size(&self) -> f64 {
        self.step
    }

    /// Step-size updates so far in the run.
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// Proposals (MALA steps or HMC trajectories) in the round.
    pub fn proposals(&self) -> u64 {
        self.proposals
    }

    /// Proposals accepted in the round.
    pub fn accepted(&self) -> u64 {
        self.accepted
    }

    /// Mean acceptance probability of the round's proposals (NaN without proposals, as
    /// at β = 0).
    pub fn acceptance_rate(&self) -> f64 {
        self.acceptance_sum / self.proposals as f64
    }

    pub(crate) fn clear_round(&mut self) {
        self.acceptance_sum = 0.0;
        self.proposals = 0;
        self.accepted = 0;
    }
}

/// One pair (l, l + 1) in the current round: its swap tests and the stepping-stone
/// sums.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PairRecord {
    pub(crate) tests: u64,
    pub(crate) rejection_sum: f64,
    pub(crate) attempts: u64,
    pub(crate) swaps: u64,
    pub(crate) nonfinite: u64,
    pub(crate) forward: LogMeanExp,
    pub(crate) reverse: LogMeanExp,
    pub(crate) forward_batch: LogMeanExp,
    pub(crate) reverse_batch: LogMeanExp,
}

impl PairRecord {
    /// Pair tests in the round (one per iteration).
    pub fn tests(&self) -> u64 {
        self.tests
    }

    /// r̂_l: the mean of 1 − α over the round's tests (Rao–Blackwellized rejection rate);
    /// NaN before the first test.
    pub fn rejection_rate(&self) -> f64 {
        self.rejection_sum / self.tests as f64
    }

    /// Swaps attempted (eligible, gate open).
    pub fn attempts(&self) -> u64 {
        self.attempts
    }

    /// Swaps accepted (executed).
    pub fn accepted(&self) -> u64 {
        self.swaps
    }

    /// Attempts rejected.
    pub fn rejected(&self) -> u64 {
        self.attempts - self.swaps
    }

    /// Tests with a non-finite ℓ.
    pub fn nonfinite(&self) -> u64 {
        self.nonfinite
    }

    /// The forward stepping-stone estimate of log Z(β_l)/Z(β_{l+1}).
    pub fn forward_log_ratio(&self) -> f64 {
        self.forward.log_mean()
    }

    /// The reverse stepping-stone estimate of log Z(β_l)/Z(β_{l+1}).
    pub fn reverse_log_ratio(&self) -> f64 {
        -self.reverse.log_mean()
    }

    pub(crate) fn clear_batch(&mut self) {
        self.forward_batch = LogMeanExp::EMPTY;
        self.reverse_batch = LogMeanExp::EMPTY;
    }
}
