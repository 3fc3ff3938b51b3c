//! Classifiers (the data target) on the CUDA backend. Without a driver: `nrpt deep` and
//! `nrpt bench --target classifier` with `--backend cuda` fail with the usual clear error and
//! write nothing, and `--backend auto` runs them on the CPU. On a GPU: a classifier job
//! run by the CUDA engine equals, bit for bit, the same run of the kernels' code on the
//! CPU (nrpt-cuda's `HostMlp`, which the CPU tests compare with nrpt-core): samples,
//! final states, ladders, buffers and counts. Without a GPU that comparison says that
//! it was skipped; with `NRPT_REQUIRE_GPU=1` it fails instead. On a GPU the
//! no-driver test checks the other side instead of skipping: the engine opens, takes a
//! small classifier job, and times its iterations on the device.

use std::sync::Arc;

use nrpt_core::model::DataView;
use nrpt_core::window::Scheme;
use nrpt_cuda::MathMode;
use nrpt_cuda::mlp::HostMlp;
use nrpt_sampling::engine::cuda::{CudaBackend, classifier_config};
use nrpt_sampling::engine::{Backend, Record, Target};
use nrpt_sampling::targets::classifier::ClassifierTarget;
use nrpt_studies::deep::{Rates, Sampling, tempering_job};

mod common;
use common::{gpu_required, nrpt, report};

#[test]
fn without_a_driver_cuda_is_refused_and_auto_runs_on_the_cpu() {
    if nrpt_cuda::device::driver_present().is_ok() {
        with_a_driver_the_engine_takes_and_times_a_classifier_job();
        return;
    }
    let small = ["-e", "1", "-p", "2", "-n", "2", "--hidden", "8"];
    let mut args = vec!["bench", "--target", "classifier", "--backend", "cuda"];
    args.extend(small);
    let o = nrpt(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success(),
        "bench --backend cuda succeeded: {stderr}"
    );
    assert!(stderr.contains("no CUDA driver was found"), "{stderr}");

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("deep");
    let o = nrpt(&[
        "deep",
        "--backend",
        "cuda",
        "--quick",
        "-o",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success(),
        "deep --backend cuda succeeded: {stderr}"
    );
    assert!(stderr.contains("no CUDA driver was found"), "{stderr}");
    assert!(!out.exists(), "a failed run wrote {}", out.display());

    let mut args = vec![
        "bench",
        "--target",
        "classifier",
        "--backend",
        "auto",
        "--json",
    ];
    args.extend(small);
    args.extend(["--machine-size", "32"]);
    let o = nrpt(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["backend"], "cpu", "{v}");
    assert!(v.get("math").is_none(), "{v}");
}

/// The driver-present side of the test above (which cannot run `nrpt` on the GPU
/// machine, where this executable travels without it): the engine opens, does not
/// refuse a small classifier job, and its device timing is positive and no longer
/// than the run.
fn with_a_driver_the_engine_takes_and_times_a_classifier_job() {
    let gpu = CudaBackend::open(0).unwrap_or_else(|e| panic!("a driver, but {e}"));
    let model = Arc::new(
        ClassifierTarget::new(Arc::new(nrpt_sampling::data::digits()), &[8], 16, 1.0).unwrap(),
    );
    let job = tempering_job(
        &model,
        &Sampling {
            chains: 2,
            seeds: 1,
            iterations: 4,
            ..Sampling::default()
        },
    )
    .unwrap();
    assert_eq!(gpu.unsupported(&job), None);
    let started = std::time::Instant::now();
    let (out, device) = gpu
        .run_timed(&job, &nrpt_sampling::engine::unobserved)
        .unwrap_or_else(|e| panic!("{e}"));
    let wall = started.elapsed().as_secs_f64();
    assert_eq!(out.backend, "cuda");
    assert!(
        device > 0.0 && device <= wall,
        "device seconds {device} outside (0, {wall}]"
    );
    report(&format!(
        "with_a_driver: the CUDA engine ran a classifier job: {device:.2e} s on the device, \
         {wall:.3} s in all"
    ));
}

#[test]
fn a_classifier_on_the_gpu_is_the_kernels_run_on_the_cpu() {
    let gpu = match CudaBackend::open(0) {
        Ok(g) => g,
        Err(e) => {
            assert!(!gpu_required(), "NRPT_REQUIRE_GPU is set, but {e}");
            report(&format!("a_classifier_on_the_gpu: skipped: {e}"));
            return;
        }
    };
    let model = Arc::new(
        ClassifierTarget::new(Arc::new(nrpt_sampling::data::digits()), &[32], 48, 1.0).unwrap(),
    );
    let record = Record {
        thin: 7,
        warmup: 20,
        trace_every: 25,
        path_iterations: 30,
    };
    let job = tempering_job(
        &model,
        &Sampling {
            chains: 6,
            seeds: 3,
            iterations: 120,
            scheme: Scheme::Deo { window: 3 },
            rates: Rates {
                swap_rate: 0.3,
                ..Rates::default()
            },
            record,
            ..Sampling::default()
        },
    )
    .unwrap();
    assert_eq!(gpu.unsupported(&job), None);
    // Timed: the events around each chunk must leave the results alone.
    let (out, device) = gpu
        .run_timed(&job, &nrpt_sampling::engine::unobserved)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        device > 0.0 && device.is_finite(),
        "device seconds {device}"
    );

    let target = job
        .target
        .downcast_ref::<nrpt_sampling::targets::classifier::Classifier>()
        .expect("a classifier job");
    let d = &target.data;
    let view = DataView::new(&d.train.x, &d.train.y, d.features, d.classes).unwrap();
    let mlp = job.target.cuda_mlp().expect("a classifier's kernels");
    let config = classifier_config(&job, &mlp, MathMode::Exact);
    let mut host = HostMlp::new(&config, &view, None).unwrap();
    let (e, p, dim) = (job.ensembles, job.chains, target.dim());
    let mut samples = Vec::new();
    for k in 0..job.iterations {
        host.advance(1);
        if record.samples_at(k) {
            for ens in 0..e {
                let c = ens * p + host.replica_at()[ens * p] as usize;
                samples.extend_from_slice(&host.states()[c * dim..(c + 1) * dim]);
            }
        }
    }
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(out.backend, "cuda");
    assert_eq!(bits(&out.samples), bits(&samples), "samples");
    for (ens, r) in out.ensembles.iter().enumerate() {
        let lv = ens * p..(ens + 1) * p;
        let levels: Vec<f32> = host.replica_at()[lv.clone()]
            .iter()
            .flat_map(|&rep| {
                let c = ens * p + rep as usize;
                host.states()[c * dim..(c + 1) * dim].iter().copied()
            })
            .collect();
        assert_eq!(bits(&r.levels), bits(&levels), "ensemble {ens}: levels");
        assert_eq!(
            r.ladder,
            host.ladder()[lv].to_vec(),
            "ensemble {ens}: ladder"
        );
        assert_eq!(r.buffer.to_bits(), host.buffers()[ens].to_bits());
        assert_eq!(r.stats, host.index_stats()[ens], "ensemble {ens}: stats");
        assert_eq!(
            r.pairs,
            host.pair_stats()[ens * (p - 1)..(ens + 1) * (p - 1)].to_vec()
        );
    }
    assert_eq!(out.paths.len(), p);
    assert_eq!(out.trace.iterations, vec![25, 50, 75, 100]);
    report(&format!(
        "a_classifier_on_the_gpu: {} samples and {} ensembles equal the host emulation",
        out.sample_iterations.len(),
        e
    ));
}
