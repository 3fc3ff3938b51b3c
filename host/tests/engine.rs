//! The CPU engine: its vectorized 2D path gives the same bits as nrpt-core's scalar
//! driver, and results do not depend on the number of threads.

use nrpt::engine::cpu::{CpuBackend, Simd};
use std::sync::Arc;

use nrpt::engine::{Backend, Job, Record};
use nrpt::targets::Toy;
use nrpt_core::TemperingOptions;
use nrpt_core::window::Scheme;

fn job(window: u32, ensembles: usize, chains: usize) -> Job {
    Job {
        options: TemperingOptions {
            scheme: Scheme::Deo { window },
            seed: 77,
            ..TemperingOptions::default()
        },
        target: Arc::new(Toy::modes2d(2.0)),
        chains,
        ensembles,
        iterations: 3_000,
        record: Record {
            thin: 7,
            warmup: 50,
            trace_every: 100,
            path_iterations: 300,
        },
        initial_states: None,
    }
}

#[test]
fn vectorized_path_equals_the_scalar_driver_bit_for_bit() {
    // 40 ensembles: one full lane group of the lockstep path and one partly used;
    // P = 16 and P = 21 chains.
    for (window, chains) in [(1, 16), (7, 16), (3, 21)] {
        let mut j = job(window, 40, chains);
        j.iterations = 1_200;
        let slow = CpuBackend {
            threads: Some(1),
            simd: Simd::Scalar,
        }
        .run(&j, &nrpt::engine::unobserved)
        .unwrap();
        // Every instruction set this processor has, and the portable build.
        for simd in [Simd::Auto, Simd::Avx2, Simd::Portable] {
            let fast = CpuBackend {
                threads: Some(2),
                simd,
            }
            .run(&j, &nrpt::engine::unobserved)
            .unwrap();
            assert_eq!(fast.samples.len(), slow.samples.len());
            let same = fast
                .samples
                .iter()
                .zip(&slow.samples)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(
                same,
                "samples differ ({simd:?}, W = {window}, P = {chains})"
            );
            assert_eq!(fast.ensembles, slow.ensembles);
            assert_eq!(fast.trace, slow.trace);
            assert_eq!(fast.paths, slow.paths);
            assert!(fast.total_stats().round_trips > 0);
        }
    }
    // Five ensembles go one at a time, vectorized within each ensemble.
    let j = job(7, 5, 16);
    let fast = CpuBackend {
        threads: Some(2),
        simd: Simd::Auto,
    }
    .run(&j, &nrpt::engine::unobserved)
    .unwrap();
    let slow = CpuBackend {
        threads: Some(1),
        simd: Simd::Scalar,
    }
    .run(&j, &nrpt::engine::unobserved)
    .unwrap();
    assert_eq!(fast.ensembles, slow.ensembles);
    assert!(
        fast.samples
            .iter()
            .zip(&slow.samples)
            .all(|(a, b)| a.to_bits() == b.to_bits())
    );
}

/// SEO and the Metropolis rule with temperatures that follow the ladder are outside
/// the lockstep path; the in-ensemble vectorized path must still match the core.
#[test]
fn per_ensemble_vectorized_path_equals_the_scalar_driver() {
    let mut j = job(1, 3, 16);
    j.options.scheme = Scheme::Seo;
    let mut k = job(1, 3, 12);
    k.options.rule = nrpt_core::swap::SwapRule::Metropolis;
    k.options.temperatures = nrpt_core::driver::Temperatures::FollowLadder;
    k.options.ladder_max = 0.05;
    for j in [j, k] {
        let fast = CpuBackend {
            threads: None,
            simd: Simd::Auto,
        }
        .run(&j, &nrpt::engine::unobserved)
        .unwrap();
        let slow = CpuBackend {
            threads: None,
            simd: Simd::Scalar,
        }
        .run(&j, &nrpt::engine::unobserved)
        .unwrap();
        let same = fast
            .samples
            .iter()
            .zip(&slow.samples)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same && fast.samples.len() == slow.samples.len());
        assert_eq!(fast.ensembles, slow.ensembles);
        assert_eq!(fast.trace, slow.trace);
    }
}

#[test]
fn other_explorers_and_targets_run_on_the_scalar_path() {
    let mut j = job(4, 3, 6);
    j.target = Arc::new(Toy::sum_modes(5, 2.0));
    j.options.explorer = nrpt_core::explore::Explorer::MSGD;
    j.options.ladder_max = 0.05;
    let out = CpuBackend::default()
        .run(&j, &nrpt::engine::unobserved)
        .unwrap();
    assert_eq!(out.samples.len(), out.sample_iterations.len() * 3 * 5);
    assert!(out.samples.iter().all(|x| x.is_finite()));
}

#[test]
fn progress_adds_up_to_all_the_work() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let j = job(7, 6, 16);
    let done = AtomicU64::new(0);
    CpuBackend::default()
        .run(&j, &|n| {
            done.fetch_add(n, Ordering::Relaxed);
            nrpt::engine::Flow::Continue
        })
        .unwrap();
    assert_eq!(done.load(Ordering::Relaxed), 6 * 3_000);
}
