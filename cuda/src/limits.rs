//! The device's own limits, measured in the same run as a bench so that its figures can
//! be stated as shares of what the device can do:
//!
//! - [`copy_bandwidth_gbs`]: `cudaMemcpy` device to device (`cuMemcpyDtoDAsync`) of a
//!   large buffer, the yardstick of memory-bound steps (the large-D step);
//! - [`copy_kernel_bandwidth_gbs`]: the same with the plain copy kernel of `kernels/`;
//! - [`fp32_peak_gflops`]: FP32 fused multiply-adds per second, measured by an
//!   FMA-bound micro-kernel (compiled by NVRTC, or read from `NRPT_CUDA_PTX_DIR`) beside
//!   the theoretical peak from the device's attributes (SMs × clock × FP32 lanes × 2),
//!   the yardstick of compute-bound work (the MLP target).
//!
//! Bandwidths count bytes read plus bytes written, in GB/s (10⁹ bytes per second);
//! every timing is taken with CUDA events around work on the GPU's stream, the best of
//! several runs after a warm-up.

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{LaunchConfig, PushKernelArg};

use crate::device::Gpu;
use crate::error::{CudaError, driver};
use crate::kernels::Kernel;
use crate::params::MathMode;

/// NVRTC's name of the micro-kernel program.
pub const PROGRAM_NAME: &str = "nrpt_limits.cu";

/// The FMA-bound micro-kernel: eight independent chains of 16 unrolled `fmaf` per loop
/// trip and thread (256 floating-point operations per trip), the result stored so that
/// nothing is dead code; `b` and `c` come in as arguments so nothing folds.
const SOURCE: &str = r#"
extern "C" __global__ void fma_peak(float* out, unsigned int trips, float b, float c) {
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a0 = (float)i * 1e-9f, a1 = a0 + 0.125f, a2 = a0 + 0.25f, a3 = a0 + 0.375f;
    float a4 = a0 + 0.5f, a5 = a0 + 0.625f, a6 = a0 + 0.75f, a7 = a0 + 0.875f;
    for (unsigned int k = 0; k < trips; ++k) {
#pragma unroll
        for (int u = 0; u < 16; ++u) {
            a0 = fmaf(a0, b, c); a1 = fmaf(a1, b, c); a2 = fmaf(a2, b, c); a3 = fmaf(a3, b, c);
            a4 = fmaf(a4, b, c); a5 = fmaf(a5, b, c); a6 = fmaf(a6, b, c); a7 = fmaf(a7, b, c);
        }
    }
    out[i] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}
"#;

/// Floating-point operations per thread and loop trip of `fma_peak`.
const FLOPS_PER_TRIP: f64 = 16.0 * 8.0 * 2.0;

/// The micro-kernel program for `arch` (e.g. `compute_90`): its file stem in a folder
/// of precompiled PTX, its source and its NVRTC options.
pub fn program(arch: &str) -> (String, &'static str, Vec<String>) {
    (
        format!("nrpt_limits.{arch}"),
        SOURCE,
        vec![
            format!("--gpu-architecture={arch}"),
            "--fmad=true".to_string(),
            "--std=c++17".to_string(),
        ],
    )
}

/// The micro-kernel's PTX: from `NRPT_CUDA_PTX_DIR` where it is set (checked), else
/// compiled by NVRTC.
fn program_ptx(arch: &str) -> Result<String, CudaError> {
    let (stem, source, options) = program(arch);
    match crate::ptx_cache::dir_from_env() {
        Some(dir) => crate::ptx_cache::load(&dir, &stem, source, &options),
        None => crate::ptx_cache::nvrtc_compile(PROGRAM_NAME, source, &options),
    }
}

/// The CUDA version (major, minor) of the loaded driver (`cuDriverGetVersion`), e.g.
/// (13, 0) for driver 580: the newest PTX ISA and NVRTC it accepts.
pub fn driver_cuda_version() -> Result<(i32, i32), CudaError> {
    crate::device::driver_present()?;
    let mut v = 0;
    // SAFETY: the driver library is present (checked above); the call writes one int.
    let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
    if r != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        return Err(CudaError::Driver {
            context: "reading the driver version",
            message: format!("{r:?}"),
        });
    }
    Ok((v / 1000, (v % 1000) / 10))
}

/// Milliseconds the work queued by `work` takes on the GPU's stream (CUDA events).
fn time_ms(gpu: &Gpu, work: impl FnOnce() -> Result<(), CudaError>) -> Result<f64, CudaError> {
    let s = gpu.stream();
    let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let start = s
        .record_event(flags)
        .map_err(driver("recording an event"))?;
    work()?;
    let end = s
        .record_event(flags)
        .map_err(driver("recording an event"))?;
    let ms = start
        .elapsed_ms(&end)
        .map_err(driver("reading an event timer"))?;
    Ok(f64::from(ms))
}

