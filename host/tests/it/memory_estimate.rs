//! The memory estimate (`engine::memory`) against the peak resident memory of real
//! commands: every command that states an estimate (`memory_estimate_bytes` in its
//! `--json` output, checked against `--max-memory` before any work) runs here with one
//! and with two worker threads, and its peak (`peak_memory_bytes` of the same output:
//! the process's own `VmHWM`) may exceed the estimate by at most 10 %. Each case is
//! sized so that the buffers the estimate counts dominate the process itself (about
//! 10 MiB), and each stresses one part: the replica lanes' scratch of every thread,
//! kept samples and their outputs, traces, checkpoints written and read back, the
//! machine-size product of `bench --target classifier`, the index processes of `bench --model
//! bernoulli`. The estimate may not be grossly pessimistic either: at most twice the
//! peak. A special file read under `--allow-special-files` must stay within its cap.
//!
//! Run with `--nocapture` to see every estimate beside its peak.

use crate::common;

use std::path::Path;
use std::process::Stdio;

/// A peak may exceed the estimate by this factor at most.
const TOLERANCE: f64 = 1.10;
/// The estimate may exceed the peak by this factor at most.
const PESSIMISM: f64 = 2.0;
/// The worker threads every case runs with.
const THREADS: [&str; 2] = ["1", "2"];
const MIB: f64 = 1048576.0;

/// What a child did: its exit status, its output, its peak resident memory in bytes.
struct Measured {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    peak: u64,
}

/// Runs `nrpt ARGS` in `dir`; the peak is the child's `ru_maxrss` as `wait4` reports
/// it. Linux keeps there the larger of the child's peak and the resident memory of the
/// process that spawned it (this test process, which the kernel records when the child
/// replaces it by nrpt): an upper bound of the child's peak, as a cap's check needs; the
/// estimates are checked against the process's own figure, `peak_memory_bytes`.
fn measure(dir: &Path, args: &[&str]) -> Measured {
    let (out, err) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
    let child = common::command()
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(err.try_clone().unwrap())
        .spawn()
        .expect("the nrpt binary starts");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our child, not waited for by anyone else (the `Child` is
        // dropped without waiting); `status` and `usage` are valid for writing.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "wait4: {e}");
    }
    drop(child);
    let read = |mut f: std::fs::File| {
        use std::io::{Read, Seek};
        f.rewind().unwrap();
        let mut s = String::new();
        f.read_to_string(&mut s).unwrap();
        s
    };
    Measured {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        stdout: read(out),
        stderr: read(err),
        // Linux reports kibibytes.
        peak: usage.ru_maxrss as u64 * 1024,
    }
}

/// Runs `nrpt ARGS --json --threads T` in `dir` for every thread count (after
/// `prepare`) and checks the peak the command printed against its estimate; returns
/// (estimate, peak) per count.
fn estimate_holds_after(
    dir: &Path,
    what: &str,
    args: &[&str],
    prepare: &dyn Fn(),
) -> Vec<(u64, u64)> {
    THREADS
        .iter()
        .map(|threads| {
            let mut full = args.to_vec();
            full.extend(["--json", "--threads", threads]);
            prepare();
            let m = measure(dir, &full);
            assert_eq!(m.code, Some(0), "{what}: {full:?}: {}", m.stderr);
            let line = m.stdout.lines().last().unwrap_or_default();
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}", m.stdout));
            let estimate = common::number(&v, "memory_estimate_bytes") as u64;
            let peak = common::number(&v, "peak_memory_bytes") as u64;
            let (e, p) = (estimate as f64, peak as f64);
            common::report(&format!(
                "{what}, {threads} thread(s): estimate {:.1} MiB, peak {:.1} MiB ({:.2}×)",
                e / MIB,
                p / MIB,
                e / p
            ));
            assert!(
                p <= TOLERANCE * e,
                "{what}, {threads} thread(s): peak {:.1} MiB above the estimate {:.1} MiB \
                 by more than 10 %",
                p / MIB,
                e / MIB
            );
            assert!(
                e <= PESSIMISM * p,
                "{what}, {threads} thread(s): estimate {:.1} MiB more than twice the peak \
                 {:.1} MiB",
                e / MIB,
                p / MIB
            );
            (estimate, peak)
        })
        .collect()
}

