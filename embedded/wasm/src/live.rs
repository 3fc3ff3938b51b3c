//! Live runs for the browser page (`embedded/web`): the paper's 2D experiment with any P
//! up to [`MAX_CHAINS`], any target swap rate, window and seed, and the paper's or the
//! authors' rules, stepped a slice at a time so that the page can draw between slices.
//!
//! A run is ensemble 0 of `nrpt run --target modes2d --ensembles 1` with the same
//! flags: the same options (built here as the command builds them), the same
//! nrpt-core driver, hence the same bits. Two runs live side by side in two slots, so
//! that the page can compare two windows.
//!
//! The run's buffers are statics; each slice resumes the run from them with
//! [`Tempering::resume`] (which continues with the bits of an uninterrupted run) and
//! records, for every iteration, the target-level state and the level of every replica
//! in the slot's trace, which the page reads from the module's memory.

use core::cell::UnsafeCell;

use nrpt_core::Tempering;
use nrpt_core::driver::{Buffers, Progress, TemperingOptions};
use nrpt_core::index::{IndexStats, PairStats, TripState};
use nrpt_core::rules::Rules;
use nrpt_core::target::{Modes2d, Noisy};
use nrpt_core::window::Scheme;
use toyrun::Fnv1a64;

/// Most chains of a live run (levels fit in a byte of the trace).
pub const MAX_CHAINS: usize = 256;
/// Most iterations of one slice (`live_step`), the length of the trace.
pub const TRACE_CAPACITY: usize = 4096;
/// Number of slots: runs that can live side by side.
pub const SLOTS: usize = 2;
/// Dimension of the 2D target.
const DIM: usize = 2;

/// What `live_start` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Status {
    /// The run started.
    Started = 0,
    /// The slot does not exist (at most [`SLOTS`]).
    NoSuchSlot = -1,
    /// Chains outside 2 ..= [`MAX_CHAINS`].
    Chains = -2,
    /// The target swap rate is not strictly between 0 and 1.
    SwapRate = -3,
    /// nrpt-core rejected the options (a window of 0, say).
    Options = -4,
    /// The rules are neither 0 (paper) nor 1 (the authors' code).
    Rules = -5,
    /// The authors' initial ladder, rounded to 3 decimals, is not strictly increasing
    /// for this P (two levels would share a learning rate: from P = 28 on).
    RoundedLadder = -6,
}

/// The rules of a live run: the two presets of `nrpt run --preset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// The paper's rules (`--preset paper`).
    Paper,
    /// The authors' 2D notebook (`--preset authors-code`); the page runs iterations
    /// 0 … N, one more than asked, as the command does.
    AuthorsCode,
}

/// The options `nrpt run --target modes2d` builds for these flags (`--chains`, which
/// only the buffers see, aside): the paper's toy settings with the given window
/// (`None`: SEO), target swap rate, rules and seed.
pub fn options(swap_rate: f64, window: Option<u32>, preset: Preset, seed: u32) -> TemperingOptions {
    let defaults = TemperingOptions::default();
    TemperingOptions {
        scheme: match window {
            Some(window) => Scheme::Deo { window },
            None => Scheme::Seo,
        },
        adapt: nrpt_core::adapt::AdaptOptions {
            target_swap_rate: swap_rate,
            ..defaults.adapt
        },
        rules: match preset {
            Preset::Paper => Rules::PAPER,
            Preset::AuthorsCode => Rules::AUTHORS_CODE,
        },
        seed,
        ..defaults
    }
}

/// The oracle: the 25-mode target behind the paper's noise (scale 2).
fn oracle() -> Noisy<Modes2d> {
    Noisy::paper(Modes2d)
}

/// The buffers of a run, at their largest (P = [`MAX_CHAINS`]).
struct Arrays {
    states: [f32; MAX_CHAINS * DIM],
    energies: [f32; MAX_CHAINS],
    ladder: [f64; MAX_CHAINS],
    temperatures: [f64; MAX_CHAINS],
    replica_at: [u32; MAX_CHAINS],
    level_of: [u32; MAX_CHAINS],
    trips: [TripState; MAX_CHAINS],
    gates: [bool; MAX_CHAINS],
    flags: [u8; MAX_CHAINS],
    pair_stats: [PairStats; MAX_CHAINS],
    scratch: [f32; 2 * DIM],
}

