//! The CPU engine on the paper's 2D toy (E = 256, P = 16): the vectorized path against
//! nrpt-core's scalar driver in the same run. Chain-steps per second are E·P·N divided
//! by the time of one iteration of the benchmark loop.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use nrpt_core::TemperingOptions;
use nrpt_sampling::engine::cpu::{CpuBackend, Simd};
use nrpt_sampling::engine::{Backend, Job};
use nrpt_sampling::targets::Toy;

fn job() -> Job {
    let target = std::sync::Arc::new(Toy::modes2d(2.0));
    Job::new(target, TemperingOptions::default(), 16, 256, 200)
}

fn engine(c: &mut Criterion) {
    let j = job();
    let mut g = c.benchmark_group("cpu engine, E = 256, P = 16, 200 iterations");
    g.throughput(Throughput::Elements(
        (j.chains * j.ensembles) as u64 * j.iterations,
    ));
    g.sample_size(10);
    for (name, simd) in [
        ("vectorized (best SIMD)", Simd::Auto),
        ("vectorized (AVX2 at most)", Simd::Avx2),
        ("vectorized (portable)", Simd::Portable),
        ("scalar (nrpt-core driver)", Simd::Scalar),
    ] {
        let backend = CpuBackend {
            threads: None,
            simd,
            fast_math: false,
        };
        g.bench_function(name, |b| {
            b.iter(|| {
                backend
                    .run(&j, &nrpt_sampling::engine::unobserved)
                    .map(|o| o.ensembles.len())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
