//! Opening a GPU: the driver check (a typed error, never a panic, where there is no
//! driver), device listing, and the kernels loaded once per device and math mode.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};

use crate::error::{CudaError, driver};
use crate::kernels::{self, Kernel};
use crate::params::MathMode;
use crate::source::TargetSource;

/// What `nvidia-smi` would say about one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Ordinal (0-based).
    pub ordinal: usize,
    /// Marketing name, e.g. "NVIDIA H200".
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Global memory in bytes.
    pub memory_bytes: usize,
    /// Streaming multiprocessors.
    pub multiprocessors: i32,
}

/// `Ok(())` when the CUDA driver library can be loaded, else why not.
pub fn driver_present() -> Result<(), CudaError> {
    // SAFETY: only tries to dlopen libcuda by its usual names; no driver call is made.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(CudaError::NoDriver {
            reason: "libcuda.so (the NVIDIA driver library) could not be loaded".to_string(),
        })
    }
}

/// One opened GPU: its context, a stream, and the compiled kernels.
#[derive(Debug)]
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    arch: String,
    modules: Mutex<HashMap<MathMode, Arc<CudaModule>>>,
    /// The source steps loaded so far (crate::source), by math mode and code.
    sources: Mutex<HashMap<(MathMode, String), Arc<CudaModule>>>,
}

impl Gpu {
    /// Lists every device, or says why there is none.
    pub fn list() -> Result<Vec<DeviceInfo>, CudaError> {
        driver_present()?;
        let count = CudaContext::device_count().map_err(driver("counting devices"))?;
        (0..count.max(0) as usize)
            .map(|i| {
                let ctx = CudaContext::new(i).map_err(driver("creating a context"))?;
                info_of(&ctx, i)
            })
            .collect()
    }

    /// Opens device `ordinal` and compiles the kernels for its architecture (NVRTC,
    /// once per process and architecture) under [`MathMode::Exact`].
    pub fn open(ordinal: usize) -> Result<Gpu, CudaError> {
        driver_present()?;
        let count = CudaContext::device_count().map_err(driver("counting devices"))?;
        if count <= 0 {
            return Err(CudaError::NoDriver {
                reason: "the driver reports no CUDA device".to_string(),
            });
        }
        if ordinal >= count as usize {
            return Err(CudaError::NoSuchDevice {
                ordinal,
                count: count as usize,
            });
        }
        let ctx = CudaContext::new(ordinal).map_err(driver("creating a context"))?;
        // One stream, used in order: cudarc's per-buffer event tracking is not needed.
        // SAFETY: called before any buffer of this context exists.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let info = info_of(&ctx, ordinal)?;
        let (major, minor) = info.compute_capability;
        let arch = format!("compute_{major}{minor}");
        let gpu = Gpu {
            ctx,
            stream,
            info,
            arch,
            modules: Mutex::new(HashMap::new()),
            sources: Mutex::new(HashMap::new()),
        };
        gpu.module(MathMode::Exact)?;
        Ok(gpu)
    }

    /// The device's description.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The stream every launch goes to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The NVRTC virtual architecture the kernels are compiled for (`compute_90`, …).
    pub fn arch(&self) -> &str {
        &self.arch
    }

    fn module(&self, mode: MathMode) -> Result<Arc<CudaModule>, CudaError> {
        let mut modules = self.modules.lock().map_err(|_| CudaError::Driver {
            context: "loading kernels",
            message: "a thread panicked while holding the module cache".to_string(),
        })?;
        if let Some(m) = modules.get(&mode) {
            return Ok(m.clone());
        }
        let ptx = kernels::compile_ptx(&self.arch, mode)?;
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
            .map_err(driver("loading the compiled kernels"))?;
        modules.insert(mode, module.clone());
        Ok(module)
    }

    /// The entry point `kernel` compiled under `mode`.
    pub fn function(&self, kernel: Kernel, mode: MathMode) -> Result<CudaFunction, CudaError> {
        self.module(mode)?
            .load_function(kernel.name())
            .map_err(driver("finding a kernel in the module"))
    }

    /// The step kernel of a target with its own CUDA source ([`crate::source`]),
    /// compiled by NVRTC under `mode` and loaded once per device.
    pub fn source_function(
        &self,
        source: &TargetSource,
        mode: MathMode,
    ) -> Result<CudaFunction, CudaError> {
        let lock_error = || CudaError::Driver {
            context: "loading a target's kernel",
            message: "a thread panicked while holding the module cache".to_string(),
        };
        let key = (mode, source.code.clone());
        let cached = self
            .sources
            .lock()
            .map_err(|_| lock_error())?
            .get(&key)
            .cloned();
        let module = match cached {
            Some(m) => m,
            None => {
                let ptx = crate::source::compile_ptx(source, &self.arch, mode)?;
                let m = self
                    .ctx
                    .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
                    .map_err(driver("loading a target's compiled kernel"))?;
                self.sources
                    .lock()
                    .map_err(|_| lock_error())?
                    .insert(key, m.clone());
                m
            }
        };
        module
            .load_function(crate::source::STEP_KERNEL)
            .map_err(driver("finding a target's kernel in its module"))
    }

    /// Waits for every launch so far.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.stream.synchronize().map_err(driver("synchronizing"))
    }
}

fn info_of(ctx: &Arc<CudaContext>, ordinal: usize) -> Result<DeviceInfo, CudaError> {
    use cudarc::driver::sys::CUdevice_attribute_enum as A;
    Ok(DeviceInfo {
        ordinal,
        name: ctx.name().map_err(driver("reading the device name"))?,
        compute_capability: ctx
            .compute_capability()
            .map_err(driver("reading the compute capability"))?,
        memory_bytes: ctx.total_mem().map_err(driver("reading the memory size"))?,
        multiprocessors: ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(driver("reading the SM count"))?,
    })
}
