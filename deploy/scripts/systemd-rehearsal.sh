#!/usr/bin/env bash
# The units of deploy/systemd under a real systemd: a Debian 12 root (debootstrap, cached in
# ~/.cache/snarkflow/systemd-root) booted with systemd-nspawn (systemd 252 as the container's
# PID 1, loopback-only network), set up as docs/operations.md says (a user per service role,
# units in /etc/systemd/system, env files in /etc/snarkflow, NATS passwords through
# LoadCredential=, the API token written as the gateway's user), with deploy/systemd/
# nats-server.service running deploy/nats/nats.conf (one server, a NATS user per role). Then:
#   1. every unit reaches `active` through Type=notify (READY=1 sent by the service itself);
#   2. a dense-chain job of 2 partitions submitted with the CLI is proved and `done`;
#   3. a synth-worker killed with SIGKILL is started again by Restart=on-failure;
#   4. `systemctl stop` drains each service and it exits cleanly (not killed at TimeoutStopSec).
# The gpu-worker is the CPU build here (no GPU in the container): its unit runs as written,
# `--gpu 0` included. Needs root (debootstrap, nspawn) and the binaries in BIN (default
# target/debug: `cargo build -p snarkflow-gateway -p snarkflow-synth-worker -p
# snarkflow-gpu-worker -p snarkflow-cli`). Not in CI: ~2 minutes plus a first debootstrap.
# With PACKAGE=dist/snarkflow_<version>_amd64.deb (deploy/scripts/release.sh) snarkflow is
# installed from that package instead (`dpkg -i`: its users, directories, units and
# binaries), and only what the operator writes is written by hand: /etc/snarkflow and the NATS
# server, which the package does not carry.
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/scripts/rehearsal-common.sh
PACKAGE="${PACKAGE:-}"
if [ -n "$PACKAGE" ]; then
    [ -f "$PACKAGE" ] || { echo "no package $PACKAGE (bash deploy/scripts/release.sh)"; exit 1; }
    command -v nats-server >/dev/null || bash deploy/scripts/install-deps.sh
else
    need_binaries
fi
need_packages systemd-nspawn:systemd-container
cache=$(debian_root)
root=$(mktemp -d /var/tmp/sf-systemd.XXXXXX)
leader="" nspawn=""
cleanup() {
    # (a boot that failed before its PID 1 was found left only nspawn's pid)
    [ -n "$nspawn" ] || nspawn=${BOOTED_NSPAWN:-}
    if [ -n "$nspawn" ]; then
        # power the container off (SIGRTMIN+4 to its systemd), then make sure nspawn has gone:
        # its second SIGTERM ends the container at once
        [ -n "$leader" ] && kill -s RTMIN+4 "$leader" 2>/dev/null
        for _ in $(seq 40); do kill -0 "$nspawn" 2>/dev/null || break; sleep 0.5; done
        kill -TERM "$nspawn" 2>/dev/null && sleep 0.5 && kill -TERM "$nspawn" 2>/dev/null
        wait "$nspawn" 2>/dev/null || true
    fi
    rm -rf "$root" "$root.boot.log" "$root.token"
}
trap cleanup EXIT
cp -a "$cache/." "$root/"
in_root() { chroot "$root" "$@"; }

# --- install: from the package, or by hand as docs/operations.md says
if [ -n "$PACKAGE" ]; then
    cp "$PACKAGE" "$root/tmp/snarkflow.deb"
    in_root dpkg -i /tmp/snarkflow.deb >/dev/null
    echo "PACKAGE $(in_root dpkg-query -W -f '${Package} ${Version} ${Status}' "$(dpkg-deb -f "$PACKAGE" Package)")"
    cli=/usr/bin/snarkflow
