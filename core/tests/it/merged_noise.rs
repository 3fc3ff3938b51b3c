//! The merged exploration noise has the law of the separate draws.
//!
//! For an oracle whose gradient noise is additive Gaussian ([`Noisy`]), the driver draws
//! that noise and the step's own sampling noise as one normal vector of the summed
//! variance (`nrpt_core::explore::merged_noise_scale`): one Philox block and two
//! Box–Muller pairs per 2D chain-step at every level, where separate draws take two
//! blocks and three pairs at the target level. The transition law is the same, so the
//! sampler's statistics must be: an [`Opaque`] wrapper hides the Gaussian split from the
//! driver (it draws the gradient noise through the oracle, then the sampling noise, as
//! an oracle of unknown noise law does), and both runs of the paper's toy are compared
//! seed by seed.
//!
//! Per seed (the paper's settings, P = 16, the optimal window W = 8, S = 0.4) the test
//! takes the round trips per 1000 iterations, the mean indicator rate of the crowded
//! inner pairs 2–4 (where the Jacobi ladder leaves them above S) and, of the target
//! level's state over the second half, the mean of |x|² and the share of iterations in
//! the central mode's cell. The means over the seeds must lie within four standard
//! errors of their difference (from the seeds' own spread). The band must be able to
//! fail: the same comparison against the separate draws without the target level's
//! sampling noise (T = 0 there too: the error a merged scale that forgot σ would make)
//! has to be rejected by at least one statistic.

use core::convert::Infallible;

use nrpt_core::driver::{Temperatures, Tempering, TemperingOptions};
use nrpt_core::rng::Rng;
use nrpt_core::target::{EnergyOracle, Modes2d, Noisy};
use nrpt_core::window::Scheme;

use crate::common::Owned;

/// Seeds per arm.
const SEEDS: u32 = 16;
/// Iterations per run.
const ITERATIONS: u64 = 6_000;
/// Standard errors of the difference of the means the arms may differ by.
const BAND: f64 = 4.0;

/// An oracle that hides its Gaussian gradient noise: the driver calls `gradient` (the
/// oracle draws its own noise from the step's stream), then draws the sampling noise.
struct Opaque(Noisy<Modes2d>);

impl EnergyOracle<f32> for Opaque {
    type Error = Infallible;
    fn dim(&self) -> usize {
        2
    }
    fn gradient<R: Rng + ?Sized>(
        &mut self,
        x: &[f32],
        grad: &mut [f32],
        rng: &mut R,
    ) -> Result<(), Infallible> {
        self.0.gradient(x, grad, rng)
    }
    fn energy<R: Rng + ?Sized>(&mut self, x: &[f32], rng: &mut R) -> Result<f32, Infallible> {
        self.0.energy(x, rng)
    }
}

/// The statistics of one seed.
struct Seed {
    trips: f64,
    inner_rate: f64,
    sq_norm: f64,
    central: f64,
}

fn run<O: EnergyOracle<f32>>(oracle: O, temperatures: Temperatures, seed: u32) -> Seed {
    let mut b = Owned::<f32>::new(16, 2);
    let opts = TemperingOptions {
        scheme: Scheme::Deo { window: 8 },
        temperatures,
        seed,
        ..TemperingOptions::default()
    };
    let mut t = Tempering::new(opts, oracle, b.lend()).unwrap();
    let half = ITERATIONS / 2;
    let (mut sq, mut central, mut mid) = (0.0, 0.0, Vec::new());
    for k in 0..ITERATIONS {
        t.step().unwrap();
        if k + 1 == half {
            mid = t
                .storage()
                .pair_stats()
                .iter()
                .map(|p| p.indicators)
                .collect();
        }
        if k >= half {
            let x = t.target_state();
            let (a, b) = (f64::from(x[0]), f64::from(x[1]));
            sq += a * a + b * b;
            central += f64::from(u8::from(a.abs() < 0.5 && b.abs() < 0.5));
        }
    }
    let n = (ITERATIONS - half) as f64;
    let pairs = t.storage().pair_stats();
    let inner = (2..5)
        .map(|l| (pairs[l].indicators - mid[l]) as f64 / n)
        .sum::<f64>()
        / 3.0;
    Seed {
        trips: t.stats().round_trips as f64 * 1000.0 / ITERATIONS as f64,
        inner_rate: inner,
        sq_norm: sq / n,
        central: central / n,
    }
}

