//! GPU throughput bench, with the device's own limits measured in the same run.
//!
//! - chain-steps per second for E·P from 4,096 to 4,194,304 chains (2D persistent
//!   kernel in every mode of `nrpt_cuda::timing::BENCH_MODES`, 2D step + swap kernels
//!   exact), each mode against its own target (2·10¹⁰ exact, 6·10¹⁰ fast);
//! - the D = 1024 step (f32 in every mode; bf16, f16 storage exact) as a share of the
//!   measured device-to-device copy bandwidth (`cudaMemcpy`, bytes read + written) and
//!   against the compute limit it is bound by: the FP32 issue rate measured by the
//!   FMA micro-kernel, as issue slots per coordinate-step, and as a share of it where
//!   the SASS instructions per coordinate are given (`--sass-per-coordinate`);
//! - the FP32 peak: an FMA-bound micro-kernel beside SMs × clock × lanes × 2 (the
//!   yardstick of the MLP figures).
//!
//! Every figure is timed by CUDA events around the iterations alone (set-up, uploads,
//! snapshots and downloads outside), after a warm-up, the median of
//! `nrpt_cuda::timing::MIN_REPETITIONS` repetitions of at least
//! `nrpt_cuda::timing::MIN_ITERATIONS` iterations; each row also gives its set-up
//! seconds and the end-to-end seconds of a repetition (iterations, then the snapshot
//! and the states downloaded) apart. A headline is the best size of one mode, never
//! the best over modes.
//!
//! Writes `gpu_bench.json` to `--out DIR` (default `$OUT`, else the current folder) and
//! prints a table last.
//!
//! Usage:
//!   gpu_bench [--out DIR] [--quick] [--sass-per-coordinate MODE=N,…]
//!                                       the bench (`--quick`: fewer sizes; N: SASS
//!                                       instructions per coordinate of the D = 1024
//!                                       f32 step in mode MODE, e.g. exact=175)
//!   gpu_bench --tiny                    every kernel path on a tiny case, checked for
//!                                       finite results (what compute-sanitizer runs)
//!   gpu_bench --emit-ptx DIR [--arch A] compiles every program with NVRTC (no GPU
//!                                       needed) into DIR for NRPT_CUDA_PTX_DIR (A:
//!                                       compute_90 by default)
//!
//! Kept whole past 600 lines: one program (the GPU check builds and runs it as one
//! executable), with its tests at the end.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use nrpt_core::TemperingOptions;
use nrpt_core::explore::Explorer;
use nrpt_cuda::limits;
use nrpt_cuda::ptx_cache;
use nrpt_cuda::timing::{
    BENCH_MODES, MIN_ITERATIONS, MIN_REPETITIONS, Repetitions, target_2d_chain_steps,
};
use nrpt_cuda::{
    CudaError, EnsembleConfig, ExecutionPath, Gpu, GpuEnsembles, GpuTarget, MathMode, Precision,
};

const USAGE: &str = "usage: gpu_bench [--out DIR] [--quick] [--sass-per-coordinate MODE=N,…] | \
     --tiny | --emit-ptx DIR [--arch compute_XY]";

/// One measured configuration.
struct Row {
    /// What ran (without the mode).
    kind: String,
    /// The math mode's name.
    math: String,
    /// E·P.
    chains: u64,
    /// D.
    dim: usize,
    /// Iterations of each timed repetition.
    iterations: u64,
    /// Seconds of the set-up (allocation, initial states, module loading) and warm-up.
    setup_seconds: f64,
    /// Every repetition's device and end-to-end seconds.
    reps: Repetitions,
    /// Median device seconds of a repetition.
    seconds: f64,
    /// Chain-steps per second on the device (median).
    rate: f64,
    /// Chain-steps per second end to end (median).
    end_to_end_rate: f64,
    /// State bytes read + written per second on the device (D-dimensional rows), else 0.
    bytes_per_s: f64,
}

/// The device's limits measured in this run.
struct Limits {
    copy_gbs: f64,
    copy_kernel_gbs: Option<f64>,
    fp32_measured: Option<f64>,
    fp32_theoretical: Option<f64>,
    fp32_note: String,
}

/// What the command line asks for.
enum Mode {
    Bench {
        out: PathBuf,
        quick: bool,
        sass: BTreeMap<String, f64>,
    },
    Tiny,
    EmitPtx {
        dir: PathBuf,
        arch: String,
    },
}