impl Arrays {
    /// All zero.
    const EMPTY: Arrays = Arrays {
        states: [0.0; MAX_CHAINS * DIM],
        energies: [0.0; MAX_CHAINS],
        ladder: [0.0; MAX_CHAINS],
        temperatures: [0.0; MAX_CHAINS],
        replica_at: [0; MAX_CHAINS],
        level_of: [0; MAX_CHAINS],
        trips: [0; MAX_CHAINS],
        gates: [false; MAX_CHAINS],
        flags: [0; MAX_CHAINS],
        pair_stats: [EMPTY_PAIR; MAX_CHAINS],
        scratch: [0.0; 2 * DIM],
    };

    /// The buffers of a run of `p` chains (SGD explorers: no momenta).
    fn buffers(&mut self, p: usize) -> Buffers<'_, f32> {
        Buffers {
            states: &mut self.states[..p * DIM],
            momenta: &mut [],
            energies: &mut self.energies[..p],
            ladder: &mut self.ladder[..p],
            temperatures: &mut self.temperatures[..p],
            replica_at: &mut self.replica_at[..p],
            level_of: &mut self.level_of[..p],
            trips: &mut self.trips[..p],
            gates: &mut self.gates[..p - 1],
            flags: &mut self.flags[..p - 1],
            pair_stats: &mut self.pair_stats[..p - 1],
            scratch: &mut self.scratch,
        }
    }
}

/// What a live run was started with: all it needs to build its options again.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Config {
    swap_rate: f64,
    /// DEO window in iterations, 0 for SEO.
    window: u32,
    /// 1 for the authors' code, else the paper's rules.
    authors: bool,
    seed: u32,
}

impl Config {
    fn options(self) -> TemperingOptions {
        let preset = if self.authors {
            Preset::AuthorsCode
        } else {
            Preset::Paper
        };
        options(
            self.swap_rate,
            (self.window > 0).then_some(self.window),
            preset,
            self.seed,
        )
    }
}

/// One live run: its configuration, its progress and every buffer, at their largest.
///
/// Everything is zero before a run starts, so that the statics take no bytes in the
/// module (an `Option<TemperingOptions>` would not be: its `None` is a non-zero niche).
struct Run {
    /// Whether a run was started (and `config` holds it).
    started: bool,
    config: Config,
    chains: usize,
    progress: Progress,
    /// The driver's buffers.
    arrays: Arrays,
    /// FNV-1a of the bits of every target-level state, one per iteration (as toyrun);
    /// `None` before a run, so that the statics are all zero and take no bytes of the
    /// module.
    checksum: Option<Fnv1a64>,
    /// The last slice: target-level state after each iteration, `[i][d]`.
    trace_samples: [f32; TRACE_CAPACITY * DIM],
    /// The last slice: level of each replica after each iteration, `[i][replica]`.
    trace_levels: [u8; TRACE_CAPACITY * MAX_CHAINS],
}

const EMPTY_STATS: IndexStats = IndexStats {
    round_trips: 0,
    restarts: 0,
    authors_round_trips: 0,
    nonfinite_energies: 0,
};

const EMPTY_PAIR: PairStats = PairStats {
    indicators: 0,
    attempts: 0,
    swaps: 0,
    nonfinite: 0,
};

impl Run {
    /// No run (all zero, so that the statics need no data in the module).
    const EMPTY: Run = Run {
        started: false,
        config: Config {
            swap_rate: 0.0,
            window: 0,
            authors: false,
            seed: 0,
        },
        chains: 0,
        progress: Progress {
            iteration: 0,
            buffer: 0.0,
            stats: EMPTY_STATS,
        },
        arrays: Arrays::EMPTY,
        checksum: None,
        trace_samples: [0.0; TRACE_CAPACITY * DIM],
        trace_levels: [0; TRACE_CAPACITY * MAX_CHAINS],
    };

    /// Starts a run of `chains` chains with `config`.
    fn start(&mut self, chains: usize, config: Config) -> Status {
        self.started = false;
        let t = match Tempering::new(config.options(), oracle(), self.arrays.buffers(chains)) {
            Ok(t) => t,
            // nrpt-core names the initial ladder that rounding collapsed.
            Err(nrpt_core::Error::InvalidValue {
                name: "initial_ladder",
                ..
            }) => return Status::RoundedLadder,
            Err(_) => return Status::Options,
        };
        self.progress = t.progress();
        self.chains = chains;
        self.checksum = Some(Fnv1a64::new());
        self.config = config;
        self.started = true;
        Status::Started
    }

