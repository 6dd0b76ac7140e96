# The checkout's own virtual environment, .venv: sourced by ./serve and ./test from the root of
# the checkout. Nothing goes into a system Python (Debian/Ubuntu refuse that anyway, PEP 668).
#
#   venv_ensure EXTRAS   make .venv/bin/python work, with this checkout installed editable
#                        with EXTRAS (a comma list: "fast", "test,fast"). Installs again when
#                        a build input (VENV_BUILD_INPUTS) changed since the last install,
#                        when the checkout moved, or when EXTRAS adds extras.
#
# The editable install also compiles the optional C extension (setup.py) into the source
# tree: hence the C sources among the build inputs. Without a C compiler or Python's headers
# it is skipped with a warning and Odradek runs on its Python fallback.
#
# The first time it needs python3 >= 3.11 on PATH (or create .venv yourself with another
# interpreter, e.g. `python3.12 -m venv .venv`, and it is used as it is). Without the standard
# library's ensurepip (Debian/Ubuntu without the python3-venv package) pip comes from
# python3's own pip. Messages go to stderr (fd $VENV_FD) as "$VENV_WHO: ...".

VENV_WHO=${VENV_WHO:-venv}
VENV_FD=${VENV_FD:-2}
VENV_DIR=$PWD/.venv
VENV_PY=$VENV_DIR/bin/python
VENV_STAMP=$VENV_DIR/.odradek-install  # "<cksum of the build inputs> <extras> <checkout path>"
VENV_BUILD_INPUTS=(pyproject.toml setup.py odradek/wire/_speedups.c)

venv_say() { echo "$VENV_WHO: $*" >&"$VENV_FD"; }

venv_create() {
    local base=python3 version
    if ! command -v "$base" >/dev/null 2>&1; then
        venv_say "python3 not found: install Python 3.11 or newer (Debian/Ubuntu: apt-get install python3-venv)"
        return 1
    fi
    version=$("$base" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])') || return 1
    if ! "$base" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        venv_say "Odradek needs Python 3.11 or newer and python3 is $version: create .venv with a newer one (python3.12 -m venv .venv) and run again"
        return 1
    fi
    venv_say "creating .venv with $(command -v "$base") (Python $version)"
    "$base" -m venv --clear --without-pip "$VENV_DIR" || return 1
}

venv_pip() {
    # What `python3 -m venv` does itself, when the standard library has ensurepip.
    "$VENV_PY" -m ensurepip --upgrade --default-pip >/dev/null 2>&1 && return 0
    if python3 -m pip --version >/dev/null 2>&1; then
        venv_say "no ensurepip (Debian/Ubuntu: package python3-venv): installing pip into .venv with python3's pip"
        python3 -m pip --python "$VENV_PY" install -q --disable-pip-version-check pip && return 0
    fi
    venv_say "cannot put pip into .venv: python3 has neither ensurepip nor pip (Debian/Ubuntu: apt-get install python3-venv)"
    return 1
}

venv_ensure() {
    local want=$1 sum old_sum="" old_extras="" old_path="" extras reason=""
    if ! "$VENV_PY" -c 'import sys' >/dev/null 2>&1; then
        venv_create || return 1
    fi
    if ! "$VENV_PY" -m pip --version >/dev/null 2>&1; then
        venv_pip || return 1
    fi
    sum=$(cat "${VENV_BUILD_INPUTS[@]}" | cksum) && sum=${sum%% *}
    if [ -f "$VENV_STAMP" ]; then
        read -r old_sum old_extras old_path < "$VENV_STAMP"
    fi
    extras=$(printf '%s\n' "${old_extras//,/$'\n'}" "${want//,/$'\n'}" | sed '/^$/d' | sort -u | paste -sd, -)
    if [ -z "$old_sum" ]; then
        reason="first install"
    elif [ "$old_path" != "$PWD" ]; then
        reason="the checkout moved from $old_path"
    elif [ "$old_sum" != "$sum" ]; then
        reason="${VENV_BUILD_INPUTS[*]}: one changed"
    elif [ "$extras" != "$old_extras" ]; then
        reason="new extras"
    else
        return 0
    fi
    venv_say "installing this checkout into .venv, editable, with [$extras] ($reason)"
    if ! PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV_PY" -m pip install -q -e ".[$extras]"; then
        venv_say "pip install -e '.[$extras]' into .venv failed"
        return 1
    fi
    printf '%s %s %s\n' "$sum" "$extras" "$PWD" > "$VENV_STAMP"
}
