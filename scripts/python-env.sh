#!/usr/bin/env bash
# A Python environment for the package `nrpt` and its tests: DIR becomes a venv (created
# when DIR does not exist or is empty, reused when it is one) with the test requirements
# (python/requirements-ci.txt) and, when given, the wheel WHEEL, which replaces any `nrpt`
# already there. Where python3 cannot make a venv (Debian without python3-venv), DIR
# becomes a plain folder for `pip install --target` instead: put it on PYTHONPATH. DIR is
# never emptied or removed.
#
# Usage: scripts/python-env.sh DIR [--wheel WHEEL] [--no-requirements]
#   --wheel WHEEL      install this wheel (its dependencies, numpy, too)
#   --no-requirements  skip python/requirements-ci.txt (already installed)
# scripts/test.sh prepares DIR in the background while the Rust steps run, then installs
# the wheel it builds; scripts/python-package.sh installs its wheel with it. Prints the
# Python to run at the end: "python: COMMAND".
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "python-env: $*" >&2; exit 1; }

venv="" wheel="" requirements=1
while (($#)); do
    case $1 in
        --wheel) wheel=${2:?--wheel needs a value}; shift 2 ;;
        --no-requirements) requirements=0; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown argument '$1' (see --help)" ;;
        *) [[ -z $venv ]] || die "one DIR only (see --help)"; venv=$1; shift ;;
    esac
done
[[ -n $venv ]] || die "no DIR given (see --help)"
[[ -z $wheel || -f $wheel ]] || die "no wheel $wheel"
command -v python3 >/dev/null || die "python3 is needed"

marker="$venv/.nrpt-pip-target" # left by an earlier run that found no venv module
# A venv, an empty or new folder, or a folder an earlier run filled with pip install
# --target: never one of the user's own folders.
if [[ -e $venv && ! -f $venv/pyvenv.cfg && ! -f $marker ]] &&
    { [[ ! -d $venv ]] || [[ -n "$(ls -A "$venv")" ]]; }; then
    die "$venv exists and is neither a venv nor an empty folder: give a new or empty one"
fi

if [[ -f $venv/pyvenv.cfg ]]; then
    echo "reusing the venv $venv"
elif [[ -f $marker ]]; then
    echo "reusing the folder $venv (pip install --target)"
elif python3 -c 'import ensurepip, venv' 2>/dev/null; then
    python3 -m venv "$venv" || die "python3 -m venv $venv failed"
else
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

reqs=()
if ((requirements)) && [[ -f python/requirements-ci.txt ]]; then reqs=(-r python/requirements-ci.txt); fi
if [[ -f $venv/pyvenv.cfg ]]; then
    ((${#reqs[@]} == 0)) || "${pip[@]}" "${reqs[@]}"
    if [[ -n $wheel ]]; then
        # The wheel replaces any nrpt already there (same version, another build); then
        # its dependencies (numpy) are satisfied.
        "${pip[@]}" --force-reinstall --no-deps "$wheel"
        "${pip[@]}" "$wheel"
    fi
elif ((${#reqs[@]})); then
    # pip install --target sees nothing installed: one call, which replaces what is there.
    "${pip[@]}" "${reqs[@]}" ${wheel:+"$wheel"}
elif [[ -n $wheel ]]; then
    # The requirements are there already (numpy among them): the wheel alone.
    "${pip[@]}" --no-deps "$wheel"
fi
if [[ -n $wheel ]]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/nrpt-python-env.XXXXXX")
    installed=$(cd "$tmp" && "${py[@]}" -c 'import nrpt, os; print(os.path.dirname(nrpt.__file__))') ||
        { rm -rf "$tmp"; die "the installed package does not import"; }
    rm -rf "$tmp"
    echo "installed: $installed ($(du -sh "$installed" | cut -f1))"
fi
echo "python: ${py[*]}"
