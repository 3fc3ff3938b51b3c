//! Everything that can go wrong between the host and a GPU, as one typed error.

use core::fmt;

/// Why a CUDA operation did not happen. Never a panic: a machine without a driver or
/// without NVRTC answers with [`CudaError::NoDriver`] or [`CudaError::NoNvrtc`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CudaError {
    /// The CUDA driver library (libcuda) cannot be loaded, or reports no device.
    NoDriver {
        /// What was looked for and not found.
        reason: String,
    },
    /// The NVRTC library (libnvrtc) cannot be loaded.
    NoNvrtc {
        /// What was looked for and not found.
        reason: String,
    },
    /// No device with this ordinal.
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// Devices present.
        count: usize,
    },
    /// No ensemble with this index in the run.
    NoSuchEnsemble {
        /// The index asked for.
        ensemble: usize,
        /// Ensembles in the run.
        count: usize,
    },
    /// A driver call failed.
    Driver {
        /// What was being done.
        context: &'static str,
        /// The driver's error.
        message: String,
    },
    /// NVRTC rejected the kernels.
    Compile {
        /// The options passed to NVRTC.
        options: Vec<String>,
        /// NVRTC's log (or error).
        log: String,
    },
    /// The tempering options are invalid (nrpt-core's check).
    Options(nrpt_core::Error),
    /// A configuration the kernels do not support (the message says which part).
    Unsupported(String),
    /// Precompiled kernels (`NRPT_CUDA_PTX_DIR`) that are missing, stale or altered.
    Ptx {
        /// What is wrong and how to rebuild.
        reason: String,
    },
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CudaError::NoDriver { reason } => write!(f, "no CUDA driver: {reason}"),
            CudaError::NoNvrtc { reason } => write!(f, "no NVRTC: {reason}"),
            CudaError::NoSuchDevice { ordinal, count } => {
                write!(f, "no CUDA device {ordinal} ({count} present)")
            }
            CudaError::NoSuchEnsemble { ensemble, count } => {
                write!(f, "no ensemble {ensemble} ({count} in the run)")
            }
            CudaError::Driver { context, message } => {
                write!(f, "CUDA driver error while {context}: {message}")
            }
            CudaError::Compile { options, log } => write!(
                f,
                "NVRTC could not compile the kernels (options {}):\n{log}",
                options.join(" ")
            ),
            CudaError::Options(e) => write!(f, "invalid tempering options: {e}"),
            CudaError::Unsupported(what) => write!(f, "not supported on the GPU: {what}"),
            CudaError::Ptx { reason } => write!(f, "precompiled kernels refused: {reason}"),
        }
    }
}

impl std::error::Error for CudaError {}

impl From<nrpt_core::Error> for CudaError {
    fn from(e: nrpt_core::Error) -> Self {
        CudaError::Options(e)
    }
}

/// Wraps a driver error with what was being done.
pub(crate) fn driver(
    context: &'static str,
) -> impl FnOnce(cudarc::driver::DriverError) -> CudaError {
    move |e| CudaError::Driver {
        context,
        message: format!("{e:?}"),
    }
}
