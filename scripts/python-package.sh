#!/usr/bin/env bash
# The Python package `nrpt` as a package index takes it, built and installed:
#  1. an sdist (`maturin sdist`): python/ with the crates it needs (nrpt-core, nrpt-cuda,
#     nrpt-sampling, nrpt-studies, nrpt-host) and the files they embed (the CUDA kernels, the bundled data sets), checked;
#  2. an abi3 manylinux2014 x86_64 wheel built from that sdist, unpacked in a temporary
#     folder outside the repository (so the sdist is shown to build alone), with
#     `maturin build --zig --compatibility manylinux2014` (zig from the `ziglang` package:
#     it links against glibc 2.17, whatever glibc this machine has);
#  3. the wheel checked: its tags, and every symbol it takes from the system's libraries
#     (auditwheel show, and readelf for the newest GLIBC_ version: 2.17 at most);
#  4. the wheel installed into a Python environment, with the test requirements
#     (python/requirements-ci.txt) when that file exists.
#
# Usage: scripts/python-package.sh [--profile PROFILE] [--venv DIR] [--out DIR] [--no-install]
#   --profile PROFILE  cargo profile of the wheel (default: release; scripts/test.sh passes
#                      ci, the profile of its other optimized builds)
#   --venv DIR         where the wheel is installed (default: TARGET/python-venv): a venv,
#                      created when DIR does not exist or is empty, reused when DIR is one.
#                      Where python3 cannot make a venv (Debian without python3-venv), DIR
#                      becomes a plain folder for `pip install --target` instead: put it on
#                      PYTHONPATH. DIR is never emptied or removed.
#   --out DIR          where the sdist and the wheel are left (default: TARGET/python-dist;
#                      files of the same names there are replaced)
#   --no-install       stop after the checks of the wheel
# TARGET is the cargo target folder ($CARGO_TARGET_DIR, or the workspace's target/): the
# wheel's Rust build goes there too, so that a second run compiles only the package's own
# crates. It shares no compiled crate with the workspace's builds (zig is the linker, which
# cargo hashes into every crate's fingerprint, and maturin passes --target): the
# dependencies compile once more, into TARGET/x86_64-unknown-linux-gnu/PROFILE, and leave
# the workspace's build valid. The build tools (maturin, ziglang, auditwheel, at the
# versions pinned below) are installed from PyPI into TARGET/python-build-tools. Works
# from any current directory.
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

profile=release venv="" out="" install=1
while (($#)); do
    case $1 in
        --profile) profile=${2:?--profile needs a value}; shift 2 ;;
        --venv) venv=${2:?--venv needs a value}; shift 2 ;;
        --out) out=${2:?--out needs a value}; shift 2 ;;
        --no-install) install=0; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done
[[ $(uname -sm) == "Linux x86_64" ]] || die "builds manylinux x86_64 wheels only: this is $(uname -sm)"
command -v python3 >/dev/null || die "python3 is needed"

source scripts/target-dir.sh
target=$(target_dir "$repo")
venv=${venv:-$target/python-venv}
out=${out:-$target/python-dist}
marker="$venv/.nrpt-pip-target"   # left by an earlier run that found no venv module
# Checked before the build: the script installs into a venv, an empty or new folder, or a
# folder an earlier run filled with pip install --target, and never clears one.
if ((install)) && [[ -e $venv && ! -f $venv/pyvenv.cfg && ! -f $marker ]] &&
    { [[ ! -d $venv ]] || [[ -n "$(ls -A "$venv")" ]]; }; then
    die "$venv exists and is neither a venv nor an empty folder: give a new or empty one with --venv"
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Everything temporary lives in one folder of our own, outside the repository.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nrpt-python-package.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

step "build tools: maturin $MATURIN_VERSION, ziglang $ZIGLANG_VERSION, auditwheel $AUDITWHEEL_VERSION (PyPI)"
tools="$target/python-build-tools"
with_tools() { PYTHONPATH="$tools${PYTHONPATH:+:$PYTHONPATH}" PATH="$tools/bin:$PATH" "$@"; }
tool_versions() {
    with_tools python3 - <<'EOF' 2>/dev/null
from importlib.metadata import version
print(*(version(p) for p in ("maturin", "ziglang", "auditwheel")))
EOF
}
if [[ "$(tool_versions)" != "$MATURIN_VERSION $ZIGLANG_VERSION $AUDITWHEEL_VERSION" ]]; then
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
        --upgrade --target "$tools" "maturin==$MATURIN_VERSION" "ziglang==$ZIGLANG_VERSION" \
        "auditwheel==$AUDITWHEEL_VERSION" ||
        die "could not install maturin==$MATURIN_VERSION, ziglang==$ZIGLANG_VERSION and auditwheel==$AUDITWHEEL_VERSION from PyPI into $tools (pip's error above); install them there by hand (pip install --target) or make PyPI reachable"
