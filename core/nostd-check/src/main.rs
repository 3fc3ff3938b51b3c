//! Proof that nrpt-core needs neither `std` nor an allocator: a bare-metal binary with
//! its own panic handler and no `#[global_allocator]` that runs the fixed-size sampler.
#![no_std]
#![no_main]

use core::hint::black_box;
use core::panic::PanicInfo;

use nrpt_core::driver::TemperingOptions;
use nrpt_core::fixed::FixedTempering;
use nrpt_core::target::{Modes2d, Noisy};

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    loop {}
}

/// Entry point for the linker; never run, only linked.
#[unsafe(no_mangle)]
pub extern "C" fn _start() -> ! {
    let window = nrpt_core::optimal::optimal_window(16, 0.4).unwrap_or(1);
    let options = TemperingOptions {
        scheme: nrpt_core::window::Scheme::Deo { window },
        ..TemperingOptions::default()
    };
    if let Ok(mut t) = FixedTempering::<f32, _, 16, 2>::new(options, Noisy::paper(Modes2d)) {
        for _ in 0..black_box(100) {
            let _ = t.step();
        }
        black_box(t.stats());
    }
    loop {}
}
