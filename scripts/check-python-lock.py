#!/usr/bin/env python3
"""python/Cargo.lock (the Python package's own lock file: an extension module is kept
out of the workspace) must pin every crate it shares with the workspace's Cargo.lock at
the same versions, so the package and the command are built from the same code.
Usage: scripts/check-python-lock.py   (from anywhere in the repository)"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = re.compile(r'^\[\[package\]\]\nname = "([^"]+)"\nversion = "([^"]+)"', re.M)


def versions(lock: Path) -> dict:
    out: dict = {}
    for name, version in PACKAGE.findall(lock.read_text()):
        out.setdefault(name, set()).add(version)
    return out


def main() -> int:
    workspace = versions(ROOT / "Cargo.lock")
    python = versions(ROOT / "python" / "Cargo.lock")
    if not workspace or not python:
        print("check-python-lock: no [[package]] entries read", file=sys.stderr)
        return 1
    shared = sorted(set(workspace) & set(python))
    differ = [(n, workspace[n], python[n]) for n in shared if workspace[n] != python[n]]
    for name, w, p in differ:
        print(f"{name}: Cargo.lock has {', '.join(sorted(w))}, "
              f"python/Cargo.lock {', '.join(sorted(p))}", file=sys.stderr)
    if differ:
        print("check-python-lock: update python/Cargo.lock to the workspace's versions "
              "(cargo update --manifest-path python/Cargo.toml -p NAME --precise VERSION)",
              file=sys.stderr)
        return 1
    print(f"python/Cargo.lock: {len(shared)} crates shared with Cargo.lock, same versions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
