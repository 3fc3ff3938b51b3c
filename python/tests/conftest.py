"""Shared fixtures: the ``nrpt`` command line, to compare the package with it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

REPO = Path(__file__).resolve().parents[2]


def _prefer_the_installed_package() -> None:
    """Run from ``python/`` (``python -m pytest`` puts the working folder first on the
    path), ``import nrpt`` would find the checkout's ``python/nrpt``, which has no
    compiled extension unless ``maturin develop`` put one there: the tests then import
    the installed package instead, from whatever folder pytest runs."""
    source = REPO / "python"
    if any(p.suffix in (".so", ".pyd") for p in (source / "nrpt").glob("_nrpt*")):
        return
    sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != source]


_prefer_the_installed_package()


def _build_cli() -> str:
    """The debug ``nrpt`` binary of this checkout, built (or found up to date) by
    cargo, which prints its path."""
    out = subprocess.run(
        ["cargo", "build", "-p", "nrpt-host", "--bin", "nrpt", "--message-format=json"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable"):
            if msg["target"]["name"] == "nrpt":
                return msg["executable"]
    raise RuntimeError("cargo built no nrpt executable")


@pytest.fixture(scope="session")
def nrpt_cli() -> str:
    """Path of the command line: $NRPT_BIN, else this checkout's, built with cargo. A
    machine without cargo skips the comparisons, unless NRPT_REQUIRE_CLI=1 (CI)."""
    given = os.environ.get("NRPT_BIN")
    if given:
        return given
    if shutil.which("cargo") is None:
        if os.environ.get("NRPT_REQUIRE_CLI") == "1":
            pytest.fail("NRPT_REQUIRE_CLI=1 but neither NRPT_BIN nor cargo is available")
        pytest.skip("no nrpt command line to compare with (set NRPT_BIN)")
    return _build_cli()


class Cli:
    """Runs the command line."""

    def __init__(self, path: str, tmp: Path) -> None:
        self.path = path
        self.tmp = tmp

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.run(
            [self.path, *args], capture_output=True, text=True, cwd=self.tmp
        )
        if check and p.returncode != 0:
            raise AssertionError(f"nrpt {' '.join(args)} failed ({p.returncode}): {p.stderr}")
        return p

    def json(self, *args: str) -> Dict[str, Any]:
        return json.loads(self.run(*args, "--json", "--quiet").stdout)

    def error(self, *args: str) -> str:
        """The error of a failing command: the paragraph of stderr that starts with
        `error: `, without the prefix (no usage, no tip)."""
        p = self.run(*args, check=False)
        assert p.returncode != 0, f"nrpt {' '.join(args)} succeeded"
        lines = p.stderr.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("error: "):
                paragraph = [line[len("error: "):]]
                for more in lines[i + 1 :]:
                    if not more.strip():
                        break
                    paragraph.append(more)
                return "\n".join(paragraph)
        raise AssertionError(f"nrpt {' '.join(args)} printed no error: {p.stderr}")


@pytest.fixture
def cli(nrpt_cli: str, tmp_path: Path) -> Cli:
    return Cli(nrpt_cli, tmp_path)