/// [`estimate_holds_after`] with nothing to prepare.
fn estimate_holds(dir: &Path, what: &str, args: &[&str]) -> Vec<(u64, u64)> {
    estimate_holds_after(dir, what, args, &|| {})
}

/// The replica lanes of sum-modes hold 128 bytes per coordinate in every thread that
/// steps an ensemble: 64 MiB at D = 2¹⁹, once per thread.
#[test]
fn every_threads_scratch_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let runs = estimate_holds(
        dir.path(),
        "sum-modes at D = 2^19",
        &[
            "run",
            "--target",
            "sum-modes",
            "--dim",
            "524288",
            "-e",
            "2",
            "-p",
            "2",
            "-n",
            "4",
            "--thin",
            "0",
            "-q",
            "-o",
            "out",
        ],
    );
    // The second thread's scratch is in the estimate (and in the peak).
    assert!(runs[1].0 >= runs[0].0 + (64 << 20), "{runs:?}");
    estimate_holds(
        dir.path(),
        "bench sum-modes at D = 2^18",
        &[
            "bench",
            "--target",
            "sum-modes",
            "--dim",
            "262144",
            "-e",
            "2",
            "-p",
            "2",
            "-n",
            "4",
        ],
    );
}

/// Kept samples: the records, their merged copy, the outputs' tables, samples.npy
/// (D = 4096, 25 MiB of samples); samples.csv (D = 32); the traces of 512 chains.
#[test]
fn records_and_outputs_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    estimate_holds(
        dir.path(),
        "samples, D = 4096",
        &[
            "run", "--target", "mixture", "--dim", "4096", "-e", "4", "-p", "2", "-n", "400",
            "--thin", "1", "--warmup", "0", "-q", "-o", "out", "--force",
        ],
    );
    estimate_holds(
        dir.path(),
        "samples.csv, D = 32",
        &[
            "run",
            "--target",
            "sum-modes",
            "--dim",
            "32",
            "-e",
            "64",
            "-n",
            "1000",
            "--thin",
            "1",
            "-q",
            "-o",
            "out",
            "--force",
        ],
    );
    estimate_holds(
        dir.path(),
        "traces of 512 chains",
        &[
            "run", "-p", "512", "-e", "16", "-n", "800", "-q", "-o", "out", "--force",
        ],
    );
}

/// A run with checkpoints holds its state and its encoding; a resumed run reads the
/// file and decodes it. Momentum SGD on the mixture at D = 2¹⁸ (no lanes' scratch):
/// 32 MiB of states and momenta, as much again encoded.
#[test]
fn checkpoints_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let run = [
        "run",
        "--target",
        "mixture",
        "--explorer",
        "msgd",
        "--dim",
        "262144",
        "-e",
        "1",
        "-p",
        "16",
        "-n",
        "6",
        "--thin",
        "0",
        "-q",
        "-o",
        "out",
    ];
    let mut with = run.to_vec();
    with.extend(["--checkpoint-every", "2", "--force"]);
    estimate_holds(dir.path(), "checkpoints written", &with);
    // A checkpoint at iteration 4 of that run, as the command writes it, resumed (a
    // resumed run removes it when it is done: written again for each).
    let out = dir.path().join("resumed");
    let mut args = run.to_vec();
    args[run.len() - 1] = out.to_str().unwrap();
    let cli = nrpt::cli::try_parse_from(std::iter::once("nrpt").chain(args)).unwrap();
    let nrpt::cli::Command::Run(a) = &cli.command else {
        unreachable!("a run command")
    };
    let config = nrpt::commands::run::load_config(a).unwrap();
    let job = config.job(config.record()).unwrap();
    let state = nrpt_sampling::engine::cpu::CpuBackend {
        threads: Some(1),
        ..Default::default()
    }
    .run_from(&job, None, 4, &nrpt_sampling::engine::unobserved)
    .unwrap();
    let bytes = nrpt_studies::checkpoint::encode(&nrpt_studies::checkpoint::Checkpoint {
        config,
        inputs: Vec::new(),
        every: 2,
        state,
    })
    .unwrap();
    let path = nrpt_studies::checkpoint::path_for(&out);
    estimate_holds_after(
        dir.path(),
        "checkpoint resumed",
        &["run", "--resume", out.to_str().unwrap(), "-q"],
        &|| std::fs::write(&path, &bytes).unwrap(),
    );
}

