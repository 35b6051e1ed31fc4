#!/usr/bin/env bash
# The GPU benchmark (issue 6), on one GPU host: stock C2 vs snarkflow on a stream of distinct
# 2 KiB PoRep C1 inputs on the supraseal-c2 prover, plus both GPU backends side by side.
# PHASES (default all, in this order) picks what runs:
#   params  random parameters (our comb-table generator): the 2 KiB Filecoin kinds (PARAM_KINDS) and
#           sha256-chain-b161 (4.2 M constraints ≥ 2^22); N sealed sectors (C1 envelopes)
#   stock   filecoin-proofs' seal_commit_phase2 in one process over the first STOCK_N inputs
#   par     K stock processes sharing the GPU (proofs/min and failed proofs)
#   sf      snarkflow: nats-server + gateway + synth-workers + 1 gpu-worker (supraseal), the N
#           jobs at once, once per entry of VARIANTS ("SYNTH:REBUILD_THREADS:pin|nopin|nice[:live|staged[:PREFETCH]]";
#           pin puts the synth-workers on the first SYNTH cores and the gpu-worker on the rest,
#           nice runs the synth-workers at nice 10 (the gpu-worker keeps priority on all cores);
#           staged synthesizes all N first with the gpu-worker stopped, then starts it and times
#           proving alone: a GPU host whose synthesis runs on other hosts);
#           per-stage medians, GPU busy fraction and gaps from the spans, waterfall
#   hop     in-process prove of one partition (the gpu-worker's per-partition overhead)
#   ready   per backend: a gpu-worker given an absent GPU (--gpu 7) answers /readyz 503, saying why
#   kinds   per backend (cuda, cuda-supraseal): one job of each 2 KiB Filecoin kind through the
#           whole pipeline, verified by the gateway (verify_seal etc.)
#   hammer  per backend: HAMMER_N PoRep proofs from 4 threads taking turns on the device (must
#           be 0 invalid), and for supraseal the same unlocked (threads proving concurrently)
#   sha     cuda vs cuda-supraseal on sha256-chain-b161: SHA_N proofs each, median prove time
# GPUS=n runs n gpu-workers in the sf phase, worker g owning GPU g (--gpu g).
# Binaries from BINS (tar.xz from pack-gpu.sh). Logs and results in ${OUT:-.}.
set -uo pipefail
out="${OUT:-.}"
pkill -f /tmp/snarkflow-bin/ 2>/dev/null; sleep 0.5   # leftovers of an interrupted run
rm -rf /tmp/snarkflow-nats /tmp/snarkflow-logs /tmp/spans.jsonl
logs=/tmp/snarkflow-logs; mkdir -p $logs
exec > >(tee -a "$out/summary.txt") 2>&1
d=/tmp/snarkflow-bin
mkdir -p "$d" && tar xf "${BINS:-.gpu-carry/bins.tar.xz}" -C "$d"
PHASES="${PHASES:-params stock par sf hop ready kinds hammer sha}"
N="${N:-32}" K="${K:-4}" MINER=1000
STOCK_N="${STOCK_N:-$N}"   # the stock runs take the first STOCK_N inputs (2+ s each)
WIRE="${WIRE:-compact}"    # synth-workers' --wire-format: compact or raw
VARIANTS="${VARIANTS:-${SYNTH:-6}:4:nopin}"
HAMMER_N="${HAMMER_N:-64}" SHA_N="${SHA_N:-8}" SHA_BLOCKS="${SHA_BLOCKS:-161}"
P=/tmp/snarkflow-params S=/tmp/snarkflow-sectors
export SNARKFLOW_PARAMS_DIR=$P FIL_PROOFS_PARAMETER_CACHE=$P SNARKFLOW_NATS_URL=nats://127.0.0.1:4222 RUST_LOG=warn
# random parameters under filecoin-proofs' names: the gpu-workers skip the published-digest check
export SNARKFLOW_TEST_PARAMS=1
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318   # `snarkflow traces collect` during the sf runs
sf="$d/snarkflow-supraseal"
cores=$(nproc)
has() { [[ " $PHASES " == *" $1 "* ]]; }
now() { date +%s.%N; }
secs() { python3 -c "print(round($2 - $1, 2))"; }
# wait for a job to finish, at most 300 s
wait_job() {
    local until=$(( $(date +%s) + 300 ))
    until "$sf" status "$1" | grep -E '"state": "(done|failed|cancelled)"' >/dev/null; do
        sleep 0.2; [ "$(date +%s)" -gt "$until" ] && { echo "job $1 did not finish"; return 1; }
    done
    return 0
}
get() { python3 -c "import sys,urllib.request;print(urllib.request.urlopen(sys.argv[1]).read().decode())" "$1" 2>/dev/null; }
wait_ready() { # url, what
    local start=$(date +%s)
    until get "$1" | grep -q '"ready":true'; do
        sleep 0.5; [ $(( $(date +%s) - start )) -gt 300 ] && { echo "$2 not ready: $(get "$1")"; return 1; }
    done
    return 0
}
echo "== $(date -u +%FT%TZ) PHASES=\"$PHASES\" N=$N STOCK_N=$STOCK_N K=$K VARIANTS=\"$VARIANTS\""
echo "$cores cores; $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"

