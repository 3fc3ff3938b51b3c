#!/usr/bin/env bash
# The web page of the paper's 2D experiment (embedded/web), tested in a real browser:
#
#   embedded/web/ci.sh [--screenshot FILE]
#
#   1. installs what it needs when missing: Debian's `chromium` (apt-get) and the test's
#      npm packages (puppeteer-core, axe-core, pngjs, versions locked in
#      test/package-lock.json) into the target directory, not the source tree;
#   2. builds the page (embedded/web/build.sh --check: page ≤ 200 KiB, module < 64 KiB);
#   3. runs test/browser-test.mjs: the page in headless Chromium against `nrpt run` on
#      the same settings (the counts equal, bit for bit), a screenshot that is not blank,
#      no console error, axe-core's WCAG 2 A/AA rules, the controls from the keyboard, and
#      the chain-steps per second of the browser.
#
# The native command is $NRPT_BIN when set (scripts/test.sh passes its build), else a
# release build of `nrpt`. --screenshot FILE keeps the screenshot of the first
# configuration (the book's picture: docs/src/images/browser-page.png). Ends with
# "browser: N passed, M failed"; exit status non-zero on any failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$(dirname "$here")")"
source "$root/scripts/target-dir.sh" # target_dir DIR: cargo's target directory for DIR

screenshot=()
case "${1:-}" in
    "") ;;
    --screenshot)
        [[ -n "${2:-}" ]] || { echo "ci.sh: --screenshot needs a file" >&2; exit 2; }
        screenshot=(--screenshot "$(realpath -m "$2")")
        ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ci.sh: unknown argument '$1' (--screenshot FILE, --help)" >&2; exit 2 ;;
esac

chromium=$(command -v chromium || true)
if [[ -z "$chromium" ]]; then
    echo "web: installing Debian's chromium"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium) >/dev/null
    chromium=$(command -v chromium)
fi
# Debian's wrapper script prints a shell warning of its own on some systems: the first
# line that names the browser is its version.
"$chromium" --version 2>/dev/null | grep -m 1 -i chromium || true
node --version

target="$(target_dir "$root")"
deps="$target/web-test"
mkdir -p "$deps"
# npm ci only when the lock file changed since the last install into this folder.
lock_sum=$(sha256sum "$here/test/package-lock.json" | cut -d' ' -f1)
if [[ "$(cat "$deps/.lock-sha256" 2>/dev/null)" != "$lock_sum" || ! -d "$deps/node_modules" ]]; then
    cp "$here/test/package.json" "$here/test/package-lock.json" "$deps/"
    (cd "$deps" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$lock_sum" >"$deps/.lock-sha256"
fi
cp "$here/test/browser-test.mjs" "$deps/"

page="$target/web"
"$here/build.sh" --check "$page"

nrpt="${NRPT_BIN:-}"
if [[ -z "$nrpt" ]]; then
    (cd "$root" && cargo build --release -q --bin nrpt)
    nrpt="$target/release/nrpt"
fi

node "$deps/browser-test.mjs" --page "$page" --nrpt "$nrpt" --chromium "$chromium" "${screenshot[@]}"
