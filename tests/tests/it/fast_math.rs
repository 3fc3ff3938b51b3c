//! Fast math (`MathMode::Fast`) against exact mode on the paper's 2D experiment, without
//! a GPU: the kernels' own code compiled for the host twice, exact mode's build and fast
//! mode's with the hardware approximations emulated (`nrpt_cuda::host_math::HostMath`:
//! each of lg2.approx, sin.approx, cos.approx and rsqrt.approx replaced by the correctly
//! rounded value moved by an error as large as the PTX ISA allows), each run whole
//! through the step and swap kernels' code (`nrpt_tests::kernels::run_with`).
//!
//! Fast mode gives up bit parity with the CPU, so the two runs part after a few
//! iterations; what must agree is the statistics. Per seed (one ensemble each, the
//! paper's settings: 16 SGD explorers behind noise 2, the optimal window, S = 0.4) the
//! test takes the round trips per 1000 iterations and the TV distance of the target
//! level's samples to the true mass of the 25 mode cells and of the 50 × 50 grid, and
//! asserts that fast mode's mean over the seeds lies within four standard errors of
//! exact mode's (the standard error of a difference of two means from the spread across
//! seeds of each: a band the seeds' own scatter sets, not a number chosen to pass).
//!
//! The band must be able to fail: the same comparison of exact mode against exact mode
//! with a target swap rate of 0.3 instead of 0.4 (fewer, slower round trips: a real
//! change of the sampler) has to be rejected, or the test says that it cannot tell a
//! difference and fails.

use nrpt_cuda::host_math::HostMath;
use nrpt_sampling::config::RunConfig;
use nrpt_sampling::engine::cpu::{CpuBackend, Simd};
use nrpt_sampling::engine::{Job, Record, RunOutput};
use nrpt_studies::metrics::Truth;
use nrpt_tests::kernels::{self, KernelPath};
use nrpt_tests::{Run, note};

/// Seeds (ensembles) per run.
const SEEDS: usize = 24;
/// Iterations per run.
const ITERATIONS: u64 = 3_000;
/// Iterations before the first kept sample.
const WARMUP: u64 = 500;
/// Standard errors of the difference of the means that the modes may differ by.
const BAND: f64 = 4.0;

/// The paper's 2D experiment at this size, every iteration's target-level state kept.
fn job(swap_rate: f64) -> Job {
    let config = RunConfig {
        ensembles: SEEDS,
        iterations: ITERATIONS,
        swap_rate,
        thin: 1,
        warmup: WARMUP,
        ..RunConfig::default()
    };
    config
        .job(Record {
            thin: 1,
            warmup: WARMUP,
            trace_every: 0,
            path_iterations: 0,
        })
        .expect("the paper's configuration")
}

/// One value per seed of each statistic.
#[derive(Debug)]
struct PerSeed {
    round_trips: Vec<f64>,
    tv_modes: Vec<f64>,
    tv_grid: Vec<f64>,
}

fn per_seed(job: &Job, math: HostMath, truth: &Truth) -> PerSeed {
    let run = kernels::run_with(job, KernelPath::StepSwap, math);
    statistics(job, &run.output, truth)
}

/// The per-seed statistics of a finished run of `job`.
fn statistics(job: &Job, out: &RunOutput, truth: &Truth) -> PerSeed {
    let e = job.ensembles;
    let mut s = PerSeed {
        round_trips: Vec::new(),
        tv_modes: Vec::new(),
        tv_grid: Vec::new(),
    };
    for (k, ens) in out.ensembles.iter().enumerate() {
        s.round_trips
            .push(ens.stats.round_trips as f64 * 1000.0 / job.iterations as f64);
        // Samples are [sample][ensemble][coordinate].
        let points: Vec<f32> = out
            .samples
            .chunks_exact(2 * e)
            .flat_map(|row| row[2 * k..2 * k + 2].to_vec())
            .collect();
        assert!(!points.is_empty(), "no samples of seed {k}");
        let acc = truth.accuracy(&points);
        s.tv_modes.push(acc.tv_modes);
        s.tv_grid.push(acc.tv_distance);
    }
    s
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, var.sqrt())
}

