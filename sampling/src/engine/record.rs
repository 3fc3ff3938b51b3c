//! What one ensemble records during a run (samples, traces, index paths), the same
//! way whichever engine runs it, and how the records of all ensembles merge into a
//! [`RunOutput`].

use nrpt_core::index::{IndexStats, PairStats};
use serde::{Deserialize, Serialize};

use super::{EnsembleResult, Job, Record, RunOutput, Trace};

impl Record {
    /// A sample is kept after iteration `k`.
    #[inline]
    pub fn samples_at(&self, k: u64) -> bool {
        self.thin > 0 && k >= self.warmup && k.is_multiple_of(self.thin)
    }

    /// A trace entry is written after iteration `k` (when k + 1 iterations are done).
    #[inline]
    pub(crate) fn traces_at(&self, k: u64) -> bool {
        self.trace_every > 0 && (k + 1).is_multiple_of(self.trace_every)
    }

    /// The index path of ensemble 0 is recorded after iteration `k`.
    #[inline]
    pub(crate) fn paths_at(&self, k: u64) -> bool {
        k < self.path_iterations
    }

    /// Anything is recorded after iteration `k` (else the recorders are not called).
    #[inline]
    pub(crate) fn any_at(&self, k: u64) -> bool {
        self.samples_at(k) || self.traces_at(k) || self.paths_at(k)
    }
}

/// What a recorder (one per ensemble) reads of one ensemble after an iteration, whichever engine runs
/// it (nrpt-core's driver, the SIMD lanes, a download from the GPU). Each is read only
/// when the job records it at that iteration.
pub trait Observed {
    /// The learning rates by level.
    fn ladder(&self) -> Vec<f64>;
    /// The correction buffer.
    fn buffer(&self) -> f64;
    /// The totals so far.
    fn stats(&self) -> IndexStats;
    /// The running indicator count of `pair`.
    fn indicators(&self, pair: usize) -> u64;
    /// The level of every replica.
    fn level_of(&self) -> Vec<u32>;
    /// Appends the state at the target level to `samples`.
    fn push_target(&self, samples: &mut Vec<f32>);
}

/// The records of one ensemble.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recorder {
    ensemble: usize,
    result: EnsembleResult,
    samples: Vec<f32>,
    sample_iterations: Vec<u64>,
    trace_ladder: Vec<Vec<f64>>,
    trace_buffer: Vec<f64>,
    trace_trips: Vec<IndexStats>,
    trace_rates: Vec<Vec<f64>>,
    trace_iterations: Vec<u64>,
    paths: Vec<Vec<u32>>,
    last_indicators: Vec<u64>,
}

impl Recorder {
    /// Empty records of ensemble `e` of `job`, with room for every sample and trace
    /// entry (what the memory estimate counts: no vector grows past its length).
    pub fn new(job: &Job, e: usize) -> Self {
        let rec = job.record;
        let n_samples = super::memory::kept_samples(job) as usize;
        let entries = super::memory::trace_entries(job) as usize;
        Recorder {
            ensemble: e,
            result: EnsembleResult {
                ladder: Vec::new(),
                buffer: 0.0,
                stats: IndexStats::default(),
                pairs: Vec::new(),
                levels: Vec::new(),
            },
            samples: Vec::with_capacity(n_samples * job.target.dim()),
            sample_iterations: Vec::with_capacity(n_samples),
            trace_ladder: Vec::with_capacity(entries),
            trace_buffer: Vec::with_capacity(entries),
            trace_trips: Vec::with_capacity(entries),
            trace_rates: Vec::with_capacity(entries),
            trace_iterations: Vec::with_capacity(entries),
            paths: if e == 0 && rec.path_iterations > 0 {
                vec![Vec::with_capacity(rec.path_iterations as usize); job.chains]
            } else {
                Vec::new()
            },
            last_indicators: vec![0; job.chains.saturating_sub(1)],
        }
    }

