//! Owned buffers of one ensemble, lent to nrpt-core's driver as slices.

use nrpt_core::Float;
use nrpt_core::driver::Buffers;
use nrpt_core::index::{PairStats, TripState};

/// Every buffer of one ensemble of P replicas in D dimensions, allocated once.
#[derive(Clone, Debug)]
pub struct EnsembleBuffers<F> {
    states: Vec<F>,
    momenta: Vec<F>,
    energies: Vec<F>,
    ladder: Vec<f64>,
    temperatures: Vec<f64>,
    replica_at: Vec<u32>,
    level_of: Vec<u32>,
    trips: Vec<TripState>,
    gates: Vec<bool>,
    flags: Vec<u8>,
    pair_stats: Vec<PairStats>,
    scratch: Vec<F>,
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
