#!/usr/bin/env python3
"""The numbers of the README and the book that CI can afford to recompute, recomputed.

    scripts/check-book-numbers.py NRPT_BINARY

Each check names a table row (or figure) of a page, computes it again, and fails when the
page says something else: a change to the code that moves a documented number must
update the page in the same commit. What is checked (about 10 s with a debug build):

- `nrpt window`: the optimal windows of the reference table (internals/iteration.md);
- Lemma 1's model P / E[T], from its formula: the model row of the window sweep
  (guide/reproduction.md) and the Lemma 1 columns of the scaling table (guide/scaling.md);
- `nrpt run --target gaussian-path --dim D -p 16 -w 1 --reference fixed` for D = 1 and 2, every column
  but the time (guide/exact-tempering.md): the run is the same bits on any machine.

The tables of longer runs (minutes to hours) state their command, machine and date, and
are re-run by hand; see docs/src/contributing/book.md.
"""

import concurrent.futures
import json
import math
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOOK = ROOT / "docs" / "src"


def page(name):
    return (BOOK / name).read_text(encoding="utf-8")


def lemma1_round_trip(p, w, s):
    """Lemma 1: E[T] = 2WP (1 + (P − 1) r^W / (1 − r^W)), r = 1 − S."""
    x = (1.0 - s) ** w
    return 2.0 * w * p * (1.0 + (p - 1) * x / (1.0 - x))


def minus(x, digits):
    """A number as the book writes it: the minus sign U+2212, fixed decimals."""
    text = f"{x:.{digits}f}"
    return text.replace("-", "\u2212")


def thousands(x, digits):
    return f"{x:,.{digits}f}"


def expect_row(errors, name, row, how):
    if not any(line.startswith(row) for line in page(name).splitlines()):
        errors.append(f"docs/src/{name}: no row starting `{row}` ({how})")


def nrpt_json(binary, *args):
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [binary, *args, "--json", "--quiet", "-o", out + "/run"] if args[0] == "run" else [binary, *args, "--json"],
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"nrpt {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout)


def check_windows(binary, errors):
    for p, s in [(16, "0.4"), (10, "0.005")]:
        v = nrpt_json(binary, "window", "-p", str(p), "-s", s)
        row = f"| {p} | {s} | {v['w_paper']} | {v['w_exact']:.{2 if p == 16 else 1}f} |"
        expect_row(errors, "internals/iteration.md", row, f"nrpt window -p {p} -s {s}")


def check_lemma1(errors):
    p, s = 16, 0.4
    cells = " | ".join(f"{1000 * p / lemma1_round_trip(p, w, s):.1f}" for w in (1, 2, 4, 8, 16, 32))
    expect_row(errors, "guide/reproduction.md", f"| Lemma 1's model P / E[T] | {cells} |", "Lemma 1, P = 16, S = 0.4")
    # The scaling table: P, E[T] at W = 1 (measured), Lemma 1, ratio, E[T] at W⋆, W⋆, Lemma 1.
    text = page("guide/scaling.md")
    for p in (8, 16, 64, 256, 1024):
        line = next((l for l in text.splitlines() if l.startswith(f"| {p} | ")), None)
        if line is None:
            errors.append(f"docs/src/guide/scaling.md: no row for P = {p}")
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        w_star = int(cells[5])
        want = [
            (2, lemma1_round_trip(p, 1, s), 1 if p < 64 else 0),
            (6, lemma1_round_trip(p, w_star, s), 1 if p < 1024 else 0),
        ]
        for col, value, digits in want:
            text_value = thousands(value, digits)
            if cells[col] != text_value:
                errors.append(
                    f"docs/src/guide/scaling.md: P = {p}, column {col + 1} reads {cells[col]}, "
                    f"Lemma 1 gives {text_value}"
                )


def gaussian_path_row(binary, dim):
    v = nrpt_json(
        binary, "run", "--target", "gaussian-path", "--dim", str(dim), "-p", "16", "-w", "1",
        "--reference", "fixed",
    )
    # The closed forms of the path N(0, I_D) → N(0, I_D/10) (nrpt_core::exact::gaussian).
    barrier = math.log(10) * math.exp(math.lgamma((dim + 1) / 2) - math.lgamma(dim / 2)) / math.sqrt(math.pi)
    log_z = dim / 2 * math.log(0.2 * math.pi)
    return (
        f"| {dim} | {v['lambda']:.4f} ± {v['lambda_sd']:.4f} | {barrier:.4f} | "
        f"{minus(v['log_z'], 4)} ± {v['log_z_se']:.4f} | {minus(log_z, 4)} | "
        f"{v['round_trips_per_1000']:.1f}, {v['predicted_round_trips_per_1000']:.1f}, "
        f"{v['limit_round_trips_per_1000']:.1f} |"
    )


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = sys.argv[1]
    errors = []
    check_windows(binary, errors)
    check_lemma1(errors)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        rows = list(pool.map(lambda d: gaussian_path_row(binary, d), (1, 2)))
    for dim, row in zip((1, 2), rows):
        expect_row(errors, "guide/exact-tempering.md", row, f"nrpt run --target gaussian-path --dim {dim} -p 16 -w 1 --reference fixed")
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"book numbers: {len(errors)} differ from what the code computes", file=sys.stderr)
        return 1
    print("book numbers: every recomputed number matches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
