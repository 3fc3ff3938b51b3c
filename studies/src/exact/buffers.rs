//! The buffers of one ensemble of exact tempering, owned: what nrpt-core's
//! [`ExactTempering`](nrpt_core::exact::ExactTempering) borrows, for a run of a path
//! (its rounds) or for a told controller.

use nrpt_core::exact::{ExactBuffers, ExactExplorer, Lengths, LevelRecord, PairRecord};
use serde::{Deserialize, Serialize};

use super::core_error;
use nrpt_sampling::config::ConfigError;

/// The buffers of one ensemble, owned (by a run of a path, or by a told controller,
/// whose states and scratch are empty).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Owned {
    pub(super) states: Vec<f64>,
    pub(super) ells: Vec<f64>,
    pub(super) betas: Vec<f64>,
    pub(super) levels: Vec<LevelRecord>,
    pub(super) at: Vec<u32>,
    pub(super) of: Vec<u32>,
    pub(super) trips: Vec<u8>,
    pub(super) gates: Vec<bool>,
    pub(super) flags: Vec<u8>,
    pub(super) pairs: Vec<PairRecord>,
    pub(super) knots: Vec<f64>,
    pub(super) values: Vec<f64>,
    pub(super) scratch: Vec<f64>,
}

impl Owned {
    pub(super) fn new(
        chains: usize,
        dim: usize,
        explorer: &ExactExplorer,
    ) -> Result<Self, ConfigError> {
        let n = ExactBuffers::lengths(chains, dim, explorer).map_err(core_error)?;
        Ok(Owned::of(n))
    }

    /// Buffers of the lengths `n`.
    pub(super) fn of(n: Lengths) -> Self {
        Owned {
            states: vec![0.0; n.states],
            ells: vec![0.0; n.per_level],
            betas: vec![0.0; n.per_level],
            levels: vec![LevelRecord::default(); n.per_level],
            at: vec![0; n.per_level],
            of: vec![0; n.per_level],
            trips: vec![0; n.per_level],
            gates: vec![false; n.per_pair],
            flags: vec![0; n.per_pair],
            pairs: vec![PairRecord::default(); n.per_pair],
            knots: vec![0.0; n.per_level],
            values: vec![0.0; n.per_level],
            scratch: vec![0.0; n.scratch],
        }
    }

    pub(super) fn view(&mut self) -> ExactBuffers<'_> {
        ExactBuffers {
            states: &mut self.states,
            log_likelihoods: &mut self.ells,
            betas: &mut self.betas,
            levels: &mut self.levels,
            replica_at: &mut self.at,
            level_of: &mut self.of,
            trips: &mut self.trips,
            gates: &mut self.gates,
            flags: &mut self.flags,
            pairs: &mut self.pairs,
            barrier_betas: &mut self.knots,
            barrier_values: &mut self.values,
            scratch: &mut self.scratch,
        }
    }
}
