//! `nrpt devices`: the GPUs the CUDA engine can use.

use anyhow::Result;
use serde::Serialize;

use nrpt_sampling::engine::cuda::list_devices;

/// One GPU.
#[derive(Debug, Serialize)]
pub struct Device {
    /// Ordinal for `--device`.
    pub ordinal: usize,
    /// Name.
    pub name: String,
    /// Compute capability, e.g. "9.0".
    pub compute_capability: String,
    /// Memory in GiB.
    pub memory_gib: f64,
    /// Streaming multiprocessors.
    pub multiprocessors: i32,
}

/// What `nrpt devices --json` prints.
#[derive(Debug, Serialize)]
pub struct Devices {
    /// The GPUs found.
    pub devices: Vec<Device>,
    /// Why there is none, when there is none.
    pub reason: Option<String>,
}

/// Runs the command. Finding no GPU is an answer, not an error.
pub fn run(json: bool) -> Result<()> {
    let report = match list_devices() {
        Ok(list) => Devices {
            reason: list
                .is_empty()
                .then(|| "the CUDA driver reports no device".to_string()),
            devices: list
                .into_iter()
                .map(|d| Device {
                    ordinal: d.ordinal,
                    name: d.name,
                    compute_capability: format!(
                        "{}.{}",
                        d.compute_capability.0, d.compute_capability.1
                    ),
                    memory_gib: d.memory_bytes as f64 / (1u64 << 30) as f64,
                    multiprocessors: d.multiprocessors,
                })
                .collect(),
        },
        Err(e) => Devices {
            devices: Vec::new(),
            reason: Some(e.to_string()),
        },
    };
    if json {
        say!("{}", nrpt_sampling::json::to_string(&report)?)?;
        return Ok(());
    }
    if report.devices.is_empty() {
        say!(
            "no GPU found: {}",
            report.reason.as_deref().unwrap_or("unknown reason")
        )?;
        say!("nrpt runs on the CPU (--backend cpu, which `auto` falls back to).")?;
    }
    for d in &report.devices {
        say!(
            "{}: {} (compute capability {}, {:.0} GiB, {} multiprocessors)",
            d.ordinal,
            d.name,
            d.compute_capability,
            d.memory_gib,
            d.multiprocessors
        )?;
    }
    Ok(())
}
