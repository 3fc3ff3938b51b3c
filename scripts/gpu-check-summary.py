"""The summary of scripts/gpu-check.sh: gpu-check.json and the table printed last.

Usage (by gpu-check.sh): gpu-check-summary.py TMP SUMMARY STATUS ELAPSED DEADLINE OUT
  TMP       the check's work folder: steps.tsv, facts.tsv and logs/ (each step's log,
            gpu_bench.json, mlp.json, nrpt-bench-E*.json)
  SUMMARY   where to write gpu-check.json

Every GPU figure comes from the benches' own JSON: device-timed medians (CUDA events
around the iterations alone), one figure per math mode against that mode's target.
Tested by scripts/test-gpu-check.sh (captured logs, no GPU).
"""

import glob
import json
import os
import re
import sys

# The math modes, in the benches' order, for the placeholders of figures that were
# not measured (the benches name their own modes; nrpt_cuda::timing::BENCH_MODES).
MODES = ["exact", "fast"]
# The 2D toy's target per mode (nrpt_cuda::timing::target_2d_chain_steps): exact,
# else fast.
TARGET_2D = {"exact": 2e10}
TARGET_2D_FAST = 6e10
# The MLP's share of the FP32 peak (nrpt_cuda::timing::target_mlp_share): the fast
# mode only.
TARGET_MLP_FAST = 0.30


