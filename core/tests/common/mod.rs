//! What the core's test files share: owned buffers to lend to the driver, to the
//! controller and to exact tempering.
#![allow(dead_code)] // each test file uses its own part

use nrpt_core::Float;
use nrpt_core::driver::{Buffers, ControllerBuffers};
use nrpt_core::exact::{ExactBuffers, LevelRecord, PairRecord};
use nrpt_core::index::{PairStats, TripState};

/// Owned buffers of a driver run of P replicas in D dimensions.
pub struct Owned<F> {
    pub states: Vec<F>,
    pub momenta: Vec<F>,
    pub energies: Vec<F>,
    pub ladder: Vec<f64>,
    pub temperatures: Vec<f64>,
    pub replica_at: Vec<u32>,
    pub level_of: Vec<u32>,
    pub trips: Vec<TripState>,
    pub gates: Vec<bool>,
    pub flags: Vec<u8>,
    pub pair_stats: Vec<PairStats>,
    pub scratch: Vec<F>,
}

impl<F: Float> Owned<F> {
    /// Every buffer of the right length, zeroed.
    pub fn new(p: usize, d: usize) -> Self {
        let mut b = Self::with_offsets(p, d, &[0; 12], F::ZERO);
        b.ladder.fill(0.0);
        b.temperatures.fill(0.0);
        b.replica_at.fill(0);
        b.level_of.fill(0);
        b
    }

    /// Every length off by `delta[i]` (in the order of the fields), the states,
    /// momenta, energies and scratch filled with `fill` and the rest with junk that
    /// the driver must overwrite.
    pub fn with_offsets(p: usize, d: usize, delta: &[i8; 12], fill: F) -> Self {
        let len = |n: usize, i: usize| (n as isize + isize::from(delta[i])).max(0) as usize;
        let pairs = p.saturating_sub(1);
        Owned {
            states: vec![fill; len(p * d, 0)],
            momenta: vec![fill; len(p * d, 1)],
            energies: vec![fill; len(p, 2)],
            ladder: vec![0.5; len(p, 3)],
            temperatures: vec![0.5; len(p, 4)],
            replica_at: vec![7; len(p, 5)],
            level_of: vec![9; len(p, 6)],
            trips: vec![0; len(p, 7)],
            gates: vec![false; len(pairs, 8)],
            flags: vec![0; len(pairs, 9)],
            pair_stats: vec![PairStats::default(); len(pairs, 10)],
            scratch: vec![fill; len(2 * d, 11)],
        }
    }

    /// The buffers, lent to the driver.
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

/// Owned buffers of a controller of P replicas.
pub struct OwnedController<F> {
    pub energies: Vec<F>,
    pub ladder: Vec<f64>,
    pub temperatures: Vec<f64>,
    pub replica_at: Vec<u32>,
    pub level_of: Vec<u32>,
    pub trips: Vec<TripState>,
    pub gates: Vec<bool>,
    pub flags: Vec<u8>,
    pub pair_stats: Vec<PairStats>,
}

impl<F: Float> OwnedController<F> {
    /// Every buffer of the right length, zeroed.
    pub fn new(p: usize) -> Self {
        let pairs = p.saturating_sub(1);
        OwnedController {
            energies: vec![F::ZERO; p],
            ladder: vec![0.0; p],
            temperatures: vec![0.0; p],
            replica_at: vec![0; p],
            level_of: vec![0; p],
            trips: vec![0; p],
            gates: vec![false; pairs],
            flags: vec![0; pairs],
            pair_stats: vec![PairStats::default(); pairs],
        }
    }

    /// The buffers, lent to a controller.
    pub fn lend(&mut self) -> ControllerBuffers<'_, F> {
        ControllerBuffers {
            energies: &mut self.energies,
            ladder: &mut self.ladder,
            temperatures: &mut self.temperatures,
            replica_at: &mut self.replica_at,
            level_of: &mut self.level_of,
            trips: &mut self.trips,
            gates: &mut self.gates,
            flags: &mut self.flags,
            pair_stats: &mut self.pair_stats,
        }
    }
}

/// Owned buffers of an exact tempering run of P replicas in D dimensions.
#[derive(Clone, Debug)]
pub struct ExactOwned {
    pub states: Vec<f64>,
    pub ells: Vec<f64>,
    pub betas: Vec<f64>,
    pub levels: Vec<LevelRecord>,
    pub at: Vec<u32>,
    pub of: Vec<u32>,
    pub trips: Vec<u8>,
    pub gates: Vec<bool>,
    pub flags: Vec<u8>,
    pub pairs: Vec<PairRecord>,
    pub knots: Vec<f64>,
    pub values: Vec<f64>,
    pub scratch: Vec<f64>,
}

impl ExactOwned {
    /// Buffers for MALA (scratch 4·D).
    pub fn new(p: usize, d: usize) -> Self {
        Self::with_scratch(p, d, 4)
    }

    /// Buffers for HMC (scratch 5·D).
    pub fn hmc(p: usize, d: usize) -> Self {
        Self::with_scratch(p, d, nrpt_core::exact::HMC_SCRATCH_VECTORS)
    }

    /// Buffers of a run told its log-likelihoods (no states, no scratch).
    pub fn told(p: usize) -> Self {
        Self::with_scratch(p, 0, 0)
    }

    pub fn with_scratch(p: usize, d: usize, vectors: usize) -> Self {
        ExactOwned {
            states: vec![0.0; p * d],
            ells: vec![0.0; p],
            betas: vec![0.0; p],
            levels: vec![LevelRecord::default(); p],
            at: vec![0; p],
            of: vec![0; p],
            trips: vec![0; p],
            gates: vec![false; p.saturating_sub(1)],
            flags: vec![0; p.saturating_sub(1)],
            pairs: vec![PairRecord::default(); p.saturating_sub(1)],
            knots: vec![0.0; p],
            values: vec![0.0; p],
            scratch: vec![0.0; vectors * d],
        }
    }

    pub fn buffers(&mut self) -> ExactBuffers<'_> {
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
