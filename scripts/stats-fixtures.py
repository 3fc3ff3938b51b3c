#!/usr/bin/env python3
"""Writes sampling/tests/fixtures/stats-arviz.json: fixed draws of a scalar quantity (m chains
of n draws) and what ArviZ computes for them, the oracle of the tests of
sampling/src/stats/convergence.rs.

For each case: `az.rhat` with method "rank" (the rank-normalized split-R-hat of Vehtari et
al. 2021: the larger of bulk and tail), "z_scale" (bulk), "folded" (tail) and "split"
(classic split-R-hat, BDA3), and `az.ess` with method "bulk", "tail" and "mean" (split
chains, no ranks), all with relative=False. The draws are generated from a fixed seed and
rounded to 6 significant digits before ArviZ sees them, so the file holds exactly the
numbers ArviZ was given and stays small.

Usage (any Python with ArviZ 0.x and NumPy; the file records the versions used):
    python3 -m venv /tmp/arviz-venv && /tmp/arviz-venv/bin/pip install arviz numpy
    /tmp/arviz-venv/bin/python scripts/stats-fixtures.py
"""

import json
from pathlib import Path

import arviz as az
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "sampling" / "tests" / "fixtures" / "stats-arviz.json"
SEED = 20240611


def ar1(rng, chains, draws, phi, offsets=None):
    """Stationary AR(1) chains x_t = phi x_{t-1} + e_t (unit marginal variance),
    each shifted by its offset."""
    x = np.empty((chains, draws))
    x[:, 0] = rng.standard_normal(chains)
    scale = np.sqrt(1.0 - phi * phi)
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + scale * rng.standard_normal(chains)
    if offsets is not None:
        x += np.asarray(offsets, dtype=float)[:, None]
    return x


def rounded(x):
    return np.vectorize(lambda v: float(f"{v:.6g}"))(x)


def cases(rng):
    yield "ar1_phi0.3_4x100", ar1(rng, 4, 100, 0.3)
    yield "ar1_phi0.9_4x1000", ar1(rng, 4, 1000, 0.9)
    # Negative autocorrelation: the antithetic case of Geyer's estimator (ESS > m n).
    yield "ar1_phi-0.6_4x100", ar1(rng, 4, 100, -0.6)
    # Chains that disagree: R-hat well above 1.
    yield "shifted_means_4x100", ar1(rng, 4, 100, 0.5, offsets=[0.0, 0.3, 0.6, 1.5])
    # Heavy tails (Student t, 1.5 degrees of freedom): bulk and tail differ.
    yield "student_t1.5_4x1000", rng.standard_t(1.5, size=(4, 1000))
    # An odd number of draws (the middle draw is dropped by the split) and of chains.
    yield "ar1_phi0.5_3x51", ar1(rng, 3, 51, 0.5)
    # Ties: integer draws (average ranks).
    yield "poisson3_4x100", rng.poisson(3.0, size=(4, 100)).astype(float)
    # Chains that differ only in scale: the tail R-hat sees it, the bulk one less so.
    yield "scales_4x200", ar1(rng, 4, 200, 0.2) * np.array([1.0, 1.0, 1.0, 3.0])[:, None]
    # The shortest chains accepted.
    yield "ar1_phi0.2_2x4", ar1(rng, 2, 4, 0.2)


def main():
    rng = np.random.default_rng(SEED)
    out = {
        "generator": "scripts/stats-fixtures.py",
        "arviz": az.__version__,
        "numpy": np.__version__,
        "seed": SEED,
        "cases": [],
    }
    for name, draws in cases(rng):
        draws = rounded(draws)
        case = {"name": name, "draws": draws.tolist()}
        for method in ("rank", "z_scale", "folded", "split"):
            case[f"rhat_{method}"] = float(az.rhat(draws, method=method))
        for method in ("bulk", "tail", "mean"):
            case[f"ess_{method}"] = float(az.ess(draws, method=method, relative=False))
        out["cases"].append(case)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    # One line per case: a diff shows which cases changed, and the file stays small.
    head = {k: v for k, v in out.items() if k != "cases"}
    lines = [json.dumps(case, separators=(",", ":")) for case in out["cases"]]
    text = json.dumps(head, indent=1)[:-2] + ',\n "cases": [\n' + ",\n".join(lines) + "\n ]\n}\n"
    json.loads(text)
    OUT.write_text(text)
    print(f"{OUT.relative_to(ROOT)}: {len(out['cases'])} cases, ArviZ {az.__version__}, "
          f"{OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