    /// Checks that these are the records of ensemble `e` of `job` after `iteration`
    /// iterations: every count, length and recorded iteration as the run would have
    /// made them.
    pub fn check(&self, job: &Job, e: usize, iteration: u64) -> Result<(), String> {
        let rec = job.record;
        let (p, dim) = (job.chains, job.target.dim());
        if self.ensemble != e {
            return Err(format!("they belong to ensemble {}", self.ensemble));
        }
        let n = self.sample_iterations.len();
        let kept = kept_before(rec, iteration);
        if n as u64 != kept {
            return Err(format!(
                "{n} samples kept, the run keeps {kept} by iteration {iteration}"
            ));
        }
        let first = first_kept(rec);
        if let Some((i, &k)) = self
            .sample_iterations
            .iter()
            .enumerate()
            .find(|&(i, &k)| Some(k) != first.and_then(|f| f.checked_add(i as u64 * rec.thin)))
        {
            return Err(format!("sample {i} is from iteration {k}"));
        }
        if self.samples.len() != n * dim {
            return Err(format!(
                "{} sample values for {n} samples of {dim} coordinates",
                self.samples.len()
            ));
        }
        let traces = iteration.checked_div(rec.trace_every).unwrap_or(0);
        let lengths = [
            ("ladder", self.trace_ladder.len()),
            ("buffer", self.trace_buffer.len()),
            ("round trips", self.trace_trips.len()),
            ("rates", self.trace_rates.len()),
            ("iterations", self.trace_iterations.len()),
        ];
        for (name, len) in lengths {
            if len as u64 != traces {
                return Err(format!(
                    "{len} trace entries of the {name}, the run has {traces} by iteration {iteration}"
                ));
            }
        }
        for (i, &k) in self.trace_iterations.iter().enumerate() {
            if k != (i as u64 + 1) * rec.trace_every {
                return Err(format!("trace entry {i} is at iteration {k}"));
            }
        }
        if self.trace_ladder.iter().any(|l| l.len() != p)
            || self.trace_rates.iter().any(|r| r.len() != p - 1)
        {
            return Err("a trace entry has the wrong number of levels or pairs".into());
        }
        if self.last_indicators.len() != p - 1 {
            return Err(format!(
                "{} indicator totals for {} pairs",
                self.last_indicators.len(),
                p - 1
            ));
        }
        let path_len = iteration.min(rec.path_iterations) as usize;
        let paths_ok = if e == 0 && rec.path_iterations > 0 {
            self.paths.len() == p
                && self
                    .paths
                    .iter()
                    .all(|l| l.len() == path_len && l.iter().all(|&v| (v as usize) < p))
        } else {
            self.paths.is_empty()
        };
        if !paths_ok {
            return Err("the index paths do not fit the run".into());
        }
        Ok(())
    }

    /// `true` for ensemble 0 (whose index paths are recorded).
    pub(crate) fn is_first(&self) -> bool {
        self.ensemble == 0
    }

    /// Records what `rec` asks for after iteration `k` of the ensemble `view` shows:
    /// the one observation every engine makes. Inline: it runs per ensemble and
    /// iteration, and on most iterations records nothing (three tests); the recording
    /// itself is in the functions it calls.
    #[inline]
    pub fn observe(&mut self, rec: Record, k: u64, view: &impl Observed) {
        if rec.traces_at(k) {
            let (ladder, buffer, stats) = (view.ladder(), view.buffer(), view.stats());
            self.trace(k, rec.trace_every, ladder, buffer, stats, |l| {
                view.indicators(l)
            });
        }
        if self.is_first() && rec.paths_at(k) {
            self.path(view.level_of().into_iter());
        }
        if rec.samples_at(k) {
            view.push_target(&mut self.samples);
            self.sample_iterations.push(k);
        }
    }

    /// A trace entry after iteration `k`; `indicators(l)` is the running total of
    /// pair l's indicator count (rates are taken over the interval since the last
    /// entry, of `interval` iterations).
    pub fn trace(
        &mut self,
        k: u64,
        interval: u64,
        ladder: Vec<f64>,
        buffer: f64,
        stats: IndexStats,
        indicators: impl Fn(usize) -> u64,
    ) {
        self.trace_ladder.push(ladder);
        self.trace_buffer.push(buffer);
        self.trace_trips.push(stats);
        let rates = self
            .last_indicators
            .iter_mut()
            .enumerate()
            .map(|(l, last)| {
                let now = indicators(l);
                let rate = (now - *last) as f64 / interval as f64;
                *last = now;
                rate
            })
            .collect();
        self.trace_rates.push(rates);
        self.trace_iterations.push(k + 1);
    }

    /// Appends the level of every replica (ensemble 0 only).
    pub fn path(&mut self, level_of: impl Iterator<Item = u32>) {
        for (path, level) in self.paths.iter_mut().zip(level_of) {
            path.push(level);
        }
    }

    /// The final state of the ensemble; `levels` holds the state at every level
    /// (P·D values, level by level).
    pub fn finish(
        &mut self,
        ladder: Vec<f64>,
        buffer: f64,
        stats: IndexStats,
        pairs: Vec<PairStats>,
        levels: Vec<f32>,
    ) {
        self.result = EnsembleResult {
            ladder,
            buffer,
            stats,
            pairs,
            levels,
        };
    }
}

