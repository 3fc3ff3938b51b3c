//! `nrpt bench`: chain-steps per second of the engines.
//!
//! Kept whole past 600 lines: every benchmark of the command beside the yardstick (the
//! machine's GFLOP/s) its figures are measured against.

use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use crate::cli::BenchArgs;
use nrpt_sampling::config::RunConfig;
use nrpt_sampling::config::TargetName;
use nrpt_sampling::engine::cuda::CudaBackend;
use nrpt_sampling::engine::{Backend, EngineError, Record};

/// The answer of `nrpt bench`.
#[derive(Debug, Serialize)]
pub(crate) struct BenchReport {
    /// Backend measured.
    pub backend: String,
    /// E.
    pub ensembles: usize,
    /// P.
    pub chains: usize,
    /// Iterations.
    pub iterations: u64,
    /// Window used.
    pub window: u32,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// Seconds.
    pub seconds: f64,
    /// E · P · iterations / seconds.
    pub chain_steps_per_sec: f64,
    /// The target: `modes2d` or `sum-modes`.
    pub target: String,
    /// Its dimension D.
    pub dim: usize,
    /// D · E · P · iterations / seconds: coordinate-steps, to compare targets of other
    /// dimensions.
    pub coordinate_steps_per_sec: f64,
    /// Round trips per 1000 iterations (sanity check).
    pub round_trips_per_1000: f64,
    /// What the bench was estimated to need before it started, in bytes (checked
    /// against `--max-memory`).
    pub memory_estimate_bytes: u64,
    /// The peak resident memory of the process, in bytes (Linux; `null` elsewhere).
    pub peak_memory_bytes: Option<u64>,
    /// CUDA only: the first mode of `modes` (the exact one), whose figures the fields
    /// above then hold: `seconds` and `chain_steps_per_sec` are device-timed medians.
    #[serde(flatten)]
    pub device: Option<DeviceFigures>,
    /// CUDA only: the device's limits measured in the same run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<DeviceLimits>,
    /// CUDA only: every math mode (nrpt_cuda::timing::BENCH_MODES), each against its
    /// own target.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<ModeReport>,
}

/// The device's limits measured by a CUDA bench in the same run (nrpt_cuda::limits):
/// the yardsticks of its ratios.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct DeviceLimits {
    /// Device-to-device `cudaMemcpy` bandwidth, GB/s of bytes read plus written.
    pub copy_memcpy_d2d_gbs: f64,
    /// The FP32 peak measured by an FMA-bound micro-kernel, GFLOP/s (MLP benches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fp32_measured_gflops: Option<f64>,
    /// SMs × clock × FP32 lanes × 2, GFLOP/s (MLP benches; NaN where not known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fp32_theoretical_gflops: Option<f64>,
}

/// How one configuration was timed on the device: CUDA events around the iterations
/// alone, the median of `repetitions` runs after a warm-up, and the same runs end to
/// end (set-up, uploads, downloads and the final snapshot included) apart.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct DeviceFigures {
    /// The kernels' floating-point contract (nrpt_cuda::MathMode::name).
    pub math: String,
    /// Timed runs after the warm-up.
    pub repetitions: usize,
    /// Median seconds on the device of the iterations (CUDA events).
    pub device_seconds: f64,
    /// Median wall-clock seconds of a whole run (set-up, uploads, downloads included).
    pub end_to_end_seconds: f64,
    /// E · P · iterations / end_to_end_seconds.
    pub end_to_end_chain_steps_per_sec: f64,
    /// Device seconds of every repetition.
    pub device_seconds_each: Vec<f64>,
    /// End-to-end seconds of every repetition.
    pub end_to_end_seconds_each: Vec<f64>,
    /// The 2D toy: the chain-steps per second this mode should reach on an H200
    /// (nrpt_cuda::timing::target_2d_chain_steps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_chain_steps_per_sec: Option<f64>,
    /// chain_steps_per_sec / target_chain_steps_per_sec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_to_target: Option<f64>,
    /// D > 2: state bytes read and written per second (2 · D · 4 bytes per chain-step),
    /// GB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_gbs: Option<f64>,
    /// state_gbs / the measured copy bandwidth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_of_copy_bandwidth: Option<f64>,
}

/// One math mode of a CUDA bench.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ModeReport {
    /// E · P · iterations / device_seconds.
    pub chain_steps_per_sec: f64,
    /// Round trips per 1000 iterations (of the last repetition).
    pub round_trips_per_1000: f64,
    /// The timing.
    #[serde(flatten)]
    pub device: DeviceFigures,
}

