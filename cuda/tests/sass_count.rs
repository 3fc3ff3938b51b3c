//! Warp instructions issued per chain-step by the persistent 2D kernels, counted from
//! their SASS for sm_90 in every math mode (`MathMode::ALL`), for the paper's 2D
//! configuration (P = 16 chains per ensemble, 512-thread blocks: 32 ensembles a block,
//! two a warp, a warp's 32 lanes the 32 chains it serves). Printed by
//! `scripts/sass-count.sh` (or `cargo test -p nrpt-cuda --features host-shims --test
//! sass_count -- --nocapture`: the team and warp widths are the kernels' own, from
//! `host_math`).
//!
//! Method, stated once here and in the book (docs/src/guide/speed.md):
//! 1. The kernels are compiled as a run compiles them (NVRTC, `kernels::compile_options`),
//!    once more with `-lineinfo`, and both assembled by `ptxas -arch=sm_90`; the two
//!    SASS listings of each kernel must be the same instructions (line information
//!    changes nothing), so the annotated one is the code that runs.
//! 2. `nvdisasm -c -gi` gives each instruction the line of the kernel body it comes
//!    from (outermost frame of its inlining chain). Comment markers in the kernel's
//!    iteration loop (`// sass-count: step`, `// sass-count: swap`,
//!    `// sass-count: end`) split it into the step phase, the swap phase (barriers,
//!    exchange, adaptation, counters, momentum reset) and loop control (the rest).
//! 3. The iteration loop is the largest natural loop of the kernel's control-flow
//!    graph. Inner loops are identified by their source line and get their trip counts
//!    for this configuration from a table (an inner loop not in the table fails the
//!    test). Predicated-off instructions count (a warp issues them).
//! 4. Three figures per part: worst case, every block of the loop body once per trip of
//!    the inner loops around it (every side of every branch: what a warp issues when
//!    its lanes take both sides); configuration, the same over the blocks this
//!    configuration can reach — code the kernels fence between `NRPT_OTHER_RULES();`
//!    and `// sass-count: other-rules end` (the Metropolis
//!    test, SEO's parity, the in-place ladder, temperatures that follow the ladder,
//!    momentum, SGD without noise, the SumModes target, the per-iteration flag record)
//!    never runs here, and neither does a block reached only through it — which bounds
//!    what a warp of this configuration issues whatever its lanes do (the fast-mode
//!    warp kernel must stay at or under 25); and least, the cheapest path from the
//!    loop's header back to it, outside the fences, that runs this configuration's
//!    work — it must pass through code of
//!    each of a list of source lines (`waypoints`: the 2D target's energy, the energy
//!    noise, the buffered swap test, a swap, an arrival, the Jacobi ladder, the buffer
//!    update) — with every other branch on its cheaper side. A warp issues at least
//!    that (more where its lanes diverge), and at most the configuration figure.
//!    Not counted: the bodies of subroutines the loop calls (IEEE division and square
//!    root slow paths, taken for denormal or extreme operands only; each call
//!    instruction is counted) and the fallback a `BRA.DIV` takes when a warp reaches a
//!    warp-wide shuffle diverged (the kernels reach their shuffles converged).
//! 5. Per chain-step = warp instructions per iteration / 32 (a warp's lanes are 32
//!    chains, and each takes one step per iteration).
//!
//! The implied cap on an H200 takes these figures, stated as assumptions: 132 SMs,
//! 4 warp schedulers per SM each issuing at most one warp instruction per cycle
//! (NVIDIA H100 Tensor Core GPU Architecture whitepaper: 132 SMs on the SXM5 part,
//! four processing blocks per SM with one warp scheduler each; the H200 is the same
//! GH100 chip), and a 1.98 GHz boost clock (the H100/H200 SXM boost clock in NVIDIA's
//! data sheets): 132 × 4 × 1.98·10⁹ = 1.045·10¹² warp instructions per second.

use std::path::{Path, PathBuf};
use std::process::Command;

use nrpt_cuda::MathMode;
use nrpt_cuda::kernels::{self, Kernel};

#[macro_use]
#[allow(dead_code)]
mod toolchain;
mod sass;
use toolchain::{ARCH, nvrtc_or_skip, report_skip};

