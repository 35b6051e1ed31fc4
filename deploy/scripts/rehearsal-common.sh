# Sourced by systemd-rehearsal.sh and compose-rehearsal.sh (from the repository root): what both
# need before they start.
#   need_binaries         the service binaries in BIN (default target/debug) and nats-server
#   need_packages PKG...  Debian packages, installed when one of the commands is missing
#                         (each PKG as command:package)
#   debian_root           prints the path of a Debian 12 root with systemd (debootstrap, made
#                         once and cached in ~/.cache/snarkflow/systemd-root)
#   boot_container ROOT LOG ARGS...  boots ROOT with systemd-nspawn (ARGS: its network and name),
#                         output in LOG; sets BOOTED_NSPAWN (nspawn's pid) and BOOTED_LEADER
#                         (the container's PID 1, for nsenter)
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

boot_container() {
    local root=$1 log=$2 nspawn leader=""
    shift 2
    systemd-nspawn -D "$root" -b --register=no --keep-unit --console=passive "$@" >"$log" 2>&1 &
    nspawn=$!
    BOOTED_NSPAWN=$nspawn BOOTED_LEADER=""
    # the container's PID 1 is nspawn's child once that child runs systemd (before, it is
    # nspawn's own set-up process)
    for _ in $(seq 100); do
        leader=$(ps --ppid "$nspawn" -o pid=,comm= | awk '$2 == "systemd" {print $1}' | head -1 || true)
        [ -n "$leader" ] && break
        sleep 0.2
    done
    [ -n "$leader" ] || { cat "$log"; exit 1; }
    BOOTED_NSPAWN=$nspawn BOOTED_LEADER=$leader
}
