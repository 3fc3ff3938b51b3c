#!/usr/bin/env bash
# The Python package `nrpt` built, checked and installed, in one of two ways:
#
# As a package index takes it (the default):
#  1. an sdist (`maturin sdist`): python/ with the crates it needs (nrpt-core, nrpt-cuda,
#     nrpt-sampling, nrpt-studies, nrpt-host), the workspace's Cargo.toml (maturin keeps
#     the members the package needs) and Cargo.lock, and the files the crates embed (the
#     CUDA kernels, the bundled data sets), checked;
#  2. an abi3 manylinux2014 x86_64 wheel built from that sdist, unpacked in a temporary
#     folder outside the repository (so the sdist is shown to build alone), with
#     `maturin build --zig --compatibility manylinux2014` (zig from the `ziglang` package:
#     it links against glibc 2.17, whatever glibc this machine has); the build may only
#     drop entries of the sdist's Cargo.lock (the crates of the workspace's other members),
#     never add or change one;
#  3. the wheel checked: its tags, every symbol it takes from the system's libraries
#     (auditwheel show, and readelf for the newest GLIBC_ version: 2.17 at most), and that
#     it imports and answers (with python3, where python3 has NumPy);
#  4. the wheel installed into a Python environment with the test requirements
#     (scripts/python-env.sh).
#
# Native (--native), what the tests use: the wheel built from the checkout by
# `maturin build --profile PROFILE` with this machine's linker (tag linux_x86_64: for this
# machine only) into the workspace's target folder, where it reuses every crate that
# `cargo test --workspace --profile PROFILE` compiled (one Cargo.lock, the same profile
# and features, no --target): after the tests' build only the extension and the crates
# only it uses (PyO3, numpy) compile. Then installed as in 4.
#
# Usage: scripts/python-package.sh [--native] [--profile PROFILE] [--features LIST] [--venv DIR] [--out DIR] [--no-install]
#   --native           the native wheel (above), no sdist, no zig
#   --features LIST    cargo features of the native wheel's build, as the tests' build
#                      names them (scripts/test.sh: nrpt-cuda/host-shims), so that it
#                      reuses that build; only with --native
#   --profile PROFILE  cargo profile of the wheel (default: release; scripts/test.sh builds
#                      the manylinux wheel with wheel-check, the cheapest, since it only
#                      checks it, and the native one with ci, the profile of its tests)
#   --venv DIR         where the wheel is installed (default: TARGET/python-venv): see
#                      scripts/python-env.sh (a venv, or a folder for PYTHONPATH where
#                      python3 has no venv module); never emptied or removed
#   --out DIR          where the sdist and the wheel are left (default: TARGET/python-dist;
#                      files of the same names there are replaced)
#   --no-install       stop after the checks of the wheel
# TARGET is the cargo target folder ($CARGO_TARGET_DIR, or the workspace's target/): the
# wheel's Rust build goes there too, so that a second run compiles only what changed. The
# manylinux wheel shares no compiled crate with the workspace's builds (zig is the linker,
# which cargo hashes into every crate's fingerprint, and maturin passes --target): its
# crates compile into TARGET/x86_64-unknown-linux-gnu/PROFILE and leave the workspace's
# build valid. The build tools (maturin, and for the manylinux wheel ziglang and
# auditwheel, at the versions pinned below) are installed from PyPI into
# TARGET/python-build-tools. Works from any current directory.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

MATURIN_VERSION=1.16.0
ZIGLANG_VERSION=0.15.2
AUDITWHEEL_VERSION=6.8.2
# The tags of an abi3 wheel for Python >= 3.9 on manylinux2014 x86_64 (in its WHEEL file,
# and compressed into its name), sorted.
WHEEL_TAGS="cp39-abi3-manylinux2014_x86_64 cp39-abi3-manylinux_2_17_x86_64"
MAX_GLIBC=2.17

die() { echo "python-package: $*" >&2; exit 1; }
step() { printf -- '--> [%d s] %s\n' "$SECONDS" "$*"; }

profile=release venv="" out="" install=1 native=0 features=""
while (($#)); do
    case $1 in
        --native) native=1; shift ;;
        --profile) profile=${2:?--profile needs a value}; shift 2 ;;
        --features) features=${2:?--features needs a value}; shift 2 ;;
        --venv) venv=${2:?--venv needs a value}; shift 2 ;;
        --out) out=${2:?--out needs a value}; shift 2 ;;
        --no-install) install=0; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done