/// The paper's 2D configuration.
const CHAINS: u32 = 16;
const BLOCK: u32 = 512;
const LANES: f64 = 32.0;
/// H200 (assumed, see the module comment): SMs × schedulers × boost clock.
const SMS: f64 = 132.0;
const SCHEDULERS: f64 = 4.0;
const CLOCK_HZ: f64 = 1.98e9;
/// Fast mode's target: warp instructions per chain-step of the warp kernel, at most.
const FAST_TARGET: f64 = 25.0;

/// A tool from PATH, or a skip (a failure under NRPT_REQUIRE_NVRTC or
/// NRPT_REQUIRE_SASS) that says how to get it.
fn tool(name: &str, test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        report_skip(
            &format!(
                "{test}: skipped: {name} not found on PATH (`source scripts/nvrtc-env.sh` \
                 installs the pinned ptxas and nvdisasm wheels and puts them there)"
            ),
            &["NRPT_REQUIRE_NVRTC", "NRPT_REQUIRE_SASS"],
        );
    }
    found
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?} did not start: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// `nvdisasm -c [-gi]` of `ptx` assembled for sm_90 in `dir`.
fn disassemble(
    ptxas: &Path,
    nvdisasm: &Path,
    dir: &Path,
    stem: &str,
    ptx: &str,
    lines: bool,
) -> String {
    let src = dir.join(format!("{stem}.ptx"));
    let bin = dir.join(format!("{stem}.cubin"));
    std::fs::write(&src, ptx).unwrap();
    run(Command::new(ptxas)
        .args(["-arch=sm_90"])
        .arg(&src)
        .arg("-o")
        .arg(&bin));
    let mut cmd = Command::new(nvdisasm);
    cmd.arg("-c");
    if lines {
        cmd.arg("-gi");
    }
    let text = run(cmd.arg(&bin));
    std::fs::write(dir.join(format!("{stem}.sass")), &text).unwrap();
    text
}

/// The line (1-based) of the program source that holds `marker` inside the body of
/// kernel `name`.
fn marker_line(source: &str, name: &str, marker: &str) -> u32 {
    let entry = format!("\n{name}(");
    let from = source
        .find(&entry)
        .unwrap_or_else(|| panic!("{name} not in the program source"));
    let at = source[from..]
        .find(marker)
        .unwrap_or_else(|| panic!("marker {marker:?} not in {name}"))
        + from;
    source[..at].matches('\n').count() as u32 + 1
}

/// An inner loop of the persistent kernels: its trip count in source iterations for
/// this configuration, and how to see how many source iterations one pass of its SASS
/// body runs when the compiler unrolled it: `(line text, opcode prefix, per
/// iteration)` — the body holds `per iteration` such instructions from that line for
/// each source iteration it covers.
struct InnerLoop {
    trips: f64,
    signature: Option<(&'static str, &'static str, usize)>,
}

/// The inner loops, by the source line of the loop (the text of an innermost line of
/// its latch).
fn inner_loop(text: &str) -> Option<InnerLoop> {
    let p = f64::from(CHAINS);
    let width = f64::from(nrpt_cuda::host_math::team_width(CHAINS, BLOCK));
    let warp = f64::from(nrpt_cuda::host_math::warp_width(CHAINS));
    let t = text.trim();
    let (trips, signature) =
        if t.contains("for (nrpt_u32 off = team->width / 2u; off > 0u; off /= 2u)") {
            // nrpt_team_sum: log₂ width shuffles.
            (
                width.log2(),
                Some(("v += __shfl_xor_sync(team->mask", "SHFL", 1)),
            )
        } else if t.contains("for (nrpt_u32 off = width / 2u; off > 0u; off /= 2u)") {
            // NrptWarpDevice::sum: log₂ W shuffles.
            (
                warp.log2(),
                Some((
                    "v += __shfl_xor_sync(0xffffffffu, v, off, width);",
                    "SHFL",
                    1,
                )),
            )
        } else if t.starts_with("for (nrpt_u32 j = 1u; j + 1u < P; ++j)") {
            // The warp kernel's in-place ladder: one round per inner level, two shuffles each.
            (
                p - 2.0,
                Some((
                    "RegD below = w.shfl(eta, down), above = w.shfl(eta, up);",
                    "SHFL",
                    2,
                )),
            )
        } else if t.starts_with("NRPT_TEAM_FOR(") {
            // Items ≤ P over `width` lanes (one pass for P ≤ width).
            ((p / width).ceil(), None)
        } else if t.starts_with("for (nrpt_u32 l = 1; l + 1u < P; ++l)") {
            // The ladder recurrence over the inner levels (Jacobi or in place): one store of
            // a rate per level.
            (p - 2.0, Some(("NRPT_AT(r->ladder, l, st) =", "ST", 1)))
        } else if t.starts_with("for (nrpt_u32 h = tau; h < G") {
            // A team's ensembles: one (G = 32 ensembles, 32 teams).
            (1.0, None)
        } else {
            return None;
        };
    Some(InnerLoop { trips, signature })
}