/// Runs the command on `backend`.
pub fn run(
    args: &BenchArgs,
    backend: &dyn Backend,
    threads: Option<usize>,
    json: bool,
    quiet: bool,
) -> Result<()> {
    let (ensembles, chains, iterations) = args.sizes();
    let config = RunConfig {
        chains,
        ensembles,
        iterations,
        window: args.window,
        ..match args.target {
            crate::cli::BenchTarget::SumModes => RunConfig {
                dim: args.dim as usize,
                ..RunConfig::defaults_for(TargetName::of(
                    &nrpt_sampling::targets::sum_modes::SUM_MODES,
                ))
            },
            _ => RunConfig::default(),
        }
    };
    // `job` checks this estimate against --max-memory.
    let job = config.job_advising(Record::NOTHING, "--ensembles, --chains or --iterations")?;
    let memory_estimate_bytes = config.footprint(&job).total();
    if let Some(cuda) = backend.as_cuda() {
        return run_cuda(cuda, &job, memory_estimate_bytes, json);
    }
    // A short warm-up run (page faults, thread pool start).
    let warm = nrpt_sampling::engine::Job {
        iterations: job.iterations.min(50),
        ..job.clone()
    };
    backend.run(&warm, &nrpt_sampling::interrupt::flow)?;
    let started = Instant::now();
    let out = super::run_job(backend, &job, "bench", quiet)?;
    let seconds = started.elapsed().as_secs_f64();
    let steps = (job.chains * job.ensembles) as f64 * job.iterations as f64;
    let report = BenchReport {
        backend: if args.scalar {
            "cpu-scalar".into()
        } else {
            backend.name()
        },
        ensembles: job.ensembles,
        chains: job.chains,
        iterations: job.iterations,
        window: job.options.scheme.window_code(),
        threads: threads.unwrap_or(0),
        seconds,
        chain_steps_per_sec: steps / seconds,
        target: job.target.name(),
        dim: job.target.dim(),
        coordinate_steps_per_sec: steps * job.target.dim() as f64 / seconds,
        round_trips_per_1000: out.total_stats().round_trips as f64 * 1000.0
            / (job.ensembles as f64 * job.iterations as f64),
        memory_estimate_bytes,
        peak_memory_bytes: nrpt_sampling::limits::peak_memory(),
        device: None,
        limits: None,
        modes: Vec::new(),
    };
    if json {
        say!("{}", nrpt_sampling::json::to_string(&report)?)?;
    } else {
        say!(
            "{} on {} (D = {}): {} ensembles × {} chains × {} iterations in {:.3} s: {:.3e} \
             chain-steps/s, {:.3e} coordinate-steps/s",
            report.backend,
            report.target,
            report.dim,
            report.ensembles,
            report.chains,
            report.iterations,
            seconds,
            report.chain_steps_per_sec,
            report.coordinate_steps_per_sec
        )?;
    }
    Ok(())
}

/// A job's warm-up: its first min(`most`, N) iterations.
fn warm_up(job: &nrpt_sampling::engine::Job, most: u64) -> nrpt_sampling::engine::Job {
    nrpt_sampling::engine::Job {
        iterations: job.iterations.min(most),
        ..job.clone()
    }
}

/// `cuda` running `job` in `mode`: an untimed warm-up (module loading and JIT), then
/// [`MIN_REPETITIONS`](nrpt_cuda::timing::MIN_REPETITIONS) runs, each timed on the
/// device (CUDA events around the iterations) and end to end (wall clock around the
/// whole run); the output of the last.
fn time_cuda(
    cuda: &CudaBackend,
    job: &nrpt_sampling::engine::Job,
    mode: nrpt_cuda::MathMode,
    warm_iterations: u64,
) -> Result<(DeviceFigures, nrpt_sampling::engine::RunOutput)> {
    use nrpt_cuda::timing::{MIN_REPETITIONS, Repetitions};
    let b = cuda.clone().with_math(mode);
    b.run(
        &warm_up(job, warm_iterations),
        &nrpt_sampling::interrupt::flow,
    )?;
    let mut reps = Repetitions::default();
    let mut last = None;
    for _ in 0..MIN_REPETITIONS {
        let started = Instant::now();
        let (out, device) = b.run_timed(job, &nrpt_sampling::interrupt::flow)?;
        reps.push(device, started.elapsed().as_secs_f64());
        last = Some(out);
    }
    let (Some(device), Some(end_to_end), Some(out)) =
        (reps.device_seconds(), reps.end_to_end_seconds(), last)
    else {
        return Err(EngineError::Backend {
            backend: "cuda",
            message: format!("no device timing: the event timers read {:?}", reps.device),
        }
        .into());
    };
    let steps = (job.chains * job.ensembles) as f64 * job.iterations as f64;
    let figures = DeviceFigures {
        math: mode.name().to_string(),
        repetitions: reps.device.len(),
        device_seconds: device,
        end_to_end_seconds: end_to_end,
        end_to_end_chain_steps_per_sec: steps / end_to_end,
        device_seconds_each: reps.device,
        end_to_end_seconds_each: reps.end_to_end,
        target_chain_steps_per_sec: None,
        ratio_to_target: None,
        state_gbs: None,
        share_of_copy_bandwidth: None,
    };
    Ok((figures, out))
}

