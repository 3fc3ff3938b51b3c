//! The paper's 2D toy with the fixed-size driver: round trips per 1000 iterations for
//! several windows, a few seeds each.
//!
//! `cargo run --release -p nrpt-core --example toy`

use nrpt_core::driver::TemperingOptions;
use nrpt_core::fixed::FixedTempering;
use nrpt_core::target::{Modes2d, Noisy};
use nrpt_core::window::Scheme;

fn main() -> Result<(), nrpt_core::Error> {
    let iterations = 20_000u64;
    let seeds = 5u32;
    println!("window  round trips / 1000 it (standard)  (authors' counting)");
    for window in [1u32, 2, 4, 8, 16, 32] {
        let (mut std_trips, mut authors) = (0u64, 0u64);
        for seed in 0..seeds {
            let options = TemperingOptions {
                scheme: Scheme::Deo { window },
                seed,
                ..TemperingOptions::default()
            };
            let mut t = FixedTempering::<f64, _, 16, 2>::new(options, Noisy::paper(Modes2d))?;
            for _ in 0..iterations {
                let Ok(_) = t.step();
            }
            std_trips += t.stats().round_trips;
            authors += t.stats().authors_round_trips;
        }
        let per = |n: u64| n as f64 * 1000.0 / (iterations as f64 * f64::from(seeds));
        println!(
            "{window:>6}  {:>33.1}  {:>19.1}",
            per(std_trips),
            per(authors)
        );
    }
    Ok(())
}