    /// Runs up to `n` iterations (at most [`TRACE_CAPACITY`]) and records them in the
    /// trace; returns how many ran.
    fn step(&mut self, n: usize) -> usize {
        if !self.started {
            return 0;
        }
        let options = self.config.options();
        let (p, progress) = (self.chains, self.progress);
        let n = n.min(TRACE_CAPACITY);
        let mut checksum = self.checksum.unwrap_or_default();
        // Split borrows: the trace is written while the buffers are lent to the driver.
        let Run {
            arrays,
            trace_samples,
            trace_levels,
            ..
        } = self;
        let buffers = arrays.buffers(p);
        // The buffers are those the run left, so resuming cannot fail; if it did, the
        // slice runs nothing and the page sees 0 iterations.
        let Ok(mut t) = Tempering::resume(options, oracle(), buffers, progress) else {
            return 0;
        };
        let mut done = 0;
        while done < n {
            // The noisy toy oracle cannot fail: its error type is `Infallible`.
            let Ok(_) = t.step();
            let x = t.target_state();
            for (d, v) in x.iter().enumerate() {
                trace_samples[done * DIM + d] = *v;
                checksum.write_u32(v.to_bits());
            }
            let row = &mut trace_levels[done * MAX_CHAINS..done * MAX_CHAINS + p];
            for (cell, level) in row.iter_mut().zip(t.storage().level_of()) {
                // Levels are below MAX_CHAINS = 256.
                *cell = *level as u8;
            }
            done += 1;
        }
        let progress = t.progress();
        self.progress = progress;
        self.checksum = Some(checksum);
        done
    }
}

/// The slots' storage.
struct Slots(UnsafeCell<[Run; SLOTS]>);

// SAFETY: a `wasm32-unknown-unknown` module without the `atomics` feature has a single
// thread, and every access goes through `with_run`, which never nests. Native tests
// serialise their access through `tests::LOCK`.
unsafe impl Sync for Slots {}

static RUNS: Slots = Slots(UnsafeCell::new([Run::EMPTY, Run::EMPTY]));

/// Runs `f` on the run in `slot`, or returns `none` for a slot that does not exist.
fn with_run<R>(slot: u32, none: R, f: impl FnOnce(&mut Run) -> R) -> R {
    // SAFETY: single-threaded (see `Slots`), and no caller re-enters `with_run` from
    // `f`, so this is the only reference to the slots while `f` runs.
    let runs = unsafe { &mut *RUNS.0.get() };
    match runs.get_mut(slot as usize) {
        Some(run) => f(run),
        None => none,
    }
}

/// Starts a run in `slot` (0 or 1), replacing what was there: `chains` chains (2 to
/// [`MAX_CHAINS`]), target swap rate `swap_rate`, DEO window `window` iterations (0:
/// SEO), `rules` 0 for the paper's or 1 for the authors' code, seed `seed`. Returns a
/// [`Status`] code: 0, or negative for what was wrong, and then the slot is empty.
#[unsafe(no_mangle)]
pub extern "C" fn live_start(
    slot: u32,
    chains: u32,
    swap_rate: f64,
    window: u32,
    rules: u32,
    seed: u32,
) -> i32 {
    let chains = chains as usize;
    let checked = if !(2..=MAX_CHAINS).contains(&chains) {
        Err(Status::Chains)
    } else if !(swap_rate > 0.0 && swap_rate < 1.0) {
        Err(Status::SwapRate)
    } else if rules > 1 {
        Err(Status::Rules)
    } else {
        Ok(Config {
            swap_rate,
            window,
            authors: rules == 1,
            seed,
        })
    };
    with_run(slot, Status::NoSuchSlot as i32, |run| match checked {
        Ok(config) => run.start(chains, config) as i32,
        Err(status) => {
            // A refused start leaves the slot empty, as a refused options check does.
            run.started = false;
            status as i32
        }
    })
}

/// Runs up to `iterations` iterations (at most [`TRACE_CAPACITY`]) of the run in
/// `slot`; returns how many ran (0 without a run). Their target-level states and
/// replica levels are then in the trace (`live_trace_samples`, `live_trace_levels`).
#[unsafe(no_mangle)]
pub extern "C" fn live_step(slot: u32, iterations: u32) -> u32 {
    with_run(slot, 0, |run| run.step(iterations as usize) as u32)
}

/// Address of the last slice's target-level states: f32 pairs (x, y), one per
/// iteration.
#[unsafe(no_mangle)]
pub extern "C" fn live_trace_samples(slot: u32) -> *const f32 {
    with_run(slot, core::ptr::null(), |run| run.trace_samples.as_ptr())
}

/// Address of the last slice's replica levels: one row of [`MAX_CHAINS`] bytes per
/// iteration, the first `chains` of which are the levels of replicas 0, 1, ….
#[unsafe(no_mangle)]
pub extern "C" fn live_trace_levels(slot: u32) -> *const u8 {
    with_run(slot, core::ptr::null(), |run| run.trace_levels.as_ptr())
}