/// `nrpt bench --backend cuda` on the 2D toy or sum-modes: every mode of
/// [`BENCH_MODES`](nrpt_cuda::timing::BENCH_MODES) timed by [`time_cuda`], beside the
/// copy bandwidth measured in the same run; the report's own figures are the first
/// mode's (exact).
fn run_cuda(
    cuda: &CudaBackend,
    job: &nrpt_sampling::engine::Job,
    memory_estimate_bytes: u64,
    json: bool,
) -> Result<()> {
    use nrpt_cuda::timing::{BENCH_MODES, target_2d_chain_steps};
    if let Some(why) = cuda.unsupported(job) {
        return Err(EngineError::Backend {
            backend: "cuda",
            message: format!("{why}: run it with --backend cpu"),
        }
        .into());
    }
    let copy =
        nrpt_cuda::limits::copy_bandwidth_gbs(cuda.gpu()).map_err(|e| EngineError::Backend {
            backend: "cuda",
            message: format!("measuring the copy bandwidth: {e}"),
        })?;
    let limits = DeviceLimits {
        copy_memcpy_d2d_gbs: copy,
        fp32_measured_gflops: None,
        fp32_theoretical_gflops: None,
    };
    let d = job.target.dim();
    let steps = (job.chains * job.ensembles) as f64 * job.iterations as f64;
    let mut modes = Vec::new();
    for mode in BENCH_MODES {
        let (mut f, out) = time_cuda(cuda, job, mode, 50)?;
        let rate = steps / f.device_seconds;
        if d == 2 {
            let target = target_2d_chain_steps(mode);
            f.target_chain_steps_per_sec = Some(target);
            f.ratio_to_target = Some(rate / target);
        } else {
            // Each chain-step reads and writes its D f32 coordinates once.
            let gbs = 2.0 * (d * 4) as f64 * rate / 1e9;
            f.state_gbs = Some(gbs);
            f.share_of_copy_bandwidth = Some(gbs / copy);
        }
        modes.push(ModeReport {
            chain_steps_per_sec: rate,
            round_trips_per_1000: out.total_stats().round_trips as f64 * 1000.0
                / (job.ensembles as f64 * job.iterations as f64),
            device: f,
        });
    }
    let first = modes[0].clone();
    let report = BenchReport {
        backend: cuda.name(),
        ensembles: job.ensembles,
        chains: job.chains,
        iterations: job.iterations,
        window: job.options.scheme.window_code(),
        threads: 0,
        seconds: first.device.device_seconds,
        chain_steps_per_sec: first.chain_steps_per_sec,
        target: job.target.name(),
        dim: d,
        coordinate_steps_per_sec: first.chain_steps_per_sec * d as f64,
        round_trips_per_1000: first.round_trips_per_1000,
        memory_estimate_bytes,
        peak_memory_bytes: nrpt_sampling::limits::peak_memory(),
        device: Some(first.device),
        limits: Some(limits),
        modes,
    };
    if json {
        say!("{}", nrpt_sampling::json::to_string(&report)?)?;
        return Ok(());
    }
    say!(
        "cuda on {} (D = {}): {} ensembles × {} chains × {} iterations, median of {} runs \
         after a warm-up; device time by CUDA events around the iterations, end to end \
         apart (copy bandwidth {:.0} GB/s):",
        report.target,
        d,
        report.ensembles,
        report.chains,
        report.iterations,
        nrpt_cuda::timing::MIN_REPETITIONS,
        copy
    )?;
    for m in &report.modes {
        let f = &m.device;
        let against = match (f.ratio_to_target, f.share_of_copy_bandwidth) {
            (Some(r), _) => format!(
                ", {:.2} of the target {:.1e}",
                r,
                f.target_chain_steps_per_sec.unwrap_or(f64::NAN)
            ),
            (None, Some(share)) => format!(
                ", {:.1} GB/s of states = {:.0}% of the copy bandwidth",
                f.state_gbs.unwrap_or(f64::NAN),
                100.0 * share
            ),
            _ => String::new(),
        };
        say!(
            "  {:<6} {:.3e} chain-steps/s on the device ({:.4} s){against}; end to end {:.3e} \
             chain-steps/s ({:.3} s)",
            f.math,
            m.chain_steps_per_sec,
            f.device_seconds,
            f.end_to_end_chain_steps_per_sec,
            f.end_to_end_seconds
        )?;
    }
    Ok(())
}

