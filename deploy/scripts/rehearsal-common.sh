# Sourced by systemd-rehearsal.sh and compose-rehearsal.sh (from the repository root): what both
# need before they start.
#   need_binaries         the service binaries in BIN (default target/debug) and nats-server
#   need_packages PKG...  Debian packages, installed when one of the commands is missing
#                         (each PKG as command:package)
#   debian_root           prints the path of a Debian 12 root with systemd (debootstrap, made
#                         once and cached in ~/.cache/snarkflow/systemd-root)
BIN="${BIN:-target/debug}"

need_binaries() {
    local b
    for b in gateway synth-worker gpu-worker snarkflow; do
        [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (build it first)" >&2; exit 1; }
    done
    command -v nats-server >/dev/null || bash deploy/scripts/install-deps.sh
}

need_packages() {
    local p missing=()
    for p in "$@"; do command -v "${p%%:*}" >/dev/null || missing+=("${p#*:}"); done
    [ "${#missing[@]}" = 0 ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

debian_root() {
    local root="${XDG_CACHE_HOME:-$HOME/.cache}/snarkflow/systemd-root"
    if [ ! -f "$root.done" ]; then
        need_packages debootstrap:debootstrap
        rm -rf "$root"; mkdir -p "$root"
        debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,ca-certificates,procps \
            bookworm "$root" http://deb.debian.org/debian >/dev/null
        touch "$root.done"
    fi
    echo "$root"
}
