//! `nrpt bench`: chain-steps per second of the engines.

use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use crate::cli::BenchArgs;
use crate::config::RunConfig;
use crate::config::TargetName;
use crate::engine::{Backend, EngineError, Record};

/// The answer of `nrpt bench`.
#[derive(Debug, Serialize)]
pub struct BenchReport {
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
        ..match args.model {
            crate::cli::BenchModel::SumModes => RunConfig {
                dim: args.dim as usize,
                ..RunConfig::defaults_for(TargetName::of(&crate::targets::sum_modes::SUM_MODES))
            },
            _ => RunConfig::default(),
        }
    };
    let job = config.job(Record::NOTHING)?;
    // A short warm-up run (page faults, thread pool start).
    let warm = crate::engine::Job {
        iterations: job.iterations.min(50),
        ..job.clone()
    };
    backend.run(&warm, &crate::interrupt::flow)?;
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
    };
    if json {
        say!("{}", serde_json::to_string(&report)?)?;
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

/// The answer of `nrpt bench --model bernoulli`.
#[derive(Debug, Serialize)]
pub struct BernoulliReport {
    /// E as run: the simulator runs whole groups of 32 ensembles, so E is rounded up.
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
}

/// Pair-updates per second of the Bernoulli index-process simulator (all cores).
pub fn bernoulli(args: &BenchArgs, json: bool) -> Result<()> {
    use crate::config::{ConfigError, MAX_CHAINS, MAX_VALUES};
    use crate::engine::cpu::Simd;
    use crate::scale::simulator::{Group, LANES};
    use rayon::prelude::*;
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
    let window = crate::scale::window_of(&args.window.to_string(), chains, 0.4)?;
    let rates = vec![0.4; chains - 1];
    let groups = ensembles.div_ceil(LANES);
    let mut sims: Vec<Group<LANES>> = (0..groups)
        .map(|g| Group::new(&rates, window, 1, (g * LANES) as u32))
        .collect();
    sims.par_iter_mut()
        .for_each(|g| g.run(iterations.min(100), Simd::Auto));
    let started = Instant::now();
    sims.par_iter_mut()
        .for_each(|g| g.run(iterations, Simd::Auto));
    let seconds = started.elapsed().as_secs_f64();
    let updates = (groups * LANES) as f64 * (chains - 1) as f64 * iterations as f64;
    let r = BernoulliReport {
        ensembles: groups * LANES,
        chains,
        iterations,
        window,
        seconds,
        pair_updates_per_sec: updates / seconds,
    };
    if json {
        say!("{}", serde_json::to_string(&r)?)?;
    } else {
        say!(
            "bernoulli: {} ensembles × {} pairs × {} iterations in {:.3} s: {:.3e} pair-updates/s",
            r.ensembles,
            r.chains - 1,
            r.iterations,
            seconds,
            r.pair_updates_per_sec
        )?;
    }
    Ok(())
}

/// The answer of `nrpt bench --model mlp`.
#[derive(Debug, Serialize)]
pub struct MlpReport {
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
    /// GPU only: the kernels' floating-point contract, `exact` (no FMA: nrpt-core's
    /// bits) or `fma`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub math: Option<&'static str>,
    /// GPU only: the theoretical FP32 peak (SMs × clock × FP32 lanes × 2); NaN where the
    /// architecture's lanes are not known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theoretical_gflops: Option<f64>,
    /// GPU only: the same bench with FMA contraction (`math` = `fma`), which is faster
    /// and no longer nrpt-core's bits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fma: Option<Box<MlpReport>>,
}

pub use crate::config::parse_hidden;

/// The large-matrix rate of the matrix library on every thread of the pool: the best
/// of five n³ f32 products (n ≥ 16).
pub fn machine_gflops(n: usize) -> f64 {
    use crate::engine::matmul::{Operand, product};
    let n = n.max(16);
    let a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 * 0.125).collect();
    let b: Vec<f32> = (0..n * n).map(|i| (i % 5) as f32 * 0.25).collect();
    let mut c = vec![0.0f32; n * n];
    let threads = rayon::current_num_threads();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        product(
            &mut c,
            n,
            Operand::new(&a, n, n),
            Operand::new(&b, n, n),
            false,
            threads,
        );
        best = best.min(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(&c);
    2.0 * (n as f64).powi(3) / best / 1e9
}

/// Chain-steps, examples and GFLOP/s on the MLP data target, on the engine of
/// `--backend`: the CPU engine beside the machine's large-matrix rate, or the CUDA
/// engine (`cuda`, or `auto` where a GPU opens) beside the device's FP32 peak measured in
/// the same run, in both of its floating-point contracts.
pub fn mlp(
    args: &BenchArgs,
    cpu: &crate::engine::cpu::CpuBackend,
    json: bool,
    quiet: bool,
) -> Result<()> {
    use crate::cli::BackendKind;
    use crate::deep::{Model, Rates};
    use crate::engine::cuda::CudaBackend;
    let (ensembles, chains, iters) = args.sizes();
    let model = Model::new(
        std::sync::Arc::new(crate::data::digits()),
        &parse_hidden(&args.hidden)?,
        args.batch,
        1.0,
    )?;
    let rates = Rates::default();
    let window = args.window.scheme(chains, rates.swap_rate)?;
    let job = model.tempering_job(&crate::deep::Sampling {
        chains,
        seeds: ensembles,
        iterations: iters,
        scheme: window,
        rates,
        ..crate::deep::Sampling::default()
    })?;
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
    let report = match gpu {
        None => {
            let machine = machine_gflops(args.machine_size as usize);
            let mut r = time_mlp(cpu, &model, &job, quiet)?;
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
            let run = |math: nrpt_cuda::MathMode, name: &'static str| -> Result<MlpReport> {
                let b = g.clone().with_math(math);
                let mut r = time_mlp(&b, &model, &job, quiet)?;
                r.machine_gflops = measured;
                r.efficiency = r.gflops / measured;
                r.math = Some(name);
                r.theoretical_gflops = Some(theoretical);
                Ok(r)
            };
            let mut exact = run(nrpt_cuda::MathMode::Exact, "exact")?;
            exact.fma = Some(Box::new(run(nrpt_cuda::MathMode::Fma, "fma")?));
            exact
        }
    };
    if json {
        say!("{}", serde_json::to_string(&report)?)?;
        return Ok(());
    }
    print_mlp(&report)?;
    if let Some(f) = &report.fma {
        print_mlp(f)?;
    }
    Ok(())
}

