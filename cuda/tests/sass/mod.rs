//! A reader of `nvdisasm -c -gi` output: one function's SASS with the source line of
//! every instruction (innermost and outermost frame of its inlining chain), its basic
//! blocks, its natural loops, and the instructions a warp issues in one iteration of
//! a chosen loop, counted statically (see `count_loop`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// One SASS instruction.
#[derive(Clone, Debug)]
pub struct Instr {
    pub addr: u32,
    /// The instruction as printed, predicate included, without the trailing ` ;`.
    pub text: String,
    /// Source line of the innermost frame (the code written), 0 if none.
    pub inner: u32,
    /// Source line of the outermost frame (the line of the kernel's own body that the
    /// inlined code was called from), 0 if none.
    pub outer: u32,
    /// Every frame's line, innermost first (the call sites of the inlined functions).
    pub frames: Vec<u32>,
}

impl Instr {
    /// The opcode with its modifiers (`BRA.DIV`, `SHFL.BFLY`), predicate dropped.
    pub fn opcode(&self) -> &str {
        let t = self.text.trim();
        let t = if t.starts_with('@') {
            t.split_once(' ').map_or("", |(_, rest)| rest.trim_start())
        } else {
            t
        };
        t.split_whitespace().next().unwrap_or("")
    }

    fn predicated(&self) -> bool {
        let t = self.text.trim();
        t.starts_with('@') && !t.starts_with("@PT ")
    }

    /// The label of a `` `(.L_x_N) `` operand, if any.
    fn label(&self) -> Option<&str> {
        let i = self.text.find("`(.L")?;
        let rest = &self.text[i + 2..];
        rest.split(')').next()
    }
}

/// One function's SASS, in address order, with its labels.
#[derive(Debug)]
pub struct Function {
    pub instrs: Vec<Instr>,
    pub labels: HashMap<String, usize>,
}

/// Parses the section `.text.NAME` of `nvdisasm -c [-gi]` output.
pub fn parse(listing: &str, name: &str) -> Result<Function, String> {
    let start = format!(".text.{name}:");
    let mut lines = listing.lines().skip_while(|l| l.trim() != start);
    if lines.next().is_none() {
        return Err(format!("no section .text.{name} in the nvdisasm listing"));
    }
    let mut instrs = Vec::new();
    let mut labels = HashMap::new();
    // The line-info comments before an instruction: innermost first.
    let mut pending: Vec<(u32, Option<u32>)> = Vec::new();
    let (mut inner, mut outer) = (0u32, 0u32);
    let mut frames: Vec<u32> = Vec::new();
    for line in lines {
        let t = line.trim();
        if t.starts_with("//--------") || t.starts_with(".section") {
            break;
        }
        if let Some(rest) = t.strip_prefix("//## File ") {
            pending.push(parse_line_info(rest)?);
            continue;
        }
        if let Some(label) = t.strip_suffix(':')
            && label.starts_with(".L")
        {
            labels.insert(label.to_string(), instrs.len());
            continue;
        }
        let Some(rest) = t.strip_prefix("/*") else {
            continue;
        };
        let Some((addr, body)) = rest.split_once("*/") else {
            continue;
        };
        let addr = u32::from_str_radix(addr.trim(), 16)
            .map_err(|e| format!("bad address in {t:?}: {e}"))?;
        let body = body.trim().trim_end_matches(';').trim().to_string();
        if !pending.is_empty() {
            inner = pending[0].0;
            // The chain ends with the outermost frame's own line (no caller).
            let last = pending[pending.len() - 1];
            outer = last.1.unwrap_or(last.0);
            frames = pending.iter().map(|p| p.0).collect();
            frames.extend(last.1);
            pending.clear();
        }
        instrs.push(Instr {
            addr,
            text: body,
            inner,
            outer,
            frames: frames.clone(),
        });
    }
    if instrs.is_empty() {
        return Err(format!("section .text.{name} holds no instruction"));
    }
    Ok(Function { instrs, labels })
}

