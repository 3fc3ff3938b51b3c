//! GPU throughput bench, with the device's own limits measured in the same run.
//!
//! - chain-steps per second for E·P from 4,096 to 4,194,304 chains (2D persistent
//!   kernel, exact and FMA math; 2D step + swap kernels) against the target of
//!   5·10¹⁰ chain-steps/s for the persistent kernel;
//! - the D = 1024 step (f32, bf16, f16 storage) as a share of the measured
//!   device-to-device copy bandwidth (`cudaMemcpy`, bytes read + written), against the
//!   target of 70 % for f32;
//! - the FP32 peak: an FMA-bound micro-kernel beside SMs × clock × lanes × 2 (the
//!   yardstick of the MLP figures, whose target is 30 % of it).
//!
//! Writes `gpu_bench.json` to `--out DIR` (default `$OUT`, else the current folder) and
//! prints a table last.
//!
//! Usage:
//!   gpu_bench [--out DIR] [--quick]     the bench (`--quick`: fewer sizes)
//!   gpu_bench --tiny                    every kernel path on a tiny case, checked for
//!                                       finite results (what compute-sanitizer runs)
//!   gpu_bench --emit-ptx DIR [--arch A] compiles every program with NVRTC (no GPU
//!                                       needed) into DIR for NRPT_CUDA_PTX_DIR (A:
//!                                       compute_90 by default)

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use nrpt_core::TemperingOptions;
use nrpt_core::explore::Explorer;
use nrpt_cuda::limits;
use nrpt_cuda::ptx_cache;
use nrpt_cuda::{
    CudaError, EnsembleConfig, ExecutionPath, Gpu, GpuEnsembles, GpuTarget, MathMode, Precision,
};

/// The 2D toy's persistent kernel: chain-steps per second it should reach on an H200.
const TARGET_2D_PERSISTENT: f64 = 5e10;
/// The D = 1024 f32 step: the share of the copy bandwidth it should reach.
const TARGET_D1024_SHARE: f64 = 0.70;

const USAGE: &str =
    "usage: gpu_bench [--out DIR] [--quick] | --tiny | --emit-ptx DIR [--arch compute_XY]";

/// One measured configuration.
struct Row {
    /// What ran.
    kind: String,
    /// E·P.
    chains: u64,
    /// D.
    dim: usize,
    /// Iterations timed.
    iterations: u64,
    /// Seconds.
    seconds: f64,
    /// Chain-steps per second.
    rate: f64,
    /// State bytes read + written per second (D-dimensional rows), else 0.
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
    Bench { out: PathBuf, quick: bool },
    Tiny,
    EmitPtx { dir: PathBuf, arch: String },
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
        Mode::Bench { out, quick } => bench(&out, quick),
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
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--quick" => quick = true,
            "--tiny" => tiny = true,
            "--emit-ptx" => emit = Some(PathBuf::from(value("--emit-ptx")?)),
            "--arch" => arch = Some(value("--arch")?),
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
        }),
    }
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

