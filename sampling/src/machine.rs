//! What a measured table names: its command, the machine it ran on and when.

use std::time::SystemTime;

/// The processor's model name (from `/proc/cpuinfo` where there is one) and the cores
/// this process may use, e.g. `AMD EPYC 7B13, 2 cores`.
pub fn describe() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model}, {cores} cores")
}

/// This process's command line as given, with the program named `nrpt` whatever its
/// file is called (a word that is not UTF-8 with its bad bytes replaced).
pub fn command_line() -> String {
    let words: Vec<String> = std::env::args_os()
        .enumerate()
        .map(|(i, a)| {
            if i == 0 {
                "nrpt".to_string()
            } else {
                a.to_string_lossy().into_owned()
            }
        })
        .collect();
    words.join(" ")
}

/// The current time, UTC, to the second, as RFC 3339 (`2026-12-01T08:00:00Z`).
pub fn utc_now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_have_their_parts() {
        assert!(describe().ends_with(" cores"));
        let t = utc_now();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
    }
}