if has params; then
    t=$(now)
    for kind in ${PARAM_KINDS:-porep-c2 snap-update window-post winning-post}; do
        "$sf" params generate --proof $kind --sector-size 2KiB --params-dir $P >>"$logs/params.log" 2>&1 \
            || { tail "$logs/params.log"; exit 1; }
    done
    echo "2 KiB Filecoin parameters in $(secs "$t" "$(now)") s"
    if has sha; then
        t=$(now)
        "$sf" params generate --kind sha256-chain --blocks "$SHA_BLOCKS" --params-dir $P >>"$logs/params.log" 2>&1 \
            || { tail "$logs/params.log"; exit 1; }
        echo "sha256-chain-b$SHA_BLOCKS parameters in $(secs "$t" "$(now)") s"
    fi
    t=$(now)
    if [ ! -f "$S/sector-1/snap-update.json" ]; then
        "$sf" filecoin seal --out $S --count 1 --miner-id $MINER >"$logs/seal.log" 2>&1 || { tail "$logs/seal.log"; exit 1; }
    fi
    if [ "$N" -gt 1 ] && [ ! -f "$S/sector-$N/c1.json" ]; then
        "$sf" filecoin seal --out $S --count $((N - 1)) --sector-num 2 --c1-only --miner-id $MINER >>"$logs/seal.log" 2>&1 \
            || { tail "$logs/seal.log"; exit 1; }
    fi
    echo "$N sectors sealed in $(secs "$t" "$(now)") s"
fi
c1s=$(ls $S/sector-*/c1.json 2>/dev/null | sort -V | head -n "$N")
stock_c1s=$(echo $c1s | tr ' ' '\n' | head -n "$STOCK_N")

# stock, one process, sequential
if has stock; then
    "$sf" bench stock-c2 --miner-id $MINER --c1 $stock_c1s >"$logs/stock.log" 2>&1
    grep STOCK "$logs/stock.log" | sed 's/^/stock x1: /'
fi

# parallel stock: K processes, inputs dealt round-robin
if has par; then
    t=$(now); pids=()
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

# a stack: nats-server, gateway, synth-workers, and GPUS gpu-workers of the given build, worker
# g owning GPU g (--gpu g), status port 9102 + g
GPUS="${GPUS:-1}"
pids=()
start_gpu_workers() {
    gpu_pids=()
    for g in $(seq 0 $((GPUS - 1))); do
        local cmd=($gcpu "$gw_bin" --worker-id "gpu-$g" --preload "$preload" --rebuild-threads "$rebuild" \
            --prefetch "$prefetch" --status-listen "127.0.0.1:$((9102 + g))")
        [ "$GPUS" -gt 1 ] && cmd+=(--gpu "$g")
        RUST_LOG=info "${cmd[@]}" >>"$logs/gpu-worker-$g.log" 2>&1 & gpu_pids+=($!); pids+=($!)
    done
}
gpu_workers_ready() {
    for g in $(seq 0 $((GPUS - 1))); do
        wait_ready "http://127.0.0.1:$((9102 + g))/readyz" "gpu-worker $g" || { tail "$logs/gpu-worker-$g.log"; return 1; }
        get "http://127.0.0.1:$((9102 + g))/readyz" | python3 -c "import json,sys; d=json.load(sys.stdin)['detail']; print('gpu-worker', d['worker'], d['backend'], 'CUDA_VISIBLE_DEVICES', d['gpu'], d['devices'], 'self-test', round(d['self_test_seconds'],2), 's')"
    done
}
stack_up() { # gpu-worker binary, synth count, rebuild threads, pin|nopin|nice, preload[, prefetch]
    gw_bin=$1 synth=$2 rebuild=$3 pin=$4 preload=$5 prefetch=${6:-1} gcpu="" scpu=""
    if [ "$pin" = pin ] && command -v taskset >/dev/null; then
        scpu="taskset -c 0-$((synth - 1))"; gcpu="taskset -c $synth-$((cores - 1))"
    elif [ "$pin" = nice ]; then
        scpu="nice -n 10"   # synthesis yields the cores to the prover's CPU side when it needs them
    fi
    rm -rf /tmp/snarkflow-nats
    "$d/nats-server" -js -a 127.0.0.1 -p 4222 -sd /tmp/snarkflow-nats >"$logs/nats.log" 2>&1 & pids=($!)
    start_gpu_workers
    # an isolated benchmark host: no API tokens, test kinds on
    "$d/gateway" --insecure-no-auth --enable-test-kinds >"$logs/gateway.log" 2>&1 & pids+=($!)
    for i in $(seq 1 "$synth"); do
        $scpu env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 "$d/synth-worker" --worker-id "synth-$i" --wire-format "$WIRE" --status-listen "127.0.0.1:$((9110 + i))" \
            >"$logs/synth-$i.log" 2>&1 & pids+=($!)
    done
    gpu_workers_ready || return 1
    wait_ready http://127.0.0.1:8080/readyz gateway || return 1
}
stack_down() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    wait "${pids[@]}" 2>/dev/null; pids=()
}

