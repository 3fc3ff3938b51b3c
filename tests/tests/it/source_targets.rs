//! Targets that bring their own CUDA source (`nrpt_cuda::source`): every built-in one
//! compiles with NVRTC into the source step (the GPU's program), and a source that does
//! not compile is an error that names the target. Their numbers are checked in
//! `parity.rs`, where the `kernels: step + swap` column runs the same code compiled
//! for the host (`nrpt_tests::source_host`) against nrpt-core.

use std::sync::Arc;

use nrpt_cuda::source::{self, STEP_KERNEL};
use nrpt_cuda::{CudaError, GpuTarget, MathMode, TargetSource};
use nrpt_sampling::config::{RunConfig, TargetName};
use nrpt_sampling::engine::Record;
use nrpt_sampling::targets::{BUILTIN, Method};

#[path = "../../../cuda/tests/toolchain/mod.rs"]
#[macro_use]
#[allow(dead_code)]
mod toolchain;
use toolchain::{ARCH, nvrtc_or_skip};

/// The sources of the built-in targets, built from their default configuration.
fn builtin_sources() -> Vec<Arc<TargetSource>> {
    BUILTIN
        .iter()
        .filter(|b| b.method == Method::Sgd)
        .filter_map(|b| {
            let config = RunConfig {
                target: TargetName::new(b.name),
                dim: 3,
                ..RunConfig::default()
            };
            let job = config.job(Record::NOTHING).ok()?;
            match job.target.cuda()?.kernels {
                GpuTarget::Source { source, .. } => Some(source),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn the_mixture_brings_its_own_source() {
    let names: Vec<String> = builtin_sources().iter().map(|s| s.name.clone()).collect();
    assert!(names.contains(&"mixture".to_string()), "{names:?}");
}

#[test]
fn every_builtin_source_compiles_with_nvrtc() {
    if !nvrtc_or_skip("every_builtin_source_compiles_with_nvrtc") {
        return;
    }
    for s in builtin_sources() {
        for mode in MathMode::ALL {
            let ptx = source::compile_ptx(&s, ARCH, mode)
                .unwrap_or_else(|e| panic!("target {} under {mode:?}: {e}", s.name));
            assert!(
                ptx.contains(&format!(".entry {STEP_KERNEL}(")),
                "{STEP_KERNEL} missing from target {}'s PTX",
                s.name
            );
            // No contraction of f32 arithmetic (the step's and the source's). The device
            // library's double exp and log are built on approximate seeds and FMAs by
            // design (within an ulp or two): where a source calls them, as the mixture
            // does, the GPU's bits may part from the CPU's (see nrpt_cuda::source).
            if mode == MathMode::Exact {
                assert!(!ptx.contains("fma.rn.f32"), "fma.rn.f32 in exact PTX");
            }
            report!("target {} {mode:?}: {} bytes of PTX", s.name, ptx.len());
        }
    }
}

#[test]
fn a_source_that_does_not_compile_names_its_target() {
    if !nvrtc_or_skip("a_source_that_does_not_compile_names_its_target") {
        return;
    }
    let broken = TargetSource::new(
        "broken",
        "NRPT_HD float nrpt_target_energy(const float* x, nrpt_u32 dim) { return x[0] }",
    );
    match source::compile_ptx(&broken, ARCH, MathMode::Exact) {
        Err(CudaError::Compile { log, .. }) => {
            assert!(log.contains("target broken"), "{log}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}
