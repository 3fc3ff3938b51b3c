//! The host side of the run that the firmware and the WASM module make.
//!
//! `cargo test -- --nocapture` prints the report the firmware must print. Its bytes are
//! checked in as `tests/expected/toyrun.txt` at the repository's root: the workspace's
//! `tests/tests/it/embedded.rs` compares this crate's report and the host engines' run with
//! it, and `embedded/ci.sh` the host binary's, the firmware's and (through `toyrun
//! json`) the WASM module's.

use toyrun::{CHAINS, Fixed, ITERATIONS, PAIRS, Rate, SEED, Summary, TextBuf, write_report};

fn reference() -> Summary {
    toyrun::run(SEED, ITERATIONS).expect("the paper's settings are valid")
}

fn report(summary: &Summary) -> String {
    let mut text = String::new();
    write_report(&mut text, summary).expect("a String never fails");
    text
}

#[test]
fn prints_the_reference_report() {
    let text = report(&reference());
    print!("{text}");
    // Three header lines, a table head and P − 1 pairs, a table head and P levels,
    // buffer, final state, checksum.
    assert_eq!(text.lines().count(), 3 + 1 + PAIRS + 1 + CHAINS + 3);
    assert!(text.ends_with('\n'));
}

#[test]
fn same_seed_same_run() {
    assert_eq!(reference(), reference());
}

#[test]
fn another_seed_another_run() {
    let other = toyrun::run(SEED + 1, ITERATIONS).expect("valid");
    assert_ne!(other.checksum, reference().checksum);
}

#[test]
fn the_run_makes_sense() {
    let s = reference();
    assert_eq!(s.iterations, ITERATIONS);
    assert_eq!(s.window, 8, "the paper's window for P = 16, S = 0.4");
    assert!(
        s.stats.round_trips > 0,
        "no round trip in {ITERATIONS} iterations"
    );
    assert_eq!(s.stats.nonfinite_energies, 0);
    for (l, p) in s.pairs.iter().enumerate() {
        assert!(p.swaps > 0, "pair {l} never swapped");
        assert!(
            p.swaps <= p.attempts && p.attempts <= ITERATIONS,
            "pair {l}: {p:?}"
        );
    }
    // The paper's (Jacobi) ladder update keeps the ends and positive rates; its crowded
    // inner rates may be briefly out of order (see nrpt_core::adapt).
    assert_eq!((s.ladder[0], s.ladder[15]), (0.003, 0.6), "{:?}", s.ladder);
    assert!(
        s.ladder.iter().all(|&e| e > 0.0 && e < 1.0),
        "ladder: {:?}",
        s.ladder
    );
    assert!(s.buffer.is_finite() && s.buffer >= 0.0);
    assert!(s.final_target.iter().all(|x| x.is_finite()));
}

#[test]
fn report_fits_its_buffer() {
    let s = reference();
    let mut buf = TextBuf::<{ toyrun::REPORT_CAPACITY }>::new();
    write_report(&mut buf, &s).expect("the report fits REPORT_CAPACITY");
    assert_eq!(buf.as_str(), report(&s));
    let mut small = TextBuf::<64>::new();
    assert!(
        write_report(&mut small, &s).is_err(),
        "a full buffer must fail"
    );
}

#[test]
fn fixed_point_and_rates() {
    assert_eq!(format!("{}", Fixed(0.003, 6)), "0.003000");
    assert_eq!(format!("{}", Fixed(-1.25, 1)), "-1.3");
    assert_eq!(format!("{}", Fixed(-0.0000001, 3)), "0.000");
    assert_eq!(format!("{}", Fixed(2.5, 0)), "3");
    assert_eq!(format!("{:>8}", Fixed(-0.5, 2)), "   -0.50");
    assert_eq!(format!("{:>5}", Fixed(f64::NAN, 2)), "  nan");
    assert_eq!(format!("{}", Fixed(f64::NEG_INFINITY, 2)), "-inf");
    assert_eq!(format!("{}", Rate(1, 3)), "0.3333");
    assert_eq!(format!("{:>7}", Rate(2, 3)), " 0.6667");
    assert_eq!(format!("{}", Rate(5, 0)), "0.0000");
    assert_eq!(format!("{}", Rate(3, 3)), "1.0000");
}

#[test]
fn solver_numbers() {
    let w = nrpt_core::optimal::w_star(16, 0.4).expect("valid");
    assert!((w - 7.413_386_240_7).abs() < 1e-9, "W* = {w}");
    assert_eq!(nrpt_core::optimal::optimal_window(16, 0.4), Ok(7));
    assert_eq!(nrpt_core::optimal::paper_window(16, 0.4), Ok(8));
}
