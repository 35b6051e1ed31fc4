# shellcheck shell=bash
# shellcheck disable=SC2154 # out, scripts, root, MINER: set by device-lib.sh, which device.sh sources first
# Sourced by device.sh, not run: the subcommands that run the services themselves (nats-server,
# gateway, synth-workers, gpu-workers, the span collector) on the device host: `32gib` in steps,
# `pipeline` in one command (`soak`: device-soak.sh).
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    echo "device-stack.sh is sourced by device.sh; run: bash deploy/scripts/device.sh help" >&2
    exit 2
fi

# the services' environment: the local nats-server, spans to the local collector
stack_env() {
    export SNARKFLOW_NATS_URL=nats://127.0.0.1:4222 OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
}

# A 32 GiB PoRep (SnapDeals: KIND=snap-update; WindowPoSt: KIND=window-post; SIZE=64GiB) through
# the pipeline, one step per device command; the state stays in /tmp/sf32 between the calls of
# one lease. The steps are described in device.sh's help.
cmd_32gib() {
    local step=${1:-}
    case "$step" in
    params | gen | up | wait | live | stop | stock | prove | _gen) ;;
    *) die "usage: device.sh 32gib params|gen|up|wait|live|stop|stock|prove" ;;
    esac
    # fixed, not $S: the steps run in separate device commands and must find each other's state
    S=/tmp/sf32 d=/tmp/sf32/bin P=/tmp/sf32/params logs=/tmp/sf32/logs
    mkdir -p "$logs" "$d" "$S/pids"
    sf="$d/snarkflow-supraseal"
    params_dir "$P"
    stack_env
    # random parameters under filecoin-proofs' names: the gpu-workers skip the published-digest check
    export SNARKFLOW_TEST_PARAMS=1
    WAIT="${WAIT:-540}" SIZE="${SIZE:-32GiB}" KIND="${KIND:-porep-c2}"
    case "$KIND" in
    porep-c2 | snap-update) SYNTH="${SYNTH:-2}" ;;
    # a WindowPoSt job is one partition whose 68 GiB of parameters (32 GiB) live in a tmpfs on
    # the lent host: one synth-worker leaves its memory room
    window-post) SYNTH="${SYNTH:-1}" ;;
    *) die "KIND=$KIND: the pipeline runs porep-c2, snap-update or window-post jobs" ;;
    esac
    CONC="${CONC:-4}" GPUS="${GPUS:-1}" PREFETCH="${PREFETCH:-2}" JOBS="${JOBS:-1}"
    started=$(date +%s)
    "gib32_$step"
}

gib32_elapsed() { echo $(( $(date +%s) - started )); }

# wait for the background parameter generation; 0 when the files are there
gib32_wait_params() {
    while true; do
        if [ -f "$S/params.done" ]; then
            cat "$S/params.done"
            return "$(awk '/^exit/ {print $2}' "$S/params.done")"
        fi
        if [ "$(gib32_elapsed)" -ge "$WAIT" ]; then
            echo "parameters still generating after $(gib32_elapsed) s: $(tail -c 300 "$logs/params.log" | tr '\n' ' ')"
            echo "RSS now: $(ps -o rss= -C snarkflow-supraseal | awk '{s+=$1} END {printf "%.1f GiB", s/1048576}');" \
                "$(free -g | awk '/Mem:/ {print "used " $3 " GiB"}'); files: $(ls -la "$P" 2>/dev/null | tail -n +4 | awk '{print $5, $9}' | xargs)"
            return 2
        fi
        sleep 5
    done
}

# spawn NAME COMMAND...: detached (it outlives this device command), its pid in $S/pids/NAME
gib32_spawn() {
    local name=$1
    shift
    RUST_LOG=info setsid "$@" </dev/null >"$logs/$name.log" 2>&1 &
    echo $! >"$S/pids/$name"
}

