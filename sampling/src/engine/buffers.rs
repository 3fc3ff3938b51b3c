//! Owned buffers of one ensemble, lent to nrpt-core's driver as slices.

use nrpt_core::Float;
use nrpt_core::driver::Buffers;
use nrpt_core::index::{PairStats, TripState};
use serde::{Deserialize, Serialize};

/// Every buffer of one ensemble of P replicas in D dimensions, allocated once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnsembleBuffers<F> {
    pub(crate) states: Vec<F>,
    pub(crate) momenta: Vec<F>,
    pub(crate) energies: Vec<F>,
    pub(crate) ladder: Vec<f64>,
    pub(crate) temperatures: Vec<f64>,
    pub(crate) replica_at: Vec<u32>,
    pub(crate) level_of: Vec<u32>,
    pub(crate) trips: Vec<TripState>,
    pub(crate) gates: Vec<bool>,
    pub(crate) flags: Vec<u8>,
    pub(crate) pair_stats: Vec<PairStats>,
    pub(crate) scratch: Vec<F>,
}

impl<F: Float> EnsembleBuffers<F> {
    /// Buffers for P ≥ 2 replicas of dimension D (momenta only when asked for).
    pub fn new(chains: usize, dim: usize, momentum: bool) -> Self {
        let pairs = chains.saturating_sub(1);
        EnsembleBuffers {
            states: vec![F::ZERO; chains * dim],
            momenta: if momentum {
                vec![F::ZERO; chains * dim]
            } else {
                Vec::new()
            },
            energies: vec![F::ZERO; chains],
            ladder: vec![0.0; chains],
            temperatures: vec![0.0; chains],
            replica_at: vec![0; chains],
            level_of: vec![0; chains],
            trips: vec![0; chains],
            gates: vec![true; pairs],
            flags: vec![0; pairs],
            pair_stats: vec![PairStats::default(); pairs],
            scratch: vec![F::ZERO; 2 * dim],
        }
    }

    /// Checks every length against P and D (a saved state of another run is refused).
    pub(crate) fn check_shape(&self, chains: usize, dim: usize) -> Result<(), String> {
        let pairs = chains.saturating_sub(1);
        let want = [
            ("states", self.states.len(), chains * dim),
            ("energies", self.energies.len(), chains),
            ("ladder", self.ladder.len(), chains),
            ("temperatures", self.temperatures.len(), chains),
            ("replica_at", self.replica_at.len(), chains),
            ("level_of", self.level_of.len(), chains),
            ("trips", self.trips.len(), chains),
            ("gates", self.gates.len(), pairs),
            ("flags", self.flags.len(), pairs),
            ("pair_stats", self.pair_stats.len(), pairs),
            ("scratch", self.scratch.len(), 2 * dim),
        ];
        for (name, got, expected) in want {
            if got != expected {
                return Err(format!(
                    "{name} holds {got} values, the run needs {expected}"
                ));
            }
        }
        if !(self.momenta.is_empty() || self.momenta.len() == chains * dim) {
            return Err(format!("momenta hold {} values", self.momenta.len()));
        }
        Ok(())
    }

    /// Learning rate of each level.
    pub fn ladder(&self) -> &[f64] {
        &self.ladder
    }

    /// Counts of each pair.
    pub fn pair_stats(&self) -> &[PairStats] {
        &self.pair_stats
    }

    /// The state at each level (replica `replica_at[l]`), level by level, for
    /// states of `len / P` coordinates.
    pub fn levels(&self, chains: usize) -> Vec<F> {
        let dim = self.states.len() / chains.max(1);
        self.replica_at
            .iter()
            .flat_map(|&r| {
                let r = r as usize;
                self.states
                    .get(r * dim..(r + 1) * dim)
                    .unwrap_or(&[])
                    .iter()
                    .copied()
            })
            .collect()
    }

    /// The states (P·D), to set before lending them with `InitialStates::Keep`.
    pub fn states_mut(&mut self) -> &mut [F] {
        &mut self.states
    }

    /// The slices nrpt-core's driver works on.
    pub fn lend(&mut self) -> Buffers<'_, F> {
        Buffers {
            states: &mut self.states,
            momenta: &mut self.momenta,
            energies: &mut self.energies,
            ladder: &mut self.ladder,
            temperatures: &mut self.temperatures,
            replica_at: &mut self.replica_at,
            level_of: &mut self.level_of,
            trips: &mut self.trips,
            gates: &mut self.gates,
            flags: &mut self.flags,
            pair_stats: &mut self.pair_stats,
            scratch: &mut self.scratch,
        }
    }
}
