# shellcheck shell=bash
# Where cargo puts its build outputs, asked of cargo rather than guessed: `target/` of the
# workspace by default, but $CARGO_TARGET_DIR (often set globally, e.g. to
# ~/.cache/cargo-target, and then shared by every workspace) or `build.target-dir` in a
# config file when set.
# Usage: source scripts/target-dir.sh, then "$(target_dir [DIR])/release/NAME", where DIR
# (default: the current directory) is any folder of the cargo workspace. Binaries built
# for another target (`--target` or `build.target`) are under "$(target_dir DIR)/TRIPLE/".

# target_dir [DIR]: the absolute target directory of the workspace at DIR; on failure
# cargo's error on stderr, nothing on stdout and a non-zero status.
target_dir() {
    local meta
    meta=$(cd "${1:-.}" && cargo metadata --format-version 1 --no-deps) || return
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])' <<<"$meta"
    else # plain paths only (no quote or backslash in them)
        sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p' <<<"$meta" | grep .
    fi
}
