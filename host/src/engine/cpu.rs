//! The CPU engine: ensembles in parallel with rayon, each one driven by nrpt-core in
//! `f32` over buffers allocated once. Results depend on the seed only, not on the
//! number of threads: ensemble e always draws from Philox key (seed, e).

use nrpt_core::driver::{Tempering, TemperingOptions};
use nrpt_core::index::IndexStats;
use nrpt_core::swap::flags;
use nrpt_core::target::Noisy;
use rayon::prelude::*;

use super::{Backend, EngineError, EnsembleBuffers, EnsembleResult, Job, RunOutput, Trace};

/// The CPU engine.
#[derive(Clone, Debug, Default)]
pub struct CpuBackend {
    /// Worker threads (None: rayon's default, one per core).
    pub threads: Option<usize>,
    /// Never use the vectorized path of the 2D toy (for comparisons; results are the
    /// same bits either way).
    pub scalar_only: bool,
}

/// What one ensemble recorded.
struct EnsembleRun {
    result: EnsembleResult,
    samples: Vec<f32>,
    sample_iterations: Vec<u64>,
    trace_ladder: Vec<Vec<f64>>,
    trace_buffer: Vec<f64>,
    trace_trips: Vec<IndexStats>,
    trace_rates: Vec<Vec<f64>>,
    trace_iterations: Vec<u64>,
    paths: Vec<Vec<u32>>,
    indicator_counts: Vec<u64>,
}

/// How often workers report progress (iterations of a chunk of ensembles).
const PROGRESS_EVERY: u64 = 256;

/// At most this many ensembles per rayon task: they advance in lockstep, iteration by
/// iteration, sharing the step size of the adaptation.
const CHUNK: usize = 8;

impl EnsembleRun {
    fn new(job: &Job, e: usize) -> Self {
        let rec = job.record;
        let dim = job.target.dim();
        let n_samples = if rec.thin == 0 || job.iterations <= rec.warmup {
            0
        } else {
            (job.iterations - rec.warmup).div_ceil(rec.thin) as usize
        };
        EnsembleRun {
            result: EnsembleResult {
                ladder: Vec::new(),
                buffer: 0.0,
                stats: IndexStats::default(),
                pairs: Vec::new(),
            },
            samples: Vec::with_capacity(n_samples * dim),
            sample_iterations: Vec::with_capacity(n_samples),
            trace_ladder: Vec::new(),
            trace_buffer: Vec::new(),
            trace_trips: Vec::new(),
            trace_rates: Vec::new(),
            trace_iterations: Vec::new(),
            paths: if e == 0 && rec.path_iterations > 0 {
                vec![Vec::with_capacity(rec.path_iterations as usize); job.chains]
            } else {
                Vec::new()
            },
            indicator_counts: vec![0; job.chains - 1],
        }
    }

    /// Records what the job asks for after iteration `k` of ensemble `e`.
    fn observe(
        &mut self,
        job: &Job,
        e: usize,
        k: u64,
        t: &Tempering<'_, f32, Noisy<super::Target>>,
    ) {
        let rec = job.record;
        let s = t.storage();
        if rec.trace_every > 0 {
            for (c, &f) in self.indicator_counts.iter_mut().zip(s.flags.iter()) {
                *c += u64::from(f & flags::INDICATOR != 0);
            }
            if (k + 1).is_multiple_of(rec.trace_every) {
                if e == 0 {
                    self.trace_ladder.push(s.ladder.to_vec());
                }
                self.trace_buffer.push(t.buffer());
                self.trace_trips.push(t.stats());
                let since = rec.trace_every as f64;
                self.trace_rates.push(
                    self.indicator_counts
                        .iter()
                        .map(|&c| c as f64 / since)
                        .collect(),
                );
                self.trace_iterations.push(k + 1);
                self.indicator_counts.fill(0);
            }
        }
        if e == 0 && k < rec.path_iterations {
            for (path, &level) in self.paths.iter_mut().zip(s.level_of.iter()) {
                path.push(level);
            }
        }
        if rec.thin > 0 && k >= rec.warmup && k.is_multiple_of(rec.thin) {
            self.samples.extend_from_slice(t.target_state());
            self.sample_iterations.push(k);
        }
    }
}