/// Bytes of each of the two buffers of a copy measurement: 1 GiB, or a quarter of the
/// free memory where that is less, in whole 16-byte words.
fn copy_bytes(gpu: &Gpu) -> Result<usize, CudaError> {
    let (free, _) = gpu
        .context()
        .mem_get_info()
        .map_err(driver("reading the free memory"))?;
    let bytes = (free / 4).min(1 << 30) & !15;
    if bytes < 1 << 20 {
        return Err(CudaError::Unsupported(format!(
            "too little free device memory for a copy measurement ({free} bytes)"
        )));
    }
    Ok(bytes)
}

/// Device-to-device copy bandwidth of `cudaMemcpy` (`cuMemcpyDtoDAsync`) over a 1 GiB
/// buffer (less where memory is short), in GB/s of bytes read plus bytes written: the
/// best of 5 timed copies after one warm-up.
pub fn copy_bandwidth_gbs(gpu: &Gpu) -> Result<f64, CudaError> {
    let s = gpu.stream();
    let words = copy_bytes(gpu)? / 4;
    let src = s
        .alloc_zeros::<f32>(words)
        .map_err(driver("allocating the copy source"))?;
    let mut dst = s
        .alloc_zeros::<f32>(words)
        .map_err(driver("allocating the copy destination"))?;
    let mut best = f64::INFINITY;
    for round in 0..6 {
        let ms = time_ms(gpu, || {
            s.memcpy_dtod(&src, &mut dst)
                .map_err(driver("copying device to device"))
        })?;
        if round > 0 {
            best = best.min(ms);
        }
    }
    Ok(2.0 * (4 * words) as f64 / (best * 1e-3) / 1e9)
}