else
    in_root groupadd -f render
    in_root groupadd --system snarkflow
    in_root useradd --system --gid snarkflow --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin snarkflow-gateway
    for user in snarkflow-synth snarkflow-gpu nats; do
        in_root useradd --system --user-group --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin "$user"
    done
    install -m 755 "$BIN/gateway" "$BIN/synth-worker" "$BIN/gpu-worker" "$BIN/snarkflow" "$root/usr/local/bin/"
    install -m 644 deploy/systemd/snarkflow-*.service "$root/etc/systemd/system/"
    cli=/usr/local/bin/snarkflow
fi
install -m 755 "$(command -v nats-server)" "$root/usr/local/bin/"
install -m 644 deploy/systemd/nats-server.service "$root/etc/systemd/system/"
install -d -m 755 "$root/etc/snarkflow"
install -d -m 700 "$root/etc/snarkflow/credentials"
# the example env files, adapted to one host without TLS or a trace collector
cat >"$root/etc/snarkflow/snarkflow.env" <<'EOF'
SNARKFLOW_NATS_URL=nats://127.0.0.1:4222
SNARKFLOW_PARAMS_DIR=/var/lib/snarkflow/params
RUST_LOG=info
EOF
cat >"$root/etc/snarkflow/gateway.env" <<'EOF'
SNARKFLOW_GATEWAY_LISTEN=127.0.0.1:8080
SNARKFLOW_GRPC_LISTEN=unix:///run/snarkflow/cuzk.sock
SNARKFLOW_NATS_REPLICAS=1
SNARKFLOW_NATS_MAX_LEDGER_BYTES=256MiB
SNARKFLOW_ENABLE_TEST_KINDS=true
EOF
cat >"$root/etc/snarkflow/synth-worker.env" <<'EOF'
SNARKFLOW_SYNTH_CONCURRENCY=2
SNARKFLOW_MEMORY_BUDGET=2GiB
EOF
cat >"$root/etc/snarkflow/gpu-worker.env" <<'EOF'
SNARKFLOW_GENERATE_MISSING_PARAMS=true
SNARKFLOW_TEST_PARAMS=true
EOF
cat >"$root/etc/snarkflow/gpu-worker@0.env" <<'EOF'
SNARKFLOW_STATUS_LISTEN=127.0.0.1:9200
EOF
# read by systemd for the services, not by them
chmod 600 "$root"/etc/snarkflow/*.env
# NATS: the repository's configuration for one server, a password per role, its own user
install -d -m 750 -o root -g "$(in_root getent group nats | cut -d: -f3)" "$root/etc/nats"
cp deploy/nats/nats.conf deploy/nats/permissions.conf "$root/etc/nats/"
bash deploy/scripts/nats-credentials.sh "$root/etc/nats/creds" >/dev/null
install -m 640 "$root/etc/nats/creds/auth.conf" "$root/etc/nats/"
in_root chgrp nats /etc/nats/auth.conf
for role in gateway synth-worker gpu-worker; do
    install -m 600 "$root/etc/nats/creds/$role.password" "$root/etc/snarkflow/credentials/"
done
# the gpu-workers' parameter directory: root's; the workers add shapes and digest checks (the
# sticky bit: they cannot replace root's files); the gateway's verifying keys in one of root's;
# the gateway's state directory before its first start, for the token step below (the package
# makes all three)
if [ -z "$PACKAGE" ]; then
    install -d -m 755 "$root/var/lib/snarkflow" "$root/var/lib/snarkflow/verifying-keys"
    install -d -m 1775 -o root -g "$(in_root getent group snarkflow-gpu | cut -d: -f3)" "$root/var/lib/snarkflow/params"
    install -d -m 700 -o "$(in_root id -u snarkflow-gateway)" -g "$(in_root getent group snarkflow | cut -d: -f3)" \
        "$root/var/lib/snarkflow/gateway"
fi
in_root systemctl enable nats-server snarkflow-gateway snarkflow-synth-worker snarkflow-gpu-worker@0 2>/dev/null

# --- boot it
boot_container "$root" "$root.boot.log" --private-network -M sf-rehearsal
nspawn=$BOOTED_NSPAWN leader=$BOOTED_LEADER
run() { nsenter -t "$leader" -m -u -i -n -p -- "$@"; }
units=(nats-server snarkflow-gateway snarkflow-synth-worker snarkflow-gpu-worker@0)
state=""
for _ in $(seq 120); do
    state=$(run /bin/systemctl is-system-running 2>/dev/null || true)
    case "$state" in running | degraded) break ;; esac
    sleep 1
done
echo "PID 1: $(run /bin/systemctl --version | head -1); system $state"
failed=0
for u in "${units[@]}"; do
    s=$(run /bin/systemctl show -p ActiveState,SubState,Type,NRestarts --value "$u" | xargs)
    echo "UNIT $u: $s"
    [ "$(run /bin/systemctl is-active "$u")" = active ] || failed=1
done
if [ "$failed" = 1 ]; then
    run /bin/journalctl --no-pager -n 60 -u snarkflow-gateway -u snarkflow-synth-worker -u snarkflow-gpu-worker@0 | tail -60
    echo "FAILED: a unit did not become active"; exit 1
fi

# what systemd itself said about the units (unknown settings, devices it could not find, ...)
pid1_log=$(run /bin/journalctl --no-pager -o cat _PID=1)
said=$(echo "$pid1_log" | grep -iE "snarkflow|nats-server" | grep -iE "warn|fail|ignor|couldn|unknown" | sort | uniq -c || true)
echo "SYSTEMD SAID about the units, of $(echo "$pid1_log" | wc -l) lines from PID 1: ${said:-nothing amiss}"

# --- a job through the units (the token written as the gateway's user, which must read it)
run /usr/sbin/runuser -u snarkflow-gateway -- "$cli" admin token create --tenant ops \
    --scopes admin --tokens-file /var/lib/snarkflow/gateway/tokens.json >"$root.token" 2>/dev/null
token=$(tail -1 "$root.token")
sleep 1.5   # the gateway rereads its tokens file each second
t=$(date +%s.%N)
answer=$(run /usr/bin/env SNARKFLOW_API_TOKEN="$token" "$cli" submit --kind dense-chain \
    --constraints 1024 --partitions 2 --wait 2>&1 || true)
echo "JOB $(echo "$answer" | grep -E '^job |state|done|failed' | head -3 | xargs) ($(python3 -c "print(f'{$(date +%s.%N) - $t:.1f}')") s)"
echo "$answer" | grep -q "done" || { echo "$answer" | tail -5; echo "FAILED: the job did not finish"; exit 1; }

# --- Restart=on-failure
pid=$(run /bin/systemctl show -p MainPID --value snarkflow-synth-worker)
run /bin/kill -KILL "$pid"
for _ in $(seq 30); do
    sleep 1
    [ "$(run /bin/systemctl is-active snarkflow-synth-worker)" = active ] \
        && [ "$(run /bin/systemctl show -p MainPID --value snarkflow-synth-worker)" != "$pid" ] && break
done
echo "RESTART synth-worker after SIGKILL: $(run /bin/systemctl show -p ActiveState,NRestarts --value snarkflow-synth-worker | xargs)"
[ "$(run /bin/systemctl show -p NRestarts --value snarkflow-synth-worker)" -ge 1 ] || { echo "FAILED: not restarted"; exit 1; }

# --- stop: each service drains and exits by itself
for u in snarkflow-gpu-worker@0 snarkflow-synth-worker snarkflow-gateway; do
    t=$(date +%s.%N)
    run /bin/systemctl stop "$u"
    result="$(run /bin/systemctl show -p ActiveState --value "$u") $(run /bin/systemctl show -p Result --value "$u")"
    echo "STOP $u: $result in $(python3 -c "print(f'{$(date +%s.%N) - $t:.2f}')") s"
    [ "$result" = "inactive success" ] || { echo "FAILED: $u did not stop cleanly"; exit 1; }
done
echo "systemd rehearsal: OK"
exit 0
