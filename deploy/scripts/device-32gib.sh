#!/usr/bin/env bash
# A 32 GiB PoRep on the lent H200 host, end to end, in steps that each fit one device command
# (10 minutes); state is kept in /tmp/sf32 between the calls of one lease, which must follow
# each other within the lease's 30 s idle limit.
#   gen     unpack the binaries; write the sparse 32 GiB fixtures (PoRep C1, WinningPoSt input);
#           start generating the random parameters in the background (setsid: it outlives the
#           command; WinningPoSt, then PoRep; on the GPU unless PARAMGEN_DEVICE=cpu); start the stack without GPU workers (nats-server,
#           span collector, gateway verifying before done, SYNTH synth-workers (default 2) with
#           concurrency CONC and SYNTH_BUDGET (20GiB) each) and submit JOBS PoRep jobs, so their
#           partitions are synthesized while the parameters are made ("staged"); wait for the
#           parameters at most WAIT seconds (default 540)
#   params  unpack the binaries; the disk's write speed; GPU-made parameters against CPU-made
#           ones from the same seed on small circuits (the files must be identical); then the
#           WinningPoSt and PoRep parameters of SIZE made on the GPU with nothing beside them,
#           timed, with the generator's steps (a later `gen` finds and keeps them)
#   up      wait for the parameters (at most WAIT) and, with STAGED=N, for N synthesized
#           partitions; start GPUS gpu-workers (cuda-supraseal,
#           --prefetch PREFETCH, GPU_BUDGET); once the first partition is on the GPU, submit a
#           WinningPoSt (WINNING=0 skips it): its latency under a GPU busy with PoRep partitions.
#           (WinningPoSt parameters are made first: a WinningPoSt submitted during the 17 minutes
#           of PoRep generation would miss its 300 s deadline.)
#   wait    wait for every job submitted so far (at most WAIT), each timed from its submit
#   live    keep LIVE_SYNTH synth-workers (default 1; the others stop, leaving the gpu-worker
#           its memory) and submit JOBS more PoRep jobs: synthesis live beside the GPU; then
#           `wait` again. On the 125 GiB one-H200 host run `up` with GPU_BUDGET=32GiB (the
#           gpu-worker near 90 GiB) so two or three synthesis partitions (~8.7 GiB) fit beside it
#   stop    peak RSS per process; stop the stack; per-stage spans and the waterfall
#   stock   filecoin-proofs' own seal_commit_phase2 (supraseal) on the same C1, with its peak
#           RSS; stopped when its RSS passes STOCK_CAP_GIB (default: 90% of the host's RAM)
#   prove   up, wait and stop in one command (small sizes, after gen)
# Binaries from BINS (a tar.xz of nats-server, gateway, synth-worker, gpu-worker-supraseal,
# snarkflow-supraseal); results in ${OUT:-.}. Rehearse at SIZE=2KiB on any machine.
set -uo pipefail
step="${1:?usage: device-32gib.sh params|gen|up|wait|live|stop|stock|prove}"
out="${OUT:-.}"
S=/tmp/sf32 d=/tmp/sf32/bin P=/tmp/sf32/params
mkdir -p "$S/logs" "$d"
logs=$S/logs
export SNARKFLOW_PARAMS_DIR=$P FIL_PROOFS_PARAMETER_CACHE=$P SNARKFLOW_NATS_URL=nats://127.0.0.1:4222
# random parameters under filecoin-proofs' names: the gpu-workers skip the published-digest check
export SNARKFLOW_TEST_PARAMS=1
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
WAIT="${WAIT:-540}" SIZE="${SIZE:-32GiB}" MINER=1000
started=$(date +%s)
elapsed() { echo $(( $(date +%s) - started )); }
get() { python3 -c "import sys,urllib.request;print(urllib.request.urlopen(sys.argv[1]).read().decode())" "$1" 2>/dev/null; }
# measure LOG COMMAND...: run it with its output to LOG, then print "exit N, S s, peak RSS G GiB"
# (VmHWM sampled each second); with CAP_KIB set, the command is killed once its RSS passes it
measure() {
    local log=$1 t pid peak=0 v rc capped=""
    shift
    t=$(date +%s.%N)
    "$@" >"$log" 2>&1 & pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        v=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null)
        [ -n "$v" ] && [ "$v" -gt "$peak" ] && peak=$v
        if [ -n "${CAP_KIB:-}" ] && [ -n "$v" ] && [ "$v" -gt "$CAP_KIB" ]; then
            kill -9 "$pid"; capped=" (killed: RSS passed the cap)"
        fi
        sleep 1
    done
    wait "$pid"; rc=$?
    python3 -c "print(f'exit $rc, {$(date +%s.%N) - $t:.1f} s, peak RSS {$peak / 1048576:.1f} GiB$capped')"
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