/// `"FILE", line N[ inlined at "FILE", line M]`.
fn parse_line_info(rest: &str) -> Result<(u32, Option<u32>), String> {
    let num = |s: &str| -> Result<u32, String> {
        let s = s.trim();
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        digits
            .parse()
            .map_err(|e| format!("bad line number in {rest:?}: {e}"))
    };
    let mut parts = rest.split(", line ");
    let _file = parts.next();
    let here = num(parts.next().ok_or_else(|| format!("no line in {rest:?}"))?)?;
    let caller = match parts.next() {
        Some(s) => Some(num(s)?),
        None => None,
    };
    Ok((here, caller))
}

/// A basic block: instructions `start..end` of the function.
#[derive(Clone, Debug)]
pub struct Block {
    pub start: usize,
    pub end: usize,
    pub succs: Vec<usize>,
}

/// Basic blocks and their edges. `BRA.DIV` (taken only when the warp has diverged
/// before a warp-wide operation: the shuffles' fallback) is counted as not taken;
/// `CALL` falls through (its subroutine is not part of the caller's blocks).
pub fn blocks(f: &Function) -> Result<Vec<Block>, String> {
    let n = f.instrs.len();
    let target = |i: &Instr| -> Result<Option<usize>, String> {
        match i.label() {
            Some(l) => f
                .labels
                .get(l)
                .copied()
                .map(Some)
                .ok_or_else(|| format!("label {l} of {:?} not found", i.text)),
            None => Ok(None),
        }
    };
    let mut leader = BTreeSet::new();
    leader.insert(0usize);
    for (k, i) in f.instrs.iter().enumerate() {
        let op = i.opcode();
        let base = op.split('.').next().unwrap_or("");
        match base {
            "BRA" if op != "BRA.DIV" => {
                if let Some(t) = target(i)? {
                    leader.insert(t);
                }
                leader.insert(k + 1);
            }
            "EXIT" | "RET" => {
                leader.insert(k + 1);
            }
            "BRX" | "JMX" | "JMP" => {
                return Err(format!("indirect branch {:?}: not handled", i.text));
            }
            _ => {}
        }
    }
    leader.retain(|&k| k < n);
    let starts: Vec<usize> = leader.into_iter().collect();
    let block_of: HashMap<usize, usize> = starts.iter().enumerate().map(|(b, &s)| (s, b)).collect();
    let mut out = Vec::new();
    for (b, &s) in starts.iter().enumerate() {
        let e = starts.get(b + 1).copied().unwrap_or(n);
        let last = &f.instrs[e - 1];
        let op = last.opcode();
        let base = op.split('.').next().unwrap_or("");
        let mut succs = Vec::new();
        let fall = (e < n).then(|| block_of[&e]);
        match base {
            "BRA" if op != "BRA.DIV" => {
                let t =
                    target(last)?.ok_or_else(|| format!("BRA without a label: {:?}", last.text))?;
                succs.push(block_of[&t]);
                // `@P BRA` or `BRA P, target` (branch on a second predicate).
                let conditional = last.predicated()
                    || last
                        .text
                        .split_once("BRA")
                        .is_some_and(|(_, r)| r.trim_start().starts_with(['P', '!']));
                if conditional && let Some(fb) = fall {
                    succs.push(fb);
                }
            }
            "EXIT" | "RET" => {
                if last.predicated()
                    && let Some(fb) = fall
                {
                    succs.push(fb);
                }
            }
            _ => succs.extend(fall),
        }
        succs.dedup();
        out.push(Block {
            start: s,
            end: e,
            succs,
        });
    }
    Ok(out)
}

