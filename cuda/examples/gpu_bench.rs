//! GPU throughput bench: chain-steps per second for E·P from 4,096 to 4,194,304 chains
//! (2D persistent kernel, 2D step + swap kernels), and the D = 1024 step against the
//! measured device-to-device copy bandwidth. Writes `gpu_bench.json` to `--out DIR`
//! (default `$OUT`, else the current folder) and prints a table last.
//!
//! Usage: `gpu_bench [--out DIR] [--quick]`

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{LaunchConfig, PushKernelArg};
use nrpt_core::TemperingOptions;
use nrpt_cuda::kernels::Kernel;
use nrpt_cuda::{
    CudaError, EnsembleConfig, ExecutionPath, Gpu, GpuEnsembles, GpuTarget, MathMode, Precision,
};

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

fn main() {
    if let Err(e) = run() {
        eprintln!("Error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), CudaError> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out_dir = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| std::env::var("OUT").ok())
        .unwrap_or_else(|| ".".to_string());
    let gpu = Arc::new(Gpu::open(0)?);
    let info = gpu.info().clone();
    println!(
        "device: {} (cc {:?}, {} SMs, {} MiB)",
        info.name,
        info.compute_capability,
        info.multiprocessors,
        info.memory_bytes >> 20
    );

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
            let t = Instant::now();
            run.advance(iters)?;
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

    // The copy yardstick: a plain copy kernel over 1 GiB, bytes read + written.
    let copy_bw = copy_bandwidth(&gpu)?;
    println!(
        "device-to-device copy: {:.1} GB/s (read + write)",
        copy_bw / 1e9
    );

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
            let t = Instant::now();
            run.advance(iters)?;
            let s = t.elapsed().as_secs_f64();
            let rate = chains as f64 * iters as f64 / s;
            let bytes = 2.0 * (d * precision.bytes()) as f64 * rate;
            let kind = format!("D=1024 step {precision:?}");
            println!(
                "{kind:<20} E·P = {chains:>9}: {rate:.3e} chain-steps/s, {:.1} GB/s ({:.0}% of copy)",
                bytes / 1e9,
                100.0 * bytes / copy_bw
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

    let json = to_json(&info, copy_bw, &rows);
    let path = std::path::Path::new(&out_dir).join("gpu_bench.json");
    if let Err(e) = std::fs::create_dir_all(&out_dir).and_then(|_| std::fs::write(&path, json)) {
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
            format!("{:.0}%", 100.0 * r.bytes_per_s / copy_bw)
        } else {
            "-".to_string()
        };
        println!(
            "{:<20} {:>10} {:>6} {:>7} {:>14.3e} {:>10}",
            r.kind, r.chains, r.dim, r.iterations, r.rate, pct
        );
    }
    let best_2d = rows
        .iter()
        .filter(|r| r.dim == 2)
        .map(|r| r.rate)
        .fold(0.0, f64::max);
    println!(
        "targets: 2D persistent >= 5e10 chain-steps/s (best {best_2d:.3e}); D=1024 f32 step >= 70% of copy bandwidth"
    );
    Ok(())
}

/// Bytes read + written per second by a grid-stride copy of 1 GiB (best of 5).
fn copy_bandwidth(gpu: &Gpu) -> Result<f64, CudaError> {
    let err = |c: &'static str| {
        move |e: cudarc::driver::DriverError| CudaError::Driver {
            context: c,
            message: format!("{e:?}"),
        }
    };
    let s = gpu.stream();
    let words = 1usize << 26; // 16-byte words: 1 GiB
    let src = s.alloc_zeros::<f32>(4 * words).map_err(err("allocating"))?;
    let mut dst = s.alloc_zeros::<f32>(4 * words).map_err(err("allocating"))?;
    let f = gpu.function(Kernel::Copy, MathMode::Exact)?;
    let n = words as u64;
    let blocks = (gpu.info().multiprocessors.max(1) as u32) * 8;
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (512, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut best = 0.0f64;
    for _ in 0..6 {
        let t = Instant::now();
        let mut b = s.launch_builder(&f);
        b.arg(&src).arg(&mut dst).arg(&n);
        // SAFETY: copy_kernel(const float4*, float4*, u64): both buffers hold n 16-byte
        // words; grid-stride loop guarded by i < n.
        unsafe { b.launch(cfg) }.map_err(err("launching copy_kernel"))?;
        gpu.synchronize()?;
        best = best.max(2.0 * 16.0 * n as f64 / t.elapsed().as_secs_f64());
    }
    // cudarc's memcpy (cuMemcpyDtoDAsync) as a second yardstick; keep the larger.
    let t = Instant::now();
    s.memcpy_dtod(&src, &mut dst).map_err(err("memcpy_dtod"))?;
    gpu.synchronize()?;
    best = best.max(2.0 * 16.0 * n as f64 / t.elapsed().as_secs_f64());
    Ok(best)
}

fn to_json(info: &nrpt_cuda::DeviceInfo, copy_bw: f64, rows: &[Row]) -> String {
    let mut s = String::from("{\n");
    s += &format!("  \"device\": \"{}\",\n", info.name.replace('"', "'"));
    s += &format!(
        "  \"compute_capability\": [{}, {}],\n",
        info.compute_capability.0, info.compute_capability.1
    );
    s += &format!("  \"copy_bandwidth_bytes_per_s\": {copy_bw:.6e},\n");
    s += "  \"rows\": [\n";
    for (i, r) in rows.iter().enumerate() {
        s += &format!(
            "    {{\"kernel\": \"{}\", \"chains\": {}, \"dim\": {}, \"iterations\": {}, \"seconds\": {:.6}, \"chain_steps_per_s\": {:.6e}, \"state_bytes_per_s\": {:.6e}}}{}\n",
            r.kind,
            r.chains,
            r.dim,
            r.iterations,
            r.seconds,
            r.rate,
            r.bytes_per_s,
            if i + 1 < rows.len() { "," } else { "" }
        );
    }
    s += "  ]\n}\n";
    s
}
