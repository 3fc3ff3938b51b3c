#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
//! # toyrun: the one tempering run that every platform makes
//!
//! The firmware (Cortex-M4F under QEMU), the host (x86-64) and the WebAssembly module
//! all call [`run`] and write the result with [`write_report`], so that their outputs
//! can be compared line for line: same seed, same round trips, same swap counts, same
//! checksum of the target-level samples.
//!
//! The run is nrpt-core's [`FixedTempering`] with P = [`CHAINS`] = 16 chains in
//! D = [`DIM`] = 2 dimensions, in `f32` (the Cortex-M4F has a single-precision FPU), on
//! the paper's 25-mode target seen through noise of scale 2 ([`Noisy::paper`]), with the
//! paper's settings ([`TemperingOptions::default`]: DEO with the paper's window, buffered
//! swap rule, SGD explorers, η from 0.003 to 0.6, target swap rate 0.4).
//!
//! Nothing here allocates or needs `std`; floats are printed by a small fixed-point
//! formatter ([`Fixed`]) instead of `core::fmt`'s float machinery, which would cost the
//! firmware several KiB of flash, and every float is also printed as its exact bit
//! pattern.

use core::fmt::{self, Write};

use nrpt_core::driver::TemperingOptions;
use nrpt_core::fixed::FixedTempering;
use nrpt_core::index::{IndexStats, PairStats};
use nrpt_core::target::{Modes2d, Noisy};
use nrpt_core::window::Scheme;

/// Number of chains P.
pub const CHAINS: usize = 16;
/// Dimension D of the target.
pub const DIM: usize = 2;
/// Number of adjacent pairs, P − 1.
pub const PAIRS: usize = CHAINS - 1;
/// Seed of the reference run.
pub const SEED: u32 = 2023;
/// Iterations of the reference run.
pub const ITERATIONS: u64 = 2_000;

/// The sampler every platform runs: f32, P = 16, D = 2, the noisy 25-mode target.
pub type ToySampler = FixedTempering<f32, Noisy<Modes2d>, CHAINS, DIM>;

/// Everything a run reports, as plain numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Seed of the Philox streams.
    pub seed: u32,
    /// Iterations run.
    pub iterations: u64,
    /// DEO window W in iterations (0 for SEO).
    pub window: u32,
    /// Round trips, restarts and non-finite energies.
    pub stats: IndexStats,
    /// Counts of each adjacent pair (l, l + 1).
    pub pairs: [PairStats; PAIRS],
    /// Final learning rate of each level.
    pub ladder: [f64; CHAINS],
    /// Final correction buffer C.
    pub buffer: f64,
    /// Final state of the target level (level 0).
    pub final_target: [f32; DIM],
    /// [`Fnv1a64`] of the bit patterns of every target-level sample, one per
    /// iteration, coordinates in order.
    pub checksum: u64,
}

impl Summary {
    /// An all-zero summary (for a baseline build that does not run the sampler, and
    /// for statics, which it keeps in zero-initialized memory).
    pub const EMPTY: Summary = Summary {
        seed: 0,
        iterations: 0,
        window: 0,
        stats: IndexStats {
            round_trips: 0,
            restarts: 0,
            authors_round_trips: 0,
            nonfinite_energies: 0,
        },
        pairs: [PairStats {
            indicators: 0,
            attempts: 0,
            swaps: 0,
            nonfinite: 0,
        }; PAIRS],
        ladder: [0.0; CHAINS],
        buffer: 0.0,
        final_target: [0.0; DIM],
        checksum: 0,
    };
}

/// The paper's settings ([`TemperingOptions::default`]) with the given seed.
pub fn options(seed: u32) -> TemperingOptions {
    TemperingOptions {
        seed,
        ..TemperingOptions::default()
    }
}

/// Runs the toy for `iterations` iterations from `seed` and summarises it.
///
/// # Errors
///
/// Whatever [`FixedTempering::new`] reports for the options (never for the defaults).
pub fn run(seed: u32, iterations: u64) -> Result<Summary, nrpt_core::Error> {
    let options = options(seed);
    let mut pt = ToySampler::new(options, Noisy::paper(Modes2d))?;
    let mut hash = Fnv1a64::new();
    for _ in 0..iterations {
        // The noisy toy oracle cannot fail: its error type is `Infallible`.
        let Ok(_) = pt.step();
        for x in pt.target_state() {
            hash.write_u32(x.to_bits());
        }
    }
    let mut pairs = [PairStats::default(); PAIRS];
    pairs.copy_from_slice(pt.pair_stats());
    Ok(Summary {
        seed,
        iterations: pt.iteration(),
        window: match pt.options().scheme {
            Scheme::Deo { window } => window,
            Scheme::Seo => 0,
        },
        stats: pt.stats(),
        pairs,
        ladder: *pt.ladder(),
        buffer: pt.buffer(),
        final_target: *pt.target_state(),
        checksum: hash.finish(),
    })
}

/// 64-bit FNV-1a over bytes (fed little-endian words), enough to tell two sample
/// streams apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv1a64(u64);

impl Fnv1a64 {
    /// FNV offset basis.
    pub const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    /// A fresh hash.
    pub const fn new() -> Self {
        Fnv1a64(Self::OFFSET)
    }

    /// Feeds the four little-endian bytes of `word`.
    pub fn write_u32(&mut self, word: u32) {
        for byte in word.to_le_bytes() {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(Self::PRIME);
        }
    }

    /// The hash so far.
    pub const fn finish(self) -> u64 {
        self.0
    }
}

impl Default for Fnv1a64 {
    fn default() -> Self {
        Self::new()
    }
}