/// The answer of `nrpt bench --target bernoulli`.
#[derive(Debug, Serialize)]
pub(crate) struct BernoulliReport {
    /// The simulator timed.
    pub simulator: nrpt_studies::scale::Simulator,
    /// E as run: the simulators run whole groups (64 ensembles bit-sliced, 32 in SIMD
    /// lanes), so E is rounded up.
    pub ensembles: usize,
    /// P.
    pub chains: usize,
    /// Iterations.
    pub iterations: u64,
    /// Window.
    pub window: u32,
    /// Seconds.
    pub seconds: f64,
    /// E · (P − 1) · iterations / seconds.
    pub pair_updates_per_sec: f64,
    /// What the bench was estimated to need before it started, in bytes (checked
    /// against `--max-memory`).
    pub memory_estimate_bytes: u64,
    /// The peak resident memory of the process, in bytes (Linux; `null` elsewhere).
    pub peak_memory_bytes: Option<u64>,
}

/// Pair-updates per second of the Bernoulli index-process simulator (all cores).
pub fn bernoulli(args: &BenchArgs, json: bool) -> Result<()> {
    use nrpt_sampling::config::{ConfigError, MAX_CHAINS, MAX_VALUES};
    use nrpt_sampling::engine::cpu::Simd;
    use nrpt_sampling::engine::memory::{Footprint, PROCESS_BYTES, check};
    use nrpt_studies::scale::Simulator;
    use nrpt_studies::scale::bitsliced::{BitGroup, ENSEMBLES};
    use nrpt_studies::scale::simulator::{Group, LANES};
    let (ensembles, chains, iterations) = args.sizes();
    if !(2..=MAX_CHAINS).contains(&chains) {
        let why = format!("must be between 2 and {MAX_CHAINS}, got {chains}");
        return Err(ConfigError::new("chains", why).into());
    }
    if !(1..=1 << 24).contains(&ensembles) || (ensembles * chains) as u128 > MAX_VALUES {
        let why = format!(
            "must be between 1 and 2^24 with at most {MAX_VALUES} replicas in all, got {ensembles}"
        );
        return Err(ConfigError::new("ensembles", why).into());
    }
    if !(1..=1 << 40).contains(&iterations) {
        let why = format!("must be between 1 and 2^40, got {iterations}");
        return Err(ConfigError::new("iterations", why).into());
    }
    let window = nrpt_studies::scale::window_of(&args.window.to_string(), chains, 0.4)?;
    let rates = vec![0.4; chains - 1];
    let (width, group_bytes) = match args.simulator {
        Simulator::Bitsliced => (ENSEMBLES, BitGroup::bytes(chains, false)),
        Simulator::Lanes => (LANES, Group::<LANES>::bytes(chains)),
    };
    let groups = ensembles.div_ceil(width);
    let mut footprint = Footprint::default();
    footprint.add("process", PROCESS_BYTES);
    footprint.add(
        "index processes",
        (groups as u64).saturating_mul(group_bytes),
    );
    check(&footprint, "--ensembles or --chains").map_err(|m| ConfigError::new("max_memory", m))?;
    // Every group polls the stop request every few milliseconds (`run_or_stop`).
    let stop = &nrpt_sampling::interrupt::requested;
    let seconds = match args.simulator {
        Simulator::Bitsliced => {
            let mut sims = (0..groups)
                .map(|g| BitGroup::new(&rates, window, 1, g as u32))
                .collect::<Result<Vec<_>, _>>()?;
            time_groups(&mut sims, iterations, |g, n| {
                g.run_or_stop(n, Simd::Auto, stop)
            })?
        }
        Simulator::Lanes => {
            let mut sims: Vec<Group<LANES>> = (0..groups)
                .map(|g| Group::new(&rates, window, 1, (g * LANES) as u32))
                .collect();
            time_groups(&mut sims, iterations, |g, n| {
                g.run_or_stop(n, Simd::Auto, stop)
            })?
        }
    };
    let updates = (groups * width) as f64 * (chains - 1) as f64 * iterations as f64;
    let r = BernoulliReport {
        simulator: args.simulator,
        ensembles: groups * width,
        chains,
        iterations,
        window,
        seconds,
        pair_updates_per_sec: updates / seconds,
        memory_estimate_bytes: footprint.total(),
        peak_memory_bytes: nrpt_sampling::limits::peak_memory(),
    };
    if json {
        say!("{}", nrpt_sampling::json::to_string(&r)?)?;
    } else {
        say!(
            "bernoulli ({}): {} ensembles × {} pairs × {} iterations in {:.3} s: {:.3e} \
             pair-updates/s",
            r.simulator.name(),
            r.ensembles,
            r.chains - 1,
            r.iterations,
            seconds,
            r.pair_updates_per_sec
        )?;
    }
    Ok(())
}