[[ -z $features || $native == 1 ]] || die "--features goes with --native only (the manylinux wheel is built as users get it)"
[[ $(uname -sm) == "Linux x86_64" ]] || die "builds manylinux x86_64 wheels only: this is $(uname -sm)"
command -v python3 >/dev/null || die "python3 is needed"

source scripts/target-dir.sh
target=$(target_dir "$repo")
venv=${venv:-$target/python-venv}
out=${out:-$target/python-dist}
marker="$venv/.nrpt-pip-target"   # left by an earlier run that found no venv module
# Checked before the build, as scripts/python-env.sh checks it: a venv, an empty or new
# folder, or a folder an earlier run filled with pip install --target.
if ((install)) && [[ -e $venv && ! -f $venv/pyvenv.cfg && ! -f $marker ]] &&
    { [[ ! -d $venv ]] || [[ -n "$(ls -A "$venv")" ]]; }; then
    die "$venv exists and is neither a venv nor an empty folder: give a new or empty one with --venv"
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Everything temporary lives in one folder of our own, outside the repository.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nrpt-python-package.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if ((native)); then
    tools_wanted=("maturin==$MATURIN_VERSION")
else
    tools_wanted=("maturin==$MATURIN_VERSION" "ziglang==$ZIGLANG_VERSION" "auditwheel==$AUDITWHEEL_VERSION")
fi
step "build tools: ${tools_wanted[*]} (PyPI)"
tools="$target/python-build-tools"
with_tools() { PYTHONPATH="$tools${PYTHONPATH:+:$PYTHONPATH}" PATH="$tools/bin:$PATH" "$@"; }
# The installed versions of the wanted tools, as name==version, or nothing.
tool_versions() {
    with_tools python3 - "${tools_wanted[@]%%==*}" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
print(*(f"{p}=={version(p)}" for p in sys.argv[1:]))
EOF
}
if [[ "$(tool_versions)" != "${tools_wanted[*]}" ]]; then
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
        --upgrade --target "$tools" "${tools_wanted[@]}" ||
        die "could not install ${tools_wanted[*]} from PyPI into $tools (pip's error above); install them there by hand (pip install --target) or make PyPI reachable"
fi
maturin="$tools/bin/maturin"
[[ "$("$maturin" --version 2>/dev/null)" == "maturin $MATURIN_VERSION" ]] ||
    die "$maturin does not run (maturin $MATURIN_VERSION expected)"

# install WHEEL: into $venv with the test requirements (scripts/python-env.sh).
install() {
    step "install into $venv"
    scripts/python-env.sh "$venv" --wheel "$1"
}

