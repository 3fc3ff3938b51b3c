//! The paper's 2D experiment (Deng et al., AAAI 2023, Figures 3–6) as a study: four
//! methods on the 25-mode target (SGLD×P16, cycSGLD×T16, DEO-SGD×P16 and DEO⋆-SGD×P16),
//! a sweep of the target swap rate S and one of the window W, and the paper's rules
//! beside the authors' code's. What `nrpt reproduce` runs; the command prints the
//! tables and draws the figures.
//!
//! - [`Settings`]: the sizes; [`Plan`]: every job over a block of seeds (all of them, or
//!   one shard's), checked against the memory limit, and [`Plan::run`], which runs them
//!   and the baselines side by side ([`Runs`]);
//! - [`results()`]: the tables ([`Results`]) from the runs, against the target's
//!   [`Truth`](crate::metrics::Truth);
//! - [`ShardRecords`]: what a shard keeps for the merge, and [`Runs::join`], the runs of
//!   the whole reproduction from its shards' records.

use std::ops::Range;

use crate::error::Result;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::baselines::{self, Baseline};
use crate::shard::{Shard, Summary};
use nrpt_sampling::config::{ConfigError, RunConfig, WindowSpec};
use nrpt_sampling::engine::{Backend, EngineError, Job, OnProgress, Record, RunOutput};
use nrpt_sampling::preset::Preset;

mod records;
mod results;

pub use records::ShardRecords;
pub use results::{MethodResult, Results, VariantResult, WindowPoint, results};

/// Sizes of a reproduction.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Iterations of every tempering run (the cyclical chain runs 16× as many).
    pub iterations: u64,
    /// Independent ensembles (seeds) per method.
    pub seeds: usize,
    /// Chains per ensemble.
    pub chains: usize,
    /// Base seed.
    pub seed: u32,
    /// Keep a sample every `thin` iterations…
    pub thin: u64,
    /// …after `warmup` iterations.
    pub warmup: u64,
}

/// The most seeds of a reproduction.
pub(crate) const MAX_SEEDS: usize = 100_000;
/// The most iterations of a reproduction's tempering runs.
pub(crate) const MAX_ITERATIONS: u64 = 1 << 36;

impl Settings {
    /// Checks the sizes as the flags are checked (a shard's settings, read back by the
    /// merge, are checked the same way); errors name the flag.
    pub fn check(&self) -> Result<(), ConfigError> {
        if !(1..=MAX_SEEDS).contains(&self.seeds) {
            return Err(ConfigError::new(
                "ensembles",
                format!("must be between 1 and {MAX_SEEDS}, got {}", self.seeds),
            ));
        }
        if !(200..=MAX_ITERATIONS).contains(&self.iterations) {
            return Err(ConfigError::new(
                "iterations",
                format!(
                    "must be at least 200 (100 are warm-up) and at most 2^36, got {}",
                    self.iterations
                ),
            ));
        }
        if (self.chains, self.thin, self.warmup) != (16, 10, 100) {
            return Err(ConfigError::new(
                "settings",
                "the reproduction runs 16 chains, keeps every 10th sample after 100 iterations",
            ));
        }
        Ok(())
    }
}

/// What the authors' notebook (NR-PT_v2.ipynb in WayneDW/Non-reversible-Parallel-
/// Tempering-for-Deep-Posterior-Approximation) printed after 20,000 iterations, in its
/// counting: 348 round trips for W = 1 and 875 for W = 8, per 1000 iterations.
pub(crate) const NOTEBOOK: [(u32, f64); 2] = [(1, 17.4), (8, 43.75)];
/// The target swap rates of the S sweep.
pub(crate) const S_SWEEP: [f64; 5] = [0.2, 0.3, 0.4, 0.5, 0.6];
/// The windows of the W sweep.
pub(crate) const W_SWEEP: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// Iterations of the index paths shown in Figure 6.
pub(crate) const PATH_ITERATIONS: u64 = 2_000;