SYNTH="${SYNTH:-2}" CONC="${CONC:-4}" GPUS="${GPUS:-1}" PREFETCH="${PREFETCH:-2}" JOBS="${JOBS:-1}"
spawn() { # name, command...: detached, pid in $S/pids/name
    local name=$1; shift
    RUST_LOG=info setsid "$@" </dev/null >"$logs/$name.log" 2>&1 &
    echo $! >"$S/pids/$name"
}
synth_workers() { # budget: start the synth-workers
    for i in $(seq 1 "$SYNTH"); do
        # the WinningPoSt shape recorded at start (1.2 s at 32 GiB), as an operator would, so the
        # WinningPoSt under load does not pay for it
        spawn "synth-$i" "$d/synth-worker" --worker-id "synth-$i" --concurrency "$CONC" --memory-budget "$1" \
            --preload-shapes "winning-post-$SIZE"
    done
}
# submit LABEL ARGS...: one job; "id label submit-time" appended to $S/ids. While the
# generator has not written the verifying key yet (the gateway answers 503), it tries again.
submit() {
    local label=$1 t id answer; shift
    while true; do
        t=$(date +%s.%N)
        answer=$("$d/snarkflow-supraseal" submit "$@" 2>&1)
        id=$(echo "$answer" | awk '/^job / {print $2}')
        [ -n "$id" ] && break
        echo "$answer" | grep -q "no verifying key" && [ "$(elapsed)" -lt "$WAIT" ] || { echo "submitting $label failed: $answer"; return 1; }
        sleep 2
    done
    echo "$id $label $t" >>"$S/ids"
}
porep_jobs() { for j in $(seq 1 "$JOBS"); do submit "porep-$1" --kind porep-c2 --c1 "$S/fixture/c1.json" --miner-id $MINER; done; }

