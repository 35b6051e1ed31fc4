#!/usr/bin/env bash
# The systemd fleet recipe, rehearsed on one machine: five hosts, each a Debian 12 container
# booted with systemd-nspawn (systemd 252 as its PID 1) in a network namespace of its own, on
# one bridge (sf-fleet0, 10.78.0.0/24):
#   a, b, c   a.internal .11, b.internal .12, c.internal .13: nats-server.service on
#             deploy/nats/nats-cluster.conf, routes mutual TLS with the route password
#             (nats-route-certs.sh, nats-credentials.sh --routes), clients over TLS
#   app       app.internal .20: snarkflow from the Debian package (PACKAGE, from
#             deploy/scripts/release.sh): the gateway, a synth-worker, gpu-worker@0 and @1 (the
#             CPU build), NATS passwords through LoadCredential=, replicas 3
# Then:
#   1. every unit of every host reaches `active`;
#   2. a dense-chain job of 2 partitions is proved (`snarkflow submit --wait` on app);
#   3. NATS node b is powered off (its whole host gone), and another job is proved;
#   4. b comes back and rejoins: `nats-server` active again, a third job proved.
# Needs root (debootstrap, nspawn, a bridge). Not in CI: ~3 minutes plus a first debootstrap.
#
#   PACKAGE=dist/snarkflow_0.1.0_amd64.deb bash deploy/scripts/fleet-rehearsal.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/scripts/rehearsal-common.sh
PACKAGE="${PACKAGE:-$(ls dist/snarkflow_*_amd64.deb 2>/dev/null | head -1)}"
[ -f "$PACKAGE" ] || { echo "no package (bash deploy/scripts/release.sh, or PACKAGE=...)"; exit 1; }
command -v nats-server >/dev/null || bash deploy/scripts/install-deps.sh
need_packages systemd-nspawn:systemd-container openssl:openssl
cache=$(debian_root)
work=$(mktemp -d /var/tmp/sf-fleet.XXXXXX)
bridge=sf-fleet0
declare -A IP=([a]=10.78.0.11 [b]=10.78.0.12 [c]=10.78.0.13 [app]=10.78.0.20)
declare -A LEADER=() NSPAWN=()
hosts=(a b c app)