fn bench(out_dir: &std::path::Path, quick: bool) -> Result<(), CudaError> {
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
    for &(kind, path, math) in &[
        ("2d persistent", ExecutionPath::Persistent, MathMode::Exact),
        (
            "2d persistent fma",
            ExecutionPath::Persistent,
            MathMode::Fma,
        ),
        ("2d step+swap", ExecutionPath::StepSwap, MathMode::Exact),
    ] {
        for &chains in sizes {
            let e = (chains as usize) / p;
            let config = EnsembleConfig {
                path,
                math,
                ..EnsembleConfig::new(options, GpuTarget::Modes2d, e, p)
            };
            let mut run = GpuEnsembles::new(&gpu, &config)?;
            let budget = if path == ExecutionPath::Persistent {
                4e9
            } else {
                4e8
            };
            let iters = ((budget / chains as f64) as u64).clamp(64, 16_384);
            run.advance(iters.min(256))?; // warm-up (and JIT of the module)
            gpu.synchronize()?;
            let t = Instant::now();
            run.advance(iters)?;
            gpu.synchronize()?;
            let s = t.elapsed().as_secs_f64();
            let rate = chains as f64 * iters as f64 / s;
            println!("{kind:<20} E·P = {chains:>9}: {rate:.3e} chain-steps/s");
            rows.push(Row {
                kind: kind.to_string(),
                chains,
                dim: 2,
                iterations: iters,
                seconds: s,
                rate,
                bytes_per_s: 0.0,
            });
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
        &[4096, 16_384, 65_536, 131_072]
    };
    for precision in [Precision::F32, Precision::Bf16, Precision::F16] {
        for &chains in d_sizes {
            let e = chains as usize / p;
            let config = EnsembleConfig {
                precision,
                ..EnsembleConfig::new(wide, GpuTarget::SumModes { dim: d }, e, p)
            };
            let mut run = GpuEnsembles::new(&gpu, &config)?;
            let iters = ((2e7 / chains as f64) as u64).clamp(10, 500);
            run.advance(5)?;
            gpu.synchronize()?;
            let t = Instant::now();
            run.advance(iters)?;
            gpu.synchronize()?;
            let s = t.elapsed().as_secs_f64();
            let rate = chains as f64 * iters as f64 / s;
            // Each chain-step reads and writes its D coordinates once.
            let bytes = 2.0 * (d * precision.bytes()) as f64 * rate;
            let kind = format!("D=1024 step {precision:?}");
            println!(
                "{kind:<20} E·P = {chains:>9}: {rate:.3e} chain-steps/s, {:.1} GB/s ({:.0}% of copy)",
                bytes / 1e9,
                100.0 * bytes / copy_bps
            );
            rows.push(Row {
                kind,
                chains,
                dim: d,
                iterations: iters,
                seconds: s,
                rate,
                bytes_per_s: bytes,
            });
        }
    }

    let targets = targets(&rows, &lim);
    let json = to_json(&info, quick, &lim, &rows, &targets);
    let path = out_dir.join("gpu_bench.json");
    if let Err(e) = std::fs::create_dir_all(out_dir).and_then(|_| std::fs::write(&path, json)) {
        eprintln!("could not write {}: {e}", path.display());
    } else {
        println!("wrote {}", path.display());
    }

    println!();
    println!(
        "{:<20} {:>10} {:>6} {:>7} {:>14} {:>10}",
        "kernel", "E·P", "D", "iters", "chain-steps/s", "% copy BW"
    );
    for r in &rows {
        let pct = if r.bytes_per_s > 0.0 {
            format!("{:.0}%", 100.0 * r.bytes_per_s / copy_bps)
        } else {
            "-".to_string()
        };
        println!(
            "{:<20} {:>10} {:>6} {:>7} {:>14.3e} {:>10}",
            r.kind, r.chains, r.dim, r.iterations, r.rate, pct
        );
    }
    println!();
    println!(
        "{:<44} {:>12} {:>10} {:>8} {:>5}",
        "figure", "value", "target", "ratio", "met"
    );
    for t in &targets {
        println!(
            "{:<44} {:>12} {:>10} {:>8} {:>5}",
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
    name: &'static str,
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

fn best(rows: &[Row], pred: impl Fn(&Row) -> bool) -> Option<&Row> {
    rows.iter()
        .filter(|r| pred(r))
        .max_by(|a, b| a.rate.total_cmp(&b.rate))
}

fn targets(rows: &[Row], lim: &Limits) -> Vec<Figure> {
    let mut out = Vec::new();
    let persistent = best(rows, |r| r.kind.starts_with("2d persistent"));
    out.push(Figure {
        name: "persistent_2d_chain_steps_per_s",
        what: "2D persistent kernel, chain-steps/s".to_string(),
        value: persistent.map(|r| r.rate),
        target: Some(TARGET_2D_PERSISTENT),
        percent: false,
        note: persistent.map_or("no row".to_string(), |r| {
            format!("best row: {}, E·P = {}", r.kind, r.chains)
        }),
    });
    let wide = best(rows, |r| r.kind == "D=1024 step F32");
    out.push(Figure {
        name: "d1024_f32_share_of_copy_bandwidth",
        what: "D=1024 f32 step / cudaMemcpy D2D bandwidth".to_string(),
        value: wide.map(|r| r.bytes_per_s / (lim.copy_gbs * 1e9)),
        target: Some(TARGET_D1024_SHARE),
        percent: true,
        note: wide.map_or("no row".to_string(), |r| {
            format!(
                "best row E·P = {}: {:.1} GB/s of state read + written against {:.1} GB/s",
                r.chains,
                r.bytes_per_s / 1e9,
                lim.copy_gbs
            )
        }),
    });
    out.push(Figure {
        name: "fp32_measured_share_of_theoretical",
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
    s += "  \"rows\": [\n";
    for (i, r) in rows.iter().enumerate() {
        let share = (r.bytes_per_s > 0.0).then(|| r.bytes_per_s / (lim.copy_gbs * 1e9));
        s += &format!(
            "    {{\"kernel\": {}, \"chains\": {}, \"dim\": {}, \"iterations\": {}, \"seconds\": {}, \"chain_steps_per_s\": {}, \"state_gbs\": {}, \"share_of_copy_bandwidth\": {}}}{}\n",
            js(&r.kind),
            r.chains,
            r.dim,
            r.iterations,
            jn(Some(r.seconds)),
            jn(Some(r.rate)),
            jn((r.bytes_per_s > 0.0).then_some(r.bytes_per_s / 1e9)),
            jn(share),
            if i + 1 < rows.len() { "," } else { "" }
        );
    }
    s += "  ],\n";
    s += "  \"figures\": [\n";
    for (i, f) in figures.iter().enumerate() {
        s += &format!(
            "    {{\"name\": {}, \"what\": {}, \"value\": {}, \"target\": {}, \"ratio_to_target\": {}, \"met\": {}, \"note\": {}}}{}\n",
            js(f.name),
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
