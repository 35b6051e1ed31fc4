#!/usr/bin/env bash
# The GPU benchmark (issue 6), on one GPU host in one run: stock C2 vs snarkflow on a stream of
# distinct 2 KiB PoRep C1 inputs, all on the supraseal-c2 prover.
#   1. random 2 KiB PoRep parameters (our comb-table generator) and N sealed sectors (C1 envelopes)
#   2. stock: filecoin-proofs' seal_commit_phase2 in one process over the N inputs
#   3. parallel stock: K stock processes sharing the GPU (proofs/min and failed proofs)
#   4. snarkflow: nats-server + gateway + SYNTH synth-workers + 1 gpu-worker, the N jobs at once
#   5. in-process prove of one partition (the gpu-worker's per-partition overhead), waterfall
# Binaries from BINS (tar.xz: nats-server, gateway, synth-worker, gpu-worker-supraseal,
# snarkflow-supraseal). Logs and results in ${OUT:-.}; a summary table is printed last.
set -uo pipefail
out="${OUT:-.}"
pkill -f /tmp/snarkflow-bin/ 2>/dev/null; sleep 0.5   # leftovers of an interrupted run
rm -rf /tmp/snarkflow-nats /tmp/snarkflow-logs /tmp/spans.jsonl
logs=/tmp/snarkflow-logs; mkdir -p $logs
exec > >(tee "$out/summary.txt") 2>&1
d=/tmp/snarkflow-bin
mkdir -p "$d" && tar xJf "${BINS:-.gpu-carry/bins.tar.xz}" -C "$d"
N="${N:-32}" K="${K:-4}" SYNTH="${SYNTH:-8}" MINER=1000
STOCK_N="${STOCK_N:-$N}"   # the stock runs take the first STOCK_N inputs (2+ s each); 0 skips them
WIRE="${WIRE:-compact}"    # synth-workers' --wire-format: compact or raw
P=/tmp/snarkflow-params S=/tmp/snarkflow-sectors
export SNARKFLOW_PARAMS_DIR=$P FIL_PROOFS_PARAMETER_CACHE=$P SNARKFLOW_NATS_URL=nats://127.0.0.1:4222 RUST_LOG=warn
sf="$d/snarkflow-supraseal"
now() { date +%s.%N; }
secs() { python3 -c "print(round($2 - $1, 2))"; }
# wait for a job to finish, at most 300 s
wait_job() {
    local until=$(( $(date +%s) + 300 ))
    until "$sf" status "$1" | grep -E '"state": "(done|failed|cancelled)"' >/dev/null; do
        sleep 0.2; [ "$(date +%s)" -gt "$until" ] && { echo "job $1 did not finish"; return 1; }
    done
}
get() { python3 -c "import sys,urllib.request;print(urllib.request.urlopen(sys.argv[1]).read().decode())" "$1" 2>/dev/null; }
nproc; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

t=$(now)
"$sf" params generate --proof porep-c2 --sector-size 2KiB --params-dir $P >"$logs/params.log" 2>&1 || { tail "$logs/params.log"; exit 1; }
echo "params generated in $(secs "$t" "$(now)") s"
t=$(now)
"$sf" filecoin seal --out $S --count "$N" --c1-only --miner-id $MINER >"$logs/seal.log" 2>&1 || { tail "$logs/seal.log"; exit 1; }
echo "$N sectors sealed in $(secs "$t" "$(now)") s"
c1s=$(ls $S/sector-*/c1.json | head -n "$N")
stock_c1s=$(echo $c1s | tr ' ' '\n' | head -n "$STOCK_N")

# 2. stock, one process, sequential
[ "$STOCK_N" -gt 0 ] || K=0
[ "$STOCK_N" -gt 0 ] && "$sf" bench stock-c2 --miner-id $MINER --c1 $stock_c1s >"$logs/stock.log" 2>&1
grep STOCK "$logs/stock.log" | sed 's/^/stock x1: /'

# 3. parallel stock: K processes, inputs dealt round-robin (K=0 skips)
t=$(now); pids=()
if [ "$K" -gt 0 ]; then
for k in $(seq 0 $((K - 1))); do
    mine=$(echo $stock_c1s | tr ' ' '\n' | awk -v k="$k" -v K="$K" '(NR - 1) % K == k')
    "$sf" bench stock-c2 --miner-id $MINER --c1 $mine >"$logs/stock-par-$k.log" 2>&1 & pids+=($!)
done
wait "${pids[@]}"
par_wall=$(secs "$t" "$(now)")
par_ok=$(cat $logs/stock-par-*.log | grep -c "verified by filecoin-proofs")
par_bad=$(cat $logs/stock-par-*.log | grep -c "FAILED")
echo "stock x$K: $par_ok proofs, $par_bad failed, wall $par_wall s => $(python3 -c "print(round(60*$par_ok/$par_wall,1))") proofs/min"
fi

