//! Proof that nrpt-core needs neither `std` nor an allocator: a bare-metal binary with
//! its own panic handler and no `#[global_allocator]` that runs the fixed-size sampler.
#![no_std]
#![no_main]

use core::hint::black_box;
use core::panic::PanicInfo;

use nrpt_core::driver::TemperingOptions;
use nrpt_core::exact::{GaussianPath, HMC_SCRATCH_VECTORS, HmcOptions, hmc_explore};
use nrpt_core::fixed::FixedTempering;
use nrpt_core::rng::streams::EXACT_EXPLORE;
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
    // The exact engine's HMC explorer, on its own.
    if let Ok(mut path) = GaussianPath::standard(2) {
        let (mut x, mut scratch) = ([0.5; 2], [0.0; 2 * HMC_SCRATCH_VECTORS]);
        let mut rng = nrpt_core::rng::PhiloxStream::new(0, 0, 0, 0, EXACT_EXPLORE);
        let options = HmcOptions::default();
        let out = hmc_explore(
            &mut path,
            1.0,
            0.1,
            &options,
            &mut x,
            &mut scratch,
            &mut rng,
        );
        black_box((out.ok(), x));
    }
    loop {}
}
