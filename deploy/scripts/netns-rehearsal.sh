#!/usr/bin/env bash
# A multi-host rehearsal on one Linux machine: four network namespaces joined by a bridge, each
# link shaped to LINK (default 1gbit, tc tbf, both directions):
#   sf-hub     10.77.0.1  nats-server + gateway
#   sf-synth1  10.77.0.2  synth-worker synth-1
#   sf-synth2  10.77.0.3  synth-worker synth-2
#   sf-gpu     10.77.0.4  gpu-worker (CPU backend)
# The CLI runs in the root namespace (10.77.0.254 on the bridge). Three scenes, each checked:
#   hop     the synth -> prove hop at that bandwidth, compact vs raw partitions (sha256-chain,
#           HOP_BLOCKS blocks): bytes and fetch seconds per partition
#   churn   synth-2 leaves (SIGTERM: it drains) and joins again while jobs run; none is lost
#   cut     synth-1's link and then the GPU host's link go down mid-partition for CUT_SECS (longer
#           than the tasks' ack wait) and come back; every job still finishes, none fails
# Needs root (ip netns, veth, tc) and release binaries in BIN (default target/release; build with
# `cargo build --release -p snarkflow-gateway -p snarkflow-synth-worker -p snarkflow-gpu-worker
# -p snarkflow-cli`). Latency is not emulated where the kernel has no netem qdisc (it says so).
# Everything is torn down on exit, also on failure. Output: a summary on stdout, logs in $S.
#
#   sudo bash deploy/scripts/netns-rehearsal.sh            # all scenes
#   SCENES="hop" sudo bash deploy/scripts/netns-rehearsal.sh
set -euo pipefail
BIN="${BIN:-target/release}"
S="${S:-/tmp/sf-netns}"
LINK="${LINK:-1gbit}" DELAY="${DELAY:-10ms}"
SCENES="${SCENES:-hop churn cut}"
HOP_BLOCKS="${HOP_BLOCKS:-64}" BLOCKS="${BLOCKS:-8}" CUT_SECS="${CUT_SECS:-45}"
P="${SNARKFLOW_TEST_PARAMS_DIR:-$HOME/.cache/snarkflow/test-params}"
NATS_BIN="${NATS_BIN:-$(command -v nats-server || ls "$HOME"/.cache/snarkflow/nats-server-*/nats-server 2>/dev/null | tail -1)}"
for b in gateway synth-worker gpu-worker snarkflow; do [ -x "$BIN/$b" ] || { echo "no $BIN/$b (see the header)"; exit 2; }; done
[ -x "$NATS_BIN" ] || { echo "no nats-server (bash deploy/scripts/install-deps.sh)"; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root: ip netns, veth, tc"; exit 2; }

HOSTS=(sf-hub sf-synth1 sf-synth2 sf-gpu)
declare -A IP=([sf-hub]=10.77.0.1 [sf-synth1]=10.77.0.2 [sf-synth2]=10.77.0.3 [sf-gpu]=10.77.0.4)
NATS_URL=nats://10.77.0.1:4222
export SNARKFLOW_GATEWAY_URL=http://10.77.0.1:8080
rm -rf "$S"; mkdir -p "$S/pids" "$P"

teardown() {
    for f in "$S"/pids/*; do [ -f "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null || true; done
    sleep 1
    for f in "$S"/pids/*; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null || true; done
    for h in "${HOSTS[@]}"; do ip netns del "$h" 2>/dev/null || true; ip link del "$h-h" 2>/dev/null || true; done
    ip link del sf-br0 2>/dev/null || true
}
trap teardown EXIT
teardown

# --- the hosts and their links
ip link add sf-br0 type bridge
ip addr add 10.77.0.254/24 dev sf-br0
ip link set sf-br0 up
shape() { # DEV [netns]: LINK each way, and DELAY where the kernel has netem
    local dev=$1 ns=${2:-}
    local run=(); [ -n "$ns" ] && run=(ip netns exec "$ns")
    if "${run[@]}" tc qdisc add dev "$dev" root netem delay "$DELAY" rate "$LINK" 2>/dev/null; then
        return
    fi
    "${run[@]}" tc qdisc add dev "$dev" root tbf rate "$LINK" burst 1mb latency 50ms
    NO_NETEM=1
}
NO_NETEM=0
for h in "${HOSTS[@]}"; do
    ip netns add "$h"
    ip link add "$h-h" type veth peer name "$h-c"
    ip link set "$h-c" netns "$h"
    ip netns exec "$h" ip addr add "${IP[$h]}/24" dev "$h-c"
    ip netns exec "$h" ip link set "$h-c" up
    ip netns exec "$h" ip link set lo up
    ip link set "$h-h" master sf-br0 up
    shape "$h-h"
    shape "$h-c" "$h"
done
if [ "$NO_NETEM" = 1 ]; then
    echo "links: $LINK each way (tc tbf); no $DELAY latency: this kernel has no netem qdisc"
else
    echo "links: $LINK and $DELAY each way (tc netem)"
fi

# --- the services, each in its host
run_in() { # HOST NAME COMMAND...: detached, logged, pid kept
    local host=$1 name=$2; shift 2
    ip netns exec "$host" env SNARKFLOW_NATS_URL=$NATS_URL RUST_LOG=info "$@" >"$S/$name.log" 2>&1 &
    echo $! >"$S/pids/$name"
}
stop() { local f="$S/pids/$1"; [ -f "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null; rm -f "$f"; }
ready() { # URL (from the host's namespace HOST)
    local host=$1 url=$2 i
    for i in $(seq 1 600); do
        ip netns exec "$host" curl -sf "$url" 2>/dev/null | grep -q '"ready":true' && return 0
        sleep 0.5
    done
    echo "not ready: $url"; return 1
}
run_in sf-hub nats "$NATS_BIN" -js -a 10.77.0.1 -p 4222 -sd "$S/nats"
sleep 1
run_in sf-hub gateway "$BIN/gateway" --listen 10.77.0.1:8080 --insecure-no-auth --enable-test-kinds \
    --test-params --params-dir "$P" --ledger-pass-secs 2
ready sf-hub http://10.77.0.1:8080/readyz
synth() { # N [flags...]
    local n=$1; shift
    run_in "sf-synth$n" "synth-$n" "$BIN/synth-worker" --worker-id "synth-$n" --status-listen "${IP[sf-synth$n]}:9101" "$@"
    ready "sf-synth$n" "http://${IP[sf-synth$n]}:9101/readyz"
}
run_in sf-gpu gpu "$BIN/gpu-worker" --worker-id gpu-1 --generate-missing-params --params-dir "$P" \
    --preload "sha256-chain-b$BLOCKS,sha256-chain-b$HOP_BLOCKS" --status-listen 10.77.0.4:9102
ready sf-gpu http://10.77.0.4:9102/readyz
echo "hub, two synth hosts and a GPU host up"

# --- helpers for jobs
submit() { # BLOCKS PARTITIONS COUNT: ids on stdout
    local i
    for i in $(seq 1 "$3"); do "$BIN/snarkflow" submit --kind sha256-chain --blocks "$1" --partitions "$2" --seed "$RANDOM" | awk '/^job / {print $2}'; done
}
wait_all() { # IDS...: every one terminal; prints the states, fails unless all are done
    local id state bad=0
    for id in "$@"; do
        for _ in $(seq 1 1200); do
            state=$("$BIN/snarkflow" status "$id" 2>/dev/null | grep -oE '"state": "[a-z]+"' | head -1 | cut -d'"' -f4)
            case "$state" in done|failed|cancelled) break ;; esac
            sleep 0.5
        done
        [ "$state" = done ] || { echo "job $id ended $state"; "$BIN/snarkflow" status "$id" | grep '"error"'; bad=1; }
    done
    return $bad
}

# --- scenes
for scene in $SCENES; do
case "$scene" in
hop)
    echo "== hop: sha256-chain-b$HOP_BLOCKS partitions from the synth hosts to the GPU host over $LINK"
    for fmt in compact raw; do
        stop synth-1; stop synth-2; sleep 2
        synth 1 --wire-format "$fmt"
        mapfile -t ids < <(submit "$HOP_BLOCKS" 2 2)
        wait_all "${ids[@]}"
        for id in "${ids[@]}"; do "$BIN/snarkflow" status "$id"; done | python3 -c "
import sys, json, statistics
text = sys.stdin.read()
dec = json.JSONDecoder(); jobs = []; i = 0
while i < len(text):
    if text[i] == '{':
        obj, j = dec.raw_decode(text, i); jobs.append(obj); i = j
    else:
        i += 1
parts = [p for j in jobs for p in j['partition_details']]
b = [p['prove']['bytes_fetched'] for p in parts]; f = [p['prove']['fetch_s'] for p in parts]; s = [p['synth']['store_s'] for p in parts]
print(f'HOP $fmt: {len(parts)} partitions of {parts[0][\"synth\"][\"constraints\"]} constraints, {statistics.median(b) / 1e6:.2f} MB each, '
      f'store {statistics.median(s):.3f} s, fetch {statistics.median(f):.3f} s (median), {statistics.median(b) / statistics.median(f) / 1e6:.0f} MB/s')
"
    done
    stop synth-1; synth 1; synth 2
    ;;
churn)
    echo "== churn: synth-2 leaves and joins while jobs run"
    [ -f "$S/pids/synth-1" ] || synth 1
    [ -f "$S/pids/synth-2" ] || synth 2
    mapfile -t ids < <(submit "$BLOCKS" 4 6)
    sleep 3
    stop synth-2; echo "synth-2 left (draining its partition)"
    sleep 8
    synth 2; echo "synth-2 joined again"
    wait_all "${ids[@]}" && echo "CHURN: ${#ids[@]} jobs x 4 partitions, all done"
    ;;
cut)
    echo "== cut: a host's link goes down mid-partition for $CUT_SECS s"
    [ -f "$S/pids/synth-1" ] || synth 1
    [ -f "$S/pids/synth-2" ] || synth 2
    for host in sf-synth1 sf-gpu; do
        mapfile -t ids < <(submit "$BLOCKS" 4 4)
        # once the host works on a partition
        log="$S/$([ $host = sf-gpu ] && echo gpu || echo synth-1).log"
        before=$(wc -l <"$log")
        for _ in $(seq 1 200); do tail -n +"$before" "$log" | grep -qE "partition (synthesized|proved)|synthesiz|proving" && break; sleep 0.1; done
        ip link set "$host-h" down; echo "$host cut off"
        sleep "$CUT_SECS"
        ip link set "$host-h" up; echo "$host back"
        wait_all "${ids[@]}" && echo "CUT $host: ${#ids[@]} jobs x 4 partitions, all done"
    done
    ;;
*) echo "unknown scene $scene"; exit 2 ;;
esac
done
{ grep -hE " (ERROR|WARN) " "$S"/*.log || true; } | sed "s/^.*Z //" | cut -c1-200 | sort | uniq -c | sort -rn | head -8
echo "rehearsal passed"
