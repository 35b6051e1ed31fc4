#!/usr/bin/env bash
# A 32 GiB PoRep on the lent H200 host, end to end, in steps that each fit one device command
# (10 minutes); state is kept in /tmp/sf32 between the calls of one lease.
#   gen     unpack the binaries, write the sparse 32 GiB C1 fixture, and start generating the
#           random parameters in the background (setsid: it outlives the command); wait for it
#           at most WAIT seconds (default 540), printing progress
#   up      wait for the parameters (at most WAIT), then start the whole pipeline detached:
#           nats-server, gateway (verify_seal before done), SYNTH synth-workers of concurrency
#           CONC, GPUS gpu-workers (cuda-supraseal, --prefetch PREFETCH); submit JOBS jobs
#           (default 2) of the fixture at once
#   wait    wait for those jobs (at most WAIT), each timed from the first submit (the first
#           includes each synth-worker recording the shape); peak RSS per process; stop the
#           stack; per-stage spans and the waterfall
#   prove   up, then wait, in one command (small sizes)
# At 32 GiB on the two-H200 host: `gen` (returns at ~9 min, generation takes ~14.6), `up`
# (~6 more minutes of generation, then ~1 min to load), `wait` (~5 min), then `stock`: the
# calls must follow each other within the lease's 30 s idle limit.
#   stock   filecoin-proofs' own seal_commit_phase2 (supraseal) on the same C1, with its peak RSS
# Binaries from BINS (a tar.xz of nats-server, gateway, synth-worker, gpu-worker-supraseal,
# snarkflow-supraseal); results in ${OUT:-.}.
set -uo pipefail
step="${1:?usage: device-32gib.sh gen|up|wait|prove|stock}"
out="${OUT:-.}"
S=/tmp/sf32 d=/tmp/sf32/bin P=/tmp/sf32/params
mkdir -p "$S/logs" "$d"
logs=$S/logs
export SNARKFLOW_PARAMS_DIR=$P FIL_PROOFS_PARAMETER_CACHE=$P SNARKFLOW_NATS_URL=nats://127.0.0.1:4222
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
WAIT="${WAIT:-540}" SIZE="${SIZE:-32GiB}" MINER=1000
started=$(date +%s)
elapsed() { echo $(( $(date +%s) - started )); }
get() { python3 -c "import sys,urllib.request;print(urllib.request.urlopen(sys.argv[1]).read().decode())" "$1" 2>/dev/null; }
# measure LOG COMMAND...: run it with its output to LOG, then print "exit N, S s, peak RSS G GiB"
# (VmHWM sampled each second)
measure() {
    local log=$1 t pid peak=0 v rc
    shift
    t=$(date +%s.%N)
    "$@" >"$log" 2>&1 & pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        v=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null)
        [ -n "$v" ] && [ "$v" -gt "$peak" ] && peak=$v
        sleep 1
    done
    wait "$pid"; rc=$?
    python3 -c "print(f'exit $rc, {$(date +%s.%N) - $t:.1f} s, peak RSS {$peak / 1048576:.1f} GiB')"
}
hwm() { awk '/VmHWM/ { printf "%.2f GiB", $2 / 1048576 }' "/proc/$1/status" 2>/dev/null; }
host() { echo "$(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, disk free $(df -h /tmp | awk 'NR==2 {print $4}'); $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)"; }

# wait for the background parameter generation; 0 when the files are there
wait_params() {
    while true; do
        if [ -f "$S/params.done" ]; then cat "$S/params.done"; return "$(awk '/^exit/ {print $2}' "$S/params.done")"; fi
        if [ "$(elapsed)" -ge "$WAIT" ]; then
            echo "parameters still generating after $(elapsed) s: $(tail -c 300 "$logs/params.log" | tr '\n' ' ')"
            echo "RSS now: $(ps -o rss= -C snarkflow-supraseal | awk '{s+=$1} END {printf "%.1f GiB", s/1048576}'); $(free -g | awk '/Mem:/ {print "used " $3 " GiB"}'); files: $(ls -la $P 2>/dev/null | tail -n +4 | awk '{print $5, $9}' | xargs)"
            return 2
        fi
        sleep 5
    done
}

case "$step" in
gen)
    tar xJf "${BINS:-.gpu-carry/bins32.tar.xz}" -C "$d" || exit 1
    echo "host: $(host)"
    echo "fixture: $(measure "$logs/fixture.log" "$d/snarkflow-supraseal" filecoin fixture \
        --sector-size "$SIZE" --miner-id $MINER --out "$S/fixture"), $(stat -c %s "$S/fixture/c1.json") B"
    [ -f "$S/fixture/c1.json" ] || { tail "$logs/fixture.log"; exit 1; }
    # the generator outlives this command (setsid); its exit status and numbers land in params.done
    rm -f "$S/params.done"
    setsid bash "$0" _gen </dev/null >/dev/null 2>&1 &
    echo "parameter generation started"
    wait_params
    ;;