/// A tempering job over the seeds `seeds` (ensembles `seeds.start ..` of the run).
fn tempering_job(
    s: &Settings,
    seeds: &Range<usize>,
    preset: Preset,
    window: WindowSpec,
    swap_rate: f64,
    record: Record,
) -> Result<Job> {
    let config = RunConfig {
        chains: s.chains,
        ensembles: seeds.len(),
        iterations: s.iterations,
        window,
        swap_rate,
        seed: s.seed,
        preset,
        ..RunConfig::default()
    };
    let mut job = config.job_advising(record, "--ensembles or --iterations")?;
    job.options.ensemble =
        u32::try_from(seeds.start).map_err(|_| ConfigError::new("ensembles", "too many seeds"))?;
    Ok(job)
}

/// Every run of the reproduction, outputs kept for the figures.
pub struct Runs {
    /// SGLD×P16's samples, seed by seed.
    pub sgld: Vec<f32>,
    /// cycSGLD×T16's samples, seed by seed.
    pub cyc: Vec<f32>,
    /// (job, output) of the S sweep; S = 0.4 is DEO⋆.
    pub s_sweep: Vec<(Job, RunOutput)>,
    /// (job, output) of the W sweep; W = 1 is DEO.
    pub w_sweep: Vec<(Job, RunOutput)>,
    /// (job, output) of the authors'-code preset at W = 1 and W = 8.
    pub authors: Vec<(Job, RunOutput)>,
}

/// Every tempering job of the reproduction over the seeds `seeds`: the S sweep, the W
/// sweep, the authors' code's.
fn jobs(s: &Settings, seeds: &Range<usize>) -> Result<Vec<Job>> {
    let full = Record {
        thin: s.thin,
        warmup: s.warmup,
        trace_every: (s.iterations / 200).max(1),
        path_iterations: PATH_ITERATIONS.min(s.iterations),
    };
    let samples = Record {
        trace_every: 0,
        path_iterations: 0,
        ..full
    };
    let mut jobs = Vec::new();
    for &rate in &S_SWEEP {
        jobs.push(tempering_job(
            s,
            seeds,
            Preset::Paper,
            WindowSpec::Optimal,
            rate,
            full,
        )?);
    }
    for &w in &W_SWEEP {
        jobs.push(tempering_job(
            s,
            seeds,
            Preset::Paper,
            WindowSpec::Fixed(w),
            0.4,
            full,
        )?);
    }
    for (w, _) in NOTEBOOK {
        let window = WindowSpec::Fixed(w);
        jobs.push(tempering_job(
            s,
            seeds,
            Preset::AuthorsCode,
            window,
            0.4,
            samples,
        )?);
    }
    Ok(jobs)
}

/// The cycles of the cycSGLD×T baseline.
const CYCLES: u64 = 100;

/// The memory of [`Plan::run`] over `seeds` seeds: every tempering run of `jobs` side by
/// side, their outputs kept for the figures (each job's own estimate), and the
/// baselines' samples (per seed, then joined: twice).
fn footprint(s: &Settings, seeds: usize, jobs: &[Job]) -> nrpt_sampling::engine::memory::Footprint {
    use nrpt_sampling::engine::memory::{Footprint, PROCESS_BYTES, of_job};
    let mut f = Footprint::default();
    f.add("process", PROCESS_BYTES);
    let runs = jobs.iter().fold(0u64, |acc, j| {
        acc.saturating_add(of_job(j).total().saturating_sub(PROCESS_BYTES))
    });
    f.add("tempering runs side by side", runs);
    // SGLD×P keeps P chains' samples after the warm-up; cycSGLD×T over 16 N iterations
    // in 100 cycles samples in the last 5 % of each (at most one more per cycle);
    // [x, y] f32 pairs.
    let thin = s.thin.max(1);
    let kept = (s.chains as u64)
        .saturating_mul(s.iterations.saturating_sub(s.warmup).div_ceil(thin))
        .saturating_add(16u64.saturating_mul(s.iterations).div_ceil(20 * thin))
        .saturating_add(2 * CYCLES);
    f.add(
        "baselines' samples",
        kept.saturating_mul(seeds as u64).saturating_mul(2 * 8),
    );
    f
}