/// Source lines the configuration runs every iteration (see the module comment): an
/// instruction matches when a frame of its inlining chain is a line containing one of
/// these texts.
fn waypoints(kernel: Kernel) -> &'static [&'static str] {
    match kernel {
        Kernel::Persistent2d => &[
            "u = nrpt_modes2d_energy_sin(*x0, *x1, s0, s1);",
            "c->escale * nrpt_box_muller_f32(e0, e1).z0",
            "ind = finite && (eh + buf < ec);",
            "nrpt_swap_levels(r, q);",
            "nrpt_observe_arrival(&NRPT_AT(r->trips, rep, st), level, top, &arrivals);",
            "double from_below = below + nrpt_fmax(here - below, 0.0) * grow_below;",
            "*buffer = nrpt_adapt_buffer(",
        ],
        Kernel::Persistent2dWarp => &[
            "u = nrpt_modes2d_energy_sin(*x0, *x1, s0, s1);",
            "c->escale * nrpt_box_muller_f32(e0, e1).z0",
            "ind = finite && (eh + buf < ec);",
            "if (reset && w.r(partner, l) != l) {",
            "nrpt_observe_arrival(&me.trip, l, top, &arrivals);",
            "double from_below = b + nrpt_fmax(here - b, 0.0) * grow_below;",
            "me.buffer = nrpt_adapt_buffer(",
        ],
        other => panic!("no waypoints for {}", other.name()),
    }
}

/// The source lines `[first, end)` between each `NRPT_OTHER_RULES();` and the
/// `// sass-count: other-rules end` after it: code that the paper's 2D configuration
/// (buffered rule, DEO window, Jacobi ladder, SGD explorers with the merged noise, the
/// 25-mode target, no momentum, no per-iteration flag record) never runs, fenced in the
/// kernels' source (kernels/common.cuh; the test `fences` of the workspace's tests runs
/// the paper's configuration through the kernels' host build and finds no fence
/// entered).
fn other_rules(source: &str) -> Vec<(u32, u32)> {
    let mut fences = Vec::new();
    let mut open = None;
    for (n, line) in (1u32..).zip(source.lines()) {
        let t = line.trim();
        if t == "NRPT_OTHER_RULES();" {
            assert!(open.is_none(), "line {n}: other-rules fence opened twice");
            open = Some(n);
        } else if t == "// sass-count: other-rules end" {
            let a = open
                .take()
                .unwrap_or_else(|| panic!("line {n}: fence closed, not opened"));
            fences.push((a, n));
        }
    }
    assert!(open.is_none(), "an other-rules fence is never closed");
    assert!(
        !fences.is_empty(),
        "no other-rules fence in the kernels' source"
    );
    fences
}

/// Whether an instruction is one of a waypoint's.
type Waypoint<'a> = Box<dyn Fn(&sass::Instr) -> bool + 'a>;

