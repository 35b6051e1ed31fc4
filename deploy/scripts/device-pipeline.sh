#!/usr/bin/env bash
# The whole pipeline on one GPU host: nats-server, gateway, SYNTH synth-workers, one CUDA
# gpu-worker, a trace collector; JOBS sha256-chain jobs of PARTS partitions of BLOCKS blocks
# submitted at once; then the waterfall. Binaries come from BINS (a tar.xz of nats-server,
# gateway, synth-worker, gpu-worker, snarkflow). Results in ${OUT:-.}.
set -uo pipefail
out="${OUT:-.}"
d=/tmp/snarkflow-bin
mkdir -p "$d" && tar xJf "${BINS:-.gpu-carry/bins.tar.xz}" -C "$d"
BLOCKS="${BLOCKS:-64}" JOBS="${JOBS:-4}" PARTS="${PARTS:-8}" SYNTH="${SYNTH:-4}"
export SNARKFLOW_PARAMS_DIR=/tmp/snarkflow-params SNARKFLOW_NATS_URL=nats://127.0.0.1:4222
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 RUST_LOG=warn
get() { python3 -c "import sys,urllib.request;print(urllib.request.urlopen(sys.argv[1]).read().decode())" "$1" 2>/dev/null; }
"$d/nats-server" -js -a 127.0.0.1 -p 4222 -sd /tmp/snarkflow-nats >"$out/nats.log" 2>&1 &
"$d/snarkflow" traces collect --out /tmp/spans.jsonl >/dev/null 2>&1 &
collector=$!
pids=()
RUST_LOG=info "$d/gpu-worker" --worker-id gpu-h200 --generate-missing-params --preload "sha256-chain-b$BLOCKS" \
    --status-listen 127.0.0.1:9102 >"$out/gpu-worker.log" 2>&1 & pids+=($!)
# an isolated benchmark host: no API tokens, test kinds on
"$d/gateway" --insecure-no-auth --enable-test-kinds >"$out/gateway.log" 2>&1 & pids+=($!)
for i in $(seq 1 "$SYNTH"); do "$d/synth-worker" --worker-id "synth-$i" >/dev/null 2>&1 & pids+=($!); done
start=$(date +%s)
until get http://127.0.0.1:9102/readyz | grep -q '"ready":true'; do sleep 1; [ $(( $(date +%s) - start )) -gt 400 ] && { echo "gpu-worker not ready"; exit 1; }; done
echo "gpu-worker ready after $(( $(date +%s) - start )) s (parameters generated and loaded)"
t0=$(date +%s.%N)
ids=()
for j in $(seq 1 "$JOBS"); do
    ids+=($("$d/snarkflow" submit --kind sha256-chain --blocks "$BLOCKS" --partitions "$PARTS" | awk '{print $2}'))
done
for id in "${ids[@]}"; do
    until "$d/snarkflow" status "$id" | grep -qE '"state": "(done|failed|cancelled)"'; do sleep 0.5; done
    "$d/snarkflow" status "$id" | grep -E '"state"' | head -1
done
t1=$(date +%s.%N)
echo "$JOBS jobs x $PARTS partitions of sha256-chain-b$BLOCKS in $(python3 -c "print(round($t1 - $t0, 2))") s"
"$d/snarkflow" status "${ids[0]}" >"$out/job0.json"
for p in "${pids[@]}"; do kill -TERM "$p"; done
wait "${pids[@]}" 2>/dev/null
kill -INT "$collector"; wait "$collector" 2>/dev/null
"$d/snarkflow" waterfall --otlp-file /tmp/spans.jsonl --width 100 --svg "$out/waterfall.svg" | tee "$out/waterfall.txt"