/// Every method of the reproduction over a block of seeds, before it runs: the tempering
/// jobs, checked against the memory limit with the baselines beside them.
pub struct Plan {
    s: Settings,
    seeds: Range<usize>,
    jobs: Vec<Job>,
}

impl Plan {
    /// Every method over the seeds `seeds` (all of them, or one shard's block).
    pub fn new(s: &Settings, seeds: Range<usize>) -> Result<Plan> {
        let jobs = jobs(s, &seeds)?;
        // Each job checked its own memory; they run side by side.
        nrpt_sampling::engine::memory::check(
            &footprint(s, seeds.len(), &jobs),
            "--ensembles or --iterations",
        )
        .map_err(|m| ConfigError::new("max_memory", m))?;
        Ok(Plan { s: *s, seeds, jobs })
    }

    /// The work [`Plan::run`] reports to its progress callback in all: the tempering
    /// jobs' ensemble-iterations and the baselines' chain-steps.
    pub fn work(&self) -> u64 {
        let (s, n) = (&self.s, self.seeds.len() as u64);
        let chain_steps = |j: &Job| j.iterations * j.ensembles as u64;
        self.jobs.iter().map(chain_steps).sum::<u64>()
            + 2 * s.iterations * n
            + 16 * s.iterations * n
    }

    /// Runs every method, the tempering jobs on `backend` and the baselines on the CPU,
    /// side by side; `progress` hears of the work done ([`Plan::work`] in all) and may
    /// stop the runs.
    pub fn run(self, backend: &dyn Backend, progress: OnProgress<'_>) -> Result<Runs> {
        let Plan { s, seeds, jobs } = self;
        let base = Baseline {
            seed: s.seed,
            seeds: seeds.len(),
            first: seeds.start,
            noise: 2.0,
            thin: s.thin,
            warmup: s.warmup,
        };
        // The runs are independent: run them side by side.
        let (outs, (sgld, cyc)) = rayon::join(
            || {
                jobs.par_iter()
                    .map(|j| backend.run(j, progress))
                    .collect::<Result<Vec<_>, EngineError>>()
            },
            || {
                rayon::join(
                    || {
                        baselines::parallel_sgld(base, s.chains, s.iterations, 0.003, &|n| {
                            progress(2 * n)
                        })
                    },
                    || baselines::cyclical_sgld(base, 16 * s.iterations, CYCLES, 0.6, progress),
                )
            },
        );
        Ok(Runs::of(jobs, outs?, sgld?, cyc?))
    }
}

impl Runs {
    /// The runs from the jobs in [`jobs`]' order, their outputs, and the baselines'.
    fn of(jobs: Vec<Job>, outs: Vec<RunOutput>, sgld: Vec<f32>, cyc: Vec<f32>) -> Runs {
        let mut outs = outs.into_iter();
        let mut jobs = jobs.into_iter();
        let mut s_sweep = Vec::new();
        for _ in S_SWEEP {
            if let (Some(j), Some(o)) = (jobs.next(), outs.next()) {
                s_sweep.push((j, o));
            }
        }
        let mut w_sweep = Vec::new();
        for _ in W_SWEEP {
            if let (Some(j), Some(o)) = (jobs.next(), outs.next()) {
                w_sweep.push((j, o));
            }
        }
        let authors = jobs.zip(outs).collect();
        Runs {
            sgld,
            cyc,
            s_sweep,
            w_sweep,
            authors,
        }
    }
}

/// The seeds `shard` runs of a reproduction (all of them without a shard), and the
/// summary that marks its folder.
pub fn shard_of(s: &Settings, shard: Option<Shard>) -> Result<(Range<usize>, Option<Summary>)> {
    match shard {
        None => Ok((0..s.seeds, None)),
        Some(sh) => {
            let summary = Summary::new("reproduce", sh, s.seeds, nrpt_sampling::json::to_value(s)?)
                .map_err(|e| ConfigError::new("shard", e.to_string()))?;
            Ok((sh.block(s.seeds)?, Some(summary)))
        }
    }
}