fn arm<O: EnergyOracle<f32>>(oracle: impl Fn() -> O, temperatures: Temperatures) -> Vec<Seed> {
    (0..SEEDS).map(|s| run(oracle(), temperatures, s)).collect()
}

/// Mean and standard error of the mean.
fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

/// A statistic's name and its value for one seed.
type Statistic = (&'static str, fn(&Seed) -> f64);

/// Each statistic's difference of the means in standard errors, b − a.
fn differences(a: &[Seed], b: &[Seed]) -> Vec<(&'static str, f64)> {
    let stats: [Statistic; 4] = [
        ("round trips / 1000 iterations", |s| s.trips),
        ("indicator rate, pairs 2-4", |s| s.inner_rate),
        ("mean |x|^2 at the target level", |s| s.sq_norm),
        ("share in the central cell", |s| s.central),
    ];
    stats
        .iter()
        .map(|&(name, f)| {
            let (ma, sa) = mean_se(&a.iter().map(f).collect::<Vec<_>>());
            let (mb, sb) = mean_se(&b.iter().map(f).collect::<Vec<_>>());
            let z = (mb - ma) / (sa * sa + sb * sb).sqrt();
            eprintln!("{name}: separate {ma:.4} ± {sa:.4}, other {mb:.4} ± {sb:.4}: {z:+.2} SE");
            (name, z)
        })
        .collect()
}

#[test]
fn merged_noise_has_the_law_of_separate_draws() {
    let paper = Temperatures::SgdExplorers;
    let separate = arm(|| Opaque(Noisy::paper(Modes2d)), paper);
    let merged = arm(|| Noisy::paper(Modes2d), paper);
    for (name, z) in differences(&separate, &merged) {
        assert!(z.abs() < BAND, "{name}: merged differs by {z:+.2} SE");
    }
    // A real change of the law: no sampling noise at the target level.
    let cold = arm(
        || Opaque(Noisy::paper(Modes2d)),
        Temperatures::Constant(0.0),
    );
    let worst = differences(&separate, &cold)
        .iter()
        .map(|&(_, z)| z.abs())
        .fold(0.0, f64::max);
    assert!(
        worst >= BAND,
        "the band cannot tell T = 0 from T = 1 at the target level (largest difference {worst:.2} SE)"
    );
}

/// Bit for bit, the merged step is the separate step's formula with the exact gradient
/// and the merged scale: with σ_g = 0 the two contracts draw the same words and agree
/// exactly (T = 1 at the target level, an exact oracle).
#[test]
fn without_gradient_noise_merged_and_separate_are_the_same_bits() {
    let exact = || Noisy {
        gradient_noise: 0.0,
        ..Noisy::paper(Modes2d)
    };
    for seed in 0..3 {
        let mut a = Owned::<f32>::new(16, 2);
        let mut b = Owned::<f32>::new(16, 2);
        let opts = TemperingOptions {
            seed,
            ..TemperingOptions::default()
        };
        let mut ta = Tempering::new(opts, exact(), a.lend()).unwrap();
        let mut tb = Tempering::new(opts, Opaque(exact()), b.lend()).unwrap();
        ta.run(300).unwrap();
        tb.run(300).unwrap();
        let bits = |s: &[f32]| s.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(ta.storage().states()), bits(tb.storage().states()));
        assert_eq!(ta.stats(), tb.stats());
    }
}