struct Report {
    worst: sass::Counts,
    config: sass::Counts,
    least: sass::Counts,
    /// Barriers, shared-memory accesses and shuffles in the swap part.
    swap_ops: Vec<(String, usize)>,
    calls: usize,
    /// The step part's static instructions in each random-number function
    /// (name, instructions, inlined copies).
    step_rng: Vec<(&'static str, usize, usize)>,
}

/// Functions of the step whose inlined copies the report counts: name, the first line
/// of the definition, and a line + opcode that occurs exactly `per copy` times in each
/// copy.
const RNG_FUNCTIONS: [(&str, &str, &str, &str, usize); 2] = [
    (
        "Philox4x32-10",
        "NRPT_HD NrptBlock nrpt_philox(",
        "nrpt_u32 n0 = hi1 ^ c1 ^ k0;",
        "LOP3",
        10,
    ),
    (
        "Box-Muller",
        "NRPT_HD NrptPair nrpt_box_muller_f32(",
        "p.z0 = r * sc.c;",
        "FMUL",
        1,
    ),
];

/// Lines `[first, end)` of the function whose definition starts at the line holding
/// `head` (it ends where the next `NRPT_HD` definition starts).
fn function_lines(source: &str, head: &str) -> (u32, u32) {
    let at = source
        .find(head)
        .unwrap_or_else(|| panic!("{head:?} not in the program source"));
    let first = source[..at].matches('\n').count() as u32 + 1;
    let rest = &source[at + head.len()..];
    let next = rest.find("\nNRPT_HD ").map_or(rest.len(), |i| i);
    (first, first + rest[..next].matches('\n').count() as u32 + 1)
}

fn analyse(listing: &str, plain: &str, source: &str, kernel: Kernel) -> Report {
    let name = kernel.name();
    let f = sass::parse(listing, name).unwrap_or_else(|e| panic!("{e}"));
    let g = sass::parse(plain, name).unwrap_or_else(|e| panic!("{e}"));
    let a: Vec<&str> = f.instrs.iter().map(|i| i.text.as_str()).collect();
    let b: Vec<&str> = g.instrs.iter().map(|i| i.text.as_str()).collect();
    assert_eq!(
        a, b,
        "{name}: -lineinfo changed the SASS; the annotated listing is not the code that runs"
    );
    let blocks = sass::blocks(&f).unwrap_or_else(|e| panic!("{e}"));
    let loops = sass::loops(&blocks).unwrap_or_else(|e| panic!("{e}"));
    let size = |l: &sass::Loop| -> usize {
        l.body
            .iter()
            .map(|&x| blocks[x].end - blocks[x].start)
            .sum()
    };
    let main = loops
        .iter()
        .max_by_key(|l| size(l))
        .unwrap_or_else(|| panic!("{name}: no loop in the SASS"));
    let lines: Vec<&str> = source.lines().collect();
    let text_of = |line: u32| {
        lines
            .get(line.saturating_sub(1) as usize)
            .copied()
            .unwrap_or("")
    };
    let step = marker_line(source, name, "// sass-count: step");
    let swap = marker_line(source, name, "// sass-count: swap");
    let end = marker_line(source, name, "// sass-count: end");
    assert!(step < swap && swap < end, "{name}: markers out of order");
    let region = |i: &sass::Instr| -> String {
        if (step..swap).contains(&i.outer) {
            "step".into()
        } else if (swap..end).contains(&i.outer) {
            "swap".into()
        } else {
            "loop".into()
        }
    };
    let trips = |l: &sass::Loop| -> Result<f64, String> {
        let mut texts = Vec::new();
        for &latch in &l.latches {
            let last = &f.instrs[blocks[latch].end - 1];
            let t = text_of(last.inner);
            if let Some(inner) = inner_loop(t) {
                let Some((line, op, per)) = inner.signature else {
                    return Ok(inner.trips);
                };
                let copies = l
                    .body
                    .iter()
                    .flat_map(|&b| &f.instrs[blocks[b].start..blocks[b].end])
                    .filter(|i| {
                        i.opcode().starts_with(op)
                            && i.frames.iter().any(|&f| text_of(f).contains(line))
                    })
                    .count();
                if copies == 0 || copies % per != 0 {
                    return Err(format!(
                        "{name}: the loop of {:?} holds {copies} {op} of {line:?}, not a \
                         multiple of {per}",
                        t.trim()
                    ));
                }
                // Unrolled u times: ⌈trips / u⌉ passes (a remainder pass counted whole).
                let unroll = (copies / per) as f64;
                return Ok((inner.trips / unroll).ceil());
            }
            texts.push(format!(
                "line {}: {:?} ({})",
                last.inner,
                t.trim(),
                last.text
            ));
        }
        Err(format!(
            "{name}: an inner loop at {:#x} has no trip count in sass_count.rs's table; its \
             latches: {}",
            f.instrs[blocks[l.header].start].addr,
            texts.join("; ")
        ))
    };
    let wanted = waypoints(kernel);
    let tests: Vec<Waypoint> = wanted
        .iter()
        .map(|w| {
            let w = *w;
            let lines = &lines;
            Box::new(move |i: &sass::Instr| {
                i.frames.iter().any(|&l| {
                    lines
                        .get(l.saturating_sub(1) as usize)
                        .is_some_and(|t| t.contains(w))
                })
            }) as Waypoint
        })
        .collect();
    let required: Vec<&dyn Fn(&sass::Instr) -> bool> = tests.iter().map(|b| b.as_ref()).collect();
    let fences = other_rules(source);
    let excluded = |i: &sass::Instr| {
        i.frames
            .iter()
            .any(|&l| fences.iter().any(|&(a, b)| (a..b).contains(&l)))
    };
    let sass::LoopCounts {
        worst,
        config,
        least,
    } = sass::count_loop(
        &f, &blocks, &loops, main, &trips, &region, &required, &excluded,
    )
    .unwrap_or_else(|e| panic!("{name}: {e} (waypoints {wanted:?})"));
    // What the swap part does that the warp design removes.
    let mut swap_ops = Vec::new();
    let mut calls = 0;
    for &blk in &main.body {
        for i in &f.instrs[blocks[blk].start..blocks[blk].end] {
            let op = i.opcode();
            if op.starts_with("CALL") {
                calls += 1;
            }
            if region(i) != "swap" {
                continue;
            }
            let base = op.split('.').next().unwrap_or("");
            if matches!(base, "BAR" | "LDS" | "STS" | "ATOMS" | "SHFL" | "WARPSYNC") {
                match swap_ops
                    .iter_mut()
                    .find(|(o, _): &&mut (String, usize)| o == base)
                {
                    Some((_, n)) => *n += 1,
                    None => swap_ops.push((base.to_string(), 1)),
                }
            }
        }
    }
    swap_ops.sort();
    let mut step_rng = Vec::new();
    for (label, head, line, op, per) in RNG_FUNCTIONS {
        let (a, b) = function_lines(source, head);
        let (mut n, mut marks) = (0, 0);
        for &blk in &main.body {
            for i in &f.instrs[blocks[blk].start..blocks[blk].end] {
                if region(i) != "step" || !i.frames.iter().any(|l| (a..b).contains(l)) {
                    continue;
                }
                n += 1;
                if i.opcode().starts_with(op) && text_of(i.inner).contains(line) {
                    marks += 1;
                }
            }
        }
        step_rng.push((label, n, marks / per));
    }
    // The warp kernel's claim: its swap phase touches no shared memory and waits at no
    // barrier (shuffles only), and nothing in its loop spills to local memory.
    if kernel == Kernel::Persistent2dWarp {
        assert!(
            swap_ops.iter().all(|(o, _)| o == "SHFL"),
            "{name}: the swap phase has {swap_ops:?}"
        );
        let local = main
            .body
            .iter()
            .flat_map(|&b| &f.instrs[blocks[b].start..blocks[b].end])
            .filter(|i| i.opcode().starts_with("LDL") || i.opcode().starts_with("STL"))
            .count();
        assert_eq!(
            local, 0,
            "{name}: local-memory accesses in the iteration loop"
        );
    }
    // Sanity: both phases are inside the loop, and the least path is no longer than
    // the worst case, part by part.
    assert!(
        worst.get("step") > 0.0 && worst.get("swap") > 0.0,
        "{name}: {worst:?}"
    );
    for r in ["step", "swap", "loop"] {
        assert!(
            least.get(r) <= config.get(r) && config.get(r) <= worst.get(r),
            "{name} {r}: not least {least:?} <= configuration {config:?} <= worst {worst:?}"
        );
    }
    Report {
        worst,
        config,
        least,
        swap_ops,
        calls,
        step_rng,
    }
}

#[test]
fn warp_instructions_per_chain_step() {
    let test = "warp_instructions_per_chain_step";
    if !nvrtc_or_skip(test) {
        return;
    }
    let (Some(ptxas), Some(nvdisasm)) = (tool("ptxas", test), tool("nvdisasm", test)) else {
        return;
    };
    let keep = std::env::var_os("NRPT_SASS_KEEP").map(PathBuf::from);
    let dir = keep
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("nrpt-sass-{}", std::process::id())));
    std::fs::create_dir_all(&dir).unwrap();
    let source = kernels::program_source();
    let peak = SMS * SCHEDULERS * CLOCK_HZ;
    report!(
        "SASS per chain-step of the persistent 2D kernels, sm_90, P = {CHAINS}, blocks of \
         {BLOCK} threads (swap team width {}), one warp = 32 chains. Columns: warp \
         instructions per chain-step, worst case (every branch side of every rule's code) / \
         configuration (every branch side of the code this configuration reaches) / least \
         (cheapest path doing the configuration's work).",
        nrpt_cuda::host_math::team_width(CHAINS, BLOCK)
    );
    report!(
        "H200 cap (assumed {SMS} SMs x {SCHEDULERS} schedulers x {:.2} GHz = {:.3e} warp \
         instructions/s) = that / instructions per chain-step.",
        CLOCK_HZ / 1e9,
        peak
    );
    // Each mode's two compilations (plain and with line info), ptxas and nvdisasm run on
    // their own thread: NVRTC and the tools are most of this test's time.
    let listings: Vec<(MathMode, String, String)> = std::thread::scope(|scope| {
        let jobs: Vec<_> = MathMode::ALL
            .into_iter()
            .map(|mode| {
                let (ptxas, nvdisasm, dir, source) = (&ptxas, &nvdisasm, &dir, &source);
                scope.spawn(move || {
                    let ptx = kernels::compile_ptx(ARCH, mode).unwrap_or_else(|e| panic!("{e}"));
                    let mut options = kernels::compile_options(ARCH, mode);
                    options.push("-lineinfo".into());
                    let ptx_lines =
                        nrpt_cuda::ptx_cache::nvrtc_compile("nrpt_kernels.cu", source, &options)
                            .unwrap_or_else(|e| panic!("{e}"));
                    let plain =
                        disassemble(ptxas, nvdisasm, dir, &format!("{mode:?}"), &ptx, false);
                    let listing = disassemble(
                        ptxas,
                        nvdisasm,
                        dir,
                        &format!("{mode:?}.lines"),
                        &ptx_lines,
                        true,
                    );
                    (mode, plain, listing)
                })
            })
            .collect();
        jobs.into_iter()
            .map(|j| j.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    for (mode, plain, listing) in listings {
        for kernel in [Kernel::Persistent2d, Kernel::Persistent2dWarp] {
            let r = analyse(&listing, &plain, &source, kernel);
            let per = |c: &sass::Counts, part: &str| c.get(part) / LANES;
            report!(
                "{mode:?} {:<18} step {:5.1} / {:5.1} / {:4.1}  swap {:5.1} / {:5.1} / {:4.1}  \
                 loop {:3.1} / {:3.1} / {:3.1}  total {:5.1} / {:5.1} / {:4.1}  \
                 -> cap {:.2e} / {:.2e} / {:.2e} chain-steps/s",
                kernel.name(),
                per(&r.worst, "step"),
                per(&r.config, "step"),
                per(&r.least, "step"),
                per(&r.worst, "swap"),
                per(&r.config, "swap"),
                per(&r.least, "swap"),
                per(&r.worst, "loop"),
                per(&r.config, "loop"),
                per(&r.least, "loop"),
                r.worst.total() / LANES,
                r.config.total() / LANES,
                r.least.total() / LANES,
                peak / (r.worst.total() / LANES),
                peak / (r.config.total() / LANES),
                peak / (r.least.total() / LANES),
            );
            report!(
                "      swap part: {} ; subroutine calls in the loop (bodies not counted): {}",
                r.swap_ops
                    .iter()
                    .map(|(o, n)| format!("{n} {o}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                r.calls
            );
            let mut saving = 0.0;
            let rng: Vec<String> = r
                .step_rng
                .iter()
                .map(|&(label, n, copies)| {
                    let each = n as f64 / copies.max(1) as f64;
                    saving += each;
                    format!("{label} {n} instructions in {copies} inlined copies (~{each:.0} each)")
                })
                .collect();
            report!(
                "      step part: {} (~{:.1} per chain-step)",
                rng.join(", "),
                saving / LANES
            );
            // The fast-mode target: the warp kernel issues at most 25 warp instructions
            // per chain-step in this configuration, every branch side it can reach
            // counted (subroutine bodies aside, see the module comment).
            if mode == MathMode::Fast && kernel == Kernel::Persistent2dWarp {
                let bound = r.config.total() / LANES;
                assert!(
                    bound <= FAST_TARGET,
                    "fast-mode warp kernel: {bound:.1} warp instructions per chain-step, \
                     over the target of {FAST_TARGET}"
                );
            }
        }
    }
    if keep.is_some() {
        report!("listings kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
