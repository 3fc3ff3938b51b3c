#!/usr/bin/env python3
"""Finds import circles between the modules of a crate: module A names an item of
module B (`use crate::b::…`, `super::b::…`, a path in code) and B, directly or through
others, names one of A. Two views, both must be free of circles:

- the top-level modules of each crate, every module collapsed into the top-level one
  that holds it (`targets::classifier::oracle` naming `interrupt::Stopped` is an edge
  targets -> interrupt): the layers inside a crate;
- modules side by side at any depth (a parent may use its children's items and a child
  its parent's): the pieces inside one top-level module.

Usage: scripts/check-import-cycles.py [CRATE_SRC ...]   (default: every crate of the
workspace). Prints every circle with its edges and exits 1 when there is one.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# A path that starts at the crate root or climbs: `crate::a::b`, `super::super::c`,
# `self::d` (in `use` declarations and in code alike).
PATH = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")
# `use crate::a::{b, c::d}` groups: the prefix before the brace.
GROUP = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*)\}", re.S)
COMMENT = re.compile(r"//[^\n]*")


def module_of(src: Path, file: Path) -> tuple[str, ...]:
    """The module path of a file: `engine/cpu.rs` is ("engine", "cpu")."""
    rel = file.relative_to(src).with_suffix("")
    parts = rel.parts
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def resolve(path: list[str], here: tuple[str, ...], modules: set[tuple[str, ...]]):
    """The longest module a path names, from the module `here`."""
    if path[0] == "crate":
        base: tuple[str, ...] = ()
        rest = path[1:]
    else:
        base = here
        rest = path
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    best = base if base in modules else None
    cur = base
    for part in rest:
        cur = cur + (part,)
        if cur in modules:
            best = cur
        else:
            break
    return best


def references(text: str) -> list[list[str]]:
    text = COMMENT.sub("", text)
    found: list[list[str]] = []
    for m in GROUP.finditer(text):
        prefix = m.group(1).split("::")
        for item in re.split(r"[,\s]+", m.group(2)):
            item = item.strip("{} ")
            if item and re.match(r"[A-Za-z_]", item):
                found.append(prefix + item.split("::"))
    for m in PATH.finditer(text):
        found.append(m.group(1).split("::"))
    return found


def related(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether one module contains the other."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def cycles(src: Path, collapse: bool = False) -> list[list[tuple[str, ...]]]:
    files = sorted(p for p in src.rglob("*.rs") if "tests" not in p.relative_to(src).parts)
    modules = {module_of(src, f) for f in files}
    # Collapsed, a module is its top-level one; the crate root (lib.rs, main.rs) is no
    # layer of its own (it declares the modules).
    def node(m: tuple[str, ...]) -> tuple[str, ...]:
        return m[:1] if collapse else m

    nodes = {node(m) for m in modules}
    edges: dict[tuple[str, ...], set[tuple[str, ...]]] = {m: set() for m in nodes}
    for f in files:
        here = module_of(src, f)
        text = f.read_text()
        # Test modules may reach anywhere.
        cut = text.find("#[cfg(test)]\nmod tests")
        if cut >= 0:
            text = text[:cut]
        for path in references(text):
            target = resolve(path, here, modules)
            if target is None:
                continue
            a, b = node(here), node(target)
            if collapse:
                if a and b and a != b:
                    edges[a].add(b)
            elif a != b and not related(a, b):
                edges[a].add(b)
    # Tarjan's strongly connected components.
    index: dict[tuple[str, ...], int] = {}
    low: dict[tuple[str, ...], int] = {}
    stack: list[tuple[str, ...]] = []
    on: set[tuple[str, ...]] = set()
    out: list[list[tuple[str, ...]]] = []
    counter = [0]

    def visit(v: tuple[str, ...]) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    # Show each component with the edges inside it.
    shown = []
    for comp in out:
        inside = set(comp)
        shown.append([(v, sorted(w for w in edges[v] if w in inside)) for v in comp])
    return shown


def name(m: tuple[str, ...]) -> str:
    return "::".join(m) or "crate"


def default_crates(root: Path) -> list[str]:
    """The `src` folder of every member of the workspace and of the Python crate."""
    text = (root / "Cargo.toml").read_text()
    m = re.search(r"members\s*=\s*\[([^\]]*)\]", text)
    members = re.findall(r'"([^"]+)"', m.group(1)) if m else []
    members.append("python")
    return [f"{d}/src" for d in members if (root / d / "src").is_dir()]


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    crates = sys.argv[1:] or default_crates(root)
    bad = 0
    for c in crates:
        for collapse in (True, False):
            view = "top-level modules" if collapse else "modules side by side"
            for comp in cycles(root / c, collapse):
                bad += 1
                print(f"{c} ({view}): import circle between {', '.join(name(v) for v, _ in comp)}")
                for v, ws in comp:
                    print(f"    {name(v)} -> {', '.join(name(w) for w in ws)}")
    if bad:
        print(f"{bad} import circle(s)")
        return 1
    print("no import circles in " + ", ".join(crates))
    return 0


if __name__ == "__main__":
    sys.exit(main())