# gib32_submit LABEL ARGS...: one job; "id label submit-time" appended to $S/ids. While the
# generator has not written the verifying key yet (the gateway answers 503), it tries again.
gib32_submit() {
    local label=$1 t id answer
    shift
    while true; do
        t=$(date +%s.%N)
        answer=$("$sf" submit "$@" 2>&1)
        id=$(echo "$answer" | awk '/^job / {print $2}')
        [ -n "$id" ] && break
        if ! echo "$answer" | grep -q "no verifying key" || [ "$(gib32_elapsed)" -ge "$WAIT" ]; then
            echo "submitting $label failed: $answer"
            return 1
        fi
        sleep 2
    done
    echo "$id $label $t" >>"$S/ids"
}

# JOBS jobs of KIND, labelled "<short kind>-$1" (porep-staged, snap-live)
gib32_main_jobs() {
    local j
    for j in $(seq 1 "$JOBS"); do
        case "$KIND" in
        porep-c2) gib32_submit "porep-$1" --kind porep-c2 --c1 "$S/fixture/c1.json" --miner-id "$MINER" ;;
        snap-update) gib32_submit "snap-$1" --kind snap-update --input "$S/fixture/snap-update.json" ;;
        *) gib32_submit "window-$1" --kind window-post --input "$S/fixture/window-post.json" ;;
        esac
    done
}