if ((native)); then
    step "wheel from the checkout, native: maturin build --profile $profile (this machine's linker), in $target"
    build_started=$SECONDS
    # No --target, no --zig: the wheel's crates are the ones `cargo build` or `cargo test
    # --workspace --profile $profile` compiled in $target/$profile. --compatibility linux:
    # the plain tag, for this machine only (no manylinux claim, so no audit).
    (cd python && CARGO_TARGET_DIR="$target" with_tools "$maturin" build --locked \
        --profile "$profile" ${features:+--features "$features"} --compatibility linux \
        --auditwheel skip --out "$tmp/wheel") 2>&1 |
        tee "$tmp/build.log"
    wheels=("$tmp"/wheel/*.whl)
    [[ ${#wheels[@]} -eq 1 && -f ${wheels[0]} ]] || die "maturin build left no single wheel in $tmp/wheel"
    compiled=$(sed -n 's/^ *Compiling \([^ ]*\) .*/\1/p' "$tmp/build.log" | paste -sd' ' -)
    echo "built in $((SECONDS - build_started)) s; crates compiled: $(wc -w <<<"$compiled")${compiled:+ ($compiled)}"
    cp "${wheels[0]}" "$out/"
    wheel="$out/$(basename "${wheels[0]}")"
    echo "left in $out: $(basename "$wheel")"
    ((install)) || exit 0
    install "$wheel"
    exit 0
fi

zig_version=$(with_tools python3 -m ziglang version 2>/dev/null) ||
    die "zig from the ziglang package does not run (python3 -m ziglang version, PYTHONPATH=$tools)"
echo "maturin $MATURIN_VERSION, zig $zig_version, auditwheel $AUDITWHEEL_VERSION"

step "sdist: maturin sdist"
with_tools "$maturin" sdist --manifest-path python/Cargo.toml --out "$tmp/sdist" >"$tmp/sdist.log" 2>&1 ||
    { cat "$tmp/sdist.log" >&2; die "maturin sdist failed"; }
sdists=("$tmp"/sdist/*.tar.gz)
[[ ${#sdists[@]} -eq 1 && -f ${sdists[0]} ]] || die "maturin sdist left no single .tar.gz in $tmp/sdist"
sdist=${sdists[0]}
name=$(basename "$sdist" .tar.gz)
tar -tzf "$sdist" | sed -n "s|^$name/||p" | sort >"$tmp/sdist.list"
# The manifests (the workspace's at the top), the lock file, and every file of kernels/ and
# data/: the crates embed them (include_str!, include_bytes!, cuda/build.rs) through their
# links cuda/kernels, sampling/data and studies/data, so they travel in the sdist under
# those names.
expected=(pyproject.toml PKG-INFO Cargo.toml Cargo.lock python/Cargo.toml core/Cargo.toml
    cuda/Cargo.toml cuda/build.rs sampling/Cargo.toml studies/Cargo.toml host/Cargo.toml)
files_of() { git -C "$repo" ls-files "$1" 2>/dev/null | grep . || (cd "$repo" && find "$1" -type f); }
while IFS= read -r f; do expected+=("cuda/$f"); done < <(files_of kernels)
while IFS= read -r f; do expected+=("sampling/$f" "studies/$f"); done < <(files_of data)
missing=()
for f in "${expected[@]}"; do
    grep -qxF "$f" "$tmp/sdist.list" || missing+=("$f")
done
((${#missing[@]} == 0)) || die "the sdist lacks ${missing[*]}"
echo "$name.tar.gz: $(wc -l <"$tmp/sdist.list") files, $(du -k "$sdist" | cut -f1) KiB; has the manifests, kernels/ and data/ (${#expected[@]} files checked)"

step "wheel from the sdist, outside the repository: maturin build --zig --compatibility manylinux2014 --profile $profile"
mkdir "$tmp/src"
tar -xzf "$sdist" -C "$tmp/src"
build_started=$SECONDS
cp "$tmp/src/$name/Cargo.lock" "$tmp/Cargo.lock.sdist"
# The unpacked sdist is its own cargo workspace (the members the package needs);
# CARGO_TARGET_DIR keeps the build in the repository's target folder. --auditwheel check:
# fail rather than bundle a library. Not --locked: the sdist's Cargo.lock is the
# workspace's, whose other members' crates (criterion, ...) cargo drops; it is checked
# below to have lost entries only.
(cd "$tmp/src/$name" && CARGO_TARGET_DIR="$target" with_tools "$maturin" build \
    --profile "$profile" --zig --compatibility manylinux2014 --auditwheel check \
    --out "$tmp/wheel") 2>&1 | tee "$tmp/build.log"
build_seconds=$((SECONDS - build_started))
wheels=("$tmp"/wheel/*.whl)
[[ ${#wheels[@]} -eq 1 && -f ${wheels[0]} ]] || die "maturin build left no single wheel in $tmp/wheel"
wheel=${wheels[0]}
echo "built in $build_seconds s; crates compiled: $(grep -c '^ *Compiling ' "$tmp/build.log" || true)"
# Every crate the wheel was built from is pinned by the sdist's Cargo.lock, at the
# workspace's versions: the lock the build left has no entry the shipped one lacks.
python3 - "$tmp/Cargo.lock.sdist" "$tmp/src/$name/Cargo.lock" <<'EOF' || die "the sdist's Cargo.lock does not pin every crate of the build (above)"
import re, sys
ENTRY = re.compile(r'^\[\[package\]\]\nname = "([^"]+)"\nversion = "([^"]+)"', re.M)
shipped, used = (set(ENTRY.findall(open(f).read())) for f in sys.argv[1:])
added = sorted(used - shipped)
for name, version in added:
    print(f"  {name} {version}: not in the sdist's Cargo.lock", file=sys.stderr)
if added or not used:
    sys.exit(1)
print(f"Cargo.lock: the build used {len(used)} of its {len(shipped)} entries, and no other crate")
EOF

step "wheel checks: tags, and the symbols it takes from the system (glibc $MAX_GLIBC at most)"
# The tags of the WHEEL file, then those of the file name (name-version-py-abi-platform.whl,
# each part possibly dot-separated alternatives), both sorted.
read -r tags name_tags < <(python3 - "$wheel" <<'EOF'
import itertools, os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    [info] = [n for n in z.namelist() if n.endswith(".dist-info/WHEEL")]
    text = z.read(info).decode()
tags = sorted(l.split(":", 1)[1].strip() for l in text.splitlines() if l.startswith("Tag:"))
py, abi, plat = os.path.basename(sys.argv[1])[: -len(".whl")].split("-")[-3:]
named = sorted("-".join(t) for t in itertools.product(*(p.split(".") for p in (py, abi, plat))))
print(",".join(tags), ",".join(named))
EOF
)
[[ ${tags//,/ } == "$WHEEL_TAGS" ]] || die "the wheel's WHEEL file has the tags '$tags', not '$WHEEL_TAGS'"
[[ ${name_tags//,/ } == "$WHEEL_TAGS" ]] ||
    die "the wheel's name $(basename "$wheel") has the tags '$name_tags', not '$WHEEL_TAGS'"
tags=${tags//,/ }
with_tools python3 -m auditwheel show "$wheel" | tee "$tmp/auditwheel.txt"
# auditwheel names the most compatible tag that the wheel's symbols allow: the wheel must
# claim no more than that.
tr -s ' \n' ' ' <"$tmp/auditwheel.txt" | grep -q 'consistent with the following platform tag: "manylinux_2_17_x86_64"' ||
    die "auditwheel does not find the wheel consistent with manylinux_2_17_x86_64 (above)"
# The same, read off the extension itself: the newest GLIBC_ symbol version it needs.
python3 -m zipfile -e "$wheel" "$tmp/unzipped"
so="$tmp/unzipped/nrpt/_nrpt.abi3.so"
[[ -f $so ]] || die "the wheel has no nrpt/_nrpt.abi3.so (not an abi3 extension?)"
newest() { sort -t. -k1,1n -k2,2n -k3,3n | tail -n1; }
glibc=$(readelf --version-info --wide "$so" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | newest)
[[ -n $glibc ]] || die "readelf found no GLIBC_ symbol version in the extension"
[[ $(printf '%s\n%s\n' "$glibc" "$MAX_GLIBC" | newest) == "$MAX_GLIBC" ]] ||
    die "the extension needs GLIBC_$glibc, newer than $MAX_GLIBC"
echo "tags: $tags; newest glibc symbol version: $glibc; $(basename "$wheel"): $(du -k "$wheel" | cut -f1) KiB"

step "the wheel imports and answers (python3, the unpacked wheel on PYTHONPATH)"
# The package needs NumPy: checked where python3 has it (a machine without it installs the
# wheel in step 4, whose import is the check).
if (cd "$tmp" && python3 -c 'import numpy' 2>/dev/null); then
    answer=$(cd "$tmp" && PYTHONPATH="$tmp/unzipped" python3 -c '
import nrpt
assert nrpt.__file__.startswith(__import__("sys").path[0]), nrpt.__file__
print(nrpt.optimal_window(16, 0.4), round(nrpt.w_star(16, 0.4), 6))') ||
        die "the wheel's package does not import, or fails (above)"
    [[ $answer == "7 7.413386" ]] || die "nrpt.optimal_window(16, 0.4), nrpt.w_star(16, 0.4) gave '$answer', not '7 7.413386'"
    echo "import nrpt: optimal_window(16, 0.4), w_star(16, 0.4) = $answer"
else
    echo "skipped: python3 has no NumPy"
fi

cp "$sdist" "$wheel" "$out/"
sdist="$out/$(basename "$sdist")" wheel="$out/$(basename "$wheel")"
echo "left in $out: $(basename "$sdist"), $(basename "$wheel")"

((install)) || exit 0
install "$wheel"
