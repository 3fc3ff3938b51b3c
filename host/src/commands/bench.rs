//! `nrpt bench`: chain-steps per second of the CPU engine.

use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use crate::cli::BenchArgs;
use crate::config::RunConfig;
use crate::engine::{Backend, Record};

/// The answer of `nrpt bench`.
#[derive(Debug, Serialize)]
pub struct BenchReport {
    /// Backend measured.
    pub backend: String,
    /// E.
    pub ensembles: usize,
    /// P.
    pub chains: usize,
    /// Iterations.
    pub iters: u64,
    /// Window used.
    pub window: u32,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// Seconds.
    pub seconds: f64,
    /// E · P · iterations / seconds.
    pub chain_steps_per_sec: f64,
    /// Round trips per 1000 iterations (sanity check).
    pub round_trips_per_1000: f64,
}

/// Runs the command on `backend`.
pub fn run(
    args: &BenchArgs,
    backend: &dyn Backend,
    threads: Option<usize>,
    json: bool,
    quiet: bool,
) -> Result<()> {
    let config = RunConfig {
        chains: args.chains,
        ensembles: args.ensembles,
        iterations: args.iters,
        window: args.window,
        ..RunConfig::default()
    };
    let job = config.job(Record::NOTHING)?;
    // A short warm-up run (page faults, thread pool start).
    let warm = crate::engine::Job {
        iterations: job.iterations.min(50),
        ..job.clone()
    };
    backend.run(&warm, &|_| {})?;
    let started = Instant::now();
    let out = super::run_job(backend, &job, "bench", quiet)?;
    let seconds = started.elapsed().as_secs_f64();
    let steps = (job.chains * job.ensembles) as f64 * job.iterations as f64;
    let report = BenchReport {
        backend: if args.scalar {
            "cpu-scalar".into()
        } else {
            backend.name()
        },
        ensembles: job.ensembles,
        chains: job.chains,
        iters: job.iterations,
        window: job.options.scheme.window_code(),
        threads: threads.unwrap_or(0),
        seconds,
        chain_steps_per_sec: steps / seconds,
        round_trips_per_1000: out.total_stats().round_trips as f64 * 1000.0
            / (job.ensembles as f64 * job.iterations as f64),
    };
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "{}: {} ensembles × {} chains × {} iterations in {:.3} s: {:.3e} chain-steps/s",
            report.backend,
            report.ensembles,
            report.chains,
            report.iters,
            seconds,
            report.chain_steps_per_sec
        );
    }
    Ok(())
}

/// The answer of `nrpt bench --model bernoulli`.
#[derive(Debug, Serialize)]
pub struct BernoulliReport {
    /// E.
    pub ensembles: usize,
    /// P.
    pub chains: usize,
    /// Iterations.
    pub iters: u64,
    /// Window.
    pub window: u32,
    /// Seconds.
    pub seconds: f64,
    /// E · (P − 1) · iterations / seconds.
    pub pair_updates_per_sec: f64,
}

/// Pair-updates per second of the Bernoulli index-process simulator (all cores).
pub fn bernoulli(args: &BenchArgs, json: bool) -> Result<()> {
    use crate::engine::cpu::Simd;
    use crate::scale::simulator::{Group, LANES};
    use rayon::prelude::*;
    if args.chains < 2 || args.ensembles == 0 {
        return Err(crate::config::ConfigError::new(
            "chains",
            "needs at least 2 chains and 1 ensemble",
        )
        .into());
    }
    let window = crate::scale::window_of(&args.window.to_string(), args.chains, 0.4)?;
    let rates = vec![0.4; args.chains - 1];
    let groups = args.ensembles.div_ceil(LANES);
    let mut sims: Vec<Group<LANES>> = (0..groups)
        .map(|g| Group::new(&rates, window, 1, (g * LANES) as u32))
        .collect();
    sims.par_iter_mut()
        .for_each(|g| g.run(args.iters.min(100), Simd::Auto));
    let started = Instant::now();
    sims.par_iter_mut()
        .for_each(|g| g.run(args.iters, Simd::Auto));
    let seconds = started.elapsed().as_secs_f64();
    let updates = (groups * LANES) as f64 * (args.chains - 1) as f64 * args.iters as f64;
    let r = BernoulliReport {
        ensembles: groups * LANES,
        chains: args.chains,
        iters: args.iters,
        window,
        seconds,
        pair_updates_per_sec: updates / seconds,
    };
    if json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        println!(
            "bernoulli: {} ensembles × {} pairs × {} iterations in {:.3} s: {:.3e} pair-updates/s",
            r.ensembles,
            r.chains - 1,
            r.iters,
            seconds,
            r.pair_updates_per_sec
        );
    }
    Ok(())
}