/// Address of the current states, replica-major f32 pairs (x, y).
#[unsafe(no_mangle)]
pub extern "C" fn live_states(slot: u32) -> *const f32 {
    with_run(slot, core::ptr::null(), |run| run.arrays.states.as_ptr())
}

/// Address of the current level of each replica (u32).
#[unsafe(no_mangle)]
pub extern "C" fn live_levels(slot: u32) -> *const u32 {
    with_run(slot, core::ptr::null(), |run| run.arrays.level_of.as_ptr())
}

/// Row length of `live_trace_levels` ([`MAX_CHAINS`]).
#[unsafe(no_mangle)]
pub extern "C" fn live_max_chains() -> u32 {
    MAX_CHAINS as u32
}

/// Most iterations of one `live_step` ([`TRACE_CAPACITY`]).
#[unsafe(no_mangle)]
pub extern "C" fn live_trace_capacity() -> u32 {
    TRACE_CAPACITY as u32
}

/// Chains of the run in `slot` (0 without a run).
#[unsafe(no_mangle)]
pub extern "C" fn live_chains(slot: u32) -> u32 {
    with_run(
        slot,
        0,
        |run| {
            if run.started { run.chains as u32 } else { 0 }
        },
    )
}

/// Iterations done. Counts are f64, exact below 2⁵³, so that the page reads numbers.
#[unsafe(no_mangle)]
pub extern "C" fn live_iteration(slot: u32) -> f64 {
    with_run(slot, f64::NAN, |run| run.progress.iteration as f64)
}

/// Standard round trips so far.
#[unsafe(no_mangle)]
pub extern "C" fn live_round_trips(slot: u32) -> f64 {
    with_run(slot, f64::NAN, |run| run.progress.stats.round_trips as f64)
}

/// Round trips in the authors' counting so far.
#[unsafe(no_mangle)]
pub extern "C" fn live_authors_round_trips(slot: u32) -> f64 {
    with_run(slot, f64::NAN, |run| {
        run.progress.stats.authors_round_trips as f64
    })
}

/// Restarts (arrivals at level 0 from the top) so far.
#[unsafe(no_mangle)]
pub extern "C" fn live_restarts(slot: u32) -> f64 {
    with_run(slot, f64::NAN, |run| run.progress.stats.restarts as f64)
}

/// The correction buffer C.
#[unsafe(no_mangle)]
pub extern "C" fn live_buffer(slot: u32) -> f64 {
    with_run(slot, f64::NAN, |run| run.progress.buffer)
}

/// The counts of pair (`pair`, `pair + 1`), NaN out of range.
fn pair(slot: u32, pair: u32, field: impl FnOnce(&PairStats) -> u64) -> f64 {
    with_run(slot, f64::NAN, |run| {
        let pairs = run.chains.saturating_sub(1);
        run.arrays.pair_stats[..pairs]
            .get(pair as usize)
            .map_or(f64::NAN, |s| field(s) as f64)
    })
}

/// Swaps executed by pair (`pair`, `pair + 1`); NaN out of range.
#[unsafe(no_mangle)]
pub extern "C" fn live_swaps(slot: u32, index: u32) -> f64 {
    pair(slot, index, |s| s.swaps)
}

/// Iterations in which pair (`pair`, `pair + 1`) had its swap indicator at 1.
#[unsafe(no_mangle)]
pub extern "C" fn live_indicators(slot: u32, index: u32) -> f64 {
    pair(slot, index, |s| s.indicators)
}

/// Swap attempts (open gate, pair's turn) of pair (`pair`, `pair + 1`).
#[unsafe(no_mangle)]
pub extern "C" fn live_attempts(slot: u32, index: u32) -> f64 {
    pair(slot, index, |s| s.attempts)
}

/// Learning rate of `level`; NaN out of range.
#[unsafe(no_mangle)]
pub extern "C" fn live_ladder(slot: u32, level: u32) -> f64 {
    with_run(slot, f64::NAN, |run| {
        run.arrays.ladder[..run.chains]
            .get(level as usize)
            .copied()
            .unwrap_or(f64::NAN)
    })
}