/// One timed run of `job` on `backend` after an untimed warm-up of min(10, N)
/// iterations; the yardstick fields are left to the caller.
fn time_mlp(
    backend: &dyn Backend,
    model: &crate::deep::Model,
    job: &crate::engine::Job,
    quiet: bool,
) -> Result<MlpReport> {
    let warm = crate::engine::Job {
        iterations: job.iterations.min(10),
        ..job.clone()
    };
    backend.run(&warm, &crate::interrupt::flow)?;
    let started = Instant::now();
    super::run_job(backend, job, "bench mlp", quiet)?;
    let seconds = started.elapsed().as_secs_f64();
    let steps = (job.chains * job.ensembles) as f64 * job.iterations as f64;
    let target = model.target();
    let flops = target.flops_per_chain_step();
    let gflops = steps * flops / seconds / 1e9;
    Ok(MlpReport {
        backend: backend.name(),
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
        math: None,
        theoretical_gflops: None,
        fma: None,
    })
}

fn print_mlp(r: &MlpReport) -> Result<(), crate::console::StdoutError> {
    let (what, yardstick) = match r.math {
        None => (r.backend.clone(), "the machine's".to_string()),
        Some(m) => (
            format!("{} ({m} math)", r.backend),
            format!(
                "the device's measured FP32 peak (theoretical {:.0} GFLOP/s),",
                r.theoretical_gflops.unwrap_or(f64::NAN)
            ),
        ),
    };
    say!(
        "mlp {:?} (batch {}) on {what}: {} ensembles × {} chains × {} iterations in {:.2} s: {:.3e} chain-steps/s, {:.3e} examples/s, {:.1} GFLOP/s = {:.0}% of {yardstick} {:.1} GFLOP/s",
        r.layers,
        r.batch,
        r.ensembles,
        r.chains,
        r.iterations,
        r.seconds,
        r.chain_steps_per_sec,
        r.examples_per_sec,
        r.gflops,
        100.0 * r.efficiency,
        r.machine_gflops
    )
}
