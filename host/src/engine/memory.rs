//! What a run will allocate, counted before it starts: one estimate for every engine
//! path and command, checked against `--max-memory` so that a run too large for the
//! machine is refused with the reason instead of being killed half-way.
//!
//! The parts are counted from the sizes of the buffers the engines allocate (see
//! `EnsembleBuffers`, `Recorder`, `record::merge`, the classifier's `Batched`): the
//! chain states with their momenta, energies, ladders and pair counters; what is
//! recorded (samples, traces, index paths) and the merged copy of it; the data set; the
//! per-ensemble scratch of data targets; a checkpoint's encoding; what the command
//! writes out (CSV text, `.npy` bytes, JSON), which it builds in memory; and the
//! process itself. `host/tests/it/reliability.rs` compares the estimate with the peak
//! resident memory of real runs.

use super::Job;

/// The resident memory of the process before any run: code, libraries, thread stacks
/// in use, allocator pools (measured: 8 to 10 MiB for a small run).
pub const PROCESS_BYTES: u64 = 16 << 20;

/// The parts of a run's memory, in bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Footprint {
    /// (what, bytes), in the order they were counted.
    pub parts: Vec<(&'static str, u64)>,
}

impl Footprint {
    /// The sum of the parts.
    pub fn total(&self) -> u64 {
        self.parts
            .iter()
            .fold(0u64, |acc, (_, b)| acc.saturating_add(*b))
    }

    /// Adds a part.
    pub fn add(&mut self, what: &'static str, bytes: u64) {
        self.parts.push((what, bytes));
    }

    /// The parts as people read them: `chain states 1.2 GiB, records 40.0 MiB, …`.
    pub fn describe(&self) -> String {
        self.parts
            .iter()
            .filter(|(_, b)| *b > 0)
            .map(|(w, b)| format!("{w} {}", crate::limits::human(*b)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn mul(values: &[u64]) -> u64 {
    values.iter().fold(1u64, |acc, &v| acc.saturating_mul(v))
}

/// How many samples a job keeps per ensemble.
pub fn kept_samples(job: &Job) -> u64 {
    let r = job.record;
    if r.thin == 0 || job.iterations <= r.warmup {
        0
    } else {
        (job.iterations - r.warmup).div_ceil(r.thin)
    }
}

/// How many trace entries a job records.
pub fn trace_entries(job: &Job) -> u64 {
    job.iterations
        .checked_div(job.record.trace_every)
        .unwrap_or(0)
}

/// The memory of running `job` (states, records and their merge, data, scratch, the
/// process), without what the command writes out.
pub fn of_job(job: &Job) -> Footprint {
    let (e, p, d) = (
        job.ensembles as u64,
        job.chains as u64,
        job.target.dim() as u64,
    );
    let pairs = p.saturating_sub(1);
    let momentum = u64::from(job.options.explorer.has_momentum());
    let mut f = Footprint::default();
    f.add("process", PROCESS_BYTES);
    // EnsembleBuffers<f32>: states and momenta (P·D f32), scratch (2D f32), energies (f32),
    // ladder and temperatures (f64), replica_at, level_of (u32), trips (u8) per level;
    // gates, flags (1 byte) and pair counters (4 × u64) per pair. The final levels (P·D
    // f32) are copied out once more at the end, and the lane engine holds its own copy of
    // the states of a lane group while it runs.
    let per_ensemble = mul(&[p, d, 4 * (1 + momentum + 1)])
        .saturating_add(mul(&[8, d]))
        .saturating_add(mul(&[p, 4 + 8 + 8 + 4 + 4 + 1]))
        .saturating_add(mul(&[pairs, 1 + 1 + 32]));
    f.add("chain states", mul(&[e, per_ensemble]));
    // Recorder: samples (D f32) and their iterations (u64); per trace entry the ladder
    // (P f64, in its own Vec), the rates (P − 1 f64), buffer, round trips (4 × u64) and
    // iteration; index paths (P u32 per recorded iteration, ensemble 0).
    let samples = kept_samples(job);
    let entries = trace_entries(job);
    let per_entry = mul(&[8, p])
        .saturating_add(mul(&[8, pairs]))
        .saturating_add(8 + 32 + 8 + 2 * 24);
    let records = mul(&[e, samples, mul(&[4, d]).saturating_add(8)])
        .saturating_add(mul(&[e, entries, per_entry]))
        .saturating_add(mul(&[p, job.record.path_iterations.min(job.iterations), 4]));
    f.add("records", records);
    // record::merge: the samples once more, and per trace entry the mean and sd of the
    // ladder (P f64 each) and the mean rates (P − 1 f64). The output keeps every
    // ensemble's trace beside them (`RunOutput::ensemble_traces`, what a shard's merge
    // joins), so the memory they hold is not free for writing the outputs: counted again.
    let merged = mul(&[e, samples, 4, d])
        .saturating_add(mul(&[
            entries,
            mul(&[16, p])
                .saturating_add(mul(&[8, pairs]))
                .saturating_add(3 * 24 + 32),
        ]))
        .saturating_add(mul(&[e, entries, per_entry]));
    f.add("merged records", merged);
    for (what, bytes) in job.target.memory(job.ensembles) {
        f.add(what, bytes);
    }
    f
}

/// The memory of encoding a checkpoint of `job` at its end: the bytes of the state's
/// encoding (at most what its states and records take in memory).
pub fn checkpoint(job: &Job) -> u64 {
    of_job(job)
        .parts
        .iter()
        .filter(|(w, _)| *w == "chain states" || *w == "records")
        .map(|(_, b)| *b)
        .sum()
}

/// Checks `footprint` against this process's `--max-memory`; `lower` says what the user
/// can lower (`--ensembles, --chains or --iterations`).
pub fn check(footprint: &Footprint, lower: &str) -> Result<(), String> {
    let limit = crate::limits::get().max_memory;
    let total = footprint.total();
    if total <= limit {
        return Ok(());
    }
    Err(format!(
        "the run would need about {} ({}), more than --max-memory {}: lower {lower}, or \
         raise --max-memory if the machine has the memory",
        crate::limits::human(total),
        footprint.describe(),
        crate::limits::human(limit)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunConfig;

    #[test]
    fn parts_grow_with_what_they_count() {
        let small = RunConfig::default()
            .job(crate::engine::Record::NOTHING)
            .unwrap();
        let base = of_job(&small);
        assert!(base.total() > PROCESS_BYTES);
        let more = Job {
            ensembles: small.ensembles * 10,
            ..small.clone()
        };
        let part = |f: &Footprint, w: &str| f.parts.iter().find(|(n, _)| *n == w).unwrap().1;
        assert_eq!(
            part(&of_job(&more), "chain states"),
            10 * part(&base, "chain states")
        );
        let recorded = Job {
            record: crate::engine::Record {
                thin: 1,
                warmup: 0,
                trace_every: 1,
                path_iterations: 0,
            },
            ..small
        };
        assert!(part(&of_job(&recorded), "records") > 20_000 * 5 * 8);
        assert!(
            base.describe().contains("process 16.0 MiB"),
            "{}",
            base.describe()
        );
    }

    #[test]
    fn huge_runs_do_not_overflow() {
        let job = Job {
            ensembles: usize::MAX,
            chains: usize::MAX,
            iterations: u64::MAX,
            ..RunConfig::default()
                .job(crate::engine::Record::NOTHING)
                .unwrap()
        };
        assert_eq!(of_job(&job).total(), u64::MAX);
        assert!(check(&of_job(&job), "--chains").is_err());
    }
}