fn main() {
    let mode = match parse(std::env::args().skip(1).collect()) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("Error: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let result = match mode {
        Mode::Bench { out, quick, sass } => bench(&out, quick, &sass),
        Mode::Tiny => tiny(),
        Mode::EmitPtx { dir, arch } => emit(&dir, &arch),
    };
    if let Err(e) = result {
        eprintln!("Error: {e}");
        std::process::exit(1);
    }
}

fn parse(args: Vec<String>) -> Result<Mode, String> {
    let mut out = None;
    let mut quick = false;
    let mut tiny = false;
    let mut emit = None;
    let mut arch = None;
    let mut sass = BTreeMap::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--quick" => quick = true,
            "--tiny" => tiny = true,
            "--emit-ptx" => emit = Some(PathBuf::from(value("--emit-ptx")?)),
            "--arch" => arch = Some(value("--arch")?),
            "--sass-per-coordinate" => sass = parse_sass(&value("--sass-per-coordinate")?)?,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    match (emit, tiny) {
        (Some(_), true) => Err("--emit-ptx and --tiny exclude each other".to_string()),
        (Some(dir), false) => {
            let arch = arch.unwrap_or_else(|| "compute_90".to_string());
            if !arch.starts_with("compute_") {
                return Err(format!(
                    "--arch {arch}: a virtual architecture such as compute_90"
                ));
            }
            Ok(Mode::EmitPtx { dir, arch })
        }
        (None, _) if arch.is_some() => Err("--arch goes with --emit-ptx".to_string()),
        (None, true) => Ok(Mode::Tiny),
        (None, false) => Ok(Mode::Bench {
            out: out
                .or_else(|| std::env::var_os("OUT").map(PathBuf::from))
                .unwrap_or_else(|| PathBuf::from(".")),
            quick,
            sass,
        }),
    }
}

/// `exact=175,fast=140`: SASS instructions per coordinate of the D = 1024 f32 step by
/// mode name (a name of `BENCH_MODES`, a positive count).
fn parse_sass(text: &str) -> Result<BTreeMap<String, f64>, String> {
    let names: Vec<String> = BENCH_MODES.iter().map(|m| m.name().to_string()).collect();
    let mut out = BTreeMap::new();
    for item in text.split(',').filter(|s| !s.is_empty()) {
        let (name, n) = item
            .split_once('=')
            .ok_or(format!("--sass-per-coordinate: `{item}` is not MODE=N"))?;
        if !names.iter().any(|m| m == name) {
            return Err(format!(
                "--sass-per-coordinate: no mode `{name}` (modes: {})",
                names.join(", ")
            ));
        }
        let n: f64 = n
            .parse()
            .ok()
            .filter(|n: &f64| n.is_finite() && *n > 0.0)
            .ok_or(format!(
                "--sass-per-coordinate: `{n}` is not a positive count"
            ))?;
        out.insert(name.to_string(), n);
    }
    Ok(out)
}

/// `--emit-ptx`: every program compiled by NVRTC, written with its manifest.
fn emit(dir: &std::path::Path, arch: &str) -> Result<(), CudaError> {
    let t = Instant::now();
    let files = nrpt_cuda::bundle::emit_all(dir, arch)?;
    println!(
        "{} for {arch}, {:.1} s:",
        ptx_cache::kernel_origin(),
        t.elapsed().as_secs_f64()
    );
    for f in &files {
        let bytes = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        println!("  {} ({bytes} bytes)", f.display());
    }
    Ok(())
}

fn open() -> Result<Arc<Gpu>, CudaError> {
    let gpu = Arc::new(Gpu::open(0)?);
    let info = gpu.info();
    let driver = limits::driver_cuda_version()
        .map(|(a, b)| format!("CUDA {a}.{b}"))
        .unwrap_or_else(|e| format!("unknown ({e})"));
    println!(
        "device: {} (cc {}.{}, {} SMs, {} MiB), driver {driver}, kernels: {}",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        info.multiprocessors,
        info.memory_bytes >> 20,
        ptx_cache::kernel_origin()
    );
    Ok(gpu)
}

