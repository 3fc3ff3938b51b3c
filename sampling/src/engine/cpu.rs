//! The CPU engine: ensembles in parallel with rayon, each one driven by nrpt-core in
//! `f32` over buffers allocated once. Results depend on the seed only, not on the
//! number of threads: ensemble e always draws from Philox key (seed, e).

use nrpt_core::driver::{Tempering, TemperingOptions};
use nrpt_core::target::EnergyOracle;
use rayon::prelude::*;

use nrpt_core::adapt::StepSize;
use nrpt_core::index::IndexStats;

use super::group::{Group, drive};
use super::lockstep::LANES;
use super::record::{Observed, Recorder, merge};
pub use super::simd::Simd;
use super::state::{EnsembleState, Handoff, RunState};
use super::{Backend, EngineError, EnsembleBuffers, Job, OnProgress, RunOutput};

/// The CPU engine.
#[derive(Clone, Debug, Default)]
pub struct CpuBackend {
    /// Worker threads (None: rayon's default, one per core).
    pub threads: Option<usize>,
    /// Which code paths may run (for comparisons and tests; results are the same bits
    /// whichever runs).
    pub simd: Simd,
    /// Fast mode (`--math fast`): the 2D toy's lane groups (the lockstep path, E ≥ 16)
    /// use fused multiply-adds and lower-degree `ln` and sin/cos 2πx polynomials at the
    /// GPU's hardware accuracy (`simd::Fast`) instead of nrpt-core's bits; every other
    /// path computes exactly. `false` (exact) by default.
    pub fast_math: bool,
}

/// At most this many ensembles per rayon task: they advance in lockstep, iteration by
/// iteration, sharing the step size of the adaptation.
const CHUNK: usize = 8;

/// Runs ensembles `first .. first + count` in lockstep up to iteration `until`, from
/// their saved states when given, with the oracle and the exploration path of the
/// job's target; returns their states.
fn run_chunk(
    job: &Job,
    first: usize,
    count: usize,
    from: Option<&[Handoff]>,
    until: u64,
    simd: Simd,
    progress: OnProgress<'_>,
) -> Result<Vec<EnsembleState>, EngineError> {
    let span = Span {
        first,
        count,
        from,
        until,
    };
    job.target.run_cpu(job, span, simd, progress)
}

/// Which ensembles a chunk runs, from where, up to which iteration.
#[derive(Clone, Copy, Debug)]
pub struct Span<'s> {
    /// The first ensemble.
    pub first: usize,
    /// How many.
    pub count: usize,
    /// Their saved states, when resumed (each taken by the task that runs it).
    pub from: Option<&'s [Handoff]>,
    /// The iteration to stop at.
    pub until: u64,
}

