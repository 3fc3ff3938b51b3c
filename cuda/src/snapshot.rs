//! What a run on the device looks like from the host after a snapshot: every
//! ensemble's ladder, buffer, counts, permutation and flags.

use nrpt_core::index::{IndexStats, PairStats};

/// The state of one ensemble as the host sees it after a `GpuEnsembles::snapshot` (or `GpuMlp`'s).
#[derive(Clone, Debug, PartialEq)]
pub struct EnsembleSnapshot {
    /// Learning rate of each level (P).
    pub ladder: Vec<f64>,
    /// Temperature of each level (P).
    pub temperatures: Vec<f64>,
    /// Correction buffer C.
    pub buffer: f64,
    /// Round trips, restarts, non-finite energies.
    pub stats: IndexStats,
    /// Counts of each pair (P − 1).
    pub pair_stats: Vec<PairStats>,
    /// Replica at each level (P).
    pub replica_at: Vec<u32>,
    /// Level of each replica (P).
    pub level_of: Vec<u32>,
    /// Energy at each level after the last iteration (P).
    pub energies: Vec<f32>,
    /// Trip state of each replica (P).
    pub trips: Vec<u8>,
    /// Flags of each pair at the last iteration (P − 1).
    pub flags: Vec<u8>,
    /// Gates of each pair (P − 1; 1 = open).
    pub gates: Vec<u8>,
}

/// Every ensemble at one iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// Iterations done.
    pub iteration: u64,
    /// One entry per ensemble.
    pub ensembles: Vec<EnsembleSnapshot>,
}
