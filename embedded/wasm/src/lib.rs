//! nrpt-core as a WebAssembly module with plain C-ABI exports, no wasm-bindgen.
//!
//! Solver (pure functions; NaN or 0 signals invalid input):
//!
//! | export | returns |
//! |---|---|
//! | `nrpt_w_star(chains: u32, swap_rate: f64) -> f64` | [`optimal::w_star`], NaN on error |
//! | `nrpt_optimal_window(chains: u32, swap_rate: f64) -> u32` | [`optimal::optimal_window`], 0 on error |
//! | `nrpt_paper_window(chains: u32, swap_rate: f64) -> u32` | [`optimal::paper_window`], 0 on error |
//! | `nrpt_expected_round_trip(chains: u32, window: f64, swap_rate: f64) -> f64` | [`optimal::expected_round_trip`], NaN on error |
//! | `nrpt_round_trip_rate(chains: u32, window: f64, swap_rate: f64) -> f64` | [`optimal::round_trip_rate`], NaN on error |
//!
//! Toy tempering run (P = 16, D = 2, f32, the paper's settings; see [`toyrun`]):
//! `toy_run(seed: u32, iterations: u32) -> u32` runs it, keeps the summary and its text
//! report, and returns the report's length in bytes (0 on failure);
//! `toy_report_ptr() -> *const u8` is where the report lies in the module's memory.
//! The summary's numbers: `toy_round_trips`, `toy_authors_round_trips`,
//! `toy_restarts`, `toy_checksum` (u64, BigInt in JavaScript), `toy_swaps(pair)`,
//! `toy_attempts(pair)` (u64, `u64::MAX` for a pair out of range), `toy_ladder(level)`
//! (f64, NaN out of range) and `toy_buffer()`.
//!
//! Live runs for the browser page (`embedded/web`): `live_start`, `live_step` and their
//! read-outs, in [`live`].
#![cfg_attr(all(target_arch = "wasm32", not(test)), no_std)]
#![deny(missing_docs)]

use core::cell::UnsafeCell;

use nrpt_core::optimal;
use toyrun::{REPORT_CAPACITY, Summary, TextBuf};

pub mod live;

/// The last toy run: its summary and its report.
struct Last {
    summary: Summary,
    report: TextBuf<REPORT_CAPACITY>,
}

/// Module-global storage for the last toy run.
struct Slot(UnsafeCell<Last>);

// SAFETY: a `wasm32-unknown-unknown` module without the `atomics` feature has a single
// thread, and every access goes through `with_last`, which never nests.
unsafe impl Sync for Slot {}

static LAST: Slot = Slot(UnsafeCell::new(Last {
    summary: Summary::EMPTY,
    report: TextBuf::new(),
}));

/// Runs `f` on the last toy run.
fn with_last<R>(f: impl FnOnce(&mut Last) -> R) -> R {
    // SAFETY: single-threaded (see `Slot`), and no caller re-enters `with_last` from
    // `f`, so this is the only reference to the slot while `f` runs.
    f(unsafe { &mut *LAST.0.get() })
}

/// [`optimal::w_star`], NaN on error.
#[unsafe(no_mangle)]
pub extern "C" fn nrpt_w_star(chains: u32, swap_rate: f64) -> f64 {
    optimal::w_star(chains as usize, swap_rate).unwrap_or(f64::NAN)
}

/// [`optimal::optimal_window`], 0 on error.
#[unsafe(no_mangle)]
pub extern "C" fn nrpt_optimal_window(chains: u32, swap_rate: f64) -> u32 {
    optimal::optimal_window(chains as usize, swap_rate).unwrap_or(0)
}

/// [`optimal::paper_window`], 0 on error.
#[unsafe(no_mangle)]
pub extern "C" fn nrpt_paper_window(chains: u32, swap_rate: f64) -> u32 {
    optimal::paper_window(chains as usize, swap_rate).unwrap_or(0)
}

/// [`optimal::expected_round_trip`], NaN on error.
#[unsafe(no_mangle)]
pub extern "C" fn nrpt_expected_round_trip(chains: u32, window: f64, swap_rate: f64) -> f64 {
    optimal::expected_round_trip(chains as usize, window, swap_rate).unwrap_or(f64::NAN)
}

/// [`optimal::round_trip_rate`], NaN on error.
#[unsafe(no_mangle)]
pub extern "C" fn nrpt_round_trip_rate(chains: u32, window: f64, swap_rate: f64) -> f64 {
    optimal::round_trip_rate(chains as usize, window, swap_rate).unwrap_or(f64::NAN)
}

/// Runs the toy (see [`toyrun::run`]) and keeps its summary and report; returns the
/// report's length in bytes, 0 on failure.
#[unsafe(no_mangle)]
pub extern "C" fn toy_run(seed: u32, iterations: u32) -> u32 {
    let Ok(summary) = toyrun::run(seed, u64::from(iterations)) else {
        return 0;
    };
    with_last(|last| {
        last.summary = summary;
        last.report.clear();
        match toyrun::write_report(&mut last.report, &summary) {
            Ok(()) => last.report.as_bytes().len() as u32,
            Err(_) => 0,
        }
    })
}