/// `--tiny`: each kernel path once on a tiny case; an error unless every state and
/// energy is finite. Small enough for compute-sanitizer's memcheck and racecheck.
fn tiny() -> Result<(), CudaError> {
    let gpu = open()?;
    let paper = TemperingOptions::default();
    let wide = TemperingOptions {
        ladder_min: 0.001,
        ladder_max: 0.05,
        ..paper
    };
    let momentum = TemperingOptions {
        explorer: Explorer::MSGD,
        ..paper
    };
    let cases: Vec<(&str, EnsembleConfig, u64)> = vec![
        (
            "2d persistent",
            EnsembleConfig {
                path: ExecutionPath::Persistent,
                ..EnsembleConfig::new(paper, GpuTarget::Modes2d, 4, 8)
            },
            20,
        ),
        (
            "2d persistent fma msgd",
            EnsembleConfig {
                path: ExecutionPath::Persistent,
                math: MathMode::Fma,
                ..EnsembleConfig::new(momentum, GpuTarget::Modes2d, 4, 8)
            },
            20,
        ),
        (
            "2d step+swap",
            EnsembleConfig {
                path: ExecutionPath::StepSwap,
                ..EnsembleConfig::new(paper, GpuTarget::Modes2d, 4, 8)
            },
            20,
        ),
        (
            "D=7 step (one thread per chain)",
            EnsembleConfig::new(wide, GpuTarget::SumModes { dim: 7 }, 3, 4),
            10,
        ),
        (
            "D=1024 step f32 (block per chain)",
            EnsembleConfig::new(wide, GpuTarget::SumModes { dim: 1024 }, 2, 4),
            3,
        ),
        (
            "D=1024 step bf16",
            EnsembleConfig {
                precision: Precision::Bf16,
                ..EnsembleConfig::new(wide, GpuTarget::SumModes { dim: 1024 }, 2, 4)
            },
            3,
        ),
        (
            "D=1024 step f16",
            EnsembleConfig {
                precision: Precision::F16,
                ..EnsembleConfig::new(wide, GpuTarget::SumModes { dim: 1024 }, 2, 4)
            },
            3,
        ),
    ];
    for (name, config, iters) in cases {
        let mut run = GpuEnsembles::new(&gpu, &config)?;
        run.advance(iters)?;
        let states = run.states()?;
        let snap = run.snapshot()?;
        let finite = states.iter().all(|x| x.is_finite())
            && snap
                .ensembles
                .iter()
                .all(|e| e.energies.iter().all(|v| v.is_finite()));
        if !finite {
            return Err(CudaError::Unsupported(format!(
                "tiny case {name}: non-finite states or energies after {iters} iterations"
            )));
        }
        println!(
            "tiny: {name:<34} E = {}, P = {}, {iters} iterations: ok (persistent kernel: {})",
            config.ensembles,
            config.chains,
            run.uses_persistent_kernel()
        );
    }
    gpu.synchronize()?;
    println!("tiny: every case ok");
    Ok(())
}

fn measure_limits(gpu: &Gpu) -> Result<Limits, CudaError> {
    let copy_gbs = limits::copy_bandwidth_gbs(gpu)?;
    println!("device-to-device cudaMemcpy: {copy_gbs:.1} GB/s (read + write)");
    let copy_kernel_gbs = match limits::copy_kernel_bandwidth_gbs(gpu) {
        Ok(v) => {
            println!("device-to-device copy kernel: {v:.1} GB/s (read + write)");
            Some(v)
        }
        Err(e) => {
            println!("copy kernel: not measured: {e}");
            None
        }
    };
    let theoretical = limits::fp32_theoretical_gflops(gpu);
    let measured = limits::fp32_measured_gflops(gpu);
    let fp32_note = match (&measured, &theoretical) {
        (Ok(m), Ok(t)) => format!(
            "FMA micro-kernel {m:.0} GFLOP/s = {:.0}% of SMs × clock × lanes × 2 = {t:.0} GFLOP/s",
            100.0 * m / t
        ),
        (Ok(m), Err(e)) => format!("FMA micro-kernel {m:.0} GFLOP/s; no theoretical peak: {e}"),
        (Err(e), Ok(t)) => format!(
            "not measured ({e}); computed from attributes: SMs × clock × lanes × 2 = {t:.0} GFLOP/s"
        ),
        (Err(e), Err(f)) => format!("not measured ({e}); not computed ({f})"),
    };
    println!("FP32 peak: {fp32_note}");
    Ok(Limits {
        copy_gbs,
        copy_kernel_gbs,
        fp32_measured: measured.ok(),
        fp32_theoretical: theoretical.ok(),
        fp32_note,
    })
}

