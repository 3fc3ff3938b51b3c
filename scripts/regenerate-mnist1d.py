#!/usr/bin/env python3
"""Regenerates nrpt's bundled MNIST-1D files (data/mnist1d-*.npy.gz) with the mnist1d
package's own generator (Greydanus, "Scaling down deep learning", 2020), or checks the
committed files against a fresh generation. Nothing is downloaded: the package's
`make_dataset` builds the examples from its templates and a fixed seed.

The arguments are the package's canonical ones (`get_dataset_args()`: template_len 12,
padding [36, 60], scale_coeff 0.4, max_translation 48, corr_noise_scale 0.25,
iid_noise_scale 0.02, shear_scale 0.75, shuffle_seq False, final_seq_length 40, seed 42,
train_split 0.8) with one change: num_samples 16,000 instead of 5,000, so the package's
own split gives 12,800 training and 3,200 test examples (1,600 per class in all).

What is converted, and nothing else: the features from float64 to float32 (each value
rounded to the nearest float32; no other rounding), the labels from int64 to uint8
(exact: they are 0 to 9). Each array is written as a .npy file (format 1.0, little
endian, C order) and gzip-compressed (level 9, no file name, modification time 0), so
the same versions give the same bytes on every run.

Setup (a throwaway environment; the versions are pinned because the bytes depend on
NumPy's legacy random stream and on SciPy's interpolation and filtering):

    python3 -m venv /tmp/mnist1d-venv
    /tmp/mnist1d-venv/bin/pip install mnist1d==0.0.2.post1 numpy==2.4.6 scipy==1.17.1

Usage (from anywhere in the repository):

    /tmp/mnist1d-venv/bin/python scripts/regenerate-mnist1d.py --check
        regenerate in memory and compare with the committed files (exit 1 if they differ)
    /tmp/mnist1d-venv/bin/python scripts/regenerate-mnist1d.py --out DIR
        write the four files to DIR (default: data/); refuses to replace an existing
        file unless --force is given

Both print every file's size and SHA-256 (of the .gz file and of the .npy inside it),
the label counts of each split and the range of the features.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The versions the committed files were made with.
PINNED = {"mnist1d": "0.0.2.post1", "numpy": "2.4.6", "scipy": "1.17.1"}

# The only argument changed from the package's defaults.
NUM_SAMPLES = 16_000

# The canonical arguments this script expects `get_dataset_args()` to return (the
# download URL aside, which make_dataset does not use). A package whose defaults differ
# is refused rather than silently producing another data set.
CANONICAL = {
    "num_samples": 5000,
    "train_split": 0.8,
    "template_len": 12,
    "padding": [36, 60],
    "scale_coeff": 0.4,
    "max_translation": 48,
    "corr_noise_scale": 0.25,
    "iid_noise_scale": 2e-2,
    "shear_scale": 0.75,
    "shuffle_seq": False,
    "final_seq_length": 40,
    "seed": 42,
}

# File name, key of make_dataset's dictionary, dtype written.
FILES = [
    ("mnist1d-train-x.npy.gz", "x", "<f4"),
    ("mnist1d-train-y.npy.gz", "y", "u1"),
    ("mnist1d-test-x.npy.gz", "x_test", "<f4"),
    ("mnist1d-test-y.npy.gz", "y_test", "u1"),
]


def check_versions(allow_other: bool) -> None:
    from importlib.metadata import version

    wrong = [
        f"{name} {version(name)} (pinned {want})"
        for name, want in PINNED.items()
        if version(name) != want
    ]
    if not wrong:
        return
    message = "installed versions differ from the pinned ones: " + ", ".join(wrong)
    if not allow_other:
        sys.exit(f"error: {message}; install the pinned ones or pass --allow-other-versions")
    print(f"warning: {message}; the bytes may differ", file=sys.stderr)


def generate() -> dict:
    """make_dataset's dictionary for the canonical arguments with NUM_SAMPLES."""
    os.environ.setdefault("MPLBACKEND", "Agg")  # the package imports pyplot
    from mnist1d.data import get_dataset_args, make_dataset
    from mnist1d.utils import ObjectView

    args = get_dataset_args(as_dict=True)
    got = {k: args.get(k) for k in CANONICAL}
    if got != CANONICAL:
        sys.exit(f"error: the package's default arguments changed: {got}")
    args["num_samples"] = NUM_SAMPLES
    args.pop("url", None)
    return make_dataset(ObjectView(args))


def npy_bytes(array) -> bytes:
    import numpy as np

    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def gzip_bytes(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as f:
        f.write(data)
    return buf.getvalue()


def encode(dataset: dict) -> list[tuple[str, bytes, bytes]]:
    """(name, .npy bytes, .npy.gz bytes) of every file."""
    import numpy as np

    out = []
    for name, key, dtype in FILES:
        array = np.asarray(dataset[key])
        converted = array.astype(dtype)
        if dtype == "u1" and not np.array_equal(converted, array):
            sys.exit(f"error: {key} holds labels that are not 0 to 255")
        raw = npy_bytes(converted)
        out.append((name, raw, gzip_bytes(raw)))
    return out


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def describe(dataset: dict, files: list[tuple[str, bytes, bytes]]) -> None:
    import numpy as np

    print(f"mnist1d {PINNED['mnist1d']}, num_samples {NUM_SAMPLES}, other arguments canonical")
    for name, raw, gz in files:
        print(f"{name}: {len(gz):,} bytes, sha256 {sha256(gz)}")
        print(f"  {name[:-3]} inside: {len(raw):,} bytes, sha256 {sha256(raw)}")
    for split, xk, yk in [("train", "x", "y"), ("test", "x_test", "y_test")]:
        x = np.asarray(dataset[xk], dtype=np.float32)
        y = np.asarray(dataset[yk])
        counts = np.bincount(y, minlength=10)
        print(f"{split}: {x.shape[0]} x {x.shape[1]}, labels per class {counts.tolist()}")
        lo, hi = (np.format_float_positional(v, unique=True) for v in (x.min(), x.max()))
        print(
            f"  features in [{lo}, {hi}] (float32), "
            f"mean {x.astype(np.float64).mean():.6f}, sd {x.astype(np.float64).std():.6f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "data", help="folder of the files")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("--force", action="store_true", help="replace existing files")
    parser.add_argument("--allow-other-versions", action="store_true")
    a = parser.parse_args()

    check_versions(a.allow_other_versions)
    dataset = generate()
    files = encode(dataset)
    describe(dataset, files)

    if a.check:
        status = 0
        for name, raw, gz in files:
            path = a.out / name
            if not path.exists():
                print(f"{path}: missing")
                status = 1
                continue
            committed = path.read_bytes()
            try:
                inside = gzip.decompress(committed)
            except (OSError, EOFError) as e:
                inside = None
                print(f"{path}: not a gzip file ({e})")
            if committed == gz:
                print(f"{path}: identical")
            elif inside == raw:
                # Another zlib can compress the same .npy differently.
                print(f"{path}: same .npy inside, but the gzip bytes differ")
            else:
                print(f"{path}: DIFFERENT data")
                status = 1
        return status

    existing = [a.out / name for name, _, _ in files if (a.out / name).exists()]
    if existing and not a.force:
        names = ", ".join(str(p) for p in existing)
        print(f"error: {names} exist; pass --force to replace them", file=sys.stderr)
        return 1
    a.out.mkdir(parents=True, exist_ok=True)
    for name, _, gz in files:
        (a.out / name).write_bytes(gz)
        print(f"wrote {a.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