/// The first iteration whose state is kept (`None` when none is).
fn first_kept(rec: Record) -> Option<u64> {
    if rec.thin == 0 {
        return None;
    }
    rec.warmup.div_ceil(rec.thin).checked_mul(rec.thin)
}

/// How many samples are kept in iterations `0 .. iteration`.
fn kept_before(rec: Record, iteration: u64) -> u64 {
    match first_kept(rec) {
        Some(first) if first < iteration => (iteration - 1 - first) / rec.thin + 1,
        _ => 0,
    }
}

/// Per level, the mean and the standard deviation (over ensembles, divisor E − 1; 0
/// for one ensemble) of the learning rates of several ladders of equal length.
pub fn ladder_spread(ladders: &[&[f64]]) -> (Vec<f64>, Vec<f64>) {
    let levels = ladders.first().map_or(0, |l| l.len());
    (0..levels)
        .map(|l| crate::stats::mean_sd(&ladders.iter().map(|x| x[l]).collect::<Vec<_>>()))
        .unzip()
}

/// What one ensemble traced: an entry every `trace_every` iterations.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EnsembleTrace {
    /// Iterations done at each entry.
    pub iterations: Vec<u64>,
    /// The ladder at each entry.
    pub ladder: Vec<Vec<f64>>,
    /// The buffer C at each entry.
    pub buffer: Vec<f64>,
    /// Round trips and restarts so far at each entry.
    pub trips: Vec<IndexStats>,
    /// Per pair, the share of iterations since the previous entry with indicator 1.
    pub rates: Vec<Vec<f64>>,
}

/// Everything one ensemble of a run recorded: a run's output cut by ensemble
/// ([`RunOutput::split`]), to be joined with the other ensembles' records
/// ([`RunOutput::join`]) into the output of the whole run, to the bit (how the shards
/// of `nrpt reproduce` merge; those of `nrpt deep` keep only the traces, joined by
/// [`super::Trace::merge`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnsembleRecords {
    /// The ensemble's index in its run.
    pub ensemble: usize,
    /// Its final state.
    pub result: EnsembleResult,
    /// Its target-level samples, sample by sample.
    pub samples: Vec<f32>,
    /// The iteration of each sample.
    pub sample_iterations: Vec<u64>,
    /// Its traces.
    pub trace: EnsembleTrace,
    /// The level of each replica over the first iterations (ensemble 0 only).
    pub paths: Vec<Vec<u32>>,
}

impl EnsembleRecords {
    /// Checks that these are the whole records of ensemble `e` of a finished run of
    /// `job`: every count and length as the run makes them (records read from a file
    /// are checked before [`RunOutput::join`] indexes them).
    pub fn check(&self, job: &Job, e: usize) -> Result<(), String> {
        let (p, dim) = (job.chains, job.target.dim());
        let r = &self.result;
        if r.ladder.len() != p || r.pairs.len() != p.saturating_sub(1) || r.levels.len() != p * dim
        {
            return Err(format!(
                "ensemble {e}: its final state does not fit {p} chains of {dim} coordinates"
            ));
        }
        let as_recorded = Recorder {
            ensemble: self.ensemble,
            result: r.clone(),
            samples: self.samples.clone(),
            sample_iterations: self.sample_iterations.clone(),
            trace_ladder: self.trace.ladder.clone(),
            trace_buffer: self.trace.buffer.clone(),
            trace_trips: self.trace.trips.clone(),
            trace_rates: self.trace.rates.clone(),
            trace_iterations: self.trace.iterations.clone(),
            paths: self.paths.clone(),
            last_indicators: vec![0; p.saturating_sub(1)],
        };
        as_recorded
            .check(job, e, job.iterations)
            .map_err(|m| format!("ensemble {e}: {m}"))
    }
}

/// Merges the records of every ensemble (in ensemble order) into a run's output.
pub fn merge(backend: String, runs: Vec<Recorder>, dim: usize) -> RunOutput {
    let parts = runs
        .into_iter()
        .map(|r| EnsembleRecords {
            ensemble: r.ensemble,
            result: r.result,
            samples: r.samples,
            sample_iterations: r.sample_iterations,
            trace: EnsembleTrace {
                iterations: r.trace_iterations,
                ladder: r.trace_ladder,
                buffer: r.trace_buffer,
                trips: r.trace_trips,
                rates: r.trace_rates,
            },
            paths: r.paths,
        })
        .collect();
    join(backend, parts, dim)
}