/// One row: the run set up and warmed up (`warm` iterations, untimed), then
/// [`MIN_REPETITIONS`] repetitions of `iterations` iterations, each timed on the device
/// (CUDA events around the iterations) and end to end (the iterations, the snapshot
/// and the states downloaded, by the wall clock).
fn measure(
    gpu: &Arc<Gpu>,
    kind: &str,
    config: &EnsembleConfig,
    iterations: u64,
    warm: u64,
) -> Result<Row, CudaError> {
    let iterations = iterations.max(MIN_ITERATIONS);
    let t = Instant::now();
    let mut run = GpuEnsembles::new(gpu, config)?;
    run.advance(warm)?;
    let setup_seconds = t.elapsed().as_secs_f64();
    let mut reps = Repetitions::default();
    for _ in 0..MIN_REPETITIONS {
        let t = Instant::now();
        let device = run.advance_timed(iterations)?;
        std::hint::black_box(run.snapshot()?);
        std::hint::black_box(run.states()?);
        reps.push(device, t.elapsed().as_secs_f64());
    }
    let (Some(seconds), Some(end_to_end)) = (reps.device_seconds(), reps.end_to_end_seconds())
    else {
        return Err(CudaError::Unsupported(format!(
            "{kind}: the event timers gave no usable time ({:?})",
            reps.device
        )));
    };
    let chains = (config.ensembles * config.chains) as u64;
    let dim = config.target.dim();
    let rate = chains as f64 * iterations as f64 / seconds;
    // A D-dimensional step reads and writes each chain's D coordinates once.
    let bytes_per_s = if dim > 2 {
        2.0 * (dim * config.precision.bytes()) as f64 * rate
    } else {
        0.0
    };
    Ok(Row {
        kind: kind.to_string(),
        math: config.math.name().to_string(),
        chains,
        dim,
        iterations,
        setup_seconds,
        reps,
        seconds,
        rate,
        end_to_end_rate: chains as f64 * iterations as f64 / end_to_end,
        bytes_per_s,
    })
}

fn bench(
    out_dir: &std::path::Path,
    quick: bool,
    sass: &BTreeMap<String, f64>,
) -> Result<(), CudaError> {
    let gpu = open()?;
    let info = gpu.info().clone();
    let lim = measure_limits(&gpu)?;
    let copy_bps = lim.copy_gbs * 1e9;

    let mut rows = Vec::new();
    let sizes: &[u64] = if quick {
        &[4096, 262_144, 4_194_304]
    } else {
        &[4096, 16_384, 65_536, 262_144, 1_048_576, 4_194_304]
    };
    let p = 16usize;
    let options = TemperingOptions::default();
    let mut kinds: Vec<(&str, ExecutionPath, MathMode)> = BENCH_MODES
        .iter()
        .map(|&m| ("2d persistent", ExecutionPath::Persistent, m))
        .collect();
    kinds.push(("2d step+swap", ExecutionPath::StepSwap, MathMode::Exact));
    for (kind, path, math) in kinds {
        for &chains in sizes {
            let e = (chains as usize) / p;
            let config = EnsembleConfig {
                path,
                math,
                ..EnsembleConfig::new(options, GpuTarget::Modes2d, e, p)
            };
            // About 4·10⁹ chain-steps per repetition for the persistent kernel, 4·10⁸
            // for the step + swap kernels (one launch pair per iteration).
            let budget = if path == ExecutionPath::Persistent {
                4e9
            } else {
                4e8
            };
            let iters = ((budget / chains as f64) as u64).clamp(MIN_ITERATIONS, 16_384);
            let r = measure(&gpu, kind, &config, iters, iters.min(256))?;
            println!(
                "{kind:<16} {:<6} E·P = {chains:>9}: {:.3e} chain-steps/s on the device \
                 (median of {}), {:.3e} end to end",
                r.math,
                r.rate,
                r.reps.device.len(),
                r.end_to_end_rate
            );
            rows.push(r);
        }
    }

    let d = 1024usize;
    let p = 8usize;
    let wide = TemperingOptions {
        ladder_min: 0.001,
        ladder_max: 0.05,
        ..TemperingOptions::default()
    };
    let d_sizes: &[u64] = if quick {
        &[65_536]
    } else {
        &[16_384, 65_536, 131_072]
    };
    let mut d_kinds: Vec<(Precision, MathMode)> =
        BENCH_MODES.iter().map(|&m| (Precision::F32, m)).collect();
    d_kinds.push((Precision::Bf16, MathMode::Exact));
    d_kinds.push((Precision::F16, MathMode::Exact));
    for (precision, math) in d_kinds {
        for &chains in d_sizes {
            let e = chains as usize / p;
            let config = EnsembleConfig {
                precision,
                math,
                ..EnsembleConfig::new(wide, GpuTarget::SumModes { dim: d }, e, p)
            };
            let kind = format!("D=1024 step {precision:?}");
            let r = measure(&gpu, &kind, &config, MIN_ITERATIONS, 5)?;
            println!(
                "{kind:<16} {:<6} E·P = {chains:>9}: {:.3e} chain-steps/s on the device, \
                 {:.1} GB/s ({:.0}% of copy)",
                r.math,
                r.rate,
                r.bytes_per_s / 1e9,
                100.0 * r.bytes_per_s / copy_bps
            );
            rows.push(r);
        }
    }

    let targets = targets(&rows, &lim, sass);
    let json = to_json(&info, quick, &lim, &rows, &targets);
    let path = out_dir.join("gpu_bench.json");
    if let Err(e) = std::fs::create_dir_all(out_dir).and_then(|_| std::fs::write(&path, json)) {
        eprintln!("could not write {}: {e}", path.display());
    } else {
        println!("wrote {}", path.display());
    }

    println!();
    println!(
        "{:<16} {:<6} {:>9} {:>5} {:>6} {:>13} {:>13} {:>8} {:>8}",
        "kernel", "math", "E·P", "D", "iters", "device c-s/s", "e2e c-s/s", "setup s", "% copy"
    );
    for r in &rows {
        let pct = if r.bytes_per_s > 0.0 {
            format!("{:.0}%", 100.0 * r.bytes_per_s / copy_bps)
        } else {
            "-".to_string()
        };
        println!(
            "{:<16} {:<6} {:>9} {:>5} {:>6} {:>13.3e} {:>13.3e} {:>8.2} {:>8}",
            r.kind,
            r.math,
            r.chains,
            r.dim,
            r.iterations,
            r.rate,
            r.end_to_end_rate,
            r.setup_seconds,
            pct
        );
    }
    println!();
    println!(
        "{:<50} {:>12} {:>10} {:>8} {:>5}",
        "figure", "value", "target", "ratio", "met"
    );
    for t in &targets {
        println!(
            "{:<50} {:>12} {:>10} {:>8} {:>5}",
            t.what,
            fmt_value(t.value, t.percent),
            t.target
                .map_or("-".to_string(), |v| fmt_value(Some(v), t.percent)),
            t.ratio().map_or("-".to_string(), |r| format!("{r:.2}")),
            t.met().map_or("-", |m| if m { "yes" } else { "NO" }),
        );
    }
    Ok(())
}