/// Runs every group 100 iterations (or `iterations`, if fewer), then times `iterations`
/// more of all of them in parallel (rayon, one group per task): the seconds.
fn time_groups<G: Send>(
    sims: &mut [G],
    iterations: u64,
    advance: impl Fn(&mut G, u64) -> Result<(), EngineError> + Sync,
) -> Result<f64, EngineError> {
    use rayon::prelude::*;
    sims.par_iter_mut()
        .try_for_each(|g| advance(g, iterations.min(100)))?;
    let started = Instant::now();
    sims.par_iter_mut()
        .try_for_each(|g| advance(g, iterations))?;
    Ok(started.elapsed().as_secs_f64())
}

/// The answer of `nrpt bench --target classifier`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct MlpReport {
    /// Backend measured.
    pub backend: String,
    /// E.
    pub ensembles: usize,
    /// P.
    pub chains: usize,
    /// Iterations.
    pub iterations: u64,
    /// Layer sizes [F, hidden…, C].
    pub layers: Vec<usize>,
    /// Parameters per chain.
    pub parameters: usize,
    /// Examples per mini-batch.
    pub batch: usize,
    /// Seconds.
    pub seconds: f64,
    /// E · P · iterations / seconds.
    pub chain_steps_per_sec: f64,
    /// Examples evaluated per second: 2 mini-batches (gradient, energy) per chain-step.
    pub examples_per_sec: f64,
    /// Floating-point operations per chain-step (matrix products only; see
    /// `ClassifierTarget::flops_per_chain_step`).
    pub flops_per_chain_step: f64,
    /// GFLOP/s of the run.
    pub gflops: f64,
    /// The CPU: GFLOP/s of an n × n × n f32 product (n = --machine-size, 2048 by
    /// default) with the same library on every thread, the machine's own large-matrix
    /// rate. The GPU: its FP32 peak measured in the same run by an FMA-bound
    /// micro-kernel.
    pub machine_gflops: f64,
    /// gflops / machine_gflops.
    pub efficiency: f64,
    /// What the bench was estimated to need before it started (the run, and on the
    /// CPU the machine's n × n × n product), in bytes (checked against `--max-memory`).
    pub memory_estimate_bytes: u64,
    /// The peak resident memory of the process, in bytes (Linux; `null` elsewhere).
    pub peak_memory_bytes: Option<u64>,
    /// GPU only: the kernels' floating-point contract (`exact`: no FMA, nrpt-core's
    /// bits; the fast mode beside it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub math: Option<String>,
    /// GPU only: the theoretical FP32 peak (SMs × clock × FP32 lanes × 2); NaN where the
    /// architecture's lanes are not known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theoretical_gflops: Option<f64>,
    /// GPU only: how the run was timed (`seconds`, `chain_steps_per_sec` and `gflops`
    /// above are then device-timed medians): CUDA events around the iterations alone,
    /// so the drawing of initial states, the upload of data and states and module
    /// loading are outside; the whole runs' wall-clock time apart.
    #[serde(flatten)]
    pub device: Option<DeviceFigures>,
    /// GPU only: the share of the measured FP32 peak this mode should reach
    /// (nrpt_cuda::timing::target_mlp_share; none for the exact mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_share_of_peak: Option<f64>,
    /// GPU only: efficiency / target_share_of_peak.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_to_target: Option<f64>,
    /// GPU only: every math mode (nrpt_cuda::timing::BENCH_MODES) in full, the first
    /// being this report's own figures.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<MlpReport>,
}

pub use nrpt_sampling::config::parse_hidden;