# 4. snarkflow
"$d/nats-server" -js -a 127.0.0.1 -p 4222 -sd /tmp/snarkflow-nats >"$logs/nats.log" 2>&1 &
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
pids=()
RUST_LOG=info "$d/gpu-worker-supraseal" --worker-id gpu-h200 --preload porep-c2-2KiB \
    --status-listen 127.0.0.1:9102 >"$logs/gpu-worker.log" 2>&1 & pids+=($!)
"$d/gateway" >"$logs/gateway.log" 2>&1 & pids+=($!)
for i in $(seq 1 "$SYNTH"); do "$d/synth-worker" --worker-id "synth-$i" --wire-format "$WIRE" >/dev/null 2>&1 & pids+=($!); done
start=$(date +%s)
until get http://127.0.0.1:9102/readyz | grep -q '"ready":true'; do
    sleep 0.5; [ $(( $(date +%s) - start )) -gt 300 ] && { echo "gpu-worker not ready"; tail "$logs/gpu-worker.log"; exit 1; }
done
until get http://127.0.0.1:8080/readyz | grep -q '"ready":true'; do sleep 0.2; done
# warm-up: every synth-worker records the constraint shape once (one job each, not timed)
warm=()
for f in $(echo $c1s | tr ' ' '\n' | head -n "$SYNTH"); do
    warm+=($("$sf" submit --kind porep-c2 --c1 "$f" --miner-id $MINER | awk '{print $2}'))
done
for id in "${warm[@]}"; do wait_job "$id" || break; done
echo "warm-up: ${#warm[@]} jobs done"
sleep 6   # let the warm-up spans be exported (and dropped: no collector yet)
"$sf" traces collect --out /tmp/spans.jsonl >/dev/null 2>&1 &
collector=$!
sleep 0.5
t0=$(now); ids=()
for f in $c1s; do ids+=($("$sf" submit --kind porep-c2 --c1 "$f" --miner-id $MINER | awk '{print $2}')); done
for id in "${ids[@]}"; do wait_job "$id"; done
t1=$(now)
for id in "${ids[@]}"; do "$sf" status "$id"; done >"$logs/jobs.json"
done_n=$(grep -c '"state": "done"' "$logs/jobs.json"); failed_n=$(( ${#ids[@]} - done_n ))
sf_wall=$(secs "$t0" "$t1")
echo "snarkflow ($WIRE hop): $done_n proofs done ($failed_n not done) of ${#ids[@]} in $sf_wall s => $(python3 -c "print(round(60*$done_n/$sf_wall,1))") proofs/min"
"$sf" status "${ids[0]}" >"$logs/job0.json"
for p in "${pids[@]}"; do kill -TERM "$p"; done
wait "${pids[@]}" 2>/dev/null
kill -INT "$collector"; wait "$collector" 2>/dev/null
"$sf" waterfall --otlp-file /tmp/spans.jsonl --width 100 --svg "$out/waterfall.svg" >"$out/waterfall.txt" 2>&1
grep -iE "busy|gap|ratio" "$out/waterfall.txt" | head -8
python3 - "$logs/jobs.json" <<'PY'
import json, sys, statistics
text = open(sys.argv[1]).read()
dec = json.JSONDecoder(); i = 0; jobs = []
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    j, i = dec.raw_decode(text, i); jobs.append(j)
parts = [p for j in jobs for p in j.get("partition_details", [])]
def med(f):
    v = [f(p) for p in parts if f(p) is not None]
    return round(statistics.median(v), 4) if v else None
print("per-stage medians (s): synthesize", med(lambda p: p["synth"]["synthesize_s"]),
      "| queue", med(lambda p: p["prove"]["queue_wait_s"]), "| fetch", med(lambda p: p["prove"]["fetch_s"]),
      "| rebuild", med(lambda p: p["prove"]["rebuild_s"]), "| prove", med(lambda p: p["prove"]["prove_s"]),
      "| bytes/partition", med(lambda p: p["synth"]["bytes"]))
PY

# 5. in-process prove of one partition on the same build
RUST_LOG=warn "$sf" bench hop --kind porep-c2 --c1 $S/sector-1/c1.json --miner-id $MINER --runs 5 --prove \
    --params-dir $P >"$logs/hop.log" 2>&1
grep -E "^\|" "$logs/hop.log"
cp "$logs/job0.json" "$out/" 2>/dev/null
tar cJf "$out/logs.tar.xz" -C $logs . 2>/dev/null