/// `Ok` with a line to print when the means of `a` and `b` lie within [`BAND`]
/// standard errors of their difference, else `Err` with the same line.
fn agree(name: &str, a: &[f64], b: &[f64]) -> Result<String, String> {
    let (ma, sa) = mean_sd(a);
    let (mb, sb) = mean_sd(b);
    let se = (sa * sa / a.len() as f64 + sb * sb / b.len() as f64).sqrt();
    let line = format!(
        "{name:<24} {ma:>9.4} ± {sa:<7.4} vs {mb:>9.4} ± {sb:<7.4} (mean ± sd over {} seeds): \
         difference {:+.4} = {:+.2} standard errors, band ±{BAND}",
        a.len(),
        mb - ma,
        (mb - ma) / se
    );
    if (mb - ma).abs() <= BAND * se {
        Ok(line)
    } else {
        Err(line)
    }
}

#[test]
fn fast_math_statistics_agree_with_exact_mode_on_the_2d_experiment() {
    let truth = Truth::new();
    let paper = job(0.4);
    let exact = per_seed(&paper, HostMath::Exact, &truth);
    let fast = per_seed(&paper, HostMath::Fast, &truth);
    let mut failures = Vec::new();
    for (name, a, b) in [
        (
            "round trips / 1000 it.",
            &exact.round_trips,
            &fast.round_trips,
        ),
        ("TV, 25 mode cells", &exact.tv_modes, &fast.tv_modes),
        ("TV, 50 × 50 grid", &exact.tv_grid, &fast.tv_grid),
    ] {
        match agree(name, a, b) {
            Ok(line) => note(&format!("exact vs fast: {line}")),
            Err(line) => {
                note(&format!("exact vs fast: {line}  <- outside the band"));
                failures.push(line);
            }
        }
    }
    // The runs part: fast mode is not exact mode's bits under another name.
    assert_ne!(
        exact.round_trips, fast.round_trips,
        "fast mode's emulation gave exact mode's round trips seed for seed"
    );

    // The negative control: a real change of the sampler is outside the band.
    let slower = per_seed(&job(0.3), HostMath::Exact, &truth);
    match agree(
        "round trips, S = 0.3",
        &exact.round_trips,
        &slower.round_trips,
    ) {
        Ok(line) => panic!(
            "the band cannot tell S = 0.4 from S = 0.3, so it says nothing about fast \
             mode: {line}"
        ),
        Err(line) => note(&format!("control (must differ): {line}")),
    }
    assert!(
        failures.is_empty(),
        "fast mode's statistics differ from exact mode's:\n{}",
        failures.join("\n")
    );
}

/// The CPU engine's fast mode (`CpuBackend::fast_math`: the 2D toy's lane groups with
/// fused multiply-adds and the shorter polynomials of `nrpt_sampling::engine::simd::Fast`) on the
/// same experiment: the same band against the CPU's exact run, and not the same bits.
#[test]
fn the_cpu_engines_fast_math_agrees_with_its_exact_math() {
    let truth = Truth::new();
    let paper = job(0.4);
    let run = |fast_math: bool| {
        let backend = CpuBackend {
            threads: Some(2),
            simd: Simd::Auto,
            fast_math,
        };
        let run = Run::cpu(&backend, &paper).expect("the CPU engine runs the job");
        statistics(&paper, &run.output, &truth)
    };
    let (exact, fast) = (run(false), run(true));
    assert_ne!(
        exact.tv_grid, fast.tv_grid,
        "fast mode gave exact mode's bits: the lane groups did not take it"
    );
    let mut failures = Vec::new();
    for (name, a, b) in [
        (
            "round trips / 1000 it.",
            &exact.round_trips,
            &fast.round_trips,
        ),
        ("TV, 25 mode cells", &exact.tv_modes, &fast.tv_modes),
        ("TV, 50 × 50 grid", &exact.tv_grid, &fast.tv_grid),
    ] {
        match agree(name, a, b) {
            Ok(line) => note(&format!("CPU exact vs fast: {line}")),
            Err(line) => failures.push(line),
        }
    }
    assert!(
        failures.is_empty(),
        "the CPU's fast mode differs from its exact mode:\n{}",
        failures.join("\n")
    );
}