/// Address of the last report in the module's memory (UTF-8, `toy_run`'s length).
#[unsafe(no_mangle)]
pub extern "C" fn toy_report_ptr() -> *const u8 {
    with_last(|last| last.report.as_bytes().as_ptr())
}

/// Round trips of the last run.
#[unsafe(no_mangle)]
pub extern "C" fn toy_round_trips() -> u64 {
    with_last(|last| last.summary.stats.round_trips)
}

/// Round trips of the last run in the authors' counting.
#[unsafe(no_mangle)]
pub extern "C" fn toy_authors_round_trips() -> u64 {
    with_last(|last| last.summary.stats.authors_round_trips)
}

/// Restarts of the last run.
#[unsafe(no_mangle)]
pub extern "C" fn toy_restarts() -> u64 {
    with_last(|last| last.summary.stats.restarts)
}

/// Checksum of the target-level samples of the last run.
#[unsafe(no_mangle)]
pub extern "C" fn toy_checksum() -> u64 {
    with_last(|last| last.summary.checksum)
}

/// Swaps of pair (`pair`, `pair + 1`) in the last run; `u64::MAX` out of range.
#[unsafe(no_mangle)]
pub extern "C" fn toy_swaps(pair: u32) -> u64 {
    with_last(|last| {
        last.summary
            .pairs
            .get(pair as usize)
            .map_or(u64::MAX, |p| p.swaps)
    })
}

/// Swap attempts of pair (`pair`, `pair + 1`) in the last run; `u64::MAX` out of range.
#[unsafe(no_mangle)]
pub extern "C" fn toy_attempts(pair: u32) -> u64 {
    with_last(|last| {
        last.summary
            .pairs
            .get(pair as usize)
            .map_or(u64::MAX, |p| p.attempts)
    })
}

/// Final learning rate of `level` in the last run; NaN out of range.
#[unsafe(no_mangle)]
pub extern "C" fn toy_ladder(level: u32) -> f64 {
    with_last(|last| {
        last.summary
            .ladder
            .get(level as usize)
            .copied()
            .unwrap_or(f64::NAN)
    })
}

/// Final correction buffer of the last run.
#[unsafe(no_mangle)]
pub extern "C" fn toy_buffer() -> f64 {
    with_last(|last| last.summary.buffer)
}

/// Line of the last panic's location (0 if none), for `nrpt_panic_line`.
#[cfg(all(target_arch = "wasm32", not(test)))]
static PANIC_LINE: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// Line in the Rust sources of the panic that trapped the module, 0 if none did.
#[cfg(all(target_arch = "wasm32", not(test)))]
#[unsafe(no_mangle)]
pub extern "C" fn nrpt_panic_line() -> u32 {
    PANIC_LINE.load(core::sync::atomic::Ordering::Relaxed)
}

/// Records the panic's line and traps (a panic cannot unwind out of a WebAssembly
/// module without std). The message is not formatted: that would link core's float
/// formatting, about 20 KiB, because `f64::clamp` in nrpt-core has a message that
/// prints floats.
#[cfg(all(target_arch = "wasm32", not(test)))]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let line = info.location().map_or(0, |at| at.line());
    PANIC_LINE.store(line, core::sync::atomic::Ordering::Relaxed);
    core::arch::wasm32::unreachable()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solver_exports_match_the_solver() {
        assert!((nrpt_w_star(16, 0.4) - 7.413_386_240_7).abs() < 1e-9);
        assert_eq!(nrpt_optimal_window(16, 0.4), 7);
        assert_eq!(nrpt_paper_window(16, 0.4), 8);
        assert!(nrpt_w_star(1, 0.4).is_nan());
        assert_eq!(nrpt_optimal_window(16, 1.5), 0);
        assert!(nrpt_expected_round_trip(16, 0.0, 0.4).is_nan());
    }

    #[test]
    fn toy_exports_match_the_toy_run() {
        let len = toy_run(toyrun::SEED, 300) as usize;
        assert!(len > 0);
        let summary = toyrun::run(toyrun::SEED, 300).expect("the defaults are valid");
        let mut text = String::new();
        toyrun::write_report(&mut text, &summary).expect("a String never fails");
        // SAFETY: the report buffer is a static that lives as long as the module, and
        // `toy_run` wrote `len` bytes of UTF-8 into it.
        let report = unsafe { core::slice::from_raw_parts(toy_report_ptr(), len) };
        assert_eq!(report, text.as_bytes());
        assert_eq!(toy_round_trips(), summary.stats.round_trips);
        assert_eq!(toy_checksum(), summary.checksum);
        assert_eq!(toy_swaps(0), summary.pairs[0].swaps);
        assert_eq!(toy_swaps(15), u64::MAX);
        assert_eq!(toy_ladder(15).to_bits(), summary.ladder[15].to_bits());
        assert!(toy_ladder(16).is_nan());
    }
}