# stop what an earlier step started, by its pid files (a `pkill -f` on the binaries' path would
# also match the device command that names them)
gib32_stop_stack() {
    local f
    for f in "$S"/pids/*; do [ -f "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null; done
    sleep "${1:-0.5}"
}

gib32_gen() {
    local i
    unpack_bins "$d" bins32.tar.xz snarkflow-supraseal
    describe_host
    case "$KIND" in
    porep-c2)
        echo "PoRep fixture: $(measure "$logs/fixture.log" "$sf" filecoin fixture --sector-size "$SIZE" --miner-id "$MINER" \
            --data "${DATA:-zeros}" --out "$S/fixture"), $(stat -c %s "$S/fixture/c1.json") B"
        [ -f "$S/fixture/c1.json" ] || { tail "$logs/fixture.log"; exit 1; }
        ;;
    snap-update)
        # an empty replica updated with constant data (the fixture has no other kind of data)
        echo "SnapDeals fixture: $(measure "$logs/fixture.log" "$sf" filecoin fixture --proof snap-update \
            --sector-size "$SIZE" --miner-id "$MINER" --out "$S/fixture")"
        [ -f "$S/fixture/snap-update.json" ] || { tail "$logs/fixture.log"; exit 1; }
        ;;
    window-post)
        # a partition of SECTORS distinct sectors (fewer would be padded with the last one, whose
        # repeated values no real deadline has), random where no challenge opens them
        echo "WindowPoSt fixture: $(measure "$logs/fixture.log" "$sf" filecoin fixture --proof window-post \
            --sector-size "$SIZE" --miner-id "$MINER" --sectors "${SECTORS:-2349}" --data "${DATA:-random}" \
            --out "$S/fixture")"
        [ -f "$S/fixture/window-post.json" ] || { tail "$logs/fixture.log"; exit 1; }
        ;;
    esac
    echo "WinningPoSt fixture: $(measure "$logs/fixture-winning.log" "$sf" filecoin fixture --proof winning-post \
        --sector-size "$SIZE" --miner-id "$MINER" --out "$S/fixture")"
    gib32_stop_stack
    rm -rf "$S/nats" "$S/spans.jsonl" "$S/pids" "$S/ids" "$S/stop-report.txt" "$S/cpu-ready"
    mkdir -p "$S/pids"
    # the generator outlives this command (setsid); its exit status and numbers land in params.done
    rm -f "$S/params.done"
    params_tmpfs "$P"
    setsid bash "$scripts/device.sh" 32gib _gen </dev/null >/dev/null 2>&1 &
    echo "parameter generation started"
    # the stack without GPU workers, and the jobs: synthesized while the parameters are made
    gib32_spawn nats "$d/nats-server" -js -a 127.0.0.1 -p 4222 -sd "$S/nats"
    gib32_spawn collector "$sf" traces collect --out "$S/spans.jsonl"
    gib32_spawn gateway "$d/gateway" --insecure-no-auth
    for i in $(seq 1 "$SYNTH"); do
        # both shapes recorded at start, as docs/configuration.md advises an operator: the
        # WinningPoSt under load does not pay for its own (1.2 s at 32 GiB), and the main kind's
        # recording (a minute or more of a core) is not counted against its partitions
        # each its own status port (a second worker on the default one exits at start), huge
        # pages for the witness buffers as the packaged unit gives them
        gib32_spawn "synth-$i" env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 "$d/synth-worker" --worker-id "synth-$i" --concurrency "$CONC" \
            --memory-budget "${SYNTH_BUDGET:-20GiB}" --preload-shapes "$KIND-$SIZE,winning-post-$SIZE" \
            --status-listen "127.0.0.1:$((9110 + i))"
    done
    until http_get http://127.0.0.1:8080/readyz | grep -q '"ready":true'; do sleep 0.5; done
    gib32_synth_ready
    # as soon as the generator has written their verifying key
    gib32_main_jobs staged
    echo "submitted $(awk '{print $1}' "$S/ids" | xargs): $SYNTH synth-workers x $CONC, ${SYNTH_BUDGET:-20GiB} each"
    gib32_wait_params
}

# (run by gen, detached) the generators, measured; the result in params.done. WinningPoSt first
# (small), so its job can be submitted early
gib32__gen() {
    local w r f
    w=$(measure "$logs/params-winning.log" "$sf" params generate --proof winning-post --sector-size "$SIZE" \
        --device "${PARAMGEN_DEVICE:-gpu}" --params-dir "$P")
    r=$(measure "$logs/params.log" "$sf" params generate --proof "$KIND" --sector-size "$SIZE" \
        --device "${PARAMGEN_DEVICE:-gpu}" --params-dir "$P")
    {
        echo "$KIND parameters: $r"
        echo "WinningPoSt parameters: $w"
        for f in "$logs"/params.log "$logs"/params-winning.log; do
            grep -iE "constraints|comb|written|step done|shape recorded|generated" "$f" | sed 's/\x1b\[[0-9;]*m//g' \
                | sed 's/^.*INFO //' | cut -c1-230
        done
        echo "exit $(echo "$r" | awk '{print $2}' | tr -d ,)"
        ls -la "$P"
        df -h /tmp | tail -1
    } >"$S/params.tmp"
    mv "$S/params.tmp" "$S/params.done"
}

gib32_params() {
    unpack_bins "$d" bins32.tar.xz snarkflow-supraseal
    describe_host
    echo "disk: $(dd if=/dev/zero of=/tmp/dd.test bs=16M count=256 conv=fdatasync 2>&1 | tail -1)"
    rm -f /tmp/dd.test
    paramgen_check "$S" || exit 1
    rm -rf "$S/pc" "$S/pg"
    gib32__gen
    cat "$S/params.done"
}

# a process's CPU seconds so far (user + system, all threads)
gib32_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null; }

# wait (at most WAIT) until every synth-worker has recorded its shapes and is ready; its CPU
# seconds then go to $S/cpu-ready/NAME, so the stop report counts its partitions' alone
gib32_synth_ready() {
    local i pid
    mkdir -p "$S/cpu-ready"
    for i in $(seq 1 "$SYNTH"); do
        pid=$(cat "$S/pids/synth-$i")
        until http_get "http://127.0.0.1:$((9110 + i))/readyz" | grep -q '"ready":true'; do
            kill -0 "$pid" 2>/dev/null || { echo "synth-$i exited"; tail -20 "$logs/synth-$i.log"; exit 1; }
            [ "$(gib32_elapsed)" -ge "$WAIT" ] && { echo "synth-$i not ready after $(gib32_elapsed) s"; exit 2; }
            sleep 1
        done
        gib32_cpu "$pid" >"$S/cpu-ready/synth-$i"
        echo "synth-$i ready after $(gib32_elapsed) s, its shapes recorded: $(cat "$S/cpu-ready/synth-$i") core-s," \
            "peak RSS $(awk '/VmHWM/ { printf "%.2f GiB", $2 / 1048576 }' "/proc/$pid/status")"
    done
}

gib32_synthesized() { cat "$logs"/synth-*.log | grep -c "partition synthesized"; }

gib32_up() {
    local t g cmd
    # the stack is detached (setsid), so it outlives this command and `wait` picks it up
    gib32_wait_params || exit 1
    if [ -n "${STAGED:-}" ]; then
        # staged: the gpu-workers start once STAGED partitions are synthesized (at most WAIT)
        until [ "$(gib32_synthesized)" -ge "$STAGED" ] || [ "$(gib32_elapsed)" -ge "$WAIT" ]; do sleep 2; done
        echo "partitions synthesized before the gpu-workers start: $(gib32_synthesized) after $(gib32_elapsed) s"
    fi
    if [ -n "${CARD_GIB:-}" ]; then
        # a smaller card: a process holds all of GPU 0 but CARD_GIB less 800 MiB (what a driver
        # and a CUDA context take on a real card), so the gpu-worker picks its plan as there
        build_ballast
        gib32_spawn ballast "$S/ballast" $((CARD_GIB * 1024 - 800))
        until [ -s "$logs/ballast.log" ]; do sleep 0.2; done
        echo "card of $CARD_GIB GiB simulated: $(cat "$logs/ballast.log")"
    fi
    t=$(date +%s.%N)
    for g in $(seq 0 $((GPUS - 1))); do
        cmd=("$d/gpu-worker-supraseal" --worker-id "gpu-$g" --preload "$KIND-$SIZE,winning-post-$SIZE"
            --prefetch "$PREFETCH" --memory-budget "${GPU_BUDGET:-60GiB}" --status-listen "127.0.0.1:$((9102 + g))")
        [ "$GPUS" -gt 1 ] && cmd+=(--gpu "$g")
        gib32_spawn "gpu-worker-$g" "${cmd[@]}"
    done
    for g in $(seq 0 $((GPUS - 1))); do
        until http_get "http://127.0.0.1:$((9102 + g))/readyz" | grep -q '"ready":true'; do
            sleep 1
            kill -0 "$(cat "$S/pids/gpu-worker-$g")" 2>/dev/null \
                || { echo "gpu-worker $g exited"; tail -20 "$logs/gpu-worker-$g.log"; exit 1; }
        done
    done
    echo "gpu-workers ready (parameters and shapes loaded) after $(seconds_since "$t") s"
    # the driver's kernel-busy percentage every 100 ms, summarised by `stop`
    gib32_spawn gpu-util nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 100
    grep -hE "parameters loaded|constraint shape loaded" "$logs"/gpu-worker-*.log | sed 's/^.*Z //' | cut -c1-300
    grep -c "partition synthesized" "$logs"/synth-*.log | xargs echo "partitions synthesized so far (per log):"
    if [ "${WINNING:-1}" = 1 ]; then
        # once the first partition of KIND is proved (the next ones are on the GPU or prepared),
        # a WinningPoSt: it should wait for the partition on the device only
        until grep -q "partition proved" "$logs"/gpu-worker-0.log; do sleep 0.2; done
        sleep "${WINNING_AFTER:-1}"
        gib32_submit winning --kind winning-post --input "$S/fixture/winning-post.json"
        echo "WinningPoSt submitted while the GPU proves $KIND partitions"
    fi
}

# synthesis live beside the GPU: LIVE_SYNTH synth-workers kept (they know the shapes), the others
# stopped, so what synthesis holds leaves the gpu-worker its memory
gib32_live() {
    local i live=${LIVE_SYNTH:-1}
    # the GPU-busy samples so far belong to the staged run
    [ -f "$logs/gpu-util.log" ] && wc -l <"$logs/gpu-util.log" >"$S/util.mark"
    for i in $(seq $((live + 1)) "$SYNTH"); do kill -TERM "$(cat "$S/pids/synth-$i")" 2>/dev/null; done
    gib32_main_jobs live
    echo "submitted $(awk '$2 ~ /-live$/ {print $1}' "$S/ids" | xargs): synthesis live on $live synth-worker(s)"
}

# every job submitted so far (at most WAIT s), each timed from its submit to when this step first
# saw it ended (all polled each round, so one slow job does not delay the rest)
gib32_wait() {
    local pending id label t0 t1
    while true; do
        pending=0
        while read -r id label t0; do
            [ -f "$out/job-$id.json" ] && continue
            if "$sf" status "$id" </dev/null >"$S/status.json" 2>&1 \
                && grep -qE '"state": "(done|failed|cancelled)"' "$S/status.json"; then
                t1=$(date +%s.%N)
                mv "$S/status.json" "$out/job-$id.json"
                echo "$SIZE $label job $id: $(grep -oE '"state": "[a-z]+"' "$out/job-$id.json" | head -1)" \
                    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s after its submit"
                grep -E '"error"' "$out/job-$id.json" | head -2
            else
                pending=$((pending + 1))
            fi
        done <"$S/ids"
        [ "$pending" = 0 ] && break
        [ "$(gib32_elapsed)" -ge "$WAIT" ] && { echo "$pending job(s) not finished after $(gib32_elapsed) s of this step"; exit 2; }
        sleep 0.5
    done
    "$sf" proof "$(head -1 "$S/ids" | awk '{print $1}')" -o "$out/proof.bin" 2>&1 | tail -1
}

# GPU busy from the nvidia-smi samples: the mean from the first busy sample to the last (the
# proving window), staged (the samples before `live`) and live (those after it)
gib32_gpu_busy() {
    python3 - "$logs/gpu-util.log" "$(cat "$S/util.mark" 2>/dev/null || echo 0)" <<'PY'
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
}

# one process of the stack: its peak RSS and CPU seconds (user + system, all threads), and for
# a synth-worker those per partition it synthesized (its log's "partition synthesized" lines)
gib32_process_line() {
    local name pid cpu n ready
    name=$(basename "$1") pid=$(cat "$1")
    cpu=$(gib32_cpu "$pid")
    echo -n "$name peak RSS: $(awk '/VmHWM/ { printf "%.2f GiB", $2 / 1048576 }' "/proc/$pid/status" 2>/dev/null), CPU ${cpu:-?} core-s"
    case "$name" in
    synth-*)
        # the partitions' share: what the process used after it was ready (its shapes recorded)
        ready=$(cat "$S/cpu-ready/$name" 2>/dev/null || echo 0)
        n=$(grep -c "partition synthesized" "$logs/$name.log" 2>/dev/null)
        [ "${n:-0}" -gt 0 ] && [ -n "$cpu" ] && echo -n ", $ready of them recording its shapes before it was ready;" \
            "$n partitions: $(awk -v c="$cpu" -v r="$ready" -v n="$n" 'BEGIN { printf "%.2f", (c - r) / n }') core-s each"
        ;;
    esac
    echo
}

# peak RSS and CPU per process; the stack stopped; per-stage spans and the waterfall
gib32_stop() {
    local f alive=0
    for f in "$S"/pids/*; do [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && alive=1; done
    # a second stop (its first report lost with an OUT left on the device): that report again,
    # from the state directory; the peak RSS went with the processes
    if [ "$alive" = 0 ] && [ -f "$S/stop-report.txt" ]; then
        echo "the stack is stopped already; its report:"
        cat "$S/stop-report.txt"
        return 0
    fi
    {
        for f in "$S"/pids/*; do gib32_process_line "$f"; done
        [ -f "$logs/gpu-util.log" ] && gib32_gpu_busy
    } | tee "$S/stop-report.txt"
    for f in "$S"/pids/*; do [ "$(basename "$f")" = collector ] || kill -TERM "$(cat "$f")" 2>/dev/null; done
    sleep 3
    kill -INT "$(cat "$S/pids/collector")" 2>/dev/null
    sleep 2
    "$sf" waterfall --otlp-file "$S/spans.jsonl" --width 100 --svg "$out/waterfall.svg" >"$out/waterfall.txt" 2>&1
    head -70 "$out/waterfall.txt" | tee -a "$S/stop-report.txt"
    grep -hE " ERROR " "$logs"/*.log | head -10 | cut -c1-300
    gib32_stop_stack
    # the spans and logs come back for a closer look
    gzip -c "$S/spans.jsonl" >"$out/spans.jsonl.gz"
    tar czf "$out/logs.tgz" -C "$S" logs ids
}

# up, wait and stop in one command (small sizes, after gen); each step its own WAIT
gib32_prove() {
    bash "$scripts/device.sh" 32gib up && bash "$scripts/device.sh" 32gib wait && bash "$scripts/device.sh" 32gib stop
}

# filecoin-proofs' own seal_commit_phase2 (supraseal) on the same C1, stopped once its RSS passes
# STOCK_CAP_GIB
gib32_stock() {
    local cap
    gib32_wait_params || exit 1
    gib32_stop_stack 2
    cap=$(( ${STOCK_CAP_GIB:-$(( $(free -g | awk '/Mem:/ {print $2}') * 9 / 10 ))} * 1048576 ))
    echo "stock seal_commit_phase2: $(CAP_KIB=$cap measure "$logs/stock.log" "$sf" bench stock-c2 --miner-id "$MINER" \
        --c1 "$S/fixture/c1.json")"
    grep -E "STOCK|verified|FAILED|rror|memory" "$logs/stock.log" | head
}

# The whole pipeline on one GPU host: nats-server, gateway, SYNTH synth-workers, one CUDA
# gpu-worker, a trace collector; JOBS sha256-chain jobs of PARTS partitions of BLOCKS blocks
# submitted at once; then the waterfall
cmd_pipeline() {
    local d=/tmp/snarkflow-bin blocks=${BLOCKS:-64} jobs=${JOBS:-4} parts=${PARTS:-8} synth=${SYNTH:-4}
    local collector pids=() ids=() id i j start t0
    unpack_bins "$d" bins.tar.xz gpu-worker
    params_dir "${SNARKFLOW_PARAMS_DIR:-/tmp/snarkflow-params}"
    stack_env
    export RUST_LOG="${RUST_LOG:-warn}"
    "$d/nats-server" -js -a 127.0.0.1 -p 4222 -sd /tmp/snarkflow-nats >"$out/nats.log" 2>&1 &
    "$d/snarkflow" traces collect --out /tmp/spans.jsonl >/dev/null 2>&1 &
    collector=$!
    RUST_LOG=info "$d/gpu-worker" --worker-id gpu-h200 --generate-missing-params --preload "sha256-chain-b$blocks" \
        --status-listen 127.0.0.1:9102 >"$out/gpu-worker.log" 2>&1 &
    pids+=($!)
    # an isolated benchmark host: no API tokens, test kinds on
    "$d/gateway" --insecure-no-auth --enable-test-kinds >"$out/gateway.log" 2>&1 &
    pids+=($!)
    for i in $(seq 1 "$synth"); do
        "$d/synth-worker" --worker-id "synth-$i" --status-listen "127.0.0.1:$((9110 + i))" >/dev/null 2>&1 &
        pids+=($!)
    done
    start=$(date +%s)
    until http_get http://127.0.0.1:9102/readyz | grep -q '"ready":true'; do
        sleep 1
        [ $(( $(date +%s) - start )) -gt 400 ] && { echo "gpu-worker not ready"; exit 1; }
    done
    echo "gpu-worker ready after $(( $(date +%s) - start )) s (parameters generated and loaded)"
    t0=$(date +%s.%N)
    for j in $(seq 1 "$jobs"); do
        id=$("$d/snarkflow" submit --kind sha256-chain --blocks "$blocks" --partitions "$parts" | awk '{print $2}')
        if [ -n "$id" ]; then ids+=("$id"); else echo "job $j: submit failed"; fi
    done
    [ "${#ids[@]}" -gt 0 ] || exit 1
    for id in "${ids[@]}"; do
        until "$d/snarkflow" status "$id" | grep -qE '"state": "(done|failed|cancelled)"'; do sleep 0.5; done
        "$d/snarkflow" status "$id" | grep -E '"state"' | head -1
    done
    echo "$jobs jobs x $parts partitions of sha256-chain-b$blocks in $(seconds_since "$t0" 2) s"
    "$d/snarkflow" status "${ids[0]}" >"$out/job0.json"
    for i in "${pids[@]}"; do kill -TERM "$i"; done
    wait "${pids[@]}" 2>/dev/null
    kill -INT "$collector"
    wait "$collector" 2>/dev/null
    "$d/snarkflow" waterfall --otlp-file /tmp/spans.jsonl --width 100 --svg "$out/waterfall.svg" | tee "$out/waterfall.txt"
}
