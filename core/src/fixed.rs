//! A tempering run that owns fixed-size arrays: P chains in D dimensions known at
//! compile time, no allocator and no borrowed buffers (for a microcontroller, say).

use crate::driver::{Engine, IterationReport, Storage, TemperingOptions};
use crate::error::Error;
use crate::index::{IndexStats, PairStats, TripState};
use crate::rng::UnitDraw;
use crate::target::EnergyOracle;

/// P replicas of dimension D in arrays: about `P·(3D + 2)·size_of::<F>() + 40·P`
/// bytes (P = 16, D = 2, f32: under 2 KiB).
///
/// Pair arrays have length P (the last entry is unused) because stable Rust cannot yet
/// write `P − 1` as an array length.
#[derive(Clone, Debug)]
pub struct FixedTempering<F: UnitDraw, O: EnergyOracle<F>, const P: usize, const D: usize> {
    engine: Engine<O, O::Error>,
    states: [[F; D]; P],
    momenta: [[F; D]; P],
    energies: [F; P],
    ladder: [f64; P],
    temperatures: [f64; P],
    replica_at: [u32; P],
    level_of: [u32; P],
    trips: [TripState; P],
    gates: [bool; P],
    flags: [u8; P],
    pair_stats: [PairStats; P],
    scratch: [[F; D]; 2],
}

macro_rules! storage {
    ($s:expr) => {
        Storage {
            states: $s.states.as_flattened_mut(),
            momenta: $s.momenta.as_flattened_mut(),
            energies: &mut $s.energies,
            ladder: &mut $s.ladder,
            temperatures: &mut $s.temperatures,
            replica_at: &mut $s.replica_at,
            level_of: &mut $s.level_of,
            trips: &mut $s.trips,
            gates: &mut $s.gates[..P - 1],
            flags: &mut $s.flags[..P - 1],
            pair_stats: &mut $s.pair_stats[..P - 1],
            scratch: $s.scratch.as_flattened_mut(),
            dim: D,
        }
    };
}

impl<F: UnitDraw, O: EnergyOracle<F>, const P: usize, const D: usize> FixedTempering<F, O, P, D> {
    /// Checks the options (and that the oracle's dimension is D) and initializes.
    pub fn new(options: TemperingOptions, oracle: O) -> Result<Self, Error> {
        const { assert!(P >= 2, "tempering needs at least 2 chains") };
        const { assert!(D >= 1, "states need at least one dimension") };
        if oracle.dim() != D {
            return Err(Error::LengthMismatch {
                name: "oracle dimension",
                expected: D,
                found: oracle.dim(),
            });
        }
        let mut s = Self {
            // Placeholder engine, replaced below once the arrays exist.
            engine: Engine {
                options,
                oracle,
                iteration: 0,
                buffer: 0.0,
                stats: IndexStats::default(),
                failure: None,
            },
            states: [[F::ZERO; D]; P],
            momenta: [[F::ZERO; D]; P],
            energies: [F::ZERO; P],
            ladder: [0.0; P],
            temperatures: [0.0; P],
            replica_at: [0; P],
            level_of: [0; P],
            trips: [0; P],
            gates: [true; P],
            flags: [0; P],
            pair_stats: [PairStats::default(); P],
            scratch: [[F::ZERO; D]; 2],
        };
        let Engine { oracle, .. } = s.engine;
        let mut st = storage!(s);
        s.engine = Engine::start(options, oracle, &mut st)?;
        Ok(s)
    }

    /// Runs one iteration.
    pub fn step(&mut self) -> Result<IterationReport, O::Error> {
        let mut st = storage!(self);
        self.engine.iterate(&mut st)
    }

    /// The state of the replica at level 0 (the target).
    pub fn target_state(&self) -> &[F; D] {
        // replica_at holds a permutation of 0 .. P, kept by the driver.
        &self.states[self.replica_at[0] as usize % P]
    }

    /// State of replica `replica`, or `None` if `replica ≥ P`.
    pub fn state(&self, replica: usize) -> Option<&[F; D]> {
        self.states.get(replica)
    }

    /// Learning rate of each level.
    pub fn ladder(&self) -> &[f64; P] {
        &self.ladder
    }

    /// Temperature of each level.
    pub fn temperatures(&self) -> &[f64; P] {
        &self.temperatures
    }

    /// Energy of the replica at each level, as of the last iteration.
    pub fn energies(&self) -> &[F; P] {
        &self.energies
    }

    /// Replica at each level.
    pub fn replica_at(&self) -> &[u32; P] {
        &self.replica_at
    }

    /// Level of each replica.
    pub fn level_of(&self) -> &[u32; P] {
        &self.level_of
    }

    /// Counts of each adjacent pair (P − 1 of them).
    pub fn pair_stats(&self) -> &[PairStats] {
        &self.pair_stats[..P - 1]
    }

    /// Iterations done.
    pub fn iteration(&self) -> u64 {
        self.engine.iteration
    }

    /// Current correction buffer C.
    pub fn buffer(&self) -> f64 {
        self.engine.buffer
    }

    /// Round trips, restarts and non-finite counts so far.
    pub fn stats(&self) -> IndexStats {
        self.engine.stats
    }

    /// The validated options.
    pub fn options(&self) -> &TemperingOptions {
        &self.engine.options
    }

    /// The error that stopped the run, if the oracle failed mid-iteration.
    pub fn failure(&self) -> Option<&O::Error> {
        self.engine.failure.as_ref()
    }
}
