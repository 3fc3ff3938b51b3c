//! The buffers of one ensemble: lent by the caller as [`Buffers`], checked once and
//! kept as [`Storage`], whose fields only the driver writes.
//!
//! The permutation, the gates, the ladder and the counters must stay consistent with
//! each other for the driver to be correct (and, for the permutation, for it not to
//! index out of bounds), so callers read them through [`Storage`]'s accessors and may
//! write only the states, momenta and energies, through an [`ExploreView`].

use crate::error::{Error, check_chains, check_len};
use crate::index::{PairStats, TripState};

/// The caller-owned buffers of one ensemble of P replicas in D dimensions, handed to
/// [`crate::Tempering::new`], which checks every length once. Contents on entry do not
/// matter (the driver initializes them), except the states with
/// [`InitialStates::Keep`](super::InitialStates::Keep).
#[derive(Debug)]
pub struct Buffers<'a, F> {
    /// States, replica-major: replica r is `states[r·D .. (r+1)·D]` (length P·D).
    pub states: &'a mut [F],
    /// Momenta, same layout (length P·D for momentum explorers, else may be empty).
    pub momenta: &'a mut [F],
    /// Energy of the replica at each level (length P).
    pub energies: &'a mut [F],
    /// Learning rate of each level (length P).
    pub ladder: &'a mut [f64],
    /// Temperature of each level (length P).
    pub temperatures: &'a mut [f64],
    /// Replica at each level (length P).
    pub replica_at: &'a mut [u32],
    /// Level of each replica (length P).
    pub level_of: &'a mut [u32],
    /// Round-trip state of each replica (length P).
    pub trips: &'a mut [TripState],
    /// Gate of each pair (length P − 1).
    pub gates: &'a mut [bool],
    /// Swap flags of each pair at the last iteration (length P − 1).
    pub flags: &'a mut [u8],
    /// Counts of each pair (length P − 1).
    pub pair_stats: &'a mut [PairStats],
    /// Scratch for one gradient and one noise vector (length 2·D).
    pub scratch: &'a mut [F],
}

impl<F> Buffers<'_, F> {
    /// Checks every length against P (taken from `energies`) and `dim`; returns P.
    pub fn check(&self, dim: usize, momentum: bool) -> Result<usize, Error> {
        let p = self.energies.len();
        check_chains(p)?;
        if dim == 0 {
            return Err(Error::InvalidValue {
                name: "dim",
                value: 0.0,
                allowed: ">= 1",
            });
        }
        let pd = p.checked_mul(dim).ok_or(Error::InvalidValue {
            name: "dim",
            value: dim as f64,
            allowed: "small enough that P·D fits in memory",
        })?;
        check_len("states", self.states.len(), pd)?;
        if momentum {
            check_len("momenta", self.momenta.len(), pd)?;
        }
        check_len("ladder", self.ladder.len(), p)?;
        check_len("temperatures", self.temperatures.len(), p)?;
        check_len("replica_at", self.replica_at.len(), p)?;
        check_len("level_of", self.level_of.len(), p)?;
        check_len("trips", self.trips.len(), p)?;
        check_len("gates", self.gates.len(), p - 1)?;
        check_len("flags", self.flags.len(), p - 1)?;
        check_len("pair_stats", self.pair_stats.len(), p - 1)?;
        check_len("scratch", self.scratch.len(), 2 * dim)?;
        Ok(p)
    }
}

/// The checked buffers of one ensemble, read through accessors. Only the driver
/// writes them (callers write states, momenta and energies through an
/// [`ExploreView`]).
#[derive(Debug)]
pub struct Storage<'a, F> {
    pub(crate) states: &'a mut [F],
    pub(crate) momenta: &'a mut [F],
    pub(crate) energies: &'a mut [F],
    pub(crate) ladder: &'a mut [f64],
    pub(crate) temperatures: &'a mut [f64],
    pub(crate) replica_at: &'a mut [u32],
    pub(crate) level_of: &'a mut [u32],
    pub(crate) trips: &'a mut [TripState],
    pub(crate) gates: &'a mut [bool],
    pub(crate) flags: &'a mut [u8],
    pub(crate) pair_stats: &'a mut [PairStats],
    pub(crate) scratch: &'a mut [F],
    pub(crate) dim: usize,
}

