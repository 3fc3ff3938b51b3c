//! The classifier's oracle on the UCI digits (batch 64): one chain-step's gradient and
//! energy (what `nrpt bench --target classifier` times, less the driver), with the register
//! tiles against the `gemm` crate in the same run, at hidden widths 32, 64 and 128.
//! Throughput is in floating-point operations (`ClassifierTarget::flops_per_chain_step`),
//! so criterion's elements per second read as FLOP/s.

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use nrpt_core::model::Architecture;
use nrpt_core::rng::{PhiloxStream, streams};
use nrpt_core::target::EnergyOracle;
use nrpt_sampling::targets::classifier::{ClassifierTarget, Kernel, initial_parameters};

fn chain_step(c: &mut Criterion) {
    let data = Arc::new(nrpt_sampling::data::digits());
    let mut kernels = vec![("gemm crate", Kernel::GEMM)];
    if Kernel::detect().is_tiles() {
        kernels.push(("register tiles (AVX2, FMA)", Kernel::detect()));
    }
    for hidden in [32, 64, 128] {
        let Ok(arch) = Architecture::new(&[64, hidden, 10]) else {
            return;
        };
        let target = Arc::new(ClassifierTarget {
            data: Arc::clone(&data),
            arch,
            batch: 64,
            prior_sigma: 1.0,
        });
        let mut theta = vec![0.0f32; target.dim()];
        initial_parameters(&arch, 1, 0, 0, &mut theta);
        let mut grad = vec![0.0f32; target.dim()];
        let mut g = c.benchmark_group(format!(
            "classifier chain-step [64, {hidden}, 10], batch 64"
        ));
        g.throughput(Throughput::Elements(target.flops_per_chain_step() as u64));
        g.sample_size(20);
        for &(name, kernel) in &kernels {
            let mut oracle = target.oracle_with(kernel);
            let mut rng = PhiloxStream::new(1, 0, 0, 0, streams::STEP);
            g.bench_function(name, |b| {
                b.iter(|| {
                    oracle.gradient(&theta, &mut grad, &mut rng).unwrap();
                    oracle.energy(&theta, &mut rng)
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, chain_step);
criterion_main!(benches);
