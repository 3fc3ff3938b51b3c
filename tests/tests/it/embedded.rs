//! The one run that the firmware (Cortex-M4F under QEMU), the WASM module and the host
//! all make (`embedded/toyrun`: P = 16, D = 2, f32, the paper's settings, seed 2023,
//! 2,000 iterations), against its report checked in as `tests/expected/toyrun.txt`. The
//! firmware's and the WASM module's outputs are compared with the same file by
//! `embedded/ci.sh`, so one file holds the reference numbers, and a change of bits
//! anywhere (nrpt-core, the CPU engine's paths, the kernels' code) fails here with the
//! lines that differ.
//!
//! A change that is meant to change the run updates the file with
//! `(cd embedded/toyrun && cargo run --release) > tests/expected/toyrun.txt`.

use std::sync::Arc;

use nrpt_core::index::PairStats;
use nrpt_core::window::Scheme;
use nrpt_sampling::engine::cpu::Simd;
use nrpt_sampling::engine::{Job, Record};
use nrpt_sampling::targets::Toy;
use nrpt_tests::kernels::{self, KernelPath};
use nrpt_tests::{Run, cpu, note, simd_columns};
use toyrun::{CHAINS, DIM, Fnv1a64, ITERATIONS, PAIRS, SEED, Summary, write_report};

/// The checked-in reference report.
const EXPECTED: &str = include_str!("../../expected/toyrun.txt");

/// The report of `s`, as every platform writes it.
fn report(s: &Summary) -> String {
    let mut text = String::new();
    write_report(&mut text, s).expect("a String never fails");
    text
}

/// Fails with the lines of `got` that differ from the reference report.
fn assert_is_the_reference(who: &str, got: &str) {
    if got == EXPECTED {
        return;
    }
    let (want, have): (Vec<&str>, Vec<&str>) = (EXPECTED.lines().collect(), got.lines().collect());
    let mut diff = String::new();
    for i in 0..want.len().max(have.len()) {
        let (w, h) = (want.get(i), have.get(i));
        if w != h {
            diff.push_str(&format!(
                "line {}:\n  expected {}\n  {who:>8} {}\n",
                i + 1,
                w.unwrap_or(&"(none)"),
                h.unwrap_or(&"(none)")
            ));
        }
    }
    panic!(
        "{who}'s report differs from tests/expected/toyrun.txt (what the firmware and the \
         WASM module must print):\n{diff}"
    );
}

#[test]
fn nrpt_core_s_fixed_size_run_is_the_reference() {
    let summary = toyrun::run(SEED, ITERATIONS).expect("the paper's settings are valid");
    assert_is_the_reference("toyrun", &report(&summary));
}

/// The job of the CPU and CUDA engines that is toyrun's run: ensemble 0 of seed 2023,
/// every target-level state kept.
fn job() -> Job {
    Job {
        record: Record {
            thin: 1,
            warmup: 0,
            trace_every: 0,
            path_iterations: 0,
        },
        ..Job::new(
            Arc::new(Toy::modes2d(2.0)),
            toyrun::options(SEED),
            CHAINS,
            1,
            ITERATIONS,
        )
    }
}

/// toyrun's summary of a run of [`job`] by an engine.
fn summary(run: &Run) -> Summary {
    let out = &run.output;
    let e = &out.ensembles[0];
    let mut hash = Fnv1a64::new();
    for x in &out.samples {
        hash.write_u32(x.to_bits());
    }
    let mut pairs = [PairStats::default(); PAIRS];
    pairs.copy_from_slice(&e.pairs);
    let mut final_target = [0f32; DIM];
    final_target.copy_from_slice(&e.levels[..DIM]);
    Summary {
        seed: SEED,
        iterations: run.state.iteration,
        window: match toyrun::options(SEED).scheme {
            Scheme::Deo { window } => window,
            Scheme::Seo => 0,
        },
        stats: e.stats,
        pairs,
        ladder: e.ladder.as_slice().try_into().expect("P learning rates"),
        buffer: e.buffer,
        final_target,
        checksum: hash.finish(),
    }
}

/// The CPU engine on every path of this processor and the kernels' host-compiled code
/// make the reference run too.
#[test]
fn every_engine_makes_the_reference_run() {
    let job = job();
    let (simd, skipped) = simd_columns();
    let mut engines = vec![("core", Run::cpu(&cpu(Simd::Scalar, 1), &job).unwrap())];
    for (name, s) in simd {
        engines.push((name, Run::cpu(&cpu(s, 1), &job).unwrap()));
    }
    for path in [
        KernelPath::StepSwap,
        KernelPath::Persistent,
        KernelPath::PersistentWarp,
    ] {
        assert_eq!(kernels::unsupported(&job, path), None);
        engines.push((path.label(), kernels::run(&job, path)));
    }
    for line in skipped {
        note(&format!("embedded reference run: {line}"));
    }
    for (name, run) in engines {
        assert_is_the_reference(name, &report(&summary(&run)));
    }
}
