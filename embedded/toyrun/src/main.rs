//! The host side of the embedded and WASM checks.
//!
//! ```text
//! toyrun [text] [SEED [ITERATIONS]]   the report, exactly as the firmware prints it
//! toyrun json   [SEED [ITERATIONS]]   the same run and a grid of optimal-window solver
//!                                     results, as JSON, for the WASM test to compare
//! ```

use std::fmt::Write as _;
use std::process::ExitCode;

use nrpt_core::optimal;
use toyrun::{ITERATIONS, SEED, Summary, write_report};

/// Chain counts of the solver grid.
const GRID_CHAINS: [u32; 11] = [2, 3, 4, 5, 8, 16, 32, 64, 100, 1000, 10_000];
/// Swap rates of the solver grid.
const GRID_RATES: [f64; 8] = [0.005, 0.05, 0.2, 0.4, 0.5, 0.7, 0.95, 0.999];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, rest) = match args.first().map(String::as_str) {
        Some("json") => ("json", &args[1..]),
        Some("text") => ("text", &args[1..]),
        _ => ("text", &args[..]),
    };
    let seed = match rest.first().map(|s| s.parse::<u32>()) {
        None => SEED,
        Some(Ok(seed)) => seed,
        Some(Err(e)) => return usage(&format!("bad seed: {e}")),
    };
    let iterations = match rest.get(1).map(|s| s.parse::<u64>()) {
        None => ITERATIONS,
        Some(Ok(n)) => n,
        Some(Err(e)) => return usage(&format!("bad iteration count: {e}")),
    };
    let summary = match toyrun::run(seed, iterations) {
        Ok(summary) => summary,
        Err(e) => {
            eprintln!("toyrun: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut report = String::new();
    if write_report(&mut report, &summary).is_err() {
        eprintln!("toyrun: formatting failed");
        return ExitCode::FAILURE;
    }
    if mode == "json" {
        println!("{}", json(&summary, &report));
    } else {
        print!("{report}");
    }
    ExitCode::SUCCESS
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("toyrun: {problem}\nusage: toyrun [text|json] [SEED [ITERATIONS]]");
    ExitCode::from(2)
}

/// A float as JSON: the shortest decimal that reads back to the same bits, or a string
/// for the values JSON has no number for.
fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:?}")
    } else {
        format!("\"{x}\"")
    }
}

fn opt_num(x: Result<f64, nrpt_core::Error>) -> String {
    x.map_or_else(|_| "null".to_owned(), num)
}

fn opt_u32(x: Result<u32, nrpt_core::Error>) -> String {
    x.map_or_else(|_| "null".to_owned(), |w| w.to_string())
}

fn list<T>(items: impl IntoIterator<Item = T>, f: impl Fn(T) -> String) -> String {
    let items: Vec<String> = items.into_iter().map(f).collect();
    format!("[{}]", items.join(","))
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The solver grid and the toy run as one JSON object.
fn json(s: &Summary, report: &str) -> String {
    let mut solver = Vec::new();
    for &chains in &GRID_CHAINS {
        for &rate in &GRID_RATES {
            let p = chains as usize;
            let window = optimal::optimal_window(p, rate);
            let expected = window.and_then(|w| optimal::expected_round_trip_u32(p, w, rate));
            let w_star = optimal::w_star(p, rate);
            let rate_at_w_star = w_star.and_then(|w| optimal::round_trip_rate(p, w, rate));
            solver.push(format!(
                "{{\"chains\":{chains},\"swap_rate\":{},\"w_star\":{},\"optimal_window\":{},\
                 \"paper_window\":{},\"expected_round_trip\":{},\"round_trip_rate\":{}}}",
                num(rate),
                opt_num(w_star),
                opt_u32(window),
                opt_u32(optimal::paper_window(p, rate)),
                opt_num(expected),
                opt_num(rate_at_w_star),
            ));
        }
    }
    let toy = format!(
        "{{\"seed\":{},\"iterations\":{},\"window\":{},\"round_trips\":{},\
         \"authors_round_trips\":{},\"restarts\":{},\"nonfinite_energies\":{},\
         \"swaps\":{},\"attempts\":{},\"ladder\":{},\"ladder_bits\":{},\"buffer\":{},\
         \"checksum\":\"{:016x}\",\"report\":{}}}",
        s.seed,
        s.iterations,
        s.window,
        s.stats.round_trips,
        s.stats.authors_round_trips,
        s.stats.restarts,
        s.stats.nonfinite_energies,
        list(s.pairs.iter(), |p| p.swaps.to_string()),
        list(s.pairs.iter(), |p| p.attempts.to_string()),
        list(s.ladder.iter(), |x| num(*x)),
        list(s.ladder.iter(), |x| format!("\"{:016x}\"", x.to_bits())),
        num(s.buffer),
        s.checksum,
        json_string(report),
    );
    format!("{{\"solver\":[{}],\"toy\":{toy}}}", solver.join(","))
}