/// The memory of [`machine_gflops`]`(n)`: its three n × n f32 matrices, and the matrix
/// library's packing of them, at most a panel of 1024 rows of the right operand (its
/// blocking is sized from the caches: 512 rows or fewer on the machines measured) and a
/// slab of at most 4 MiB (its L2 cache) per thread.
pub(crate) fn machine_gflops_bytes(n: usize) -> u64 {
    let n = n.max(16) as u64;
    let threads = rayon::current_num_threads() as u64;
    (3 * 4 * n)
        .saturating_mul(n)
        .saturating_add(1024 * 4 * n)
        .saturating_add(threads.saturating_mul(4 << 20))
}

/// The large-matrix rate of the matrix library on every thread of the pool: the best
/// of five n³ f32 products (n ≥ 16), each computed in square tiles of at most 2³³
/// operations per thread (whole up to n = 2048 on two threads) with a look at the stop
/// request between two (Ctrl-C or SIGTERM: [`EngineError::Interrupted`]).
pub fn machine_gflops(n: usize) -> Result<f64, EngineError> {
    let n = n.max(16);
    let a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 * 0.125).collect();
    let b: Vec<f32> = (0..n * n).map(|i| (i % 5) as f32 * 0.25).collect();
    let mut c = vec![0.0f32; n * n];
    let threads = rayon::current_num_threads();
    let tile = machine_tile(n, threads);
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        tiled_product(&mut c, &a, &b, n, tile, threads)?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(&c);
    Ok(2.0 * (n as f64).powi(3) / best / 1e9)
}

/// `c = a · b` for n × n row-major matrices, tile by tile of c (rows i.., columns j..:
/// those rows of a times those columns of b, over all of k), polling the stop request
/// before each tile.
fn tiled_product(
    c: &mut [f32],
    a: &[f32],
    b: &[f32],
    n: usize,
    tile: usize,
    threads: usize,
) -> Result<(), EngineError> {
    use nrpt_sampling::targets::classifier::matmul::{Operand, product};
    for i in (0..n).step_by(tile.max(1)) {
        for j in (0..n).step_by(tile.max(1)) {
            nrpt_sampling::interrupt::check()?;
            let (rows, cols) = (tile.min(n - i), tile.min(n - j));
            product(
                &mut c[i * n + j..],
                n,
                Operand::strided(&a[i * n..], rows, n, n),
                Operand::strided(&b[j..], n, cols, n),
                false,
                threads,
            );
        }
    }
    Ok(())
}

/// Floating-point operations of one tile of [`machine_gflops`] per thread: 2³³, a few
/// tenths of a second of a core, so that a stop request is answered within a fraction
/// of a second while every tile stays a large product.
const MACHINE_TILE_FLOPS: f64 = (1u64 << 33) as f64;

/// The side of the square tiles of [`machine_gflops`]'s n × n × n product on `threads`
/// threads: n itself when the product is at most [`MACHINE_TILE_FLOPS`] per thread (n =
/// 2048 from two threads), else n split evenly into the fewest tiles of at most that
/// work (2·t²·n), the side rounded up to a multiple of 64 (n = 2048 on one thread: four
/// tiles of 1024; n = 16384 on two: 768).
fn machine_tile(n: usize, threads: usize) -> usize {
    let budget = MACHINE_TILE_FLOPS * threads.max(1) as f64;
    let side = (budget / (2.0 * n as f64)).sqrt().max(64.0);
    if side >= n as f64 {
        return n;
    }
    let pieces = (n as f64 / side).ceil() as usize;
    n.div_ceil(pieces).next_multiple_of(64).min(n)
}