/// FNV-1a (64 bits) of the bit patterns of every target-level state of the run, one
/// per iteration, x then y, as toyrun's checksum.
#[unsafe(no_mangle)]
pub extern "C" fn live_checksum(slot: u32) -> u64 {
    with_run(slot, 0, |run| run.checksum.map_or(0, Fnv1a64::finish))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// The slots are one static: the tests take turns.
    pub(crate) static LOCK: Mutex<()> = Mutex::new(());

    /// A live run of P = 16 with the paper's window in slices of odd sizes is the toy
    /// run of every platform, bit for bit.
    #[test]
    fn a_live_run_in_slices_is_the_toy_run() {
        let _turn = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let want = toyrun::run(toyrun::SEED, 2000).expect("the defaults are valid");
        assert_eq!(live_start(1, 16, 0.4, 8, 0, toyrun::SEED), 0);
        let mut done = 0;
        for n in [1u32, 999, 7, 993] {
            done += live_step(1, n);
        }
        assert_eq!(done, 2000);
        assert_eq!(live_iteration(1), 2000.0);
        assert_eq!(live_round_trips(1), want.stats.round_trips as f64);
        assert_eq!(
            live_authors_round_trips(1),
            want.stats.authors_round_trips as f64
        );
        assert_eq!(live_restarts(1), want.stats.restarts as f64);
        assert_eq!(live_checksum(1), want.checksum);
        assert_eq!(live_buffer(1).to_bits(), want.buffer.to_bits());
        for (l, eta) in want.ladder.iter().enumerate() {
            assert_eq!(
                live_ladder(1, l as u32).to_bits(),
                eta.to_bits(),
                "level {l}"
            );
        }
        for (i, p) in want.pairs.iter().enumerate() {
            assert_eq!(live_swaps(1, i as u32), p.swaps as f64);
            assert_eq!(live_attempts(1, i as u32), p.attempts as f64);
            assert_eq!(live_indicators(1, i as u32), p.indicators as f64);
        }
        assert!(live_swaps(1, 15).is_nan());
        assert!(live_ladder(1, 16).is_nan());
        // The trace holds the last slice: its final state is the run's.
        let last = (993 - 1) * DIM;
        let trace = unsafe { core::slice::from_raw_parts(live_trace_samples(1), 993 * DIM) };
        assert_eq!(trace[last].to_bits(), want.final_target[0].to_bits());
        assert_eq!(trace[last + 1].to_bits(), want.final_target[1].to_bits());
    }

    /// The levels of the trace are a permutation at every iteration, and the last row
    /// is the run's.
    #[test]
    fn trace_levels_are_permutations() {
        let _turn = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(live_start(0, 40, 0.3, 1, 0, 7), 0);
        let n = live_step(0, 300) as usize;
        assert_eq!(n, 300);
        let rows = unsafe { core::slice::from_raw_parts(live_trace_levels(0), n * MAX_CHAINS) };
        for row in rows.chunks(MAX_CHAINS) {
            let mut seen = [false; 40];
            for &l in &row[..40] {
                assert!(!seen[l as usize]);
                seen[l as usize] = true;
            }
        }
        let now = unsafe { core::slice::from_raw_parts(live_levels(0), 40) };
        let last = &rows[(n - 1) * MAX_CHAINS..(n - 1) * MAX_CHAINS + 40];
        assert!(now.iter().zip(last).all(|(a, b)| *a == u32::from(*b)));
    }

    #[test]
    fn bad_input_is_refused_with_its_code() {
        let _turn = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(live_start(2, 16, 0.4, 8, 0, 1), Status::NoSuchSlot as i32);
        assert_eq!(live_start(0, 1, 0.4, 8, 0, 1), Status::Chains as i32);
        assert_eq!(live_start(0, 257, 0.4, 8, 0, 1), Status::Chains as i32);
        assert_eq!(live_start(0, 16, 1.0, 8, 0, 1), Status::SwapRate as i32);
        assert_eq!(
            live_start(0, 16, f64::NAN, 8, 0, 1),
            Status::SwapRate as i32
        );
        assert_eq!(live_start(0, 16, 0.4, 8, 2, 1), Status::Rules as i32);
        assert_eq!(live_start(0, 27, 0.4, 8, 1, 1), 0);
        assert_eq!(
            live_start(0, 28, 0.4, 8, 1, 1),
            Status::RoundedLadder as i32
        );
        assert_eq!(
            live_start(0, 40, 0.4, 8, 1, 1),
            Status::RoundedLadder as i32
        );
        // A refused start leaves no run: stepping does nothing.
        assert_eq!(live_step(0, 10), 0);
        assert_eq!(live_chains(0), 0);
        assert_eq!(live_step(5, 10), 0);
        assert!(live_iteration(5).is_nan());
        // SEO and the largest P run.
        assert_eq!(live_start(0, 256, 0.4, 0, 0, 1), 0);
        assert_eq!(live_step(0, 5000), TRACE_CAPACITY as u32);
    }
}