/// `bench --target classifier` measures the machine with an n × n × n product before the run:
/// three 9 MiB matrices at n = 1536. `bench --target bernoulli` holds its index
/// processes: with the SIMD-lanes simulator 50 MiB for 10⁵ ensembles of 64 chains, with
/// the bit-sliced one (64 ensembles per word) 60 MiB for 10⁶.
#[test]
fn every_bench_model_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    estimate_holds(
        dir.path(),
        "bench mlp, machine size 1536",
        &[
            "bench",
            "--target",
            "classifier",
            "-e",
            "1",
            "-p",
            "2",
            "-n",
            "2",
            "--hidden",
            "16",
            "--machine-size",
            "1536",
            "--backend",
            "cpu",
        ],
    );
    estimate_holds(
        dir.path(),
        "bench bernoulli, lanes",
        &[
            "bench",
            "--target",
            "bernoulli",
            "--simulator",
            "lanes",
            "-e",
            "100000",
            "-p",
            "64",
            "-n",
            "10",
        ],
    );
    estimate_holds(
        dir.path(),
        "bench bernoulli, bitsliced",
        &[
            "bench",
            "--target",
            "bernoulli",
            "-e",
            "1000000",
            "-p",
            "64",
            "-n",
            "10",
        ],
    );
}

/// A device read as a checkpoint under `--allow-special-files` is read up to its cap
/// (--max-memory), refused past it, and never held beyond it (a growing buffer once
/// doubled past the cap: twice the cap resident).
#[test]
fn special_files_are_read_within_their_cap() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("out.checkpoint")).unwrap();
    let cap = 128u64 << 20;
    let m = measure(
        dir.path(),
        &[
            "--max-memory",
            "128M",
            "--allow-special-files",
            "run",
            "--resume",
            "out",
        ],
    );
    assert_eq!(m.code, Some(2), "{}", m.stderr);
    assert!(m.stderr.contains("larger than 128.0 MiB"), "{}", m.stderr);
    let bound = cap + nrpt_sampling::engine::memory::PROCESS_BYTES;
    common::report(&format!(
        "/dev/zero as a checkpoint under --max-memory 128M: peak {:.1} MiB, cap and process {:.1} MiB",
        m.peak as f64 / MIB,
        bound as f64 / MIB
    ));
    assert!(
        m.peak as f64 <= TOLERANCE * bound as f64,
        "peak {} B for a cap of {cap} B",
        m.peak
    );
}

/// What is not run here is refused before any work when its estimate is too large,
/// naming the parts and the flags to lower: exact tempering's buffers (one ensemble
/// per thread), and the reproduction's runs, which run side by side.
#[test]
fn other_estimates_refuse_what_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    for (args, words) in [
        (
            &[
                "--max-memory",
                "64M",
                "run",
                "--target",
                "gaussian-path",
                "--dim",
                "1048576",
                "-e",
                "2",
                "-p",
                "16",
                "-o",
                "g",
            ][..],
            &["chain states", "--dim"][..],
        ),
        (
            &[
                "--max-memory",
                "256M",
                "reproduce",
                "-e",
                "300",
                "-n",
                "20000",
                "-o",
                "r",
            ],
            &["tempering runs side by side", "--ensembles"],
        ),
        (
            &[
                "--max-memory",
                "64M",
                "bench",
                "--target",
                "classifier",
                "--machine-size",
                "4096",
                "--backend",
                "cpu",
            ],
            &["machine-size product", "--machine-size"],
        ),
    ] {
        let m = measure(dir.path(), args);
        assert_eq!(m.code, Some(2), "{args:?}: {}", m.stderr);
        for w in words.iter().chain(&["--max-memory"]) {
            assert!(m.stderr.contains(w), "{args:?}: no `{w}` in {}", m.stderr);
        }
    }
}
