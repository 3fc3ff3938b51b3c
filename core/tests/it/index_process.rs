//! The index process with Bernoulli(S) indicators against Lemma 1 of Deng et al.
//! (AAAI 2023): round-trip rate P / E[T] with E[T] = 2WP (1 + (P − 1) r^W / (1 − r^W)).

use nrpt_core::bernoulli::IndexProcess;
use nrpt_core::swap::SwapBuffers;
use nrpt_core::window::Scheme;

/// Round trips per iteration of one ensemble, pooled over `ensembles` independent runs.
fn simulated_rate(p: usize, window: u32, s: f64, iterations: u64, ensembles: u32) -> f64 {
    let mut trips_total = 0u64;
    for e in 0..ensembles {
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
        let mut ip = IndexProcess::new(Scheme::Deo { window }, swap, &mut trips, 2023, e).unwrap();
        for _ in 0..iterations {
            ip.step(|_| s);
        }
        trips_total += ip.stats().round_trips;
    }
    trips_total as f64 / (iterations as f64 * f64::from(ensembles))
}

#[test]
fn bernoulli_index_process_matches_lemma_1() {
    let (p, s) = (16usize, 0.4);
    for window in [1u32, 8] {
        let model = nrpt_core::optimal::round_trip_rate_u32(p, window, s).unwrap();
        // About 8,000 (W = 1) to 20,000 (W = 8) round trips: relative standard error
        // near 1%, so 5% is a five-sigma band.
        let sim = simulated_rate(p, window, s, 100_000, 4);
        let rel = sim / model - 1.0;
        assert!(
            rel.abs() < 0.05,
            "W = {window}: simulated {sim}, Lemma 1 {model}"
        );
    }
}

#[test]
fn seo_is_slower_than_deo() {
    // With frequent swaps DEO moves a replica ballistically (E[T] = O(P) at r → 0),
    // while SEO's index is a random walk (O(P²)): about 0.11 against 0.015 here.
    let (p, s) = (32usize, 0.9);
    let deo = simulated_rate(p, 1, s, 20_000, 1);
    let mut at = vec![0u32; p];
    let mut of = vec![0u32; p];
    let mut gates = vec![true; p - 1];
    let mut flags = vec![0u8; p - 1];
    let mut trips = vec![0u8; p];
    let swap = SwapBuffers {
        replica_at: &mut at,
        level_of: &mut of,
        gates: &mut gates,
        flags: &mut flags,
    };
    let mut ip = IndexProcess::new(Scheme::Seo, swap, &mut trips, 1, 0).unwrap();
    for _ in 0..20_000 {
        ip.step(|_| s);
    }
    let seo = ip.stats().round_trips as f64 / 20_000.0;
    assert!(seo < 0.5 * deo, "SEO {seo} vs DEO {deo}");
}