/// One headline figure, its reference and its target.
struct Figure {
    /// Key in the JSON.
    name: String,
    /// The math mode's name, where the figure is one mode's.
    math: Option<String>,
    /// In words.
    what: String,
    /// The figure (None: not measured).
    value: Option<f64>,
    /// The target, where there is one.
    target: Option<f64>,
    /// Shown as a percentage.
    percent: bool,
    /// How it was obtained.
    note: String,
}

impl Figure {
    fn ratio(&self) -> Option<f64> {
        Some(self.value? / self.target?)
    }
    fn met(&self) -> Option<bool> {
        Some(self.value? >= self.target?)
    }
}

fn fmt_value(v: Option<f64>, percent: bool) -> String {
    match v {
        None => "n/a".to_string(),
        Some(v) if percent => format!("{:.1}%", 100.0 * v),
        Some(v) => format!("{v:.3e}"),
    }
}

/// The fastest row (by device time) of those `pred` takes: the best size of one kind
/// and mode.
fn best(rows: &[Row], pred: impl Fn(&Row) -> bool) -> Option<&Row> {
    rows.iter()
        .filter(|r| pred(r))
        .max_by(|a, b| a.rate.total_cmp(&b.rate))
}

/// Thread-instructions per second the SMs can issue, from the FMA micro-kernel: one
/// FMA (2 flops) per FP32 lane and clock is the SM's full issue rate (4 warp
/// instructions per clock on sm_80 and later), so GFLOP/s / 2 is the issue limit.
fn issue_limit(lim: &Limits) -> Option<f64> {
    lim.fp32_measured.map(|g| g * 1e9 / 2.0)
}