up)
    # the stack is started detached (setsid), so it outlives this command and `wait` picks it up
    wait_params || exit 1
    SYNTH="${SYNTH:-2}" CONC="${CONC:-5}" GPUS="${GPUS:-1}" PREFETCH="${PREFETCH:-2}" JOBS="${JOBS:-2}"
    pkill -f "$d/" 2>/dev/null; sleep 0.5
    rm -rf "$S/nats" "$S/spans.jsonl" "$S/pids" "$S/ids"
    mkdir -p "$S/pids"
    spawn() { # name, command...: detached, pid in $S/pids/name
        local name=$1; shift
        RUST_LOG=info setsid "$@" </dev/null >"$logs/$name.log" 2>&1 &
        echo $! >"$S/pids/$name"
    }
    spawn nats "$d/nats-server" -js -a 127.0.0.1 -p 4222 -sd "$S/nats"
    spawn collector "$d/snarkflow-supraseal" traces collect --out "$S/spans.jsonl"
    t=$(date +%s.%N)
    for g in $(seq 0 $((GPUS - 1))); do
        cmd=("$d/gpu-worker-supraseal" --worker-id "gpu-$g" --preload "porep-c2-$SIZE" --prefetch "$PREFETCH"
            --memory-budget "${GPU_BUDGET:-60GiB}" --status-listen "127.0.0.1:$((9102 + g))")
        [ "$GPUS" -gt 1 ] && cmd+=(--gpu "$g")
        spawn "gpu-worker-$g" "${cmd[@]}"
    done
    spawn gateway "$d/gateway" --insecure-no-auth
    for i in $(seq 1 "$SYNTH"); do
        spawn "synth-$i" "$d/synth-worker" --worker-id "synth-$i" --concurrency "$CONC" --memory-budget "${SYNTH_BUDGET:-48GiB}"
    done
    for g in $(seq 0 $((GPUS - 1))); do
        until get "http://127.0.0.1:$((9102 + g))/readyz" | grep -q '"ready":true'; do
            sleep 1
            kill -0 "$(cat "$S/pids/gpu-worker-$g")" 2>/dev/null || { echo "gpu-worker $g exited"; tail -20 "$logs/gpu-worker-$g.log"; exit 1; }
        done
    done
    echo "gpu-workers ready (parameters and shape loaded) after $(python3 -c "print(round($(date +%s.%N) - $t, 1))") s"
    grep -hE "parameters loaded|constraint shape loaded" "$logs"/gpu-worker-*.log | sed 's/^.*Z //' | cut -c1-300
    until get http://127.0.0.1:8080/readyz | grep -q '"ready":true'; do sleep 0.5; done
    date +%s.%N >"$S/submitted_at"
    for j in $(seq 1 "$JOBS"); do
        "$d/snarkflow-supraseal" submit --kind porep-c2 --c1 "$S/fixture/c1.json" --miner-id $MINER | awk '{print $2}' >>"$S/ids"
    done
    echo "submitted $(xargs <"$S/ids"): $GPUS GPU(s), $SYNTH synth-workers x $CONC, --prefetch $PREFETCH"
    ;;
wait)
    # wait for the jobs `up` submitted (at most WAIT s), then report and stop the stack
    t0=$(cat "$S/submitted_at")
    for id in $(cat "$S/ids"); do
        until "$d/snarkflow-supraseal" status "$id" | grep -qE '"state": "(done|failed|cancelled)"'; do
            sleep 0.5
            [ "$(elapsed)" -ge "$WAIT" ] && { echo "job $id not finished after $(elapsed) s of this step"; break 2; }
        done
        "$d/snarkflow-supraseal" status "$id" >"$out/job-$id.json"
        echo "$SIZE PoRep job $id: $(grep -oE '"state": "[a-z]+"' "$out/job-$id.json" | head -1) $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s after the first submit"
        grep -E '"error"' "$out/job-$id.json" | head -2
    done
    for f in "$S"/pids/*; do echo "$(basename "$f") peak RSS: $(hwm "$(cat "$f")")"; done
    "$d/snarkflow-supraseal" proof "$(head -1 "$S/ids")" -o "$out/proof.bin" 2>&1 | tail -1
    for f in "$S"/pids/*; do [ "$(basename "$f")" = collector ] || kill -TERM "$(cat "$f")" 2>/dev/null; done
    sleep 3; kill -INT "$(cat "$S/pids/collector")" 2>/dev/null; sleep 2
    "$d/snarkflow-supraseal" waterfall --otlp-file "$S/spans.jsonl" --width 100 --svg "$out/waterfall.svg" >"$out/waterfall.txt" 2>&1
    head -60 "$out/waterfall.txt"
    grep -hE " ERROR " "$logs"/*.log | head -10 | cut -c1-300
    ;;
prove)
    # both, when the whole run fits one command (small sizes)
    bash "$0" up && bash "$0" wait
    ;;
stock)
    wait_params || exit 1
    echo "stock seal_commit_phase2: $(measure "$logs/stock.log" "$d/snarkflow-supraseal" bench stock-c2 --miner-id $MINER --c1 "$S/fixture/c1.json")"
    grep -E "STOCK|verified|FAILED|rror|memory" "$logs/stock.log" | head
    ;;
_gen)
    # (run by gen, detached) the generator, measured; the result in params.done
    r=$(measure "$logs/params.log" "$d/snarkflow-supraseal" params generate --proof porep-c2 --sector-size "$SIZE" --params-dir "$P")
    { echo "parameters: $r"; echo "exit $(echo "$r" | awk '{print $2}' | tr -d ,)"; ls -la "$P"; } >"$S/params.tmp"
    mv "$S/params.tmp" "$S/params.done"
    ;;
*) echo "unknown step $step"; exit 2 ;;
esac
