#!/usr/bin/env python3
"""Instructions per chain-step by part of the CPU engine, from two callgrind profiles.

Usage: callgrind_parts.py BINARY SHORT.out LONG.out STEPS

SHORT.out and LONG.out are callgrind outputs (`--dump-instr=yes`) of BINARY in two runs
that differ only in their number of iterations; STEPS is the difference in chain-steps
(E · P · ΔN), so start-up and the warm-up run cancel. Each instruction's address is
looked up with `addr2line -i` (the chain of functions it was inlined from, innermost
first, from the binary's debug information) and charged to the first function of that
chain named in ANCHORS; instructions of library helpers (ln, sin/cos, iterators) are so
charged to the part that called them. Prints one row per part, then the functions that
own the most instructions.
"""

import collections
import re
import subprocess
import sys

BM = "Box–Muller ×2 (uniform, ln, sqrt, sin/cos 2πu)"
PHILOX = "Philox4x32-10 block (counters, key, 10 rounds)"
TARGET = "energy, gradient, Langevin step, level loads/stores"
TESTS = "exchange: swap tests and counters"
SWAP = "exchange: state, replica and trip swap"
TRIPS = "exchange: round trips, gates"
AUTHORS = "exchange: the authors' round-trip counting"
LADDER = "exchange: ladder (Jacobi), buffer, non-finite count"
LOOP = "recording, loop, γ schedule"

# Function names (the last path segment, generics stripped) -> part, matched from the
# innermost function of an instruction's inline chain outwards.
ANCHORS = {
    "philox4x32_10_keyed_lanes": PHILOX,
    "philox4x32_10_lanes": PHILOX,
    "philox": PHILOX,
    "philox_lanes": PHILOX,
    "step_counter": PHILOX,
    "block": PHILOX,
    "mul_hi": PHILOX,
    "counter": PHILOX,
    "box_muller": BM,
    "normals": BM,
    "energy_and_sines": TARGET,
    "gradient_from_sines": TARGET,
    "explore_level": TARGET,
    "explore": TARGET,
    "sweep_pair": TESTS,
    "buffered_indicator": TESTS,
    "blend": SWAP,
    "swap_levels": SWAP,
    "swap_pairs": SWAP,
    "swap_where": SWAP,
    "swap_where_f32": SWAP,
    "close_gates": SWAP,
    "arrive_bottom": TRIPS,
    "arrive_top": TRIPS,
    "finite": TESTS,
    "observe_arrival": TRIPS,
    "arrivals": TRIPS,
    "authors_pass": AUTHORS,
    "check_pair": AUTHORS,
    "check_level": AUTHORS,
    "authors_check": AUTHORS,
    "adapt_ladder": LADDER,
    "jacobi_lanes": LADDER,
    "in_place_lanes": LADDER,
    "adapt_buffer": LADDER,
    "run": LADDER,
    "exchange": LADDER,
    "drive": LOOP,
    "observe": LOOP,
    "step_size": LOOP,
    "growth_factors": LOOP,
}
OTHER = "other (outside the run loop)"


def costs(path, binary):
    """Ir per instruction address of `binary`, self cost only."""
    out = collections.Counter()
    objects = {}
    in_binary = False
    addr = 0
    skip_next = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            m = re.match(r"^ob=\((\d+)\)(?: (.*))?$", raw)
            if m:
                ident, name = m.groups()
                if name is not None:
                    objects[ident] = name
                in_binary = objects.get(ident, "").endswith(binary)
                continue
            if raw.startswith("calls="):
                skip_next = True
                continue
            if not raw or not (raw[0].isdigit() or raw[0] in "+-*"):
                continue
            parts = raw.split()
            pos = parts[0]
            if pos == "*":
                pass
            elif pos[0] in "+-":
                addr += int(pos, 0)
            else:
                addr = int(pos, 0)
            if skip_next:
                skip_next = False
                continue
            if in_binary and len(parts) > 2:
                out[addr] += int(parts[2])
    return out


def chains(binary, addresses):
    """Inline chain (function names, innermost first) of each address."""
    text = "\n".join(hex(a) for a in addresses)
    res = subprocess.run(
        ["addr2line", "-i", "-f", "-C", "-a", "-e", binary],
        input=text, capture_output=True, text=True, check=True,
    )
    out = {}
    current = None
    lines = res.stdout.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^0x[0-9a-f]+$", line):
            current = int(line, 16)
            out[current] = []
            i += 1
            continue
        out[current].append(line)
        i += 2  # function name, then file:line
    return out


def short(name):
    name = re.sub(r"<[^<>]*>", "", name)
    name = re.sub(r"<[^<>]*>", "", name)
    name = re.sub(r"\{\{closure\}\}", "", name)
    return [s for s in name.split("::") if s][-1] if name else "?"


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    binary, short_out, long_out, steps = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    name = binary.rsplit("/", 1)[-1]
    diff = costs(long_out, name)
    diff.subtract(costs(short_out, name))
    live = [a for a, ir in diff.items() if ir != 0]
    inline = chains(binary, live)
    parts = collections.Counter()
    owners = collections.Counter()
    for a in live:
        frames = [short(f) for f in inline.get(a, [])]
        part = next((ANCHORS[f] for f in frames if f in ANCHORS), OTHER)
        parts[part] += diff[a]
        owners[frames[0] if frames else "?"] += diff[a]
    total = sum(parts.values())
    print(f"{'part':<56} {'per chain-step':>14}")
    for part, ir in parts.most_common():
        print(f"{part:<56} {ir / steps:>14.1f}")
    print(f"{'total':<56} {total / steps:>14.1f}")
    print("\ninnermost functions owning the most instructions (per chain-step):")
    for fn, ir in owners.most_common(12):
        print(f"  {ir / steps:7.1f}  {fn}")


if __name__ == "__main__":
    main()