def rows(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [l.rstrip("\n").split("\t") for l in f if l.strip()]
    except OSError:
        return []


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def test_summary(logs, steps):
    """Each test executable's verdicts from its libtest log."""
    tests = {}
    for path in sorted(glob.glob(os.path.join(logs, "test-*.log"))):
        name = os.path.basename(path)[5:-4]
        text = read(path)
        err = read(path[:-4] + ".err")
        verdicts = dict(re.findall(r"^test (\S+) \.\.\. (ok|FAILED|ignored)\s*$", text, re.M))
        lines = (text + err).splitlines()
        tests[name] = {
            "passed": sum(v == "ok" for v in verdicts.values()),
            "failed": sum(v == "FAILED" for v in verdicts.values()),
            "ignored": sum(v == "ignored" for v in verdicts.values()),
            "tests": verdicts,
            "parity_lines": [l.strip() for l in lines if "parity ok" in l][:40],
            "skipped_lines": [l.strip() for l in lines if ": skipped:" in l][:20],
        }
    for s in steps:
        if s["step"].startswith("test ") and s["step"][5:] in tests:
            tests[s["step"][5:]]["verdict"] = s["verdict"]
            tests[s["step"][5:]]["detail"] = s["detail"]
    return tests


def sanitizer_summary(steps):
    """memcheck and racecheck: run or not run, and the verdict."""
    out = {}
    for s in steps:
        if s["step"].startswith("sanitizer "):
            out[s["step"][10:]] = {
                "run": s["verdict"] in ("ok", "FAILED"),
                "verdict": s["verdict"],
                "detail": s["detail"],
            }
    return out


def target_2d(mode):
    return TARGET_2D.get(mode, TARGET_2D_FAST)


def figure(name, what, value, target, note, math=None):
    ratio = value / target if value is not None and target else None
    return {
        "name": name,
        "math": math,
        "what": what,
        "value": value,
        "target": target,
        "ratio_to_target": ratio,
        "met": None if ratio is None else value >= target,
        "note": note,
    }


def bench_figures(bench):
    """gpu_bench's figures, or placeholders for every mode when it wrote none."""
    figures = list((bench or {}).get("figures", []))
    if figures:
        return figures
    note = "not measured: the bench did not run or wrote no JSON"
    for m in MODES:
        figures.append(figure("persistent_2d_%s_chain_steps_per_s" % m,
                              "2D persistent kernel, %s, chain-steps/s" % m, None, target_2d(m), note, m))
    for m in MODES:
        figures.append(figure("d1024_f32_%s_share_of_copy_bandwidth" % m,
                              "D=1024 f32 step, %s / cudaMemcpy D2D bandwidth" % m, None, None, note, m))
    figures.append(figure("fp32_measured_share_of_theoretical",
                          "FP32 FMA micro-kernel / theoretical peak", None, None, note))
    return figures


def mlp_figures(mlp, limits):
    """One figure per mode of `nrpt bench --target classifier`: its device-timed share of the
    FP32 peak measured in the same run, against the mode's own target."""
    modes = (mlp or {}).get("modes") or []
    if mlp and mlp.get("backend") == "cuda" and modes:
        out = []
        for r in modes:
            m = r.get("math", "?")
            value = r.get("efficiency")
            value = value if isinstance(value, (int, float)) and value == value else None
            target = r.get("target_share_of_peak")
            note = "%.1f GFLOP/s on the device (median of %s × %s iterations, %.4f s; %.2f s end to end) against %.1f GFLOP/s measured" % (
                r.get("gflops", float("nan")), r.get("repetitions", "?"), r.get("iterations", "?"),
                r.get("device_seconds", float("nan")), r.get("end_to_end_seconds", float("nan")),
                r.get("machine_gflops", float("nan")))
            if target is None:
                note += "; no target for this mode"
            out.append(figure("mlp_%s_share_of_fp32_peak" % m,
                              "MLP [64,64,10] B=64, %s / FP32 peak" % m, value, target, note, m))
        return out
    if mlp:
        note = "not on the GPU: nrpt bench --target classifier ran on backend %r" % mlp.get("backend")
    else:
        note = "not measured (see the mlp bench step)"
    return [figure("mlp_%s_share_of_fp32_peak" % m, "MLP [64,64,10] B=64, %s / FP32 peak" % m, None,
                   None if m == "exact" else TARGET_MLP_FAST, note, m) for m in MODES]


def nrpt_bench_rows(logs):
    out = []
    paths = sorted(glob.glob(os.path.join(logs, "nrpt-bench-E*.json")),
                   key=lambda p: int(re.sub(r"\D", "", os.path.basename(p)) or 0))
    for path in paths:
        j = load_json(path)
        if isinstance(j, dict):
            out.append(j)
    return out


def precision_runs(logs, steps):
    """The runs with half-precision states (`nrpt run --precision bf16|f16`): each one's
    verdict and, when it printed its JSON, its engine, speed, round trips and non-finite
    energies."""
    verdicts = {s["step"]: s for s in steps}
    out = {}
    for p in ("bf16", "f16"):
        s = verdicts.get("precision %s" % p, {})
        j = load_json(os.path.join(logs, "run-%s.json" % p))
        j = j if isinstance(j, dict) else {}
        out[p] = {
            "verdict": s.get("verdict", "not run"),
            "detail": s.get("detail", ""),
            "backend": j.get("backend"),
            "chain_steps_per_sec": j.get("chain_steps_per_sec"),
            "round_trips_per_1000": j.get("round_trips_per_1000"),
            "nonfinite_energies": j.get("nonfinite_energies"),
        }
    return out


def build(tmp, status, elapsed, deadline, out_dir):
    logs = os.path.join(tmp, "logs")
    facts = {}
    for r in rows(os.path.join(tmp, "facts.tsv")):
        facts[r[0]] = r[1] if len(r) > 1 else ""
    steps = [{"step": r[0], "verdict": r[1] if len(r) > 1 else "", "detail": r[2] if len(r) > 2 else ""}
             for r in rows(os.path.join(tmp, "steps.tsv"))]
    bench = load_json(os.path.join(logs, "gpu_bench.json"))
    limits = (bench or {}).get("limits", {})
    mlp = load_json(os.path.join(logs, "mlp.json"))
    figures = bench_figures(bench) + mlp_figures(mlp, limits)
    return {
        "status": status,
        "elapsed_s": int(elapsed),
        "deadline_s": int(deadline),
        "failures": ["%s: %s" % (s["step"], s["detail"]) for s in steps if s["verdict"] == "FAILED"],
        "warnings": ["%s: %s" % (s["step"], s["detail"]) for s in steps if s["verdict"] == "warning"],
        "machine": {k[8:]: v for k, v in facts.items() if k.startswith("machine.")},
        "kernels": {k[8:]: v for k, v in facts.items() if k.startswith("kernels.")},
        "bundle": {k[7:]: v for k, v in facts.items() if k.startswith("bundle.")},
        "steps": steps,
        "tests": test_summary(logs, steps),
        "sanitizer": sanitizer_summary(steps),
        "precision": precision_runs(logs, steps),
        "timing": (bench or {}).get("timing",
                                    "CUDA events around the iterations alone, median of 3 repetitions"),
        "figures": figures,
        "limits": limits,
        "bench": bench,
        "mlp_bench": mlp,
        "nrpt_bench": nrpt_bench_rows(logs),
        "files": ["gpu-check.json", "gpu-check.log", "gpu-check-logs.tar.gz"],
        "out": out_dir,
    }


def fmt(v, pct=False):
    if v is None:
        return "n/a"
    return "%.1f%%" % (100 * v) if pct else "%.3e" % v


def table(summary):
    lines = [""]
    lines.append("=" * 24 + " nrpt GPU check: %s (%s s of %s s) " % (
        summary["status"].upper(), summary["elapsed_s"], summary["deadline_s"]) + "=" * 24)
    m, k = summary["machine"], summary["kernels"]
    lines.append("device: %s, cc %s, driver %s (CUDA %s); kernels: %s" % (
        m.get("gpu", "none"), m.get("compute_capability", "?"), m.get("driver", "?"),
        m.get("driver_cuda", "?"), k.get("origin", "?")))
    lines.append("%-24s %-8s %s" % ("step", "verdict", "detail"))
    for s in summary["steps"]:
        lines.append("%-24s %-8s %s" % (s["step"], s["verdict"], s["detail"][:110]))
    lines.append("")
    lines.append("%-50s %11s %9s %7s %4s" % ("figure (device-timed medians)", "value", "target", "ratio", "met"))
    for f in summary["figures"]:
        pct = "share" in f.get("name", "")
        met = f.get("met")
        lines.append("%-50s %11s %9s %7s %4s" % (
            (f.get("what") or f.get("name"))[:50], fmt(f.get("value"), pct),
            fmt(f.get("target"), pct) if f.get("target") is not None else "-",
            "%.2f" % f["ratio_to_target"] if f.get("ratio_to_target") is not None else "-",
            "-" if met is None else ("yes" if met else "NO")))
    limits = summary["limits"]
    if limits:
        lines.append("limits: cudaMemcpy D2D %s GB/s, copy kernel %s GB/s, FP32 %s / %s GFLOP/s (measured / theoretical)" % tuple(
            "%.0f" % v if isinstance(v, (int, float)) else "n/a" for v in (
                limits.get("copy_memcpy_d2d_gbs"), limits.get("copy_kernel_gbs"),
                limits.get("fp32_measured_gflops"), limits.get("fp32_theoretical_gflops"))))
    san = summary["sanitizer"]
    if san:
        lines.append("sanitizer: " + ", ".join(
            "%s %s" % (t, "run, " + v["verdict"] if v["run"] else "not run") for t, v in san.items()))
    prec = summary["precision"]
    lines.append("states: " + ", ".join(
        "%s %s" % (p, v["verdict"] + (" (%s chain-steps/s)" % fmt(v["chain_steps_per_sec"])
                                      if isinstance(v["chain_steps_per_sec"], (int, float)) else ""))
        for p, v in prec.items()))
    lines.append("in %s: gpu-check.json (summary), gpu-check.log (full log), gpu-check-logs.tar.gz (step logs)" % summary["out"])
    return "\n".join(lines)


def main(argv):
    tmp, summary_path, status, elapsed, deadline, out_dir = argv[1:7]
    summary = build(tmp, status, elapsed, deadline, out_dir)
    with open(summary_path, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    print(table(summary))


if __name__ == "__main__":
    main(sys.argv)
