//! The CUDA backend: a typed error, never a panic, on a machine without a driver; on a
//! GPU, the same job run by the CPU and the CUDA engine gives the same samples (bit
//! for bit in Exact math), traces, index paths and final statistics. Without a GPU the
//! comparison says that it was skipped and why; with `NRPT_REQUIRE_GPU=1`
//! (scripts/gpu-check.sh sets it) a missing driver, device or NVRTC fails instead,
//! naming what is missing.

use std::sync::atomic::{AtomicU64, Ordering};

use nrpt_sampling::engine::cpu::CpuBackend;
use nrpt_sampling::engine::cuda::{CudaBackend, list_devices};
use std::sync::Arc;

use nrpt_core::driver::{Temperatures, TemperingOptions};
use nrpt_core::swap::SwapRule;
use nrpt_core::window::Scheme;
use nrpt_cuda::ExecutionPath;
use nrpt_sampling::engine::{AnyTarget, Backend, Job, Record, RunOutput};
use nrpt_sampling::targets::Toy;

mod common;
use common::{gpu_required, report};

#[test]
fn open_without_a_driver_is_an_error_not_a_panic() {
    match nrpt_cuda::device::driver_present() {
        Err(_) => {
            let err = CudaBackend::open(0).expect_err("no driver, no backend");
            let message = err.to_string();
            assert!(message.contains("no CUDA driver was found"), "{message}");
            let err = list_devices().expect_err("no driver, no devices");
            assert!(
                err.to_string().contains("no CUDA driver was found"),
                "{err}"
            );
            assert!(!gpu_required(), "NRPT_REQUIRE_GPU is set, but {message}");
            report(&format!(
                "open_without_a_driver: as expected here: {message}"
            ));
        }
        Ok(()) => {
            let devices = list_devices().expect("a driver lists its devices");
            for d in &devices {
                report(&format!(
                    "device {}: {} {:?}",
                    d.ordinal, d.name, d.compute_capability
                ));
            }
            let err = CudaBackend::open(devices.len() + 7).expect_err("no such device");
            assert!(err.to_string().contains("CUDA device"), "{err}");
        }
    }
}

/// E = 4 ensembles of P = 16 chains, 300 iterations, everything recorded.
fn job(options: TemperingOptions, target: Arc<dyn AnyTarget>) -> Job {
    Job {
        options,
        target,
        chains: 16,
        ensembles: 4,
        iterations: 300,
        record: Record {
            thin: 3,
            warmup: 40,
            trace_every: 25,
            path_iterations: 120,
        },
        initial_states: None,
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn run_counted(backend: &dyn Backend, job: &Job) -> RunOutput {
    let done = AtomicU64::new(0);
    let out = backend
        .run(job, &|n| {
            done.fetch_add(n, Ordering::Relaxed);
            nrpt_sampling::engine::Flow::Continue
        })
        .unwrap_or_else(|e| panic!("{} run failed: {e}", backend.name()));
    assert_eq!(
        done.load(Ordering::Relaxed),
        job.iterations * job.ensembles as u64,
        "progress of the {} backend",
        backend.name()
    );
    out
}

fn assert_same(cpu: &RunOutput, gpu: &RunOutput, label: &str) {
    assert_eq!(gpu.backend, "cuda");
    assert_eq!(gpu.sample_iterations, cpu.sample_iterations, "{label}");
    assert!(!cpu.samples.is_empty(), "{label}: nothing sampled");
    assert_eq!(bits(&gpu.samples), bits(&cpu.samples), "samples, {label}");
    assert_eq!(gpu.trace, cpu.trace, "trace, {label}");
    assert_eq!(gpu.paths, cpu.paths, "paths, {label}");
    assert_eq!(gpu.ensembles.len(), cpu.ensembles.len());
    for (e, (g, c)) in gpu.ensembles.iter().zip(&cpu.ensembles).enumerate() {
        assert_eq!(g.ladder, c.ladder, "ladder of ensemble {e}, {label}");
        assert_eq!(
            g.buffer.to_bits(),
            c.buffer.to_bits(),
            "buffer {e}, {label}"
        );
        assert_eq!(g.stats, c.stats, "stats of ensemble {e}, {label}");
        assert_eq!(g.pairs, c.pairs, "pair counts of ensemble {e}, {label}");
    }
    assert_eq!(gpu.total_stats(), cpu.total_stats(), "{label}");
}

#[test]
fn cuda_runs_equal_cpu_runs() {
    let backend = match CudaBackend::open(0) {
        Ok(b) => b,
        Err(e) => {
            assert!(
                !gpu_required(),
                "cuda_runs_equal_cpu_runs: NRPT_REQUIRE_GPU is set, but no GPU can be used: {e}"
            );
            report(&format!("cuda_runs_equal_cpu_runs: skipped: {e}"));
            return;
        }
    };
    report(&format!(
        "cuda_runs_equal_cpu_runs: on {} (kernels: {})",
        backend.device().name,
        nrpt_cuda::ptx_cache::kernel_origin()
    ));
    let paper = TemperingOptions {
        seed: 2023,
        scheme: Scheme::Deo { window: 8 },
        ..TemperingOptions::default()
    };
    let cases = [
        ("DEO W=8, Modes2d", job(paper, Arc::new(Toy::modes2d(2.0)))),
        (
            "SEO Metropolis, Modes2d",
            job(
                TemperingOptions {
                    scheme: Scheme::Seo,
                    rule: SwapRule::Metropolis,
                    temperatures: Temperatures::Geometric { max: 30.0 },
                    ..paper
                },
                Arc::new(Toy::modes2d(2.0)),
            ),
        ),
        (
            "DEO W=1, SumModes D=5",
            job(
                TemperingOptions {
                    scheme: Scheme::Deo { window: 1 },
                    ladder_min: 0.001,
                    ladder_max: 0.05,
                    ..paper
                },
                Arc::new(Toy::sum_modes(5, 2.0)),
            ),
        ),
    ];
    for (label, job) in &cases {
        let cpu = run_counted(&CpuBackend::default(), job);
        for path in [ExecutionPath::Auto, ExecutionPath::StepSwap] {
            let gpu = run_counted(&backend.clone().with_path(path), job);
            assert_same(&cpu, &gpu, &format!("{label}, {path:?}"));
        }
        report(&format!(
            "cuda_runs_equal_cpu_runs: parity ok: {label}: {} samples, {} trace entries, \
             {} round trips",
            cpu.sample_iterations.len(),
            cpu.trace.iterations.len(),
            cpu.total_stats().round_trips
        ));
    }
}
