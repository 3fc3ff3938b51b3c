"""The Python snippets of the README and of the book run as written.

Every ```python block of README.md and docs/src/ runs in a fresh namespace, in the order
of its page, each page in its own process state (blocks of one page share nothing). A
block that is not meant to run (it needs PyTorch, say) is preceded by the line
``<!-- not run: REASON -->`` (the PyTorch, JAX and MPI recipes of the guide carry it).
"""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"(<!-- not run: [^>]*-->\n)?```python\n(.*?)\n```", re.S)


def snippets():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs" / "src").rglob("*.md"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start(2)) + 1
            name = f"{page.relative_to(ROOT)}:{line}"
            marks = [pytest.mark.skip(reason=m.group(1).strip())] if m.group(1) else []
            yield pytest.param(m.group(2), id=name, marks=marks)


@pytest.mark.parametrize("code", list(snippets()))
def test_snippet_runs(code):
    exec(compile(code, "<snippet>", "exec"), {"__name__": "__snippet__"})


def test_the_readme_has_a_python_snippet():
    assert any("README.md" in p.id for p in snippets())
