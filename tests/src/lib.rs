//! What the cross-crate tests share (the tests themselves are in `tests/tests/`): a whole
//! run as an engine leaves it ([`Run`]), the first difference between two runs, named
//! ([`first_difference`]), the engines of this machine ([`simd_columns`]), the CUDA
//! kernels' host-compiled code driven as a whole run ([`kernels`]), and a note printed
//! past the test harness's capture ([`note`]).
//!
//! Which tests live here (one copy of each check in the repository):
//! - `parity.rs`: the matrix of targets × explorers × rules × sizes, each row run by
//!   nrpt-core's scalar driver, the vectorized CPU paths of every instruction set of this
//!   processor and the kernels' host-compiled code, compared bit for bit;
//! - `determinism.rs`: thread counts, runs cut into segments, `nrpt scale` shards;
//! - `embedded.rs`: the firmware's and WASM module's reference run against the checked-in
//!   `expected/toyrun.txt`, and the host engine on the same run.
//!
//! Single-module checks stay beside their module (`replica_lanes.rs`' exploration
//! against the driver, iteration by iteration; `cuda/tests/host_parity.rs`' kernel
//! functions one by one; nrpt-core's `Controller` against its `Tempering`), the command
//! line's in `host/tests`, and the comparisons that need a GPU (`cuda/tests/gpu.rs`,
//! `host/tests/cuda_backend.rs`) where `scripts/gpu-build.sh` bundles them.

#![forbid(unsafe_code)]

pub mod kernels;
pub mod source_host;

use std::fmt::Debug;

use nrpt_core::index::{IndexStats, PairStats};
use nrpt_sampling::engine::cpu::{CpuBackend, Simd};
use nrpt_sampling::engine::state::RunState;
use nrpt_sampling::engine::{EngineError, Job, RunOutput, unobserved};

/// A run as an engine leaves it: every buffer of every ensemble after the last
/// iteration, and what it recorded.
#[derive(Clone, Debug)]
pub struct Run {
    /// The final state (what a checkpoint holds).
    pub state: RunState,
    /// Samples, traces, paths and final ensembles, merged as the CPU engine merges them.
    pub output: RunOutput,
}

impl Run {
    /// `job` run whole by `backend`.
    pub fn cpu(backend: &CpuBackend, job: &Job) -> Result<Run, EngineError> {
        let state = backend.run_from(job, None, job.iterations, &unobserved)?;
        Ok(Run::finished(job, state))
    }

    /// The run that ends in `state`, its output merged by the CPU engine's `finish`.
    pub fn finished(job: &Job, state: RunState) -> Run {
        let output = CpuBackend::default().finish(job, state.clone());
        Run { state, output }
    }
}

/// The CPU engine restricted to `simd`, on `threads` threads.
pub fn cpu(simd: Simd, threads: usize) -> CpuBackend {
    CpuBackend {
        threads: Some(threads),
        simd,
        fast_math: false,
    }
}