/// The same measurement with the grid-stride copy kernel of `kernels/` (16-byte
/// words, 8 blocks of 512 threads per SM), in GB/s of bytes read plus written.
pub fn copy_kernel_bandwidth_gbs(gpu: &Gpu) -> Result<f64, CudaError> {
    let s = gpu.stream();
    let words = copy_bytes(gpu)? / 16;
    let src = s
        .alloc_zeros::<f32>(4 * words)
        .map_err(driver("allocating the copy source"))?;
    let mut dst = s
        .alloc_zeros::<f32>(4 * words)
        .map_err(driver("allocating the copy destination"))?;
    let f = gpu.function(Kernel::Copy, MathMode::Exact)?;
    let n = words as u64;
    let cfg = LaunchConfig {
        grid_dim: ((gpu.info().multiprocessors.max(1) as u32) * 8, 1, 1),
        block_dim: (512, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut best = f64::INFINITY;
    for round in 0..6 {
        let ms = time_ms(gpu, || {
            let mut b = s.launch_builder(&f);
            b.arg(&src).arg(&mut dst).arg(&n);
            // SAFETY: copy_kernel(const float4*, float4*, u64): both buffers hold n
            // 16-byte words; its grid-stride loop is guarded by i < n.
            unsafe { b.launch(cfg) }.map_err(driver("launching copy_kernel"))?;
            Ok(())
        })?;
        if round > 0 {
            best = best.min(ms);
        }
    }
    Ok(2.0 * 16.0 * n as f64 / (best * 1e-3) / 1e9)
}

/// FP32 lanes (fused multiply-adds per clock) of one SM of compute capability `cc`,
/// where known: 64 on Volta, Turing and the A100 (8.0); 128 on later Ampere, Ada,
/// Hopper and Blackwell.
pub fn fp32_lanes_per_sm(cc: (i32, i32)) -> Option<u32> {
    match cc {
        (7, _) | (8, 0) => Some(64),
        (8, _) | (9, 0) | (10, _) | (11, _) | (12, _) => Some(128),
        _ => None,
    }
}

/// The theoretical FP32 peak in GFLOP/s: SMs × the device's clock attribute (its
/// highest clock) × FP32 lanes per SM × 2 (an FMA counts two operations). An error
/// where the architecture's lanes per SM or the clock are not known.
pub fn fp32_theoretical_gflops(gpu: &Gpu) -> Result<f64, CudaError> {
    use cudarc::driver::sys::CUdevice_attribute_enum as A;
    let info = gpu.info();
    let lanes = fp32_lanes_per_sm(info.compute_capability).ok_or_else(|| {
        CudaError::Unsupported(format!(
            "FP32 lanes per SM of compute capability {}.{} are not known here",
            info.compute_capability.0, info.compute_capability.1
        ))
    })?;
    let clock_khz = gpu
        .context()
        .attribute(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
        .map_err(driver("reading the clock rate"))?;
    if clock_khz <= 0 {
        return Err(CudaError::Unsupported(
            "the driver reports no clock rate for this device".to_string(),
        ));
    }
    Ok(f64::from(info.multiprocessors) * f64::from(clock_khz) * 1e3 * f64::from(lanes) * 2.0 / 1e9)
}

/// The FP32 rate of the FMA-bound micro-kernel, in GFLOP/s: a full wave of 256-thread
/// blocks (as many as the SMs hold), the loop length tuned so that one launch takes
/// about 50 ms, best of 3 after a warm-up.
pub fn fp32_measured_gflops(gpu: &Gpu) -> Result<f64, CudaError> {
    use cudarc::driver::sys::CUdevice_attribute_enum as A;
    let ptx = program_ptx(gpu.arch())?;
    let module = gpu
        .context()
        .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
        .map_err(driver("loading the FMA micro-kernel"))?;
    let f = module
        .load_function("fma_peak")
        .map_err(driver("finding fma_peak"))?;
    let per_sm = gpu
        .context()
        .attribute(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
        .map_err(driver("reading the threads per SM"))?;
    let threads_per_block = 256u32;
    let blocks = (gpu.info().multiprocessors.max(1) as u32)
        * (per_sm.max(threads_per_block as i32) as u32 / threads_per_block);
    let threads = (blocks * threads_per_block) as usize;
    let s = gpu.stream();
    let mut out = s
        .alloc_zeros::<f32>(threads)
        .map_err(driver("allocating the FMA output"))?;
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads_per_block, 1, 1),
        shared_mem_bytes: 0,
    };
    let (b, c) = (0.999_999_9f32, 1e-7f32);
    let mut launch = |trips: u32| -> Result<f64, CudaError> {
        time_ms(gpu, || {
            let mut l = s.launch_builder(&f);
            l.arg(&mut out).arg(&trips).arg(&b).arg(&c);
            // SAFETY: fma_peak(float*, u32, float, float) writes out[i] for the
            // blocks × 256 threads of the launch, and `out` holds that many floats.
            unsafe { l.launch(cfg) }.map_err(driver("launching fma_peak"))?;
            Ok(())
        })
    };
    launch(64)?; // warm-up (module JIT, clocks)
    let probe_trips = 1024u32;
    let probe_ms = launch(probe_trips)?.max(1e-3);
    let trips = ((f64::from(probe_trips) * 50.0 / probe_ms) as u32).clamp(probe_trips, 1 << 24);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        best = best.min(launch(trips)?);
    }
    let sums = s
        .clone_dtoh(&out)
        .map_err(driver("reading the FMA output"))?;
    if !sums.iter().all(|v| v.is_finite()) {
        return Err(CudaError::Unsupported(
            "the FMA micro-kernel produced non-finite values".to_string(),
        ));
    }
    let flops = threads as f64 * f64::from(trips) * FLOPS_PER_TRIP;
    Ok(flops / (best * 1e-3) / 1e9)
}

/// FP32 peak in GFLOP/s: (measured by the FMA micro-kernel, theoretical from the
/// device's attributes). The theoretical figure is NaN where the architecture's FP32
/// lanes per SM or its clock are not known ([`fp32_theoretical_gflops`] says why).
pub fn fp32_peak_gflops(gpu: &Gpu) -> Result<(f64, f64), CudaError> {
    let theoretical = fp32_theoretical_gflops(gpu).unwrap_or(f64::NAN);
    Ok((fp32_measured_gflops(gpu)?, theoretical))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_per_sm_of_known_architectures() {
        assert_eq!(fp32_lanes_per_sm((9, 0)), Some(128)); // H100, H200
        assert_eq!(fp32_lanes_per_sm((8, 0)), Some(64)); // A100
        assert_eq!(fp32_lanes_per_sm((8, 6)), Some(128));
        assert_eq!(fp32_lanes_per_sm((7, 0)), Some(64));
        assert_eq!(fp32_lanes_per_sm((6, 1)), None);
    }

    #[test]
    fn the_program_targets_its_architecture() {
        let (stem, source, options) = program("compute_90");
        assert_eq!(stem, "nrpt_limits.compute_90");
        assert!(source.contains("fma_peak"));
        assert!(options.contains(&"--gpu-architecture=compute_90".to_string()));
    }
}
