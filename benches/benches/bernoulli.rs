//! The Bernoulli index-process simulator of `nrpt scale` (32 ensembles per SIMD group)
//! against nrpt-core's scalar `IndexProcess` in the same run. Throughput is in
//! pair-updates: one adjacent pair of one ensemble in one iteration.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use nrpt::engine::cpu::Simd;
use nrpt::scale::simulator::{Group, LANES};
use nrpt_core::bernoulli::IndexProcess;
use nrpt_core::swap::SwapBuffers;
use nrpt_core::window::Scheme;

fn simulator(c: &mut Criterion) {
    for p in [16usize, 1024] {
        let iters = (4_000_000 / (LANES * p)) as u64;
        let rates = vec![0.4; p - 1];
        let mut g = c.benchmark_group(format!("bernoulli index process, P = {p}"));
        g.throughput(Throughput::Elements(LANES as u64 * (p as u64 - 1) * iters));
        g.sample_size(10);
        g.bench_function("lanes (32 ensembles, best SIMD)", |b| {
            b.iter(|| {
                let mut s = Group::<LANES>::new(&rates, 7, 1, 0);
                s.run(iters, Simd::Auto);
                s.stats(0).round_trips
            })
        });
        g.bench_function("nrpt-core IndexProcess (32 ensembles, scalar)", |b| {
            b.iter(|| {
                let mut trips_total = 0;
                for e in 0..LANES as u32 {
                    let (mut at, mut of, mut gates, mut flags, mut trips) = (
                        vec![0u32; p],
                        vec![0u32; p],
                        vec![true; p - 1],
                        vec![0u8; p - 1],
                        vec![0u8; p],
                    );
                    let swap = SwapBuffers {
                        replica_at: &mut at,
                        level_of: &mut of,
                        gates: &mut gates,
                        flags: &mut flags,
                    };
                    let mut ip =
                        IndexProcess::new(Scheme::Deo { window: 7 }, swap, &mut trips, 1, e)
                            .expect("valid sizes");
                    for _ in 0..iters {
                        ip.step(|_| 0.4);
                    }
                    trips_total += ip.stats().round_trips;
                }
                trips_total
            })
        });
        g.finish();
    }
}

criterion_group!(benches, simulator);
criterion_main!(benches);
