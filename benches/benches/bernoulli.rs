//! The Bernoulli index-process simulators of `nrpt scale`, bit-sliced (64 ensembles per
//! word) and in SIMD lanes (32 ensembles per group), against nrpt-core's scalar
//! `IndexProcess` in the same run. Throughput is in pair-updates: one adjacent pair of
//! one ensemble in one iteration.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use nrpt_sampling::engine::cpu::Simd;
use nrpt_studies::scale::bitsliced::{BitGroup, ENSEMBLES};
use nrpt_studies::scale::simulator::{Group, LANES, reference};

fn simulator(c: &mut Criterion) {
    for p in [16usize, 1024] {
        let iters = (4_000_000 / (LANES * p)) as u64;
        let rates = vec![0.4; p - 1];
        let mut g = c.benchmark_group(format!("bernoulli index process, P = {p}"));
        g.sample_size(10);
        g.throughput(Throughput::Elements(
            ENSEMBLES as u64 * (p as u64 - 1) * iters,
        ));
        g.bench_function("bitsliced (64 ensembles, best SIMD)", |b| {
            b.iter(|| {
                let mut s = BitGroup::new(&rates, 7, 1, 0).expect("a valid group");
                s.run(iters, Simd::Auto);
                s.total_trips().round_trips
            })
        });
        g.throughput(Throughput::Elements(LANES as u64 * (p as u64 - 1) * iters));
        g.bench_function("lanes (32 ensembles, best SIMD)", |b| {
            b.iter(|| {
                let mut s = Group::<LANES>::new(&rates, 7, 1, 0);
                s.run(iters, Simd::Auto);
                s.trips(0).round_trips
            })
        });
        g.bench_function("nrpt-core IndexProcess (32 ensembles, scalar)", |b| {
            b.iter(|| {
                (0..LANES as u32)
                    .map(|e| reference(&rates, 7, 1, e, iters).0.round_trips)
                    .sum::<u64>()
            })
        });
        g.finish();
    }
}

criterion_group!(benches, simulator);
criterion_main!(benches);