/// Runs ensembles `first .. first + count` in lockstep.
fn run_chunk(
    job: &Job,
    first: usize,
    count: usize,
    scalar_only: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<EnsembleRun>, EngineError> {
    let (p, dim) = (job.chains, job.target.dim());
    let momentum = job.options.explorer.has_momentum();
    let oracle = Noisy {
        potential: job.target,
        gradient_noise: job.noise,
        energy_noise: job.noise,
    };
    let mut buffers: Vec<EnsembleBuffers<f32>> = (0..count)
        .map(|_| EnsembleBuffers::new(p, dim, momentum))
        .collect();
    let mut runs = buffers
        .iter_mut()
        .enumerate()
        .map(|(i, b)| {
            let options = TemperingOptions {
                ensemble: (first + i) as u32,
                ..job.options
            };
            Tempering::new(options, oracle, b.storage())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut records: Vec<EnsembleRun> = (0..count)
        .map(|i| EnsembleRun::new(job, first + i))
        .collect();
    let vectorized =
        !scalar_only && super::toy2d::applies(job.target, job.options.explorer, job.noise);
    let schedule = job.options.adapt.schedule;
    let mut unreported = 0u64;
    for k in 0..job.iterations {
        let gamma = schedule.gamma(k);
        for (i, (t, r)) in runs.iter_mut().zip(records.iter_mut()).enumerate() {
            if vectorized {
                super::toy2d::explore(t);
            } else {
                let Ok(()) = t.explore();
            }
            t.exchange_with_gamma(gamma);
            r.observe(job, first + i, k, t);
        }
        unreported += count as u64;
        if unreported >= PROGRESS_EVERY {
            progress(unreported);
            unreported = 0;
            if crate::interrupt::requested() {
                return Err(EngineError::Interrupted);
            }
        }
    }
    progress(unreported);
    for (t, r) in runs.iter().zip(records.iter_mut()) {
        let s = t.storage();
        r.result = EnsembleResult {
            ladder: s.ladder.to_vec(),
            buffer: t.buffer(),
            stats: t.stats(),
            pairs: s.pair_stats.to_vec(),
        };
    }
    Ok(records)
}

/// Interleaves per-ensemble samples into `[sample][ensemble][coordinate]`.
fn interleave(runs: &[EnsembleRun], dim: usize) -> Vec<f32> {
    let n = runs.first().map_or(0, |r| r.sample_iterations.len());
    let mut all = Vec::with_capacity(n * runs.len() * dim);
    for i in 0..n {
        for r in runs {
            all.extend_from_slice(&r.samples[i * dim..(i + 1) * dim]);
        }
    }
    all
}

fn merge_traces(runs: &[EnsembleRun]) -> Trace {
    let Some(first) = runs.first() else {
        return Trace::default();
    };
    let n = first.trace_iterations.len();
    let e = runs.len() as f64;
    let mut trace = Trace {
        iterations: first.trace_iterations.clone(),
        ladder: first.trace_ladder.clone(),
        ..Trace::default()
    };
    for i in 0..n {
        trace
            .buffer
            .push(runs.iter().map(|r| r.trace_buffer[i]).sum::<f64>() / e);
        trace
            .round_trips
            .push(runs.iter().map(|r| r.trace_trips[i].round_trips).sum());
        trace.authors_round_trips.push(
            runs.iter()
                .map(|r| r.trace_trips[i].authors_round_trips)
                .sum(),
        );
        let pairs = first.trace_rates[i].len();
        trace.indicator_rate.push(
            (0..pairs)
                .map(|l| runs.iter().map(|r| r.trace_rates[i][l]).sum::<f64>() / e)
                .collect(),
        );
    }
    trace
}

impl CpuBackend {
    fn run_all(
        &self,
        job: &Job,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<RunOutput, EngineError> {
        // Small runs are split finer so that every thread has work.
        let size = job
            .ensembles
            .div_ceil(2 * rayon::current_num_threads())
            .clamp(1, CHUNK);
        let chunks: Vec<(usize, usize)> = (0..job.ensembles)
            .step_by(size)
            .map(|first| (first, size.min(job.ensembles - first)))
            .collect();
        let runs: Vec<EnsembleRun> = chunks
            .into_par_iter()
            .map(|(first, count)| run_chunk(job, first, count, self.scalar_only, progress))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        let dim = job.target.dim();
        Ok(RunOutput {
            backend: self.name(),
            samples: interleave(&runs, dim),
            sample_iterations: runs
                .first()
                .map(|r| r.sample_iterations.clone())
                .unwrap_or_default(),
            trace: merge_traces(&runs),
            paths: runs.first().map(|r| r.paths.clone()).unwrap_or_default(),
            ensembles: runs.into_iter().map(|r| r.result).collect(),
        })
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        "cpu".to_string()
    }

    fn run(&self, job: &Job, progress: &(dyn Fn(u64) + Sync)) -> Result<RunOutput, EngineError> {
        if job.ensembles == 0 {
            return Err(EngineError::Backend {
                backend: "cpu",
                message: "no ensembles to run".to_string(),
            });
        }
        match self.threads {
            None => self.run_all(job, progress),
            Some(n) => rayon::ThreadPoolBuilder::new()
                .num_threads(n.max(1))
                .build()
                .map_err(|e| EngineError::Backend {
                    backend: "cpu",
                    message: format!("cannot start {n} threads: {e}"),
                })?
                .install(|| self.run_all(job, progress)),
        }
    }
}