/// Immediate dominators (Cooper, Harvey and Kennedy), entry block 0; unreachable
/// blocks get `None`.
fn dominators(blocks: &[Block]) -> Vec<Option<usize>> {
    let n = blocks.len();
    // Reverse postorder.
    let mut order = Vec::new();
    let mut seen = vec![false; n];
    let mut stack = vec![(0usize, 0usize)];
    seen[0] = true;
    while let Some((b, i)) = stack.pop() {
        if i < blocks[b].succs.len() {
            stack.push((b, i + 1));
            let s = blocks[b].succs[i];
            if !seen[s] {
                seen[s] = true;
                stack.push((s, 0));
            }
        } else {
            order.push(b);
        }
    }
    order.reverse();
    let mut rpo = vec![usize::MAX; n];
    for (k, &b) in order.iter().enumerate() {
        rpo[b] = k;
    }
    let mut preds = vec![Vec::new(); n];
    for (b, blk) in blocks.iter().enumerate() {
        for &s in &blk.succs {
            preds[s].push(b);
        }
    }
    let mut idom: Vec<Option<usize>> = vec![None; n];
    idom[0] = Some(0);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().skip(1) {
            let mut new: Option<usize> = None;
            for &p in &preds[b] {
                if idom[p].is_none() {
                    continue;
                }
                new = Some(match new {
                    None => p,
                    Some(mut a) => {
                        let mut c = p;
                        while a != c {
                            while rpo[a] > rpo[c] {
                                a = idom[a].unwrap_or(0);
                            }
                            while rpo[c] > rpo[a] {
                                c = idom[c].unwrap_or(0);
                            }
                        }
                        a
                    }
                });
            }
            if new.is_some() && idom[b] != new {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom
}

/// A natural loop: its header block, the blocks of its body (header included) and
/// the blocks whose edge to the header closes it.
#[derive(Clone, Debug)]
pub struct Loop {
    pub header: usize,
    pub body: BTreeSet<usize>,
    pub latches: Vec<usize>,
}

/// The natural loops (back edges: an edge to a block that dominates its source), one
/// per header. A jump backwards that is no back edge (the divergent-shuffle fallback
/// returning into its loop) makes no loop.
pub fn loops(blocks: &[Block]) -> Result<Vec<Loop>, String> {
    let idom = dominators(blocks);
    let dominates = |a: usize, mut b: usize| -> bool {
        loop {
            if a == b {
                return true;
            }
            match idom[b] {
                Some(d) if d != b => b = d,
                _ => return false,
            }
        }
    };
    let mut preds = vec![Vec::new(); blocks.len()];
    for (b, blk) in blocks.iter().enumerate() {
        for &s in &blk.succs {
            preds[s].push(b);
        }
    }
    let mut by_header: BTreeMap<usize, Loop> = BTreeMap::new();
    for (b, blk) in blocks.iter().enumerate() {
        if idom[b].is_none() {
            continue;
        }
        for &h in &blk.succs {
            if dominates(h, b) {
                let l = by_header.entry(h).or_insert_with(|| Loop {
                    header: h,
                    body: BTreeSet::from([h]),
                    latches: Vec::new(),
                });
                l.latches.push(b);
                let mut work = vec![b];
                while let Some(x) = work.pop() {
                    if l.body.insert(x) {
                        work.extend(preds[x].iter().copied());
                    }
                }
            }
        }
    }
    Ok(by_header.into_values().collect())
}

/// Instructions of one iteration of a loop, by region.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    pub by_region: BTreeMap<String, f64>,
}

impl Counts {
    pub fn total(&self) -> f64 {
        self.by_region.values().sum()
    }
    pub fn get(&self, r: &str) -> f64 {
        self.by_region.get(r).copied().unwrap_or(0.0)
    }
    fn add(&mut self, r: &str, n: f64) {
        *self.by_region.entry(r.to_string()).or_insert(0.0) += n;
    }
}

/// The three counts of one iteration of a loop ([`count_loop`]).
pub struct LoopCounts {
    /// Every block of the body.
    pub worst: Counts,
    /// Every block the configuration can reach.
    pub config: Counts,
    /// The cheapest path doing the configuration's work.
    pub least: Counts,
}

/// The count of one iteration of loop `main`: `worst` counts every block of its body
/// once per trip of the inner loops around it (every side of every branch, as a warp
/// whose lanes take both sides issues them); `config` counts the same way the blocks
/// that lie on some path from the header back to it that avoids code of other
/// configurations (a block all of whose instructions `excluded` marks: it never runs
/// in this configuration, nor does what only it leads to); `least` is the cheapest such
/// path that passes through an instruction of each of `required` (the work the
/// configuration does; every other branch on its cheaper side), inner loops at their
/// trip counts. `trips(loop)` gives each inner loop's trip count; `region(instr)` names
/// the part an instruction belongs to; `required[i](instr)` tells whether an
/// instruction is one of waypoint i's.
#[allow(clippy::too_many_arguments)]
pub fn count_loop(
    f: &Function,
    blocks: &[Block],
    all: &[Loop],
    main: &Loop,
    trips: &dyn Fn(&Loop) -> Result<f64, String>,
    region: &dyn Fn(&Instr) -> String,
    required: &[&dyn Fn(&Instr) -> bool],
    excluded: &dyn Fn(&Instr) -> bool,
) -> Result<LoopCounts, String> {
    // Multiplicity of each block: the product of the trip counts of the inner loops
    // that hold it.
    let mut mult: HashMap<usize, f64> = main.body.iter().map(|&b| (b, 1.0)).collect();
    for l in all {
        if l.header == main.header || !main.body.contains(&l.header) {
            continue;
        }
        if !l.body.is_subset(&main.body) {
            return Err(format!(
                "inner loop at {:#x} leaves the main loop",
                f.instrs[blocks[l.header].start].addr
            ));
        }
        let t = trips(l)?;
        for b in &l.body {
            *mult.get_mut(b).expect("in the main body") *= t;
        }
    }
    let block_counts = |b: usize| -> Counts {
        let mut c = Counts::default();
        for i in &f.instrs[blocks[b].start..blocks[b].end] {
            c.add(&region(i), mult[&b]);
        }
        c
    };
    let mut worst = Counts::default();
    for &b in &main.body {
        for (r, n) in block_counts(b).by_region {
            worst.add(&r, n);
        }
    }
    // Blocks of other configurations' code only, and the blocks reachable from the
    // header and reaching a latch without passing one (edges back to the header end a
    // path; inner loops' back edges are followed).
    let other: HashSet<usize> = main
        .body
        .iter()
        .copied()
        .filter(|&b| {
            let code = &f.instrs[blocks[b].start..blocks[b].end];
            !code.is_empty() && code.iter().all(excluded)
        })
        .collect();
    if other.contains(&main.header) {
        return Err("the loop's header is marked as other configurations' code".into());
    }
    let inside = |b: usize, s: usize| -> bool {
        main.body.contains(&s) && s != main.header && !other.contains(&s) && !other.contains(&b)
    };
    let mut from_header: HashSet<usize> = HashSet::from([main.header]);
    let mut stack = vec![main.header];
    while let Some(b) = stack.pop() {
        for &s in &blocks[b].succs {
            if inside(b, s) && from_header.insert(s) {
                stack.push(s);
            }
        }
    }
    let mut preds: HashMap<usize, Vec<usize>> = HashMap::new();
    for &b in &main.body {
        for &s in &blocks[b].succs {
            if inside(b, s) {
                preds.entry(s).or_default().push(b);
            }
        }
    }
    let mut to_latch: HashSet<usize> = main
        .latches
        .iter()
        .copied()
        .filter(|l| !other.contains(l))
        .collect();
    let mut stack: Vec<usize> = to_latch.iter().copied().collect();
    while let Some(b) = stack.pop() {
        for &q in preds.get(&b).map_or(&[][..], |v| &v[..]) {
            if to_latch.insert(q) {
                stack.push(q);
            }
        }
    }
    let mut config = Counts::default();
    for &b in from_header.intersection(&to_latch) {
        for (r, n) in block_counts(b).by_region {
            config.add(&r, n);
        }
    }
    // Waypoints each block satisfies (a bit mask). A waypoint whose code is partly in
    // an inner loop is met only inside the loop (among its blocks, only those of the
    // highest multiplicity count): a path may not skip the loop through its guard (the
    // branch around it for zero trips) on the strength of an instruction hoisted out.
    if required.len() > 16 {
        return Err("at most 16 waypoints".into());
    }
    let mut marks: HashMap<usize, u32> = main.body.iter().map(|&b| (b, 0u32)).collect();
    for (k, w) in required.iter().enumerate() {
        let hits: Vec<usize> = main
            .body
            .iter()
            .copied()
            .filter(|&b| f.instrs[blocks[b].start..blocks[b].end].iter().any(w))
            .collect();
        let top = hits.iter().map(|b| mult[b]).fold(0.0, f64::max);
        for b in hits {
            if mult[&b] == top {
                *marks.get_mut(&b).expect("in body") |= 1 << k;
            }
        }
    }
    let all_marks = marks.values().fold(0u32, |a, m| a | m);
    let full = (1u32 << required.len()) - 1;
    if all_marks != full {
        let missing: Vec<usize> = (0..required.len())
            .filter(|k| all_marks & (1 << k) == 0)
            .collect();
        return Err(format!(
            "waypoints {missing:?} match no instruction of the loop"
        ));
    }
    // Cheapest path over the body without back edges (edges to any loop header from
    // inside that loop), from the header to a latch of the main loop, by (block,
    // waypoints passed).
    let headers: HashMap<usize, &Loop> = all.iter().map(|l| (l.header, l)).collect();
    let forward = |b: usize, s: usize| -> bool {
        main.body.contains(&s) && !headers.get(&s).is_some_and(|l| l.body.contains(&b))
    };
    // The cheapest path may not pass other configurations' code either.
    let allowed = |b: usize, s: usize| forward(b, s) && !other.contains(&s);
    // Topological order (Kahn) of the acyclic body.
    let mut indeg: HashMap<usize, usize> = main.body.iter().map(|&b| (b, 0)).collect();
    for &b in &main.body {
        for &s in &blocks[b].succs {
            if forward(b, s) {
                *indeg.get_mut(&s).expect("in body") += 1;
            }
        }
    }
    let mut ready: Vec<usize> = indeg
        .iter()
        .filter(|(_, d)| **d == 0)
        .map(|(b, _)| *b)
        .collect();
    let mut order = Vec::new();
    while let Some(b) = ready.pop() {
        order.push(b);
        for &s in &blocks[b].succs {
            if forward(b, s) {
                let d = indeg.get_mut(&s).expect("in body");
                *d -= 1;
                if *d == 0 {
                    ready.push(s);
                }
            }
        }
    }
    if order.len() != main.body.len() {
        return Err("the loop body without its back edges still has a cycle".into());
    }
    type State = (usize, u32);
    let mut best: HashMap<State, (f64, Option<State>)> = HashMap::new();
    let start = (main.header, marks[&main.header]);
    best.insert(start, (block_counts(main.header).total(), None));
    for &b in &order {
        for m in 0..=full {
            let Some(&(cost, _)) = best.get(&(b, m)) else {
                continue;
            };
            for &s in &blocks[b].succs {
                if allowed(b, s) {
                    let next = (s, m | marks[&s]);
                    let c = cost + block_counts(s).total();
                    if best.get(&next).is_none_or(|&(old, _)| c < old) {
                        best.insert(next, (c, Some((b, m))));
                    }
                }
            }
        }
    }
    let end = main
        .latches
        .iter()
        .filter_map(|&l| best.get(&(l, full)).map(|&(c, _)| (c, (l, full))))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .ok_or("no path from the loop's header to its latch through every waypoint")?
        .1;
    let mut least = Counts::default();
    let mut at = Some(end);
    while let Some(st) = at {
        for (r, n) in block_counts(st.0).by_region {
            least.add(&r, n);
        }
        at = best[&st].1;
    }
    Ok(LoopCounts {
        worst,
        config,
        least,
    })
}
