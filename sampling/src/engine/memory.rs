//! What a run will allocate, counted before it starts: one estimate for every engine
//! path and command, checked against `--max-memory` so that a run too large for the
//! machine is refused with the reason instead of being killed half-way.
//!
//! The parts are counted from the sizes of the buffers the engines allocate (see
//! `EnsembleBuffers`, `Recorder`, `record::merge`, the classifier's `Batched`, the
//! replica lanes' scratch): the chain states with their momenta, energies, ladders and
//! pair counters; the scratch of every worker thread in use; what is recorded (samples,
//! traces, index paths) and the merged copy of it; the data set; the per-ensemble
//! scratch of data targets; a checkpoint's encoding; what the command writes out (the
//! tables' columns, CSV text, `.npy` bytes), which it builds in memory; and the process
//! itself.
//!
//! A run holds its parts in [`Phase`]s: the states and records while it runs, the
//! records and their merged copy while it merges them, the merged copy and the outputs
//! while it writes them. The estimate is what is held throughout plus the largest
//! phase. `host/tests/it/memory_estimate.rs` compares it with the peak resident memory
//! of real runs.

use super::Job;

/// The resident memory of the process before any run: code, libraries, thread stacks
/// in use, allocator pools (measured: 8 to 14 MiB).
pub const PROCESS_BYTES: u64 = 16 << 20;

/// When a part of a run's memory is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// From the start to the end: the process, the data.
    Throughout,
    /// While the engine runs: chain states, records so far, per-thread scratch.
    Running,
    /// While a checkpoint is encoded (and, resumed, read and decoded): the engine's
    /// state and its encoding, the threads' scratch freed.
    Checkpointing,
    /// While the records of the ensembles are merged into the run's output.
    Merging,
    /// While the outputs are built and written.
    Writing,
}

impl Phase {
    /// The phases that follow one another (all but [`Phase::Throughout`]).
    pub(crate) const STEPS: [Phase; 4] = [
        Phase::Running,
        Phase::Checkpointing,
        Phase::Merging,
        Phase::Writing,
    ];

    /// As messages say it.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Throughout => "throughout",
            Phase::Running => "running",
            Phase::Checkpointing => "checkpointing",
            Phase::Merging => "merging the records",
            Phase::Writing => "writing the outputs",
        }
    }
}

/// One part of a run's memory.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Part {
    /// What it is (`chain states`).
    pub what: &'static str,
    /// Its bytes.
    pub bytes: u64,
    /// When it is held.
    pub during: &'static [Phase],
}

/// The parts of a run's memory, in bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Footprint {
    /// The parts, in the order they were counted.
    pub parts: Vec<Part>,
}

impl Footprint {
    /// The bytes held in `phase` (for [`Phase::Throughout`], those held throughout).
    pub fn during(&self, phase: Phase) -> u64 {
        self.parts
            .iter()
            .filter(|p| p.during.contains(&phase))
            .fold(0u64, |acc, p| acc.saturating_add(p.bytes))
    }

    /// The phase that holds the most (besides what is held throughout).
    pub(crate) fn peak_phase(&self) -> Phase {
        Phase::STEPS
            .into_iter()
            .max_by_key(|&p| (self.during(p), std::cmp::Reverse(p as u8)))
            .unwrap_or(Phase::Running)
    }

    /// The estimate: what is held throughout plus the largest phase.
    pub fn total(&self) -> u64 {
        self.during(Phase::Throughout)
            .saturating_add(self.during(self.peak_phase()))
    }

    /// The bytes of the part named `what` (0 when there is none).
    pub fn part(&self, what: &str) -> u64 {
        self.parts
            .iter()
            .filter(|p| p.what == what)
            .fold(0u64, |acc, p| acc.saturating_add(p.bytes))
    }

    /// Adds a part held throughout.
    pub fn add(&mut self, what: &'static str, bytes: u64) {
        self.add_during(&[Phase::Throughout], what, bytes);
    }

    /// Adds a part held during the phases `during`.
    pub fn add_during(&mut self, during: &'static [Phase], what: &'static str, bytes: u64) {
        self.parts.push(Part {
            what,
            bytes,
            during,
        });
    }