/// The headline figures, each of one mode against that mode's target.
fn targets(rows: &[Row], lim: &Limits, sass: &BTreeMap<String, f64>) -> Vec<Figure> {
    let mut out = Vec::new();
    for mode in BENCH_MODES {
        let m = mode.name().to_string();
        let persistent = best(rows, |r| r.kind == "2d persistent" && r.math == m);
        out.push(Figure {
            name: format!("persistent_2d_{m}_chain_steps_per_s"),
            math: Some(m.clone()),
            what: format!("2D persistent kernel, {m}, chain-steps/s"),
            value: persistent.map(|r| r.rate),
            target: Some(target_2d_chain_steps(mode)),
            percent: false,
            note: persistent.map_or("no row".to_string(), |r| {
                format!(
                    "best size of this mode: E·P = {}, median device time of {} × {} \
                     iterations {:.4} s (CUDA events); end to end {:.3e} chain-steps/s",
                    r.chains,
                    r.reps.device.len(),
                    r.iterations,
                    r.seconds,
                    r.end_to_end_rate
                )
            }),
        });
    }
    for mode in BENCH_MODES {
        let m = mode.name().to_string();
        let wide = best(rows, |r| r.kind == "D=1024 step F32" && r.math == m);
        out.push(Figure {
            name: format!("d1024_f32_{m}_share_of_copy_bandwidth"),
            math: Some(m.clone()),
            what: format!("D=1024 f32 step, {m} / cudaMemcpy D2D bandwidth"),
            value: wide.map(|r| r.bytes_per_s / (lim.copy_gbs * 1e9)),
            target: None,
            percent: true,
            note: wide.map_or("no row".to_string(), |r| {
                format!(
                    "best size E·P = {}: {:.1} GB/s of state read + written against {:.1} \
                     GB/s; no target: the step is compute-bound (issue 23), see the issue \
                     limit figures",
                    r.chains,
                    r.bytes_per_s / 1e9,
                    lim.copy_gbs
                )
            }),
        });
        // The compute limit: issue slots per coordinate-step at the measured rate.
        let budget = match (wide, issue_limit(lim)) {
            (Some(r), Some(issue)) => Some(issue / (r.rate * r.dim as f64)),
            _ => None,
        };
        out.push(Figure {
            name: format!("d1024_f32_{m}_issue_slots_per_coordinate"),
            math: Some(m.clone()),
            what: format!("D=1024 f32 step, {m}: issue slots per coord"),
            value: budget,
            target: None,
            percent: false,
            note: match budget {
                Some(_) => "thread-instructions the SMs could issue per coordinate-step at \
                            the measured rate (FP32 FMA issue rate / coordinate-steps per \
                            second): a SASS count per coordinate over it is the share of \
                            the compute limit reached"
                    .to_string(),
                None => "not measured (no D=1024 row or no FP32 measurement)".to_string(),
            },
        });
        let count = sass.get(&m).copied();
        out.push(Figure {
            name: format!("d1024_f32_{m}_share_of_issue_limit"),
            math: Some(m.clone()),
            what: format!("D=1024 f32 step, {m} / compute (issue) limit"),
            value: match (count, budget) {
                (Some(n), Some(b)) => Some(n / b),
                _ => None,
            },
            target: None,
            percent: true,
            note: match count {
                Some(n) => format!("{n} SASS instructions per coordinate (given)"),
                None => "needs the SASS instructions per coordinate of this mode: \
                         gpu_bench --sass-per-coordinate MODE=N"
                    .to_string(),
            },
        });
    }
    out.push(Figure {
        name: "fp32_measured_share_of_theoretical".to_string(),
        math: None,
        what: "FP32 FMA micro-kernel / theoretical peak".to_string(),
        value: match (lim.fp32_measured, lim.fp32_theoretical) {
            (Some(m), Some(t)) => Some(m / t),
            _ => None,
        },
        target: None,
        percent: true,
        note: lim.fp32_note.clone(),
    });
    out
}

/// A JSON string literal.
fn js(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A JSON number, `null` where not finite or absent.
fn jn(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.6e}"),
        _ => "null".to_string(),
    }
}