if has sf; then
    for variant in $VARIANTS; do
        IFS=: read -r synth rebuild pin staged prefetch <<<"$variant"
        prefetch=${prefetch:-1}
        echo "-- snarkflow: $synth synth-workers, --rebuild-threads $rebuild, --prefetch $prefetch, $pin ${staged:-}"
        stack_up "$d/gpu-worker-supraseal" "$synth" "$rebuild" "$pin" porep-c2-2KiB "$prefetch" || { stack_down; continue; }
        # warm-up: every synth-worker records the constraint shape once (one job each, not timed)
        warm=()
        for f in $(echo $c1s | tr ' ' '\n' | head -n "$synth"); do
            warm+=($("$sf" submit --kind porep-c2 --c1 "$f" --miner-id $MINER | awk '{print $2}'))
        done
        for id in "${warm[@]}"; do wait_job "$id" || break; done
        sleep 6   # let the warm-up spans be exported (and dropped: no collector yet)
        rm -f /tmp/spans.jsonl
        "$sf" traces collect --out /tmp/spans.jsonl >/dev/null 2>&1 &
        collector=$!
        sleep 0.5
        if [ "${staged:-}" = staged ]; then
            kill -TERM "${gpu_pids[@]}"; wait "${gpu_pids[@]}" 2>/dev/null
            ids=()
            for f in $c1s; do ids+=($("$sf" submit --kind porep-c2 --c1 "$f" --miner-id $MINER | awk '{print $2}')); done
            # every partition synthesized and waiting on the prove lane
            deadline=$(( $(date +%s) + 600 ))
            until [ "$(for id in "${ids[@]}"; do "$sf" status "$id"; done | grep -c '"synthesized": 1,')" -ge "${#ids[@]}" ]; do
                sleep 1
                [ "$(date +%s)" -gt "$deadline" ] && { echo "staged: synthesis did not finish in 600 s"; break; }
            done
            echo "staged: ${#ids[@]} partitions synthesized; starting $GPUS gpu-worker(s)"
            t0=$(now)   # from the start: the rate is also given from the spans below
            start_gpu_workers
            gpu_workers_ready
        else
            t0=$(now); ids=()
            for f in $c1s; do ids+=($("$sf" submit --kind porep-c2 --c1 "$f" --miner-id $MINER | awk '{print $2}')); done
        fi
        for id in "${ids[@]}"; do wait_job "$id"; done
        t1=$(now)
        for id in "${ids[@]}"; do "$sf" status "$id"; done >"$logs/jobs-$variant.json"
        done_n=$(grep -c '"state": "done"' "$logs/jobs-$variant.json"); failed_n=$(( ${#ids[@]} - done_n ))
        sf_wall=$(secs "$t0" "$t1")
        echo "snarkflow ($WIRE hop, $variant): $done_n proofs done ($failed_n not done) of ${#ids[@]} in $sf_wall s => $(python3 -c "print(round(60*$done_n/$sf_wall,1))") proofs/min"
        "$sf" status "${ids[0]}" >"$logs/job0.json"
        stack_down
        kill -INT "$collector"; wait "$collector" 2>/dev/null
        tag=$(echo "$variant" | tr ':' '-')
        "$sf" waterfall --otlp-file /tmp/spans.jsonl --width 100 --svg "$out/waterfall-$tag.svg" >"$logs/waterfall-$tag.txt" 2>&1
        grep -iE "busy|gap|ratio" "$logs/waterfall-$tag.txt" | head -8
        # proofs/min over the proving window alone (first proof start to last proof end, per
        # device, from the spans): what the GPUs did, without start-up or polling
        python3 - "$logs/waterfall-$tag.txt" "$done_n" <<'PY'
import re, sys
windows = [float(b) / (float(f) / 100) for b, f in re.findall(r"busy ([0-9.]+) s of [0-9.]+ s = [0-9.]+% \(first to last proof: ([0-9.]+)%\)", open(sys.argv[1]).read()) if float(f) > 0]
if windows:
    w = max(windows)
    print(f"proving window from the spans: {w:.2f} s => {60 * int(sys.argv[2]) / w:.1f} proofs/min")
PY
        python3 - "$logs/jobs-$variant.json" <<'PY'
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
    done
fi

# in-process prove of one partition on the same build
if has hop; then
    RUST_LOG=warn "$sf" bench hop --kind porep-c2 --c1 $S/sector-1/c1.json --miner-id $MINER --runs 5 --prove \
        --params-dir $P >"$logs/hop.log" 2>&1
    grep -E "^\|" "$logs/hop.log"
fi

# a GPU that is not there: the worker must say so and stay not ready (never prove on the CPU)
if has ready; then
    for gw in gpu-worker gpu-worker-supraseal; do
        RUST_LOG=warn "$d/$gw" --gpu 7 --status-listen 127.0.0.1:9103 --nats-url nats://127.0.0.1:1 \
            >"$logs/ready-$gw.log" 2>&1 & p=$!
        sleep 4
        python3 - "$gw" <<'PY'
import json, sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen("http://127.0.0.1:9103/readyz"); code, body = r.status, r.read()
except urllib.error.HTTPError as e:
    code, body = e.code, e.read()
d = json.loads(body)
print(f"{sys.argv[1]} --gpu 7 (absent): HTTP {code} ready={d['ready']} state={d['detail']['state']!r} device_error={d['detail']['device_error']!r}")
PY
        kill -TERM $p; wait $p 2>/dev/null
    done
fi

# every 2 KiB Filecoin kind through the pipeline on each backend, verified by the gateway
if has kinds; then
    for gw in gpu-worker gpu-worker-supraseal; do
        echo "-- kinds on $gw"
        stack_up "$d/$gw" 2 4 nopin porep-c2-2KiB || { stack_down; continue; }
        ids=()
        ids+=($("$sf" submit --kind porep-c2 --c1 $S/sector-1/c1.json --miner-id $MINER | awk '{print $2}'))
        for kind in snap-update window-post winning-post; do
            ids+=($("$sf" submit --kind $kind --input $S/sector-1/$kind.json | awk '{print $2}'))
        done
        for id in "${ids[@]}"; do wait_job "$id"; done
        for id in "${ids[@]}"; do "$sf" status "$id"; done >"$logs/kinds-$gw.json"
        python3 - "$logs/kinds-$gw.json" "$gw" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
dec = json.JSONDecoder(); i = 0
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    j, i = dec.raw_decode(text, i)
    parts = j.get("partition_details", [])
    prove = [round(p["prove"]["prove_s"], 3) for p in parts if p.get("prove")]
    backends = sorted({p["prove"]["backend"] for p in parts if p.get("prove")})
    print(f"{sys.argv[2]}: {j['kind']:<13} {j['state']:<7} partitions {len(parts)} backend {backends} prove_s {prove} {j.get('error') or ''}")
PY
        stack_down
    done
fi

# many proofs on one device from several threads: locked (the gpu-worker's way) and unlocked
if has hammer; then
    for b in snarkflow snarkflow-supraseal; do
        RUST_LOG=warn "$d/$b" bench hammer --kind porep-c2 --c1 $S/sector-1/c1.json --miner-id $MINER \
            --proofs "$HAMMER_N" --partitions 1 --threads 4 --params-dir $P >"$logs/hammer-$b.log" 2>&1
        grep -E "^device|^HAMMER|INVALID" "$logs/hammer-$b.log" | head -6 | sed "s/^/$b: /"
    done
    RUST_LOG=warn "$sf" bench hammer --kind porep-c2 --c1 $S/sector-1/c1.json --miner-id $MINER \
        --proofs "$HAMMER_N" --partitions 1 --threads 4 --unlocked --params-dir $P >"$logs/hammer-unlocked.log" 2>&1 || echo "unlocked hammer exited with $?"
    grep -E "^HAMMER" "$logs/hammer-unlocked.log" | sed "s/^/snarkflow-supraseal: /"
fi

# the two GPU backends on a circuit of ≥ 2^22 constraints
if has sha; then
    for b in snarkflow snarkflow-supraseal; do
        RUST_LOG=warn "$d/$b" bench hammer --kind sha256-chain --blocks "$SHA_BLOCKS" --proofs "$SHA_N" \
            --partitions 2 --threads 2 --params-dir $P >"$logs/sha-$b.log" 2>&1
        grep -E "^HAMMER|error" "$logs/sha-$b.log" | head -4 | sed "s/^/sha256-chain-b$SHA_BLOCKS $b: /"
    done
fi
cp "$logs/job0.json" "$out/" 2>/dev/null
tar cJf "$out/logs.tar.xz" -C $logs . 2>/dev/null