# stop what an earlier step started (by its pid files: a `pkill -f` on the binaries' path would
# also match the device command that names them)
stop_stack() {
    for f in "$S"/pids/*; do [ -f "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null; done
    sleep "${1:-0.5}"
}

case "$step" in
gen)
    tar xJf "${BINS:-.gpu-carry/bins32.tar.xz}" -C "$d" || exit 1
    echo "host: $(host)"
    echo "PoRep fixture: $(measure "$logs/fixture.log" "$d/snarkflow-supraseal" filecoin fixture \
        --sector-size "$SIZE" --miner-id $MINER --out "$S/fixture"), $(stat -c %s "$S/fixture/c1.json") B"
    [ -f "$S/fixture/c1.json" ] || { tail "$logs/fixture.log"; exit 1; }
    echo "WinningPoSt fixture: $(measure "$logs/fixture-winning.log" "$d/snarkflow-supraseal" filecoin fixture \
        --proof winning-post --sector-size "$SIZE" --miner-id $MINER --out "$S/fixture")"
    stop_stack
    rm -rf "$S/nats" "$S/spans.jsonl" "$S/pids" "$S/ids"
    mkdir -p "$S/pids"
    # the generator outlives this command (setsid); its exit status and numbers land in params.done
    rm -f "$S/params.done"
    setsid bash "$0" _gen </dev/null >/dev/null 2>&1 &
    echo "parameter generation started"
    # the stack without GPU workers, and the jobs: synthesized while the parameters are made
    spawn nats "$d/nats-server" -js -a 127.0.0.1 -p 4222 -sd "$S/nats"
    spawn collector "$d/snarkflow-supraseal" traces collect --out "$S/spans.jsonl"
    spawn gateway "$d/gateway" --insecure-no-auth
    synth_workers "${SYNTH_BUDGET:-20GiB}"
    until get http://127.0.0.1:8080/readyz | grep -q '"ready":true'; do sleep 0.5; done
    # as soon as the generator has written their verifying key
    porep_jobs staged
    echo "submitted $(awk '{print $1}' "$S/ids" | xargs): $SYNTH synth-workers x $CONC, ${SYNTH_BUDGET:-20GiB} each"
    wait_params
    ;;
params)
    tar xJf "${BINS:-.gpu-carry/bins32.tar.xz}" -C "$d" || exit 1
    echo "host: $(host)"
    echo "disk: $(dd if=/dev/zero of=/tmp/dd.test bs=16M count=256 conv=fdatasync 2>&1 | tail -1)"
    rm -f /tmp/dd.test
    for c in "--kind dense-chain --constraints 300" "--kind sha256-chain --blocks 64" "--kind porep-c2 --sector-size 2KiB"; do
        rm -rf "$S/pc" "$S/pg"
        for dev in cpu gpu; do
            # shellcheck disable=SC2086
            "$d/snarkflow-supraseal" params generate $c --seed 5 --force --device $dev --params-dir "$S/p${dev:0:1}" \
                >"$logs/small-$dev.log" 2>&1 || { echo "FAILED ($dev, $c): $(tail -2 "$logs/small-$dev.log")"; exit 1; }
        done
        echo "GPU vs CPU parameters, $c: $(cmp -s "$S"/pc/*.params "$S"/pg/*.params && echo identical || echo DIFFERENT)"
    done
    rm -rf "$S/pc" "$S/pg"
    bash "$0" _gen
    cat "$S/params.done"
    ;;
up)
    # the stack is detached (setsid), so it outlives this command and `wait` picks it up
    wait_params || exit 1
    if [ -n "${STAGED:-}" ]; then
        # staged: the gpu-workers start once STAGED partitions are synthesized (at most WAIT)
        synthesized() { cat "$logs"/synth-*.log | grep -c "partition synthesized"; }
        until [ "$(synthesized)" -ge "$STAGED" ] || [ "$(elapsed)" -ge "$WAIT" ]; do sleep 2; done
        echo "partitions synthesized before the gpu-workers start: $(synthesized) after $(elapsed) s"
    fi
    t=$(date +%s.%N)
    for g in $(seq 0 $((GPUS - 1))); do
        cmd=("$d/gpu-worker-supraseal" --worker-id "gpu-$g" --preload "porep-c2-$SIZE,winning-post-$SIZE"
            --prefetch "$PREFETCH" --memory-budget "${GPU_BUDGET:-60GiB}" --status-listen "127.0.0.1:$((9102 + g))")
        [ "$GPUS" -gt 1 ] && cmd+=(--gpu "$g")
        spawn "gpu-worker-$g" "${cmd[@]}"
    done
    for g in $(seq 0 $((GPUS - 1))); do
        until get "http://127.0.0.1:$((9102 + g))/readyz" | grep -q '"ready":true'; do
            sleep 1
            kill -0 "$(cat "$S/pids/gpu-worker-$g")" 2>/dev/null || { echo "gpu-worker $g exited"; tail -20 "$logs/gpu-worker-$g.log"; exit 1; }
        done
    done
    echo "gpu-workers ready (parameters and shapes loaded) after $(python3 -c "print(round($(date +%s.%N) - $t, 1))") s"
    # the driver's kernel-busy percentage every 100 ms, summarised by `stop`
    spawn gpu-util nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 100
    grep -hE "parameters loaded|constraint shape loaded" "$logs"/gpu-worker-*.log | sed 's/^.*Z //' | cut -c1-300
    grep -c "partition synthesized" "$logs"/synth-*.log | xargs echo "partitions synthesized so far (per log):"
    if [ "${WINNING:-1}" = 1 ]; then
        # once the first PoRep partition is proved (the next ones are on the GPU or prepared),
        # a WinningPoSt: it should wait for the partition on the device only
        until grep -q "partition proved" "$logs"/gpu-worker-0.log; do sleep 0.2; done
        sleep "${WINNING_AFTER:-1}"
        submit winning --kind winning-post --input "$S/fixture/winning-post.json"
        echo "WinningPoSt submitted while the GPU proves PoRep partitions"
    fi
    ;;
live)
    # synthesis live beside the GPU: LIVE_SYNTH synth-workers kept (they know the shapes), the
    # others stopped, so what synthesis holds leaves the gpu-worker its memory
    # the GPU-busy samples so far belong to the staged run
    [ -f "$logs/gpu-util.log" ] && wc -l <"$logs/gpu-util.log" >"$S/util.mark"
    for i in $(seq $(( ${LIVE_SYNTH:-1} + 1 )) "$SYNTH"); do kill -TERM "$(cat "$S/pids/synth-$i")" 2>/dev/null; done
    porep_jobs live
    echo "submitted $(awk '$2 == "porep-live" {print $1}' "$S/ids" | xargs): synthesis live on ${LIVE_SYNTH:-1} synth-worker(s)"
    ;;
wait)
    # wait for every job submitted (at most WAIT s), each timed from its submit to when this
    # step first saw it ended (all polled each round, so one slow job does not delay the rest)
    while true; do
        pending=0
        while read -r id label t0; do
            [ -f "$out/job-$id.json" ] && continue
            if "$d/snarkflow-supraseal" status "$id" </dev/null >"$S/status.json" 2>&1 \
                && grep -qE '"state": "(done|failed|cancelled)"' "$S/status.json"; then
                t1=$(date +%s.%N)
                mv "$S/status.json" "$out/job-$id.json"
                echo "$SIZE $label job $id: $(grep -oE '"state": "[a-z]+"' "$out/job-$id.json" | head -1) $(python3 -c "print(round($t1 - $t0, 1))") s after its submit"
                grep -E '"error"' "$out/job-$id.json" | head -2
            else
                pending=$((pending + 1))
            fi
        done <"$S/ids"
        [ "$pending" = 0 ] && break
        [ "$(elapsed)" -ge "$WAIT" ] && { echo "$pending job(s) not finished after $(elapsed) s of this step"; exit 2; }
        sleep 0.5
    done
    "$d/snarkflow-supraseal" proof "$(head -1 "$S/ids" | awk '{print $1}')" -o "$out/proof.bin" 2>&1 | tail -1
    ;;
stop)
    for f in "$S"/pids/*; do echo "$(basename "$f") peak RSS: $(hwm "$(cat "$f")")"; done
    # GPU busy: the mean of the samples from the first busy one to the last (the proving window)
    # (staged: the samples before `live`; live: those after it)
    [ -f "$logs/gpu-util.log" ] && python3 - "$logs/gpu-util.log" "$(cat "$S/util.mark" 2>/dev/null || echo 0)" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
mark = int(sys.argv[2])
for label, part in (("staged", lines[:mark] if mark else lines), ("live", lines[mark:] if mark else [])):
    by = {}
    for line in part:
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 2 and fields[1].isdigit():
            by.setdefault(fields[0], []).append(int(fields[1]))
    for gpu, u in sorted(by.items()):
        busy = [i for i, v in enumerate(u) if v > 0]
        if not busy:
            continue
        w = u[busy[0]:busy[-1] + 1]
        print(f"GPU {gpu} busy, {label} (nvidia-smi utilization every 100 ms, first to last busy sample): "
              f"mean {sum(w) / len(w):.1f} % over {len(w)} samples, {100 * sum(v >= 90 for v in w) / len(w):.0f} % of them at 90 % or more")
PY
    for f in "$S"/pids/*; do [ "$(basename "$f")" = collector ] || kill -TERM "$(cat "$f")" 2>/dev/null; done
    sleep 3; kill -INT "$(cat "$S/pids/collector")" 2>/dev/null; sleep 2
    "$d/snarkflow-supraseal" waterfall --otlp-file "$S/spans.jsonl" --width 100 --svg "$out/waterfall.svg" >"$out/waterfall.txt" 2>&1
    head -70 "$out/waterfall.txt"
    grep -hE " ERROR " "$logs"/*.log | head -10 | cut -c1-300
    stop_stack
    # the spans and logs come back for a closer look
    gzip -c "$S/spans.jsonl" >"$out/spans.jsonl.gz"; tar czf "$out/logs.tgz" -C "$S" logs ids
    ;;
prove)
    # up, wait and stop in one command (small sizes)
    bash "$0" up && bash "$0" wait && bash "$0" stop
    ;;
stock)
    wait_params || exit 1
    stop_stack 2
    cap=$(( ${STOCK_CAP_GIB:-$(( $(free -g | awk '/Mem:/ {print $2}') * 9 / 10 ))} * 1048576 ))
    echo "stock seal_commit_phase2: $(CAP_KIB=$cap measure "$logs/stock.log" "$d/snarkflow-supraseal" bench stock-c2 --miner-id $MINER --c1 "$S/fixture/c1.json")"
    grep -E "STOCK|verified|FAILED|rror|memory" "$logs/stock.log" | head
    ;;
_gen)
    # (run by gen, detached) the generators, measured; the result in params.done
    # WinningPoSt first (small), so its job can be submitted early
    w=$(measure "$logs/params-winning.log" "$d/snarkflow-supraseal" params generate --proof winning-post --sector-size "$SIZE" --device "${PARAMGEN_DEVICE:-gpu}" --params-dir "$P")
    r=$(measure "$logs/params.log" "$d/snarkflow-supraseal" params generate --proof porep-c2 --sector-size "$SIZE" --device "${PARAMGEN_DEVICE:-gpu}" --params-dir "$P")
    { echo "PoRep parameters: $r"; echo "WinningPoSt parameters: $w"; for f in "$logs"/params.log "$logs"/params-winning.log; do grep -iE "constraints|comb|written|step done|shape recorded|generated" "$f" | sed 's/\x1b\[[0-9;]*m//g' | sed 's/^.*INFO //' | cut -c1-230; done
      echo "exit $(echo "$r" | awk '{print $2}' | tr -d ,)"; ls -la "$P"; df -h /tmp | tail -1; } >"$S/params.tmp"
    mv "$S/params.tmp" "$S/params.done"
    ;;
*) echo "unknown step $step"; exit 2 ;;
esac