fi
maturin="$tools/bin/maturin"
[[ "$("$maturin" --version 2>/dev/null)" == "maturin $MATURIN_VERSION" ]] ||
    die "$maturin does not run (maturin $MATURIN_VERSION expected)"
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
# The manifests, the lock file, and every file of kernels/ and data/: the crates embed them
# (include_str!, include_bytes!, cuda/build.rs) through their links cuda/kernels,
# sampling/data and studies/data, so they travel in the sdist under those names.
expected=(pyproject.toml PKG-INFO python/Cargo.toml python/Cargo.lock core/Cargo.toml
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
# The unpacked sdist is its own cargo workspace; CARGO_TARGET_DIR keeps the build in the
# repository's target folder. --auditwheel check: fail rather than bundle a library.
(cd "$tmp/src/$name" && CARGO_TARGET_DIR="$target" with_tools "$maturin" build --locked \
    --profile "$profile" --zig --compatibility manylinux2014 --auditwheel check \
    --out "$tmp/wheel") 2>&1 | tee "$tmp/build.log"
build_seconds=$((SECONDS - build_started))
wheels=("$tmp"/wheel/*.whl)
[[ ${#wheels[@]} -eq 1 && -f ${wheels[0]} ]] || die "maturin build left no single wheel in $tmp/wheel"
wheel=${wheels[0]}
echo "built in $build_seconds s; crates compiled: $(grep -c '^ *Compiling ' "$tmp/build.log" || true)"

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

cp "$sdist" "$wheel" "$out/"
sdist="$out/$(basename "$sdist")" wheel="$out/$(basename "$wheel")"
echo "left in $out: $(basename "$sdist"), $(basename "$wheel")"

((install)) || exit 0
step "install into $venv"
if [[ -f $venv/pyvenv.cfg ]]; then
    echo "reusing the venv $venv"
elif [[ -f $marker ]]; then
    echo "reusing the folder $venv (pip install --target)"
elif python3 -c 'import ensurepip, venv' 2>/dev/null; then
    python3 -m venv "$venv" || die "python3 -m venv $venv failed"
else
    # No working venv module (Debian without python3-venv): a plain folder that pip
    # installs into, for PYTHONPATH.
    echo "python3 -m venv is not available: installing into $venv with pip install --target (put it on PYTHONPATH)"
    mkdir -p "$venv"
    touch "$marker"
fi
if [[ -f $venv/pyvenv.cfg ]]; then
    "$venv/bin/python" -m pip --version >/dev/null 2>&1 || die "the venv $venv has no working pip"
    py=("$venv/bin/python")
    pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
else
    py=(env "PYTHONPATH=$venv${PYTHONPATH:+:$PYTHONPATH}" python3)
    pip=(env PIP_ROOT_USER_ACTION=ignore PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install
        --quiet --disable-pip-version-check --upgrade --target "$venv")
fi
requirements=()
[[ ! -f python/requirements-ci.txt ]] || requirements=(-r python/requirements-ci.txt)
if [[ -f $venv/pyvenv.cfg ]]; then
    ((${#requirements[@]} == 0)) || "${pip[@]}" "${requirements[@]}"
    # The wheel replaces any nrpt already there (same version, another build); then its
    # dependencies (numpy) are satisfied.
    "${pip[@]}" --force-reinstall --no-deps "$wheel"
    "${pip[@]}" "$wheel"
else
    # pip install --target sees nothing installed: one call, which replaces what is there.
    "${pip[@]}" "${requirements[@]}" "$wheel"
fi
installed=$(cd "$tmp" && "${py[@]}" -c 'import nrpt, os; print(os.path.dirname(nrpt.__file__))') ||
    die "the installed package does not import"
echo "installed: $installed ($(du -sh "$installed" | cut -f1))"
