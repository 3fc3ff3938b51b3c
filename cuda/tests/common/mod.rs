//! What the CUDA test files share: owned buffers for a CPU run of nrpt-core's driver.

use nrpt_core::driver::Buffers;
use nrpt_core::index::PairStats;

/// Every buffer of one ensemble of P replicas in D dimensions, lent to the driver as
/// `Buffers`.
pub struct OwnedStorage {
    states: Vec<f32>,
    momenta: Vec<f32>,
    energies: Vec<f32>,
    ladder: Vec<f64>,
    temperatures: Vec<f64>,
    replica_at: Vec<u32>,
    level_of: Vec<u32>,
    trips: Vec<u8>,
    gates: Vec<bool>,
    flags: Vec<u8>,
    pair_stats: Vec<PairStats>,
    scratch: Vec<f32>,
}

impl OwnedStorage {
    /// Buffers for P ≥ 2 replicas of dimension D (momenta only when asked for).
    pub fn new(p: usize, d: usize, momentum: bool) -> Self {
        OwnedStorage {
            states: vec![0.0; p * d],
            momenta: vec![0.0; if momentum { p * d } else { 0 }],
            energies: vec![0.0; p],
            ladder: vec![0.0; p],
            temperatures: vec![0.0; p],
            replica_at: vec![0; p],
            level_of: vec![0; p],
            trips: vec![0; p],
            gates: vec![false; p - 1],
            flags: vec![0; p - 1],
            pair_stats: vec![PairStats::default(); p - 1],
            scratch: vec![0.0; 2 * d],
        }
    }

    /// The slices nrpt-core's driver works on.
    pub fn buffers(&mut self) -> Buffers<'_, f32> {
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