/// The one iteration loop of the CPU engine: explore (by `explore`), exchange,
/// record, for every ensemble of the chunk, iteration by iteration.
pub(crate) fn run_chunk_with<O>(
    job: &Job,
    span: Span<'_>,
    progress: OnProgress<'_>,
    oracle: impl Fn(usize) -> O,
    explore: impl Fn(&mut Tempering<'_, f32, O>) -> Result<(), EngineError>,
) -> Result<Vec<EnsembleState>, EngineError>
where
    O: EnergyOracle<f32, Error: Into<EngineError>>,
{
    let Span {
        first,
        count,
        from,
        until,
    } = span;
    let (p, dim) = (job.chains, job.target.dim());
    let momentum = job.options.explorer.has_momentum();
    // Ensemble `first + i` of the job is ensemble `base + first + i` of its run.
    let base = job.first_ensemble();
    let (mut buffers, mut records, mut starts) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..count {
        match from {
            Some(saved) => {
                let s = Handoff::take_from(saved, i)?;
                buffers.push(s.buffers);
                records.push(s.recorder);
                starts.push(Some(s.progress));
            }
            None => {
                buffers.push(EnsembleBuffers::new(p, dim, momentum));
                records.push(Recorder::new(job, base + first + i));
                starts.push(None);
            }
        }
    }
    if from.is_none()
        && let Some(states) = &job.initial_states
    {
        let per = p * dim;
        for (i, b) in buffers.iter_mut().enumerate() {
            let e = first + i;
            let Some(src) = states.get(e * per..(e + 1) * per) else {
                return Err(EngineError::Backend {
                    backend: "cpu",
                    message: format!(
                        "initial states for {} ensembles of {p} × {dim} values, got {} values",
                        job.ensembles,
                        states.len()
                    ),
                });
            };
            b.states_mut().copy_from_slice(src);
        }
    }
    let mut runs = buffers
        .iter_mut()
        .zip(&starts)
        .enumerate()
        .map(|(i, (b, start))| {
            let options = TemperingOptions {
                ensemble: (base + first + i) as u32,
                ..job.options
            };
            match start {
                Some(progress) => {
                    Tempering::resume(options, oracle(base + first + i), b.lend(), *progress)
                }
                None => Tempering::new(options, oracle(base + first + i), b.lend()),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut group = Drivers {
        runs: &mut runs,
        explore,
    };
    let driven = drive(&mut group, &mut records, job, until, progress);
    // This thread's exploration scratch is not needed until its next ensembles.
    super::replica_lanes::release_scratch();
    driven?;
    let progresses: Vec<_> = runs.iter().map(|t| t.progress()).collect();
    drop(runs);
    Ok(buffers
        .into_iter()
        .zip(records)
        .zip(progresses)
        .map(|((buffers, recorder), progress)| EnsembleState {
            buffers,
            progress,
            recorder,
        })
        .collect())
}

/// nrpt-core's drivers side by side, each exploring by `explore`.
struct Drivers<'r, 't, O: EnergyOracle<f32>, X> {
    runs: &'r mut [Tempering<'t, f32, O>],
    explore: X,
}

impl<O, X> Group for Drivers<'_, '_, O, X>
where
    O: EnergyOracle<f32, Error: Into<EngineError>>,
    X: Fn(&mut Tempering<'_, f32, O>) -> Result<(), EngineError>,
{
    fn iteration(&self) -> u64 {
        self.runs.first().map_or(0, |t| t.iteration())
    }

    fn ensembles(&self) -> usize {
        self.runs.len()
    }

    fn step(&mut self, gamma: StepSize) -> Result<(), EngineError> {
        for t in self.runs.iter_mut() {
            (self.explore)(t)?;
            t.exchange_with_gamma(gamma).map_err(Into::into)?;
        }
        Ok(())
    }

    fn view(&self, i: usize) -> impl Observed + '_ {
        DriverView(&self.runs[i])
    }
}

/// One driver, as a recorder reads it.
struct DriverView<'v, 't, O: EnergyOracle<f32>>(&'v Tempering<'t, f32, O>);

impl<O: EnergyOracle<f32>> Observed for DriverView<'_, '_, O> {
    fn ladder(&self) -> Vec<f64> {
        self.0.storage().ladder().to_vec()
    }
    fn buffer(&self) -> f64 {
        self.0.buffer()
    }
    fn stats(&self) -> IndexStats {
        self.0.stats()
    }
    fn indicators(&self, pair: usize) -> u64 {
        self.0.storage().pair_stats()[pair].indicators
    }
    fn level_of(&self) -> Vec<u32> {
        self.0.storage().level_of().to_vec()
    }
    fn push_target(&self, samples: &mut Vec<f32>) {
        samples.extend_from_slice(self.0.target_state());
    }
}

impl CpuBackend {
    /// Runs `job` from `from` (or from its start) up to iteration `until`, and returns
    /// the state there: a run cut into segments gives the same bits as one run (what
    /// checkpoints rely on). Uses the thread count of this backend.
    pub fn run_from(
        &self,
        job: &Job,
        from: Option<RunState>,
        until: u64,
        progress: OnProgress<'_>,
    ) -> Result<RunState, EngineError> {
        if job.ensembles == 0 {
            return Err(EngineError::Backend {
                backend: "cpu",
                message: "no ensembles to run".to_string(),
            });
        }
        if let Some(s) = &from {
            s.check(job).map_err(|message| EngineError::Backend {
                backend: "cpu",
                message: format!("the saved state does not fit the run: {message}"),
            })?;
        }
        let until = until.min(job.iterations);
        // The saved ensembles are moved into the tasks that resume them.
        let saved = from.map(Handoff::all);
        let body = || self.segment(job, saved.as_deref(), until, progress);
        let state = match self.threads {
            None => body(),
            Some(n) => rayon::ThreadPoolBuilder::new()
                .num_threads(n.max(1))
                .build()
                .map_err(|e| EngineError::Backend {
                    backend: "cpu",
                    message: format!("cannot start {n} threads: {e}"),
                })?
                .install(body),
        };
        // The threads' scratch is free: for a checkpoint's encoding, or the merge.
        super::memory::release_freed_memory();
        state
    }

    /// The output of a run that has reached its last iteration.
    pub fn finish(&self, job: &Job, state: RunState) -> RunOutput {
        let p = job.chains;
        let runs = state
            .ensembles
            .into_iter()
            .map(|s| {
                let b = &s.buffers;
                let levels: Vec<f32> = b.levels(p);
                let mut r = s.recorder;
                r.finish(
                    b.ladder().to_vec(),
                    s.progress.buffer,
                    s.progress.stats,
                    b.pair_stats().to_vec(),
                    levels,
                );
                r
            })
            .collect();
        let out = merge(self.name(), runs, job.target.dim());
        // The records are merged away: free for the outputs.
        super::memory::release_freed_memory();
        out
    }

    fn segment(
        &self,
        job: &Job,
        states: Option<&[Handoff]>,
        until: u64,
        progress: OnProgress<'_>,
    ) -> Result<RunState, EngineError> {
        let slice = |first: usize, count: usize| states.map(|s| &s[first..first + count]);
        // Lane groups pay off once they are mostly full; small runs go one ensemble at
        // a time (still vectorized within the ensemble where possible). The choice
        // depends on the job alone, so a resumed run takes the same path.
        let simd = self.simd.resolve();
        let ensembles: Vec<EnsembleState> = if simd != Simd::Scalar
            && job.ensembles >= LANES / 2
            && super::lockstep::applies(job)
        {
            let groups: Vec<(usize, usize)> = (0..job.ensembles)
                .step_by(LANES)
                .map(|first| (first, LANES.min(job.ensembles - first)))
                .collect();
            groups
                .into_par_iter()
                .map(|(first, count)| {
                    super::lockstep::run_group(
                        job,
                        first,
                        count,
                        slice(first, count),
                        until,
                        simd,
                        self.fast_math,
                        progress,
                    )
                })
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                .flatten()
                .collect()
        } else {
            // Small runs are split finer so that every thread has work.
            let size = job
                .ensembles
                .div_ceil(2 * rayon::current_num_threads())
                .clamp(1, CHUNK);
            let chunks: Vec<(usize, usize)> = (0..job.ensembles)
                .step_by(size)
                .map(|first| (first, size.min(job.ensembles - first)))
                .collect();
            chunks
                .into_par_iter()
                .map(|(first, count)| {
                    run_chunk(
                        job,
                        first,
                        count,
                        slice(first, count),
                        until,
                        simd,
                        progress,
                    )
                })
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                .flatten()
                .collect()
        };
        Ok(RunState {
            iteration: until,
            ensembles,
        })
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        "cpu".to_string()
    }

    fn run(&self, job: &Job, progress: OnProgress<'_>) -> Result<RunOutput, EngineError> {
        let state = self.run_from(job, None, job.iterations, progress)?;
        Ok(self.finish(job, state))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use nrpt_core::window::Scheme;

    use super::*;
    use crate::engine::Flow;
    use crate::targets::Toy;

    /// The progress reports of a run add up to E × iterations, whichever path runs it
    /// (small runs one ensemble at a time, larger ones in lockstep lane groups).
    #[test]
    fn progress_adds_up_to_all_the_work() {
        for ensembles in [6, 40] {
            let job = Job::new(
                Arc::new(Toy::modes2d(2.0)),
                TemperingOptions {
                    scheme: Scheme::Deo { window: 7 },
                    seed: 77,
                    ..TemperingOptions::default()
                },
                16,
                ensembles,
                700,
            );
            let done = AtomicU64::new(0);
            CpuBackend::default()
                .run(&job, &|n| {
                    done.fetch_add(n, Ordering::Relaxed);
                    Flow::Continue
                })
                .unwrap();
            assert_eq!(done.load(Ordering::Relaxed), ensembles as u64 * 700);
        }
    }
}