/// The output of a run from the records of its ensembles, in ensemble order.
pub(super) fn join(backend: String, parts: Vec<EnsembleRecords>, dim: usize) -> RunOutput {
    let n = parts.first().map_or(0, |r| r.sample_iterations.len());
    let mut samples = Vec::with_capacity(n * parts.len() * dim);
    for i in 0..n {
        for r in &parts {
            samples.extend_from_slice(&r.samples[i * dim..(i + 1) * dim]);
        }
    }
    // By reference: a copy of every ensemble's trace would double the run's peak.
    let traces: Vec<&EnsembleTrace> = parts.iter().map(|r| &r.trace).collect();
    let trace = merge_traces(&traces);
    let mut ensembles = Vec::with_capacity(parts.len());
    let mut ensemble_traces = Vec::with_capacity(parts.len());
    let mut first = true;
    let (mut paths, mut sample_iterations) = (Vec::new(), Vec::new());
    for r in parts {
        if first {
            paths = r.paths;
            sample_iterations = r.sample_iterations;
            first = false;
        }
        ensembles.push(r.result);
        ensemble_traces.push(r.trace);
    }
    RunOutput {
        backend,
        samples,
        sample_iterations,
        trace,
        paths,
        ensembles,
        ensemble_traces,
    }
}

/// The records of every ensemble of `out`, the first being ensemble `first` of its run
/// (the inverse of [`join`]). `None` when `out` does not hold whole records of its
/// ensembles (samples or traces missing).
pub(super) fn split(out: &RunOutput, first: usize, dim: usize) -> Option<Vec<EnsembleRecords>> {
    let e = out.ensembles.len();
    let n = out.sample_iterations.len();
    if out.ensemble_traces.len() != e || out.samples.len() != n * e * dim {
        return None;
    }
    Some(
        out.ensembles
            .iter()
            .zip(&out.ensemble_traces)
            .enumerate()
            .map(|(i, (result, trace))| {
                let mut samples = Vec::with_capacity(n * dim);
                for k in 0..n {
                    let at = (k * e + i) * dim;
                    samples.extend_from_slice(&out.samples[at..at + dim]);
                }
                EnsembleRecords {
                    ensemble: first + i,
                    result: result.clone(),
                    samples,
                    sample_iterations: out.sample_iterations.clone(),
                    trace: trace.clone(),
                    // Paths are recorded for ensemble 0 of the run only.
                    paths: if i == 0 && first == 0 {
                        out.paths.clone()
                    } else {
                        Vec::new()
                    },
                }
            })
            .collect(),
    )
}

pub(super) fn merge_traces(runs: &[&EnsembleTrace]) -> Trace {
    let Some(first) = runs.first() else {
        return Trace::default();
    };
    let e = runs.len() as f64;
    let mut trace = Trace {
        iterations: first.iterations.clone(),
        ..Trace::default()
    };
    for i in 0..first.iterations.len() {
        let ladders: Vec<&[f64]> = runs.iter().map(|r| r.ladder[i].as_slice()).collect();
        let (mean, sd) = ladder_spread(&ladders);
        trace.ladder.push(mean);
        trace.ladder_sd.push(sd);
        trace
            .buffer
            .push(runs.iter().map(|r| r.buffer[i]).sum::<f64>() / e);
        trace
            .round_trips
            .push(runs.iter().map(|r| r.trips[i].round_trips).sum());
        trace
            .authors_round_trips
            .push(runs.iter().map(|r| r.trips[i].authors_round_trips).sum());
        let pairs = first.rates[i].len();
        trace.indicator_rate.push(
            (0..pairs)
                .map(|l| runs.iter().map(|r| r.rates[i][l]).sum::<f64>() / e)
                .collect(),
        );
    }
    trace
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recorders are called exactly after the iterations that record something.
    #[test]
    fn recorders_are_called_only_when_something_is_recorded() {
        assert!((0..10_000).all(|k| !Record::NOTHING.any_at(k)));
        let rec = Record {
            thin: 5,
            warmup: 12,
            trace_every: 7,
            path_iterations: 2,
        };
        let called: Vec<u64> = (0..22).filter(|&k| rec.any_at(k)).collect();
        assert_eq!(called, vec![0, 1, 6, 13, 15, 20]);
    }

    /// The closed form of the kept samples against counting them one by one.
    #[test]
    fn kept_samples_are_counted_in_closed_form() {
        for thin in 0..7 {
            for warmup in 0..20 {
                let rec = Record {
                    thin,
                    warmup,
                    trace_every: 0,
                    path_iterations: 0,
                };
                for iteration in 0..60 {
                    let slow = (0..iteration).filter(|&k| rec.samples_at(k)).count() as u64;
                    assert_eq!(kept_before(rec, iteration), slow, "{rec:?} at {iteration}");
                }
            }
        }
    }
}