/// Write access to what an engine that explores by itself produces: states, momenta
/// and the energies by level; read access to what it needs to do so. The slices keep
/// their lengths (P·D, P·D or 0, P).
#[derive(Debug)]
pub struct ExploreView<'s, F> {
    /// States, replica-major (P·D).
    pub states: &'s mut [F],
    /// Momenta, replica-major (P·D, or empty without a momentum explorer).
    pub momenta: &'s mut [F],
    /// Energy of the replica at each level (P).
    pub energies: &'s mut [F],
    /// Learning rate of each level (P).
    pub ladder: &'s [f64],
    /// Temperature of each level (P).
    pub temperatures: &'s [f64],
    /// Level of each replica (P).
    pub level_of: &'s [u32],
    /// Replica at each level (P).
    pub replica_at: &'s [u32],
}

impl<'a, F> Storage<'a, F> {
    /// Takes the buffers after [`Buffers::check`] has accepted them for `dim`.
    pub(crate) fn from_checked(b: Buffers<'a, F>, dim: usize) -> Self {
        Storage {
            states: b.states,
            momenta: b.momenta,
            energies: b.energies,
            ladder: b.ladder,
            temperatures: b.temperatures,
            replica_at: b.replica_at,
            level_of: b.level_of,
            trips: b.trips,
            gates: b.gates,
            flags: b.flags,
            pair_stats: b.pair_stats,
            scratch: b.scratch,
            dim,
        }
    }

    /// Gives the buffers back.
    pub(crate) fn into_buffers(self) -> Buffers<'a, F> {
        Buffers {
            states: self.states,
            momenta: self.momenta,
            energies: self.energies,
            ladder: self.ladder,
            temperatures: self.temperatures,
            replica_at: self.replica_at,
            level_of: self.level_of,
            trips: self.trips,
            gates: self.gates,
            flags: self.flags,
            pair_stats: self.pair_stats,
            scratch: self.scratch,
        }
    }

    /// The writable view of an exploring engine.
    pub(crate) fn explore_view(&mut self) -> ExploreView<'_, F> {
        ExploreView {
            states: self.states,
            momenta: self.momenta,
            energies: self.energies,
            ladder: self.ladder,
            temperatures: self.temperatures,
            level_of: self.level_of,
            replica_at: self.replica_at,
        }
    }

    /// Number of replicas P.
    pub fn chains(&self) -> usize {
        self.energies.len()
    }

    /// Dimension D of a state.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// States, replica-major (P·D).
    pub fn states(&self) -> &[F] {
        self.states
    }

    /// The state of replica `replica`, or `None` past the last one.
    pub fn state(&self, replica: usize) -> Option<&[F]> {
        let start = replica.checked_mul(self.dim)?;
        self.states.get(start..start.checked_add(self.dim)?)
    }

    /// The state of the replica at `level`, or `None` past the last level.
    pub fn state_at_level(&self, level: usize) -> Option<&[F]> {
        self.state(*self.replica_at.get(level)? as usize)
    }

    /// Momenta, replica-major (P·D, or empty without a momentum explorer).
    pub fn momenta(&self) -> &[F] {
        self.momenta
    }

    /// Energy of the replica at each level, as of the last iteration.
    pub fn energies(&self) -> &[F] {
        self.energies
    }

    /// Learning rate of each level.
    pub fn ladder(&self) -> &[f64] {
        self.ladder
    }

    /// Temperature of each level.
    pub fn temperatures(&self) -> &[f64] {
        self.temperatures
    }

    /// Replica at each level.
    pub fn replica_at(&self) -> &[u32] {
        self.replica_at
    }

    /// Level of each replica.
    pub fn level_of(&self) -> &[u32] {
        self.level_of
    }

    /// Round-trip state of each replica.
    pub fn trips(&self) -> &[TripState] {
        self.trips
    }

    /// Gate of each pair (`true`: may still swap in this window).
    pub fn gates(&self) -> &[bool] {
        self.gates
    }

    /// [`crate::swap::flags`] of each pair at the last iteration.
    pub fn flags(&self) -> &[u8] {
        self.flags
    }

    /// Counts of each pair.
    pub fn pair_stats(&self) -> &[PairStats] {
        self.pair_stats
    }
}