/// Chain-steps, examples and GFLOP/s on the MLP data target, on the engine of
/// `--backend`: the CPU engine beside the machine's large-matrix rate, or the CUDA
/// engine (`cuda`, or `auto` where a GPU opens) beside the device's FP32 peak measured in
/// the same run, in both of its floating-point contracts.
pub fn mlp(
    args: &BenchArgs,
    cpu: &nrpt_sampling::engine::cpu::CpuBackend,
    json: bool,
    quiet: bool,
) -> Result<()> {
    use crate::cli::BackendKind;
    use nrpt_sampling::targets::classifier::ClassifierTarget;
    use nrpt_studies::deep::Rates;
    let (ensembles, chains, iters) = args.sizes();
    let model = std::sync::Arc::new(ClassifierTarget::new(
        std::sync::Arc::new(nrpt_sampling::data::digits()),
        &parse_hidden(&args.hidden)?,
        args.batch,
        1.0,
    )?);
    let rates = Rates::default();
    let window = args.window.scheme(chains, rates.swap_rate)?;
    let job = nrpt_studies::deep::tempering_job(
        &model,
        &nrpt_studies::deep::Sampling {
            chains,
            seeds: ensembles,
            iterations: iters,
            scheme: window,
            rates,
            ..nrpt_studies::deep::Sampling::default()
        },
    )?;
    let silent = quiet || json;
    // The GPU where asked for, or where `auto` finds one that runs this job.
    let gpu = match args.engine.backend {
        BackendKind::Cpu => None,
        BackendKind::Cuda => {
            let g = CudaBackend::open(args.engine.device)?;
            if let Some(why) = g.unsupported(&job) {
                return Err(EngineError::Backend {
                    backend: "cuda",
                    message: format!("{why}: run it with --backend cpu"),
                }
                .into());
            }
            Some(g)
        }
        BackendKind::Auto => match CudaBackend::open(args.engine.device) {
            Ok(g) => match g.unsupported(&job) {
                None => Some(g),
                Some(why) => {
                    if !silent {
                        note!("backend: cpu for this run ({why})");
                    }
                    None
                }
            },
            Err(e) => {
                if !silent {
                    note!("backend: cpu (no GPU: {e})");
                }
                None
            }
        },
    };
    // Checked before any work: the run, and on the CPU the machine's product.
    let mut footprint = nrpt_sampling::engine::memory::of_job(&job);
    if gpu.is_none() {
        footprint.add(
            "machine-size product",
            machine_gflops_bytes(args.machine_size as usize),
        );
    }
    nrpt_sampling::engine::memory::check(
        &footprint,
        "--machine-size, --ensembles, --chains, --hidden or --batch",
    )
    .map_err(|m| nrpt_sampling::config::ConfigError::new("max_memory", m))?;
    let report = match gpu {
        None => {
            let machine = machine_gflops(args.machine_size as usize)?;
            let mut r = time_mlp(cpu, &model, &job, footprint.total(), quiet)?;
            r.machine_gflops = machine;
            r.efficiency = r.gflops / machine;
            r
        }
        Some(g) => {
            let (measured, theoretical) =
                nrpt_cuda::limits::fp32_peak_gflops(g.gpu()).map_err(|e| EngineError::Backend {
                    backend: "cuda",
                    message: format!("measuring the FP32 peak: {e}"),
                })?;
            let mut modes = Vec::new();
            for math in nrpt_cuda::timing::BENCH_MODES {
                let (f, _) = time_cuda(&g, &job, math, 10)?;
                let mut r = mlp_report(g.name(), &model, &job, f.device_seconds);
                r.memory_estimate_bytes = footprint.total();
                r.peak_memory_bytes = nrpt_sampling::limits::peak_memory();
                r.machine_gflops = measured;
                r.efficiency = r.gflops / measured;
                r.math = Some(f.math.clone());
                r.theoretical_gflops = Some(theoretical);
                r.target_share_of_peak = nrpt_cuda::timing::target_mlp_share(math);
                r.ratio_to_target = r.target_share_of_peak.map(|t| r.efficiency / t);
                r.device = Some(f);
                modes.push(r);
            }
            MlpReport {
                modes: modes.clone(),
                ..modes[0].clone()
            }
        }
    };
    if json {
        say!("{}", nrpt_sampling::json::to_string(&report)?)?;
        return Ok(());
    }
    if report.modes.is_empty() {
        print_mlp(&report)?;
    }
    for m in &report.modes {
        print_mlp(m)?;
    }
    Ok(())
}

/// One timed run of `job` on `backend` (the CPU) after an untimed warm-up of
/// min(10, N) iterations; the yardstick fields are left to the caller.
fn time_mlp(
    backend: &dyn Backend,
    model: &nrpt_sampling::targets::Classifier,
    job: &nrpt_sampling::engine::Job,
    memory_estimate_bytes: u64,
    quiet: bool,
) -> Result<MlpReport> {
    backend.run(&warm_up(job, 10), &nrpt_sampling::interrupt::flow)?;
    let started = Instant::now();
    super::run_job(backend, job, "bench mlp", quiet)?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(MlpReport {
        memory_estimate_bytes,
        peak_memory_bytes: nrpt_sampling::limits::peak_memory(),
        ..mlp_report(backend.name(), model, job, seconds)
    })
}