/// The vectorized CPU paths to compare on this processor, by name, and a line for each
/// one skipped with the reason: AVX-512 (`Simd::Auto` where the processor has it), AVX2
/// and the portable build (SSE2 on x86-64), which every processor runs.
pub fn simd_columns() -> (Vec<(&'static str, Simd)>, Vec<String>) {
    let mut columns = Vec::new();
    let mut skipped = Vec::new();
    for (name, simd) in [
        ("lanes: AVX-512", Simd::Auto),
        ("lanes: AVX2", Simd::Avx2),
        ("lanes: portable", Simd::Portable),
    ] {
        let runs = simd.resolve();
        if runs == simd {
            columns.push((name, simd));
        } else {
            skipped.push(format!(
                "{name}: skipped, not on this processor (Simd::{simd:?} runs {runs:?} here)"
            ));
        }
    }
    (columns, skipped)
}

/// Writes `line` to stderr past the test harness's capture (skips and summaries that
/// should show in CI logs).
pub fn note(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Values compared by their bits (floats) or exactly (the rest).
pub trait Bits: Debug {
    /// The same bits.
    fn same(&self, other: &Self) -> bool;
}

impl Bits for f32 {
    fn same(&self, other: &Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}

impl Bits for f64 {
    fn same(&self, other: &Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}

macro_rules! exact_bits {
    ($($t:ty),*) => {
        $(impl Bits for $t {
            fn same(&self, other: &Self) -> bool {
                self == other
            }
        })*
    };
}
exact_bits!(u8, u32, u64, bool, PairStats, IndexStats);

impl<T: Bits> Bits for Vec<T> {
    fn same(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a.same(b))
    }
}

/// Where slice `b` first differs from `a`, as `name[i]: a against b`.
pub fn slice_difference<T: Bits>(name: &str, a: &[T], b: &[T]) -> Option<String> {
    if a.len() != b.len() {
        return Some(format!("{name}: {} values against {}", a.len(), b.len()));
    }
    let i = a.iter().zip(b).position(|(x, y)| !x.same(y))?;
    Some(format!("{name}[{i}]: {:?} against {:?}", a[i], b[i]))
}

/// Where run `b` of `job` first differs from run `a`, or `None` when every ensemble's
/// buffers (states, momenta, energies, ladder, temperatures, permutation, trip states,
/// gates, flags, pair counts), progress (iteration, buffer C, totals) and records, and
/// the whole output (samples, traces, paths, final ensembles), have the same bits. The
/// scratch space of the driver is not compared (the vectorized paths do not use it).
/// The samples are compared first: a difference there says at which iteration the runs
/// parted.
pub fn first_difference(job: &Job, a: &Run, b: &Run) -> Option<String> {
    sample_difference(job, &a.output, &b.output)
        .or_else(|| state_difference(&a.state, &b.state))
        .or_else(|| output_difference(job, &a.output, &b.output))
}

/// [`first_difference`] of the final states alone.
pub fn state_difference(a: &RunState, b: &RunState) -> Option<String> {
    if a.iteration != b.iteration {
        return Some(format!(
            "iteration: {} against {}",
            a.iteration, b.iteration
        ));
    }
    if a.ensembles.len() != b.ensembles.len() {
        return Some(format!(
            "{} ensembles against {}",
            a.ensembles.len(),
            b.ensembles.len()
        ));
    }
    for (e, (x, y)) in a.ensembles.iter().zip(&b.ensembles).enumerate() {
        let (mut bx, mut by) = (x.buffers.clone(), y.buffers.clone());
        let (u, v) = (bx.lend(), by.lend());
        let name = |field: &str| format!("ensemble {e}: final {field}");
        let found = slice_difference(&name("states"), u.states, v.states)
            .or_else(|| slice_difference(&name("momenta"), u.momenta, v.momenta))
            .or_else(|| slice_difference(&name("energies"), u.energies, v.energies))
            .or_else(|| slice_difference(&name("ladder"), u.ladder, v.ladder))
            .or_else(|| slice_difference(&name("temperatures"), u.temperatures, v.temperatures))
            .or_else(|| slice_difference(&name("replica_at"), u.replica_at, v.replica_at))
            .or_else(|| slice_difference(&name("level_of"), u.level_of, v.level_of))
            .or_else(|| slice_difference(&name("trip states"), u.trips, v.trips))
            .or_else(|| slice_difference(&name("gates"), u.gates, v.gates))
            .or_else(|| slice_difference(&name("flags"), u.flags, v.flags))
            .or_else(|| slice_difference(&name("pair counts"), u.pair_stats, v.pair_stats))
            .or_else(|| {
                let (p, q) = (x.progress, y.progress);
                (p.iteration != q.iteration || !p.buffer.same(&q.buffer) || p.stats != q.stats)
                    .then(|| name(&format!("progress: {p:?} against {q:?}")))
            })
            .or_else(|| (x.recorder != y.recorder).then(|| name("records")));
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Where the samples of output `b` first differ from those of `a`: which sample, of
/// which iteration, ensemble and coordinate.
pub fn sample_difference(job: &Job, a: &RunOutput, b: &RunOutput) -> Option<String> {
    let (ens, dim) = (job.ensembles, job.target.dim());
    if let Some(d) = slice_difference(
        "sample iterations",
        &a.sample_iterations,
        &b.sample_iterations,
    ) {
        return Some(d);
    }
    if a.samples.len() != b.samples.len() {
        return Some(format!(
            "samples: {} values against {}",
            a.samples.len(),
            b.samples.len()
        ));
    }
    if let Some(i) = a
        .samples
        .iter()
        .zip(&b.samples)
        .position(|(x, y)| !x.same(y))
    {
        let per = (ens * dim).max(1);
        let n = i / per;
        return Some(format!(
            "sample {n} (iteration {}), ensemble {}, coordinate {}: {} against {}",
            a.sample_iterations.get(n).copied().unwrap_or(u64::MAX),
            (i % per) / dim.max(1),
            i % dim.max(1),
            a.samples[i],
            b.samples[i]
        ));
    }
    None
}

/// [`first_difference`] of the outputs alone (the backend's name aside).
pub fn output_difference(job: &Job, a: &RunOutput, b: &RunOutput) -> Option<String> {
    if let Some(d) = sample_difference(job, a, b) {
        return Some(d);
    }
    let (s, t) = (&a.trace, &b.trace);
    let at = |what: &str, i: usize| {
        format!(
            "trace {what} at entry {i} (iteration {})",
            s.iterations.get(i).copied().unwrap_or(u64::MAX)
        )
    };
    let found = slice_difference("trace iterations", &s.iterations, &t.iterations)
        .or_else(|| slice_difference("trace buffer", &s.buffer, &t.buffer))
        .or_else(|| slice_difference("trace round trips", &s.round_trips, &t.round_trips))
        .or_else(|| {
            slice_difference(
                "trace authors' round trips",
                &s.authors_round_trips,
                &t.authors_round_trips,
            )
        })
        .or_else(|| {
            [
                ("ladder", &s.ladder, &t.ladder),
                ("ladder sd", &s.ladder_sd, &t.ladder_sd),
                ("indicator rates", &s.indicator_rate, &t.indicator_rate),
            ]
            .into_iter()
            .find_map(|(what, x, y)| {
                if x.len() != y.len() {
                    return Some(format!(
                        "trace {what}: {} entries against {}",
                        x.len(),
                        y.len()
                    ));
                }
                x.iter()
                    .zip(y)
                    .enumerate()
                    .find_map(|(i, (u, v))| slice_difference(&at(what, i), u, v))
            })
        });
    if found.is_some() {
        return found;
    }
    if a.paths.len() != b.paths.len() {
        return Some(format!(
            "paths: {} replicas against {}",
            a.paths.len(),
            b.paths.len()
        ));
    }
    if let Some(d) = a
        .paths
        .iter()
        .zip(&b.paths)
        .enumerate()
        .find_map(|(r, (u, v))| slice_difference(&format!("path of replica {r}"), u, v))
    {
        return Some(d);
    }
    if a.ensembles.len() != b.ensembles.len() {
        return Some(format!(
            "{} final ensembles against {}",
            a.ensembles.len(),
            b.ensembles.len()
        ));
    }
    a.ensembles
        .iter()
        .zip(&b.ensembles)
        .enumerate()
        .find_map(|(e, (x, y))| {
            let name = |field: &str| format!("output ensemble {e}: {field}");
            slice_difference(&name("ladder"), &x.ladder, &y.ladder)
                .or_else(|| {
                    (!x.buffer.same(&y.buffer))
                        .then(|| name(&format!("buffer {} against {}", x.buffer, y.buffer)))
                })
                .or_else(|| {
                    (x.stats != y.stats)
                        .then(|| name(&format!("totals {:?} against {:?}", x.stats, y.stats)))
                })
                .or_else(|| slice_difference(&name("pair counts"), &x.pairs, &y.pairs))
                .or_else(|| slice_difference(&name("levels"), &x.levels, &y.levels))
        })
}
