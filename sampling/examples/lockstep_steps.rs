//! Runs the CPU engine on the paper's 2D experiment (the configuration of `nrpt bench`:
//! the optimal window, nothing recorded) on one thread, for instruction counts
//! (`benches/callgrind.sh` counts this program: it builds in a fraction of the time of
//! the `nrpt` command and runs the same engine code).
//!
//! Usage: `lockstep_steps E P N [exact|fast] [auto|avx2|portable|scalar]`; prints the
//! round trips, the seconds of the run and chain-steps per second of one thread (the
//! speed of one instruction set: `nrpt bench` always takes the best).

use nrpt_sampling::config::RunConfig;
use nrpt_sampling::engine::cpu::{CpuBackend, Simd};
use nrpt_sampling::engine::{Backend, Record};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: u64| -> Result<u64, Box<dyn std::error::Error>> {
        Ok(match args.get(i) {
            Some(s) => s.parse()?,
            None => default,
        })
    };
    let (e, p, n) = (num(0, 64)?, num(1, 16)?, num(2, 500)?);
    let fast_math = match args.get(3).map(String::as_str) {
        None | Some("exact") => false,
        Some("fast") => true,
        Some(other) => return Err(format!("math must be exact or fast, got {other}").into()),
    };
    let simd = match args.get(4).map(String::as_str) {
        None | Some("auto") => Simd::Auto,
        Some("avx2") => Simd::Avx2,
        Some("portable") => Simd::Portable,
        Some("scalar") => Simd::Scalar,
        Some(other) => return Err(format!("unknown instruction set {other}").into()),
    };
    let config = RunConfig {
        chains: p as usize,
        ensembles: e as usize,
        iterations: n,
        ..RunConfig::default()
    };
    let job = config.job_advising(Record::NOTHING, "E, P or N")?;
    let backend = CpuBackend {
        threads: Some(1),
        simd: simd.resolve(),
        fast_math,
    };
    let started = std::time::Instant::now();
    let out = backend.run(&job, &nrpt_sampling::engine::unobserved)?;
    let seconds = started.elapsed().as_secs_f64();
    println!("round trips: {}", out.total_stats().round_trips);
    println!(
        "{seconds:.3} s, {:.3e} chain-steps/s ({}, math {})",
        (e * p * n) as f64 / seconds,
        match simd.resolve() {
            Simd::Auto => "AVX-512",
            Simd::Avx2 => "AVX2",
            Simd::Portable => "portable",
            Simd::Scalar => "scalar",
        },
        if fast_math { "fast" } else { "exact" }
    );
    Ok(())
}