/// A float printed in fixed point with `.1` decimals (at most 9), rounded half away
/// from zero, by integer arithmetic only; `nan`, `inf`, `-inf` for the rest.
/// Right-aligned to the formatter's width, if any (fill and alignment are ignored).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fixed(pub f64, pub u32);

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Fixed(value, decimals) = *self;
        if value.is_nan() {
            return right_aligned(f, "nan", 3);
        }
        if value.is_infinite() {
            return if value > 0.0 {
                right_aligned(f, "inf", 3)
            } else {
                right_aligned(f, "-inf", 4)
            };
        }
        let decimals = decimals.min(9);
        let scale = 10u64.pow(decimals);
        let magnitude = if value < 0.0 { -value } else { value };
        // Saturates at u64::MAX for huge values (`as` is a saturating conversion).
        let scaled = (magnitude * scale as f64 + 0.5) as u64;
        let sign = if value < 0.0 && scaled != 0 { "-" } else { "" };
        let (whole, fraction) = (scaled / scale, scaled % scale);
        let point = if decimals > 0 {
            1 + decimals as usize
        } else {
            0
        };
        right_aligned(f, sign, sign.len() + digits(whole) + point)?;
        write!(f, "{whole}")?;
        if decimals > 0 {
            write!(f, ".{fraction:0width$}", width = decimals as usize)?;
        }
        Ok(())
    }
}

/// `count / total` with four decimals, by integer arithmetic (`0.0000` when
/// `total == 0`). Right-aligned to the formatter's width, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate(pub u64, pub u64);

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Rate(count, total) = *self;
        // u64 arithmetic (u128 division would cost the firmware 1.5 KiB); exact for
        // any count below 1.8e15, saturating beyond.
        let ten_thousandths = count
            .saturating_mul(10_000)
            .saturating_add(total / 2)
            .checked_div(total)
            .unwrap_or(0);
        let whole = ten_thousandths / 10_000;
        right_aligned(f, "", digits(whole) + 5)?;
        write!(f, "{whole}.{:04}", ten_thousandths % 10_000)
    }
}

/// Number of decimal digits of `n`.
fn digits(mut n: u64) -> usize {
    let mut count = 1;
    while n >= 10 {
        n /= 10;
        count += 1;
    }
    count
}

/// Writes the spaces that right-align text of `len` characters to the formatter's
/// width, then `prefix` (whose length `len` includes). Cheaper than `Formatter::pad`,
/// which needs the text in one piece.
fn right_aligned(f: &mut fmt::Formatter<'_>, prefix: &str, len: usize) -> fmt::Result {
    for _ in len..f.width().unwrap_or(0) {
        f.write_char(' ')?;
    }
    f.write_str(prefix)
}

/// A fixed-capacity text buffer that implements [`fmt::Write`] (fails when full).
#[derive(Clone, Debug)]
pub struct TextBuf<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> TextBuf<N> {
    /// An empty buffer.
    pub const fn new() -> Self {
        TextBuf {
            bytes: [0; N],
            len: 0,
        }
    }

    /// The text written so far.
    pub fn as_str(&self) -> &str {
        // Only whole `&str`s are ever appended, so the bytes are valid UTF-8.
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Forgets the text.
    pub fn clear(&mut self) {
        self.len = 0;
    }
}

impl<const N: usize> Default for TextBuf<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Write for TextBuf<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        let slot = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
        slot.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Upper bound on the length of [`write_report`]'s text, in bytes.
pub const REPORT_CAPACITY: usize = 2048;

/// Writes the run as text, the same bytes on every platform: the settings, round trips,
/// the counts and swap rate of every pair, the final ladder and buffer (fixed point and
/// exact bits), the final target state and the checksum of the target-level samples.
///
/// # Errors
///
/// Whatever `out` reports.
pub fn write_report<W: Write>(out: &mut W, s: &Summary) -> fmt::Result {
    writeln!(
        out,
        "nrpt toy run: P = {CHAINS}, D = {DIM}, f32, 25-mode target with noise 2, seed {}",
        s.seed
    )?;
    writeln!(out, "iterations {}, DEO window {}", s.iterations, s.window)?;
    writeln!(
        out,
        "round trips {} (authors' counting {}), restarts {}, non-finite energies {}",
        s.stats.round_trips,
        s.stats.authors_round_trips,
        s.stats.restarts,
        s.stats.nonfinite_energies
    )?;
    writeln!(out, " pair   swaps  attempts  indicators  swap rate")?;
    for (l, p) in s.pairs.iter().enumerate() {
        writeln!(
            out,
            "{:>2}-{:<2} {:>7} {:>9} {:>11} {:>10}",
            l,
            l + 1,
            p.swaps,
            p.attempts,
            p.indicators,
            Rate(p.swaps, s.iterations)
        )?;
    }
    writeln!(out, "level  learning rate  f64 bits")?;
    for (l, eta) in s.ladder.iter().enumerate() {
        writeln!(out, "{l:>5} {:>14}  {:016x}", Fixed(*eta, 6), eta.to_bits())?;
    }
    writeln!(
        out,
        "buffer C {} (f64 bits {:016x})",
        Fixed(s.buffer, 6),
        s.buffer.to_bits()
    )?;
    let [x0, x1] = s.final_target;
    writeln!(
        out,
        "final target state ({}, {}) (f32 bits {:08x} {:08x})",
        Fixed(f64::from(x0), 6),
        Fixed(f64::from(x1), 6),
        x0.to_bits(),
        x1.to_bits()
    )?;
    writeln!(
        out,
        "checksum of target-level samples (FNV-1a 64 of f32 bits) {:016x}",
        s.checksum
    )
}