stop_host() {
    local h=$1
    [ -n "${NSPAWN[$h]:-}" ] || return 0
    [ -n "${LEADER[$h]:-}" ] && kill -s RTMIN+4 "${LEADER[$h]}" 2>/dev/null
    for _ in $(seq 40); do kill -0 "${NSPAWN[$h]}" 2>/dev/null || break; sleep 0.5; done
    kill -TERM "${NSPAWN[$h]}" 2>/dev/null && sleep 0.5 && kill -TERM "${NSPAWN[$h]}" 2>/dev/null
    wait "${NSPAWN[$h]}" 2>/dev/null || true
    NSPAWN[$h]="" LEADER[$h]=""
}
cleanup() {
    for h in "${hosts[@]}"; do stop_host "$h"; done
    ip link del "$bridge" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# --- the hosts' roots: the package on every one (its users: nats among them), then each role
pkgroot="$work/pkgroot"
cp -a "$cache/." "$pkgroot/"
cp "$PACKAGE" "$pkgroot/tmp/snarkflow.deb"
chroot "$pkgroot" dpkg -i /tmp/snarkflow.deb >/dev/null
install -m 755 "$(command -v nats-server)" "$pkgroot/usr/local/bin/"
{
    echo "127.0.0.1 localhost"
    for h in "${hosts[@]}"; do echo "${IP[$h]} $h.internal"; done
} >"$pkgroot/etc/hosts"
bash deploy/scripts/nats-route-certs.sh "$work/certs" a.internal b.internal c.internal >/dev/null
bash deploy/scripts/nats-credentials.sh --routes a.internal,b.internal,c.internal "$work/creds" >/dev/null
for h in "${hosts[@]}"; do
    root="$work/$h"
    cp -a "$pkgroot/." "$root/"
    echo "$h" >"$root/etc/hostname"
done
nats_gid=$(chroot "$pkgroot" getent group nats | cut -d: -f3)
for h in a b c; do
    root="$work/$h"
    install -d -m 750 -o root -g "$nats_gid" "$root/etc/nats" "$root/etc/nats/tls"
    install -m 644 deploy/nats/nats-cluster.conf "$root/etc/nats/nats.conf"
    install -m 644 deploy/nats/permissions.conf "$root/etc/nats/"
    install -m 640 -g "$nats_gid" "$work/creds/auth.conf" "$work/creds/routes.conf" "$root/etc/nats/"
    install -m 644 "$work/certs/route-ca.pem" "$root/etc/nats/tls/route-ca.pem"
    install -m 644 "$work/certs/$h.internal-route.pem" "$root/etc/nats/tls/route.pem"
    install -m 640 -g "$nats_gid" "$work/certs/$h.internal-route-key.pem" "$root/etc/nats/tls/route-key.pem"
    install -m 644 deploy/systemd/nats-server.service "$root/etc/systemd/system/"
    chroot "$root" systemctl enable nats-server 2>/dev/null
done
root="$work/app"
install -m 644 "$work/certs/route-ca.pem" "$root/etc/snarkflow/tls/nats-ca.pem"
for role in gateway synth-worker gpu-worker; do
    install -m 600 "$work/creds/$role.password" "$root/etc/snarkflow/credentials/"
done
# the example environment files, as an operator fills them in for this fleet
cat >"$root/etc/snarkflow/snarkflow.env" <<'EOF'
SNARKFLOW_NATS_URL=tls://a.internal:4222,tls://b.internal:4222,tls://c.internal:4222
SNARKFLOW_NATS_TLS_CA=/etc/snarkflow/tls/nats-ca.pem
SNARKFLOW_NATS_REQUIRE_TLS=true
SNARKFLOW_NATS_REPLICAS=3
SNARKFLOW_PARAMS_DIR=/var/lib/snarkflow/params
RUST_LOG=info
EOF
cat >"$root/etc/snarkflow/gateway.env" <<'EOF'
SNARKFLOW_GATEWAY_LISTEN=127.0.0.1:8080
SNARKFLOW_NATS_MAX_LEDGER_BYTES=256MiB
SNARKFLOW_ENABLE_TEST_KINDS=true
EOF
cat >"$root/etc/snarkflow/synth-worker.env" <<'EOF'
SNARKFLOW_STATUS_LISTEN=0.0.0.0:9101
SNARKFLOW_MEMORY_BUDGET=2GiB
EOF
cat >"$root/etc/snarkflow/gpu-worker.env" <<'EOF'
SNARKFLOW_GENERATE_MISSING_PARAMS=true
SNARKFLOW_TEST_PARAMS=true
SNARKFLOW_MEMORY_BUDGET=2GiB
EOF
for g in 0 1; do echo "SNARKFLOW_STATUS_LISTEN=0.0.0.0:920$g" >"$root/etc/snarkflow/gpu-worker@$g.env"; done
chmod 600 "$root"/etc/snarkflow/*.env
chroot "$root" systemctl enable snarkflow-gateway snarkflow-synth-worker snarkflow-gpu-worker@0 \
    snarkflow-gpu-worker@1 2>/dev/null

# --- the network and the boots
ip link add "$bridge" type bridge
ip addr add 10.78.0.1/24 dev "$bridge"
ip link set "$bridge" up
boot() {
    local h=$1 leader
    boot_container "$work/$h" "$work/$h.boot.log" --network-bridge="$bridge" -M "$h"
    NSPAWN[$h]=$BOOTED_NSPAWN LEADER[$h]=$BOOTED_LEADER
    leader=$BOOTED_LEADER
    # the host's own `ip`, in the container's network namespace
    nsenter -t "$leader" -n ip link set lo up
    nsenter -t "$leader" -n ip addr add "${IP[$h]}/24" dev host0
    nsenter -t "$leader" -n ip link set host0 up
}
on() { local h=$1; shift; nsenter -t "${LEADER[$h]}" -m -u -i -n -p -- "$@"; }
wait_active() {
    local h=$1 u=$2
    for _ in $(seq 120); do
        [ "$(on "$h" /bin/systemctl is-active "$u" 2>/dev/null)" = active ] && return 0
        sleep 1
    done
    on "$h" /bin/journalctl --no-pager -n 30 -u "$u" | tail -30
    echo "FAILED: $u on $h not active"; exit 1
}
for h in a b c; do boot "$h"; done
for h in a b c; do wait_active "$h" nats-server; echo "UNIT $h nats-server: active"; done
boot app
units=(snarkflow-gateway snarkflow-synth-worker snarkflow-gpu-worker@0 snarkflow-gpu-worker@1)
for u in "${units[@]}"; do wait_active app "$u"; echo "UNIT app $u: active"; done
# routes a node holds, from its monitoring port (bash's /dev/tcp: the minimal root has no curl)
routes_of() {
    on "$1" /bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/8222; printf "GET /routez HTTP/1.0\r\n\r\n" >&3; cat <&3' \
        | grep -c '"remote_name"' || true
}
for _ in $(seq 30); do [ "$(routes_of a)" -ge 2 ] && break; sleep 1; done
echo "ROUTES a: $(routes_of a), b: $(routes_of b), c: $(routes_of c) (route connections: nats-server pools several per peer)"
[ "$(routes_of a)" -ge 2 ] || { echo "FAILED: the cluster did not form"; exit 1; }

on app /usr/sbin/runuser -u snarkflow-gateway -- /usr/bin/snarkflow admin token create --tenant ops \
    --scopes admin --tokens-file /var/lib/snarkflow/gateway/tokens.json >"$work/token" 2>/dev/null
token=$(tail -1 "$work/token")
sleep 1.5
job() {
    local what=$1 t answer
    t=$(date +%s.%N)
    answer=$(on app /usr/bin/env SNARKFLOW_API_TOKEN="$token" /usr/bin/snarkflow submit --kind dense-chain \
        --constraints 1024 --partitions 2 --wait 2>&1 || true)
    echo "JOB $what: $(echo "$answer" | grep -E 'done|failed' | tail -1 | xargs) ($(python3 -c "print(f'{$(date +%s.%N) - $t:.1f}')") s)"
    echo "$answer" | grep -q "done" || { echo "$answer" | tail -5; echo "FAILED: the job ($what) did not finish"; exit 1; }
}
job "three NATS nodes"
stop_host b
echo "NODE b powered off; routes a: $(routes_of a), c: $(routes_of c)"
job "node b gone"
boot b
wait_active b nats-server
for _ in $(seq 30); do [ "$(routes_of b)" -ge 2 ] && break; sleep 1; done
echo "NODE b back: nats-server active, routes b: $(routes_of b)"
job "node b back"
on app /usr/bin/env SNARKFLOW_API_TOKEN="$token" /usr/bin/snarkflow cluster status | sed 's/^/CLUSTER /'
echo "fleet rehearsal: OK"
