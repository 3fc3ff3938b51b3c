//! nrpt-core on a Cortex-M4F: the fixed-size tempering of the paper's 2D toy
//! (P = 16, D = 2, f32, the 25-mode target with noise 2, the paper's settings) for
//! 2,000 iterations, reported through semihosting.
//!
//! - stdout: the report of [`toyrun::write_report`], byte for byte what the host
//!   binary `toyrun` prints for the same seed (CI diffs the two);
//! - stderr: lines starting with `#` that only the firmware can tell: the stack
//!   high-water mark (the stack is painted by cortex-m-rt's `paint-stack` at reset and
//!   scanned after the run), the RAM taken by statics, and the SysTick ticks of the run
//!   (instructions / 40 when QEMU runs with `-icount shift=0`, its 25 MHz SysTick then
//!   ticking once every 40 instructions).
//!
//! Exits through semihosting with status 0, or 1 on any failure (a panic included,
//! through panic-semihosting's `exit` feature). No allocator anywhere.
#![no_std]
#![no_main]

use core::fmt::Write;

use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hio};
use toyrun::Summary;

/// On a panic: its location on stderr, then exit status 1.
///
/// Like panic-semihosting with its `exit` feature, except that the panic's message is
/// not formatted: that would link core's float formatting (about 12 KiB of flash),
/// because `f64::clamp` in nrpt-core's adaptation has a message that prints floats.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    cortex_m::interrupt::disable();
    if let Ok(mut err) = hio::hstderr() {
        let _ = match info.location() {
            Some(at) => writeln!(err, "# panicked at {}:{}", at.file(), at.line()),
            None => writeln!(err, "# panicked"),
        };
    }
    loop {
        debug::exit(debug::EXIT_FAILURE);
    }
}

/// Largest SysTick reload value (24 bits).
const SYSTICK_MAX: u32 = 0x00ff_ffff;

#[entry]
fn main() -> ! {
    let status = match run() {
        Ok(()) => debug::EXIT_SUCCESS,
        Err(()) => debug::EXIT_FAILURE,
    };
    debug::exit(status);
    // Only reached if the debugger asked the program to go on after the exit call.
    loop {
        cortex_m::asm::wfi();
    }
}

/// Runs the toy, writes the report and the measurements.
fn run() -> Result<(), ()> {
    let mut out = hio::hstdout()?;
    let mut err = hio::hstderr()?;
    let mut syst = cortex_m::Peripherals::take().ok_or(())?.SYST;
    start_systick(&mut syst);
    let summary = sample(&mut err)?;
    let ticks = SYSTICK_MAX - SYST::get_current();
    let wrapped = syst.has_wrapped();
    let sampler_stack = stack_usage().used;
    toyrun::write_report(&mut out, &summary).map_err(|_| ())?;

    let stack = stack_usage();
    writeln!(
        err,
        "# stack high-water mark {} bytes of {} available ({} by the end of the sampler run); \
         statics (.data + .bss) {} bytes",
        stack.used, stack.available, sampler_stack, stack.statics
    )
    .map_err(|_| ())?;
    if wrapped {
        writeln!(err, "# systick ticks of the run: over {SYSTICK_MAX}").map_err(|_| ())?;
    } else {
        writeln!(err, "# systick ticks of the run: {ticks}").map_err(|_| ())?;
    }
    if stack.used >= stack.available {
        writeln!(
            err,
            "# error: the stack used all of its space and may have overflowed"
        )
        .map_err(|_| ())?;
        return Err(());
    }
    Ok(())
}

/// The tempering run of nrpt-core.
#[cfg(not(feature = "baseline"))]
fn sample(err: &mut hio::HostStream) -> Result<Summary, ()> {
    // The error's own message would link core's float formatting (several KiB).
    toyrun::run(toyrun::SEED, toyrun::ITERATIONS).map_err(|_| {
        let _ = writeln!(err, "# error: nrpt-core rejected the options");
    })
}

/// The size baseline: an empty summary, so that the report code is linked but the
/// sampler is not.
#[cfg(feature = "baseline")]
fn sample(_err: &mut hio::HostStream) -> Result<Summary, ()> {
    Ok(core::hint::black_box(Summary::EMPTY))
}

/// SysTick counting down from its largest reload at the processor clock.
fn start_systick(syst: &mut SYST) {
    syst.disable_counter();
    syst.disable_interrupt();
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(SYSTICK_MAX);
    syst.clear_current();
    // Reading the control register clears COUNTFLAG from any earlier wrap.
    let _ = syst.has_wrapped();
    syst.enable_counter();
}

/// Bytes of RAM the stack and the statics take.
struct StackUsage {
    /// Deepest the stack reached: from its top down to the lowest overwritten word.
    used: usize,
    /// Space between the statics and the top of RAM.
    available: usize,
    /// `.data` + `.bss` + `.uninit`.
    statics: usize,
}

unsafe extern "C" {
    /// Top of the stack (end of RAM), from cortex-m-rt's link.x.
    static _stack_start: u32;
    /// Lowest address the stack may reach (end of the statics), from link.x.
    static _stack_end: u32;
    /// Start of `.data`, the first thing in RAM.
    static __sdata: u32;
}

/// Scans the painted stack from the bottom up for the first word the program wrote.
fn stack_usage() -> StackUsage {
    let top = (&raw const _stack_start) as usize;
    let bottom = (&raw const _stack_end) as usize;
    let ram = (&raw const __sdata) as usize;
    let mut addr = bottom;
    while addr < top {
        // SAFETY: [bottom, top) is RAM reserved for the stack by the linker script; we
        // only read it, word-aligned (link.x aligns both ends to 4 bytes), below the
        // current stack pointer's frame or inside live frames, which a read cannot harm.
        let word = unsafe { core::ptr::read_volatile(addr as *const u32) };
        if word != cortex_m_rt::STACK_PAINT_VALUE {
            break;
        }
        addr += 4;
    }
    StackUsage {
        used: top - addr,
        available: top - bottom,
        statics: bottom - ram,
    }
}