fn to_json(
    info: &nrpt_cuda::DeviceInfo,
    quick: bool,
    lim: &Limits,
    rows: &[Row],
    figures: &[Figure],
) -> String {
    let driver = limits::driver_cuda_version()
        .map(|(a, b)| js(&format!("{a}.{b}")))
        .unwrap_or_else(|_| "null".to_string());
    let mut s = String::from("{\n");
    s += &format!("  \"device\": {},\n", js(&info.name));
    s += &format!(
        "  \"compute_capability\": [{}, {}],\n",
        info.compute_capability.0, info.compute_capability.1
    );
    s += &format!("  \"multiprocessors\": {},\n", info.multiprocessors);
    s += &format!("  \"memory_bytes\": {},\n", info.memory_bytes);
    s += &format!("  \"driver_cuda_version\": {driver},\n");
    s += &format!("  \"kernels\": {},\n", js(&ptx_cache::kernel_origin()));
    s += &format!("  \"quick\": {quick},\n");
    s += "  \"limits\": {\n";
    s += &format!("    \"copy_memcpy_d2d_gbs\": {},\n", jn(Some(lim.copy_gbs)));
    s += &format!("    \"copy_kernel_gbs\": {},\n", jn(lim.copy_kernel_gbs));
    s += &format!("    \"fp32_measured_gflops\": {},\n", jn(lim.fp32_measured));
    s += &format!(
        "    \"fp32_theoretical_gflops\": {},\n",
        jn(lim.fp32_theoretical)
    );
    s += &format!("    \"fp32_note\": {},\n", js(&lim.fp32_note));
    s += "    \"bandwidth_counts\": \"bytes read + bytes written, 1e9 bytes per GB\"\n";
    s += "  },\n";
    s += &format!(
        "  \"timing\": {},\n",
        js(&format!(
            "CUDA events around the iterations alone, median of {MIN_REPETITIONS} repetitions \
             of at least {MIN_ITERATIONS} iterations after a warm-up; end to end: the \
             repetition's iterations, snapshot and states download by the wall clock; set-up \
             apart"
        ))
    );
    s += "  \"rows\": [\n";
    for (i, r) in rows.iter().enumerate() {
        let share = (r.bytes_per_s > 0.0).then(|| r.bytes_per_s / (lim.copy_gbs * 1e9));
        let list = |v: &[f64]| {
            v.iter()
                .map(|x| jn(Some(*x)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        s += &format!(
            "    {{\"kernel\": {}, \"math\": {}, \"chains\": {}, \"dim\": {}, \"iterations\": {}, \"repetitions\": {}, \"seconds\": {}, \"device_seconds\": {}, \"end_to_end_seconds\": {}, \"setup_seconds\": {}, \"device_seconds_each\": [{}], \"end_to_end_seconds_each\": [{}], \"chain_steps_per_s\": {}, \"end_to_end_chain_steps_per_s\": {}, \"state_gbs\": {}, \"share_of_copy_bandwidth\": {}}}{}\n",
            js(&r.kind),
            js(&r.math),
            r.chains,
            r.dim,
            r.iterations,
            r.reps.device.len(),
            jn(Some(r.seconds)),
            jn(Some(r.seconds)),
            jn(r.reps.end_to_end_seconds()),
            jn(Some(r.setup_seconds)),
            list(&r.reps.device),
            list(&r.reps.end_to_end),
            jn(Some(r.rate)),
            jn(Some(r.end_to_end_rate)),
            jn((r.bytes_per_s > 0.0).then_some(r.bytes_per_s / 1e9)),
            jn(share),
            if i + 1 < rows.len() { "," } else { "" }
        );
    }
    s += "  ],\n";
    s += "  \"figures\": [\n";
    for (i, f) in figures.iter().enumerate() {
        s += &format!(
            "    {{\"name\": {}, \"math\": {}, \"what\": {}, \"value\": {}, \"target\": {}, \"ratio_to_target\": {}, \"met\": {}, \"note\": {}}}{}\n",
            js(&f.name),
            f.math.as_deref().map_or("null".to_string(), js),
            js(&f.what),
            jn(f.value),
            jn(f.target),
            jn(f.ratio()),
            f.met().map_or("null".to_string(), |m| m.to_string()),
            js(&f.note),
            if i + 1 < figures.len() { "," } else { "" }
        );
    }
    s += "  ]\n}\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: &str, mode: MathMode, chains: u64, dim: usize, rate: f64) -> Row {
        let mut reps = Repetitions::default();
        for _ in 0..MIN_REPETITIONS {
            reps.push(1.0, 2.0);
        }
        Row {
            kind: kind.to_string(),
            math: mode.name().to_string(),
            chains,
            dim,
            iterations: MIN_ITERATIONS,
            setup_seconds: 0.5,
            reps,
            seconds: 1.0,
            rate,
            end_to_end_rate: rate / 2.0,
            bytes_per_s: if dim > 2 {
                2.0 * 4.0 * dim as f64 * rate
            } else {
                0.0
            },
        }
    }

    fn limits() -> Limits {
        Limits {
            copy_gbs: 4000.0,
            copy_kernel_gbs: None,
            fp32_measured: Some(60_000.0),
            fp32_theoretical: Some(67_000.0),
            fp32_note: String::new(),
        }
    }

    /// Each mode's headline is the best size of that mode against that mode's
    /// target: a faster fast mode never lifts the exact figure.
    #[test]
    fn headlines_are_per_mode_never_the_best_of_modes() {
        let [exact, fast] = BENCH_MODES;
        let rows = vec![
            row("2d persistent", exact, 4096, 2, 1e10),
            row("2d persistent", exact, 65_536, 2, 1.5e10),
            row("2d persistent", fast, 65_536, 2, 4e10),
            row("2d step+swap", exact, 65_536, 2, 9e10),
        ];
        let figures = targets(&rows, &limits(), &BTreeMap::new());
        let get = |name: String| figures.iter().find(|f| f.name == name).unwrap();
        let e = get(format!("persistent_2d_{}_chain_steps_per_s", exact.name()));
        assert_eq!(e.value, Some(1.5e10));
        assert_eq!(e.target, Some(2e10));
        assert_eq!(e.met(), Some(false));
        let f = get(format!("persistent_2d_{}_chain_steps_per_s", fast.name()));
        assert_eq!(f.value, Some(4e10));
        assert_eq!(f.target, Some(6e10));
        assert!((f.ratio().unwrap() - 4.0 / 6.0).abs() < 1e-12);
    }

    /// The D = 1024 step against the compute limit: issue slots per coordinate from the
    /// FP32 rate, and the share of it once the SASS count is given.
    #[test]
    fn the_wide_step_is_judged_against_the_issue_limit() {
        let [exact, fast] = BENCH_MODES;
        let rows = vec![
            row("D=1024 step F32", exact, 65_536, 1024, 1e8),
            row("D=1024 step F32", fast, 65_536, 1024, 2e8),
        ];
        let sass = parse_sass("exact=150").unwrap();
        let figures = targets(&rows, &limits(), &sass);
        let get = |name: String| figures.iter().find(|f| f.name == name).unwrap();
        let m = exact.name().to_string();
        // 3·10¹³ instructions/s over 1.024·10¹¹ coordinate-steps/s.
        let slots = get(format!("d1024_f32_{m}_issue_slots_per_coordinate"));
        let want = 60_000.0e9 / 2.0 / (1e8 * 1024.0);
        assert!((slots.value.unwrap() - want).abs() < 1e-9 * want);
        let share = get(format!("d1024_f32_{m}_share_of_issue_limit"));
        assert!((share.value.unwrap() - 150.0 / want).abs() < 1e-12);
        let unknown = get(format!("d1024_f32_{}_share_of_issue_limit", fast.name()));
        assert_eq!(unknown.value, None);
        let copy = get(format!("d1024_f32_{m}_share_of_copy_bandwidth"));
        assert!((copy.value.unwrap() - 8.0 * 1024.0 * 1e8 / 4000e9).abs() < 1e-12);
    }

    #[test]
    fn sass_counts_parse_by_mode_name() {
        let m = parse_sass("exact=175,fast=140.5").unwrap();
        assert_eq!(m.get("exact"), Some(&175.0));
        assert_eq!(m.get("fast"), Some(&140.5));
        assert!(parse_sass("slow=1").is_err());
        assert!(parse_sass("exact=-3").is_err());
        assert!(parse_sass("exact").is_err());
        assert!(
            parse(
                "--sass-per-coordinate exact=1"
                    .split(' ')
                    .map(String::from)
                    .collect()
            )
            .is_ok()
        );
    }

    /// gpu_bench.json (written by hand, without serde) is valid JSON with every row's
    /// device and end-to-end figures and every figure's mode, target and ratio.
    #[test]
    fn the_json_parses_and_carries_both_modes() {
        let [exact, fast] = BENCH_MODES;
        let rows = vec![
            row("2d persistent", exact, 4096, 2, 1e10),
            row("2d persistent", fast, 4096, 2, 3e10),
        ];
        let info = nrpt_cuda::DeviceInfo {
            ordinal: 0,
            name: "a \"quoted\" GPU".to_string(),
            compute_capability: (9, 0),
            memory_bytes: 1 << 30,
            multiprocessors: 132,
        };
        let lim = limits();
        let figures = targets(&rows, &lim, &BTreeMap::new());
        let text = to_json(&info, true, &lim, &rows, &figures);
        let v: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let r = &v["rows"][1];
        assert_eq!(r["math"], fast.name());
        assert_eq!(
            r["device_seconds_each"].as_array().unwrap().len(),
            MIN_REPETITIONS
        );
        assert_eq!(r["end_to_end_seconds"].as_f64(), Some(2.0));
        let names: Vec<&str> = v["figures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        for m in BENCH_MODES {
            let name = format!("persistent_2d_{}_chain_steps_per_s", m.name());
            assert!(names.contains(&name.as_str()), "{names:?}");
        }
        let f = &v["figures"][1];
        assert_eq!(f["math"], fast.name());
        assert_eq!(f["target"].as_f64(), Some(6e10));
        assert!((f["ratio_to_target"].as_f64().unwrap() - 0.5).abs() < 1e-6);
    }
}
