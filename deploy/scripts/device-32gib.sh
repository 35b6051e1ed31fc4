#!/usr/bin/env bash
# A 32 GiB PoRep on the lent H200 host, end to end, in steps that each fit one device command
# (10 minutes); state is kept in /tmp/sf32 between the calls of one lease.
#   gen     unpack the binaries, write the sparse 32 GiB C1 fixture, and start generating the
#           random parameters in the background (setsid: it outlives the command); wait for it
#           at most WAIT seconds (default 540), printing progress
#   prove   wait for the parameters (at most WAIT), then the whole pipeline: nats-server,
#           gateway (verify_seal before done), SYNTH synth-workers of concurrency CONC, GPUS
#           gpu-workers (cuda-supraseal, --prefetch PREFETCH); JOBS jobs (default 2) of the fixture
#           submitted at once, each timed (the first includes each synth-worker recording the shape);
#           peak RSS per role; per-stage spans and the waterfall
#   stock   filecoin-proofs' own seal_commit_phase2 (supraseal) on the same C1, with its peak RSS
# Binaries from BINS (a tar.xz of nats-server, gateway, synth-worker, gpu-worker-supraseal,
# snarkflow-supraseal); results in ${OUT:-.}.
set -uo pipefail
step="${1:?usage: device-32gib.sh gen|prove|stock}"
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
hwm() { awk '/VmHWM/ { printf "%.1f GiB", $2 / 1048576 }' "/proc/$1/status" 2>/dev/null; }
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
prove)
    wait_params || exit 1
    SYNTH="${SYNTH:-2}" CONC="${CONC:-5}" GPUS="${GPUS:-1}" PREFETCH="${PREFETCH:-2}" JOBS="${JOBS:-2}"
    pkill -f "$d/" 2>/dev/null; sleep 0.5
    rm -rf "$S/nats" "$S/spans.jsonl"
    pids=()
    "$d/nats-server" -js -a 127.0.0.1 -p 4222 -sd "$S/nats" >"$logs/nats.log" 2>&1 & pids+=($!)
    "$d/snarkflow-supraseal" traces collect --out "$S/spans.jsonl" >/dev/null 2>&1 &
    collector=$!
    t=$(date +%s.%N)
    gpu=()
    for g in $(seq 0 $((GPUS - 1))); do
        cmd=("$d/gpu-worker-supraseal" --worker-id "gpu-$g" --preload "porep-c2-$SIZE" --prefetch "$PREFETCH"
            --memory-budget "${GPU_BUDGET:-60GiB}" --status-listen "127.0.0.1:$((9102 + g))")
        [ "$GPUS" -gt 1 ] && cmd+=(--gpu "$g")
        RUST_LOG=info "${cmd[@]}" >"$logs/gpu-worker-$g.log" 2>&1 & gpu+=($!); pids+=($!)
    done
    RUST_LOG=info "$d/gateway" --insecure-no-auth >"$logs/gateway.log" 2>&1 & gateway=$!; pids+=($!)
    synth=()
    for i in $(seq 1 "$SYNTH"); do
        RUST_LOG=info nice -n 10 "$d/synth-worker" --worker-id "synth-$i" --concurrency "$CONC" \
            --memory-budget "${SYNTH_BUDGET:-48GiB}" >"$logs/synth-$i.log" 2>&1 & synth+=($!); pids+=($!)
    done
    for g in $(seq 0 $((GPUS - 1))); do
        until get "http://127.0.0.1:$((9102 + g))/readyz" | grep -q '"ready":true'; do
            sleep 1
            kill -0 "${gpu[$g]}" 2>/dev/null || { echo "gpu-worker $g exited"; tail -20 "$logs/gpu-worker-$g.log"; exit 1; }
        done
    done
    echo "gpu-workers ready (parameters and shape loaded) after $(python3 -c "print(round($(date +%s.%N) - $t, 1))") s"
    grep -hE "parameters loaded|constraint shape loaded" "$logs"/gpu-worker-*.log | sed 's/^.*Z //' | cut -c1-300
    until get http://127.0.0.1:8080/readyz | grep -q '"ready":true'; do sleep 0.5; done
    t0=$(date +%s.%N)
    ids=()
    for j in $(seq 1 "$JOBS"); do
        ids+=($("$d/snarkflow-supraseal" submit --kind porep-c2 --c1 "$S/fixture/c1.json" --miner-id $MINER | awk '{print $2}'))
    done
    echo "submitted ${ids[*]}"
    for id in "${ids[@]}"; do
        until "$d/snarkflow-supraseal" status "$id" | grep -qE '"state": "(done|failed|cancelled)"'; do
            sleep 0.5
            [ "$(elapsed)" -ge 570 ] && { echo "job $id not finished after $(elapsed) s"; break 2; }
        done
        "$d/snarkflow-supraseal" status "$id" >"$out/job-$id.json"
        echo "$SIZE PoRep job $id, $GPUS GPU(s), $SYNTH synth-workers x $CONC: $(grep -oE '"state": "[a-z]+"' "$out/job-$id.json" | head -1) $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s after the first submit"
        grep -E '"error"' "$out/job-$id.json" | head -2
    done
    for g in $(seq 0 $((GPUS - 1))); do echo "gpu-worker $g peak RSS: $(hwm "${gpu[$g]}")"; done
    for i in $(seq 1 "$SYNTH"); do echo "synth-worker $i peak RSS: $(hwm "${synth[$((i - 1))]}")"; done
    echo "gateway peak RSS: $(hwm "$gateway")"
    "$d/snarkflow-supraseal" proof "${ids[0]}" -o "$out/proof.bin" 2>&1 | tail -1
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    wait "${pids[@]}" 2>/dev/null
    sleep 1; kill -INT "$collector"; wait "$collector" 2>/dev/null
    "$d/snarkflow-supraseal" waterfall --otlp-file "$S/spans.jsonl" --width 100 --svg "$out/waterfall.svg" >"$out/waterfall.txt" 2>&1
    cat "$out/waterfall.txt" | head -60
    grep -hiE "error|panic" "$logs"/*.log | head -10
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