/// The figures of `job` run in `seconds`; the yardstick fields and the memory estimate
/// are left to the caller.
fn mlp_report(
    backend: String,
    model: &nrpt_sampling::targets::Classifier,
    job: &nrpt_sampling::engine::Job,
    seconds: f64,
) -> MlpReport {
    let steps = (job.chains * job.ensembles) as f64 * job.iterations as f64;
    let target = model;
    let flops = target.flops_per_chain_step();
    let gflops = steps * flops / seconds / 1e9;
    MlpReport {
        backend,
        ensembles: job.ensembles,
        chains: job.chains,
        iterations: job.iterations,
        layers: target.arch.sizes().collect(),
        parameters: target.dim(),
        batch: target.batch,
        seconds,
        chain_steps_per_sec: steps / seconds,
        examples_per_sec: steps * 2.0 * target.batch as f64 / seconds,
        flops_per_chain_step: flops,
        gflops,
        machine_gflops: f64::NAN,
        efficiency: f64::NAN,
        memory_estimate_bytes: 0,
        peak_memory_bytes: None,
        math: None,
        theoretical_gflops: None,
        device: None,
        target_share_of_peak: None,
        ratio_to_target: None,
        modes: Vec::new(),
    }
}

fn print_mlp(r: &MlpReport) -> Result<(), nrpt_sampling::console::StdoutError> {
    let (what, yardstick) = match &r.math {
        None => (r.backend.clone(), "the machine's".to_string()),
        Some(m) => (
            format!("{} ({m} math)", r.backend),
            format!(
                "the device's measured FP32 peak (theoretical {:.0} GFLOP/s),",
                r.theoretical_gflops.unwrap_or(f64::NAN)
            ),
        ),
    };
    let timed = match &r.device {
        None => format!("in {:.2} s", r.seconds),
        Some(f) => format!(
            "in {:.4} s on the device (median of {}; {:.2} s end to end)",
            f.device_seconds, f.repetitions, f.end_to_end_seconds
        ),
    };
    let target = match (r.target_share_of_peak, r.ratio_to_target) {
        (Some(t), Some(ratio)) => format!(" (target {:.0}%: {ratio:.2} of it)", 100.0 * t),
        _ if r.device.is_some() => " (no target for this mode)".to_string(),
        _ => String::new(),
    };
    say!(
        "mlp {:?} (batch {}) on {what}: {} ensembles × {} chains × {} iterations {timed}: {:.3e} chain-steps/s, {:.3e} examples/s, {:.1} GFLOP/s = {:.0}% of {yardstick} {:.1} GFLOP/s{target}",
        r.layers,
        r.batch,
        r.ensembles,
        r.chains,
        r.iterations,
        r.chain_steps_per_sec,
        r.examples_per_sec,
        r.gflops,
        100.0 * r.efficiency,
        r.machine_gflops
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_tiles_keep_small_products_whole_and_split_large_ones() {
        assert_eq!(machine_tile(2048, 2), 2048);
        assert_eq!(machine_tile(2048, 1), 1024);
        assert_eq!(machine_tile(4096, 1), 1024);
        assert_eq!(machine_tile(16384, 2), 768);
        assert_eq!(machine_tile(16, 1), 16);
        for (n, threads) in [(3000, 1), (16384, 2), (16384, 64), (100_000, 4)] {
            let t = machine_tile(n, threads);
            assert!(t.is_multiple_of(64) && t <= n, "{n} on {threads}: {t}");
            // Within the work of a tile, give or take the rounding to 64.
            let work = 2.0 * (t as f64).powi(2) * n as f64;
            assert!(
                work <= 1.7 * MACHINE_TILE_FLOPS * threads as f64,
                "{n} on {threads}: {t}"
            );
        }
    }

    /// The tiles compute every entry of c over the whole of k, as one product does:
    /// against a plain triple loop in f64 (the sums of small multiples of 1/8 are exact
    /// in f32 up to 2^24, so both are exact), with tiles that do not divide n.
    #[test]
    fn a_tiled_product_is_the_product() {
        let n = 150;
        let a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 * 0.125).collect();
        let b: Vec<f32> = (0..n * n).map(|i| (i % 5) as f32 * 0.25).collect();
        let mut want = vec![0.0f32; n * n];
        for i in 0..n {
            for j in 0..n {
                let s: f64 = (0..n)
                    .map(|k| f64::from(a[i * n + k]) * f64::from(b[k * n + j]))
                    .sum();
                want[i * n + j] = s as f32;
            }
        }
        for tile in [n, 64, 37] {
            let mut c = vec![f32::NAN; n * n];
            tiled_product(&mut c, &a, &b, n, tile, 1).unwrap();
            assert!(c == want, "tile {tile}");
        }
    }
}
