//! The bounds a run must stay within, set once per process from the command line: how
//! much memory a run may plan to use (`--max-memory`, by default three quarters of what
//! the machine or its container allows) and whether inputs that are not regular files
//! may be read (`--allow-special-files`).
//!
//! Library users who set nothing get [`Limits::default`]; the `nrpt` command calls
//! [`set`] once before any work.

use std::sync::OnceLock;

/// Largest P accepted.
pub const MAX_CHAINS: usize = 65_536;
/// Largest D accepted.
pub const MAX_DIM: usize = 1 << 20;

/// The most explorer transitions per level and iteration of exact tempering
/// (`--explorer-steps`): each costs at least one gradient per level, so more would make
/// one iteration of a long run take hours by mistake.
pub const MAX_EXPLORER_STEPS: u32 = 1000;

/// The most leapfrog steps per HMC trajectory (`--leapfrog-steps`): 1024, the longest
/// trajectory Stan's NUTS builds at its default maximum tree depth of 10.
pub const MAX_LEAPFROG_STEPS: u32 = 1024;

/// The most f32 values a run may hold in its chain states, or in its kept samples
/// (2³¹, 8 GiB): beyond, the configuration is refused before anything is allocated.
pub const MAX_VALUES: u128 = 1 << 31;

/// The bounds of this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes a run may plan to allocate (see `engine::memory`); inputs are
    /// capped by it too.
    pub max_memory: u64,
    /// Read inputs that are not regular files (FIFOs, devices), still size-capped.
    pub allow_special_files: bool,
}

impl Default for Limits {
    /// Three quarters of [`machine_memory`], regular files only.
    fn default() -> Self {
        Limits {
            max_memory: default_max_memory(),
            allow_special_files: false,
        }
    }
}

static LIMITS: OnceLock<Limits> = OnceLock::new();

/// Sets this process's limits; only the first call counts (later ones return `false`).
pub fn set(limits: Limits) -> bool {
    LIMITS.set(limits).is_ok()
}

/// This process's limits: those [`set`] or the defaults.
pub fn get() -> Limits {
    *LIMITS.get_or_init(Limits::default)
}

/// What is assumed where the machine's memory cannot be read (not Linux).
pub const UNKNOWN_MACHINE_MEMORY: u64 = 8 << 30;

/// The default `--max-memory`: three quarters of [`machine_memory`].
pub(crate) fn default_max_memory() -> u64 {
    machine_memory() / 4 * 3
}

/// The memory this process may use: the machine's (`MemTotal` of `/proc/meminfo`), or
/// its container's limit when lower (cgroup v2 `memory.max`, v1
/// `memory.limit_in_bytes`); [`UNKNOWN_MACHINE_MEMORY`] where neither can be read.
pub fn machine_memory() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| meminfo_total(&t));
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .filter_map(|p| std::fs::read_to_string(p).ok())
    .filter_map(|t| t.trim().parse::<u64>().ok())
    .min();
    match (total, cgroup) {
        (Some(t), Some(c)) => t.min(c),
        (Some(t), None) => t,
        (None, Some(c)) => c,
        (None, None) => UNKNOWN_MACHINE_MEMORY,
    }
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The peak resident memory of this process so far (`VmHWM`), where the system says
/// (Linux).
pub fn peak_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Parses a size: bytes (`1048576`), or a number with a unit `K`, `M`, `G`, `T` (powers
/// of 1024; `KiB`, `MB`, `g` … accepted alike), such as `512M` or `1.5G`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| {
        format!("`{text}` is not a size: give bytes, or a number with K, M, G or T")
    })?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => return Err(format!("`{other}` is not a size unit: use K, M, G or T")),
    };
    let bytes = value * (1u64 << shift) as f64;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < 2f64.powi(63)) {
        return Err(format!("`{text}` is not a size between 1 byte and 8 EiB"));
    }
    Ok(bytes as u64)
}

/// A byte count as people read it (`1.5 GiB`, `12.0 MiB`, `900 B`).
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("2 GiB"), Ok(2 << 30));
        assert_eq!(parse_size("4kb"), Ok(4096));
        for bad in ["", "M", "-1G", "0", "1.2.3", "3 parsecs", "1e30T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_print_for_people() {
        assert_eq!(human(900), "900 B");
        assert_eq!(human(3 << 29), "1.5 GiB");
        assert_eq!(human(12 << 20), "12.0 MiB");
    }

    #[test]
    fn meminfo_is_read_in_bytes() {
        let t = "MemFree:  10 kB\nMemTotal:       24576000 kB\n";
        assert_eq!(meminfo_total(t), Some(24_576_000 * 1024));
        assert_eq!(meminfo_total("nothing"), None);
        // This machine's figure is a plausible amount.
        let m = machine_memory();
        assert!((64 << 20..1 << 50).contains(&m), "{m}");
        assert!(default_max_memory() < m);
    }
}