    /// The parts as people read them: what is held throughout, then the parts of the
    /// largest phase and the others' totals: `process 16.0 MiB; while running: chain
    /// states 1.2 GiB, records 40.0 MiB (merging the records 80.0 MiB, writing the
    /// outputs 90.0 MiB)`.
    pub fn describe(&self) -> String {
        let list = |phase: Phase| {
            self.parts
                .iter()
                .filter(|p| p.bytes > 0 && p.during.contains(&phase))
                .map(|p| format!("{} {}", p.what, crate::limits::human(p.bytes)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut text = list(Phase::Throughout);
        let peak = self.peak_phase();
        if self.during(peak) == 0 {
            return text;
        }
        if !text.is_empty() {
            text.push_str("; ");
        }
        text.push_str(&format!("while {}: {}", peak.name(), list(peak)));
        // A phase that holds only parts of the running phase (checkpointing, for a run
        // without checkpoints) is not one of its own.
        let own = |phase: Phase| {
            phase == Phase::Running
                || self.parts.iter().any(|p| {
                    p.bytes > 0 && p.during.contains(&phase) && !p.during.contains(&Phase::Running)
                })
        };
        let others: Vec<String> = Phase::STEPS
            .into_iter()
            .filter(|&p| p != peak && self.during(p) > 0 && own(p))
            .map(|p| format!("{} {}", p.name(), crate::limits::human(self.during(p))))
            .collect();
        if !others.is_empty() {
            text.push_str(&format!(" ({})", others.join(", ")));
        }
        text
    }
}

fn mul(values: &[u64]) -> u64 {
    values.iter().fold(1u64, |acc, &v| acc.saturating_mul(v))
}

/// How many samples a job keeps per ensemble.
pub(crate) fn kept_samples(job: &Job) -> u64 {
    let r = job.record;
    if r.thin == 0 || job.iterations <= r.warmup {
        0
    } else {
        (job.iterations - r.warmup).div_ceil(r.thin)
    }
}

/// How many trace entries a job records.
pub(crate) fn trace_entries(job: &Job) -> u64 {
    job.iterations
        .checked_div(job.record.trace_every)
        .unwrap_or(0)
}

/// The memory of running `job` (states, records and their merge, data, scratch, the
/// process), without what the command writes out.
pub fn of_job(job: &Job) -> Footprint {
    use Phase::{Checkpointing, Merging, Running, Writing};
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
    // gates, flags (1 byte) and pair counters (4 × u64) per pair.
    let per_ensemble = mul(&[p, d, 4 * (1 + momentum)])
        .saturating_add(mul(&[8, d]))
        .saturating_add(mul(&[p, 4 + 8 + 8 + 4 + 4 + 1]))
        .saturating_add(mul(&[pairs, 1 + 1 + 32]));
    f.add_during(
        &[Running, Checkpointing],
        "chain states",
        mul(&[e, per_ensemble]),
    );
    // The scratch each worker thread holds while it steps its ensembles (the replica
    // lanes of the toy targets: 128 bytes per coordinate; the 2D toy's lane groups),
    // freed when they are done.
    f.add_during(
        &[Running],
        "per-thread scratch",
        job.target
            .memory_per_thread(job)
            .saturating_mul(threads_in_use(job)),
    );
    // Recorder: samples (D f32) and their iterations (u64); per trace entry the ladder
    // (P f64) and the rates (P − 1 f64), each in a block of its own (16 bytes of the
    // allocator's besides) and a Vec, the buffer, round trips (4 × u64) and iteration;
    // index paths (P u32 per recorded iteration, ensemble 0).
    let samples = kept_samples(job);
    let entries = trace_entries(job);
    let per_entry = mul(&[8, p])
        .saturating_add(mul(&[8, pairs]))
        .saturating_add(2 * (16 + 24) + 8 + 32 + 8);
    let records = mul(&[e, samples, mul(&[4, d]).saturating_add(8)])
        .saturating_add(mul(&[e, entries, per_entry]))
        .saturating_add(mul(&[p, job.record.path_iterations.min(job.iterations), 4]));
    f.add_during(&[Running, Checkpointing, Merging], "records", records);
    // The final state of every level (P·D f32 per ensemble), copied out of the states
    // as they are let go, one ensemble at a time (the last one's buffers are held
    // with the copies); the run's output keeps them.
    f.add_during(&[Merging, Writing], "final levels", mul(&[e, p, d, 4]));
    f.add_during(&[Merging], "one ensemble's buffers", per_ensemble);
    // record::merge: the samples once more, and per trace entry the mean and sd of the
    // ladder (P f64 each) and the mean rates (P − 1 f64).
    let merged = mul(&[e, samples, 4, d]).saturating_add(mul(&[
        entries,
        mul(&[16, p])
            .saturating_add(mul(&[8, pairs]))
            .saturating_add(3 * 24 + 32),
    ]));
    f.add_during(&[Merging, Writing], "merged records", merged);
    // The output keeps every ensemble's trace and the index paths beside them (moved
    // out of the records: `RunOutput::ensemble_traces`, what a shard's merge joins).
    let traces = mul(&[e, entries, per_entry]).saturating_add(mul(&[
        p,
        job.record.path_iterations.min(job.iterations),
        4,
    ]));
    f.add_during(&[Writing], "ensemble traces", traces);
    for (what, bytes) in job.target.memory(job.ensembles) {
        f.add(what, bytes);
    }
    f
}

/// The worker threads that run `job` at once: those of the current rayon pool (the
/// command's `--threads`, else `RAYON_NUM_THREADS`, else one per core; see `main`),
/// at most one per ensemble, since the CPU engine gives each thread whole ensembles.
pub(crate) fn threads_in_use(job: &Job) -> u64 {
    (rayon::current_num_threads() as u64)
        .min(job.ensembles as u64)
        .max(1)
}

/// The memory of encoding a checkpoint of `job` (held with the engine's state, in
/// [`Phase::Checkpointing`]): the bytes of the state's encoding, at most what its
/// states and records take in memory. A resumed run holds as much while it reads the
/// file and decodes it.
pub fn checkpoint(job: &Job) -> u64 {
    let f = of_job(job);
    f.part("chain states").saturating_add(f.part("records"))
}

/// Makes the allocator give large blocks back to the system as soon as they are freed,
/// so that what a run frees between its phases is free for the next, as the estimate
/// assumes: with glibc, blocks of 1 MiB or more are then mapped on their own (its
/// default threshold rises with every large block freed, up to 32 MiB, and blocks below
/// it stay in the heaps once freed). The `nrpt` command calls it first; with another
/// allocator it does nothing.
pub fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt sets a parameter of the allocator, which it reads under its own
    // locks.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// Gives the whole free pages of the allocator's heaps back to the system (glibc's
/// `malloc_trim`): smaller blocks freed by one phase (the records of many ensembles,
/// merged away) would otherwise stay with the process, amid blocks still held. The
/// engine calls it between phases; with another allocator it does nothing.
pub(crate) fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages, under the allocator's locks.
    unsafe {
        libc::malloc_trim(0);
    }
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
        let part = |f: &Footprint, w: &str| f.part(w);
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

    /// What is held throughout adds to the largest phase; phases do not add up; the
    /// description names the parts of the largest phase and the others' totals.
    #[test]
    fn phases_follow_one_another() {
        use Phase::{Checkpointing, Merging, Running, Writing};
        let mut f = Footprint::default();
        f.add("process", 10);
        f.add_during(&[Running], "chain states", 100);
        f.add_during(&[Running, Merging], "records", 40);
        f.add_during(&[Merging, Writing], "merged records", 40);
        f.add_during(&[Writing], "outputs", 70);
        assert_eq!(f.during(Running), 140);
        assert_eq!(f.during(Merging), 80);
        assert_eq!(f.during(Writing), 110);
        assert_eq!(f.peak_phase(), Running);
        assert_eq!(f.total(), 150);
        assert_eq!(
            f.describe(),
            "process 10 B; while running: chain states 100 B, records 40 B \
             (merging the records 80 B, writing the outputs 110 B)"
        );
        f.add_during(&[Writing], "npy bytes", 40);
        assert_eq!((f.peak_phase(), f.total()), (Writing, 160));
        // Checkpointing with only the running phase's parts is not named; with a
        // checkpoint's encoding it is.
        f.add_during(&[Running, Checkpointing], "more states", 5);
        assert!(!f.describe().contains("checkpointing"), "{}", f.describe());
        f.add_during(&[Checkpointing], "checkpoint", 5);
        assert!(
            f.describe().contains("checkpointing 10 B"),
            "{}",
            f.describe()
        );
        // Only parts held throughout: their sum.
        let mut g = Footprint::default();
        g.add("process", 1);
        g.add("data", 2);
        assert_eq!(
            (g.total(), g.describe().as_str()),
            (3, "process 1 B, data 2 B")
        );
    }
}
