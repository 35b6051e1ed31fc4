# shellcheck shell=bash
# shellcheck disable=SC2154 # sf, out, scripts, S, P, MINER: set by device-lib.sh, which device.sh sources first
# Sourced by device.sh, not run: the subcommands that measure the CLI in one process (`bench
# resident`, `bench hammer`, `bench hop`, `params generate`), no services. Each is cmd_<name>;
# device.sh's help says what each one does and which environment it reads.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    echo "device-bench.sh is sourced by device.sh; run: bash deploy/scripts/device.sh help" >&2
    exit 2
fi

# the resident prover against the CPU prover and supraseal-c2 on each case of CASES (';'-separated
# `bench resident` argument lists), each proof compared byte for byte and verified; a table last
cmd_resident() {
    cli_prologue /tmp/sfres resident.tar.xz
    describe_host
    local cases=${CASES:-} c name started rc list
    if [ -z "$cases" ]; then
        if [ ! -f "$S/sectors/sector-1/c1.json" ]; then
            "$sf" filecoin seal --out "$S/sectors" --c1-only >"$out/seal.log" 2>&1 \
                || echo "sealing failed: $(tail -3 "$out/seal.log")"
        fi
        cases="--kind dense-chain --constraints 300 --supraseal --params-seed 1;\
--kind sha256-chain --blocks 1 --supraseal --params-seed 2;\
--kind dense-chain --constraints 65534 --supraseal;\
--kind sha256-chain --blocks 64 --supraseal;\
--kind porep-c2 --c1 $S/sectors/sector-1/c1.json --miner-id $MINER --partitions 1 --supraseal"
    fi
    : >"$out/table.txt"
    IFS=';' read -ra list <<<"$cases"
    for c in "${list[@]}"; do
        name=$(echo "$c" | sed 's|.*/||' | tr -s ' -' '_' | cut -c1-60)
        echo "== $c"
        started=$(date +%s.%N)
        # shellcheck disable=SC2086 # a case is an argument list
        timeout "${CASE_LIMIT:-400}" "$sf" bench resident $c >"$out/case$name.log" 2>&1
        rc=$?
        grep -E "^(RESIDENT|LANES|PROOF|COMPARE|shape|parameters)" "$out/case$name.log" | tee -a "$out/table.txt"
        echo "exit $rc after $(seconds_since "$started") s" | tee -a "$out/table.txt"
        [ "$rc" = 0 ] || tail -5 "$out/case$name.log"
    done
    echo
    echo "== table"
    cat "$out/table.txt"
}

# hammer_backends LIMIT PROOFS ARGS...: `bench hammer` of the circuit ARGS on supraseal-c2, then
# on the resident prover (two partitions per proof, one thread)
hammer_backends() {
    local limit=$1 proofs=$2 b
    shift 2
    for b in cuda-supraseal cuda-resident; do
        echo "== hammer $b $*" | cut -c1-80
        SNARKFLOW_BACKEND=$b timeout "$limit" "$sf" bench hammer "$@" --proofs "$proofs" --partitions 2 --threads 1 2>&1 \
            | grep -E "^(device|HAMMER)|rror|INVALID" | cut -c1-300
    done
}

# the first-light run: the seeded exactness cases (their proofs in $OUT/proofs.txt, for the CPU
# comparison made elsewhere), then sha256-chain of BLOCKS blocks: per-phase resident times and
# `bench hammer` on each backend
cmd_resident_batch() {
    CASES="--kind dense-chain --constraints 300 --no-cpu --params-seed 1;\
--kind sha256-chain --blocks 1 --no-cpu --params-seed 2;\
--kind dense-chain --constraints 65534 --no-cpu --params-seed 3;\
--kind sha256-chain --blocks 64 --no-cpu" bash "$scripts/device.sh" resident >"$out/small.log" 2>&1
    cli_prologue /tmp/sfres resident.tar.xz
    grep -E "^(RESIDENT|exit)" "$out/table.txt"
    grep "^PROOF" "$out/table.txt" >"$out/proofs.txt"
    echo "== supraseal in the same process (diagnosis)"
    SNARKFLOW_RESIDENT_TRACE=1 timeout 60 "$sf" bench resident --kind dense-chain --constraints 300 --no-cpu --supraseal \
        --partitions 1 --runs 1 >"$out/diag.log" 2>&1
    echo "exit $?"
    grep -v WARN "$out/diag.log" | tail -4
    local blocks=${BLOCKS:-640}
    echo "== sha256-chain b$blocks"
    timeout 300 "$sf" bench resident --kind sha256-chain --blocks "$blocks" --no-cpu --partitions 2 --runs 3 2>&1 \
        | grep -E "^(RESIDENT|shape|parameters)" | cut -c1-220
    hammer_backends 200 6 --kind sha256-chain --blocks "$blocks"
}

# `resident`'s default cases, then `bench hammer` on each backend: a sealed 2 KiB PoRep and
# sha256-chain b64
cmd_resident_compare() {
    bash "$scripts/device.sh" resident >"$out/cases.log" 2>&1
    cli_prologue /tmp/sfres resident.tar.xz
    grep -E "^(RESIDENT |COMPARE|exit)" "$out/table.txt" | cut -c1-230
    hammer_backends 150 12 --kind porep-c2 --c1 "$S/sectors/sector-1/c1.json" --miner-id "$MINER"
    hammer_backends 150 12 --kind sha256-chain --blocks 64
}

# real PoRep partitions at each size of SIZES: fixture from FIXTURE_SEED, GPU parameters from
# PARAMS_SEED, then `bench resident --supraseal` (and the CPU prover unless NO_CPU is set)
cmd_resident_porep() {
    cli_prologue /tmp/sfporep bins.tar.xz
    describe_host
    echo "profilers: $(command -v nsys ncu nvprof 2>/dev/null | tr '\n' ' ')$(ls -d /usr/local/cuda*/bin 2>/dev/null | tr '\n' ' ')"
    local size fx fseed=${FIXTURE_SEED:-7} pseed=${PARAMS_SEED:-3} cpu=()
    [ -n "${NO_CPU:-}" ] && cpu=(--no-cpu)
    : >"$out/porep-table.txt"
    for size in ${SIZES:-8MiB 512MiB}; do
        fx="$S/fixture-$size$(data_suffix)"
        porep_fixture "$size" "$fseed" "$fx" "$out/fixture-$size.log" || continue
        porep_params "$size" "$pseed" "$out/params-$size.log" || continue
        echo "== $size: fixture seed $fseed, parameters seed $pseed ($(tail -1 "$out/params-$size.log" | grep -o '([0-9.]* s)'))"
        timeout "${CASE_LIMIT:-300}" "$sf" bench resident --kind porep-c2 --c1 "$fx/c1.json" --miner-id "$MINER" \
            --partitions "${PARTITIONS:-1}" --runs "${RUNS:-1}" "${cpu[@]}" --supraseal >"$out/bench-$size.log" 2>&1
        echo "exit $?" >>"$out/bench-$size.log"
        grep -E "^(RUN|RESIDENT|LANES|PROOF|COMPARE|shape|exit)" "$out/bench-$size.log" | tee -a "$out/porep-table.txt"
    done
}

# one real PoRep partition per size of SIZES proved in each of PLANS on the whole device, then on
# simulated cards of CARDS GiB (the ballast holds the rest) with the plan `auto` chooses there;
# every run printed (the measuring switches that successive proves take in turn show run by run)
cmd_memory_plans() {
    cli_prologue /tmp/sfplans bins.tar.xz
    build_ballast
    local size fx log started rc compare cards failed=0
    for size in ${SIZES:-2KiB 512MiB}; do
        fx="$S/fixture-$size$(data_suffix)"
        log="$out/plans-$size.log"
        [ -f "$fx/c1.json" ] || porep_fixture "$size" 7 "$fx" "$out/fixture-$size.log" || continue
        # parameters made once per host on the GPU (32 GiB: minutes; `bench resident` would make
        # missing ones on the CPU)
        if [ ! -f "$P/.seed3-$size" ]; then
            porep_params "$size" 3 "$out/params-$size.log" || continue
            touch "$P/.seed3-$size"
        fi
        compare=(--no-cpu)
        [ "${CPU:-0}" = 1 ] && compare=()
        [ "${SUPRA:-0}" = 1 ] && compare+=(--supraseal)
        cards=()
        [ -n "${CARDS:-}" ] && cards=(--cards "$(echo "$CARDS" | tr ' ' ',')" --ballast "$S/ballast")
        started=$(date +%s)
        SNARKFLOW_RESIDENT_TRACE="${TRACE:-}" timeout "${CASE_LIMIT:-540}" "$sf" bench resident --kind porep-c2 \
            --c1 "$fx/c1.json" --miner-id "$MINER" --partitions 1 --runs "${RUNS:-2}" "${compare[@]}" \
            --memory-plan "${PLANS:-resident,partly-resident,streamed,lean}" "${cards[@]}" >"$log" 2>&1
        rc=$?
        echo "== $size: exit $rc in $(( $(date +%s) - started )) s"
        grep -E "^(PLAN|RUN |RESIDENT |PLANS|COMPARE|CARD|PEAK|RESIDENT-LOAD|USED|FAILED)" "$log" | sed 's/ | pcie/\n      pcie/'
        grep -iE "error|panic|failed" "$log" | head -5
        [ "$rc" = 0 ] || failed=1
    done
    return "${failed:-0}"
}

# msm_fallback_bench LOG: one real PoRep partition of the fixture $fx proved RUNS times
msm_fallback_bench() {
    SNARKFLOW_RESIDENT_TRACE=1 timeout "${CASE_LIMIT:-300}" "$sf" bench resident --kind porep-c2 --c1 "$fx/c1.json" \
        --miner-id "$MINER" --partitions 1 --runs "${RUNS:-2}" --no-cpu >"$1" 2>&1
    echo "exit $?" >>"$1"
}

# the resident prover with the device all but full: for each LEAVE (MiB above what a reference
# run used) whether the one-pass H MSM fit, fell back to sppark's batched MSM or failed, and
# whether the proof equals the reference's
cmd_msm_fallback() {
    cli_prologue /tmp/sffallback bins.tar.xz
    build_ballast
    local size=${SIZE:-512MiB} ref used base leave log pid proof fellback same
    fx="$S/fixture-$size$(data_suffix)"
    porep_fixture "$size" 7 "$fx" "$out/fixture.log" || exit 1
    porep_params "$size" 3 "$out/params.log" || exit 1
    msm_fallback_bench "$out/ref.log"
    ref=$(grep '^PROOF' "$out/ref.log" | awk '{print $NF}')
    used=$(grep -o '([0-9.]* GiB used' "$out/ref.log" | grep -o '[0-9.]*' | head -1)
    echo "reference: $(grep -E '^(RESIDENT|exit)' "$out/ref.log" | tr '\n' ' ')"
    [ -n "$ref" ] || { tail -20 "$out/ref.log"; exit 1; }
    base=$(awk -v u="$used" 'BEGIN { printf "%d", u * 1024 + 600 }')   # + the bench's own CUDA context
    for leave in ${LEAVES:-0 128 256 384 512 768 1024 1536 2048}; do
        log="$out/bench-leave-$leave.log"
        "$S/ballast" $((base + leave)) >"$out/ballast-$leave.log" 2>&1 &
        pid=$!
        for _ in $(seq 100); do grep -q holding "$out/ballast-$leave.log" && break; sleep 0.1; done
        msm_fallback_bench "$log"
        kill "$pid"
        wait "$pid" 2>/dev/null
        proof=$(grep '^PROOF' "$log" | awk '{print $NF}')
        fellback=$(grep -c "using sppark's batched MSM" "$log")
        same=no
        [ "$proof" = "$ref" ] && same=yes
        echo "leave $leave MiB over $base: $(cat "$out/ballast-$leave.log") | fallback lines $fellback |" \
            "proof equals reference: $same | $(grep -E '^(RESIDENT |exit)' "$log" | tr '\n' ' ')"
        grep -iE "error|failed|panic" "$log" | head -3
    done
}

# random parameters made on the GPU against the CPU generator from the same seed (the files must
# be identical), then sha256-chain b640 parameters on the GPU and the resident prover on them
cmd_paramgen() {
    cli_prologue /tmp/sfres resident.tar.xz
    paramgen_check /tmp
    rm -rf /tmp/pg
    mkdir -p /tmp/pg
    echo "PARAMGEN sha256-chain b640: gpu [$(measure /tmp/pg.log "$sf" params generate --kind sha256-chain --blocks 640 \
        --seed 5 --force --device gpu --params-dir /tmp/pg)] (cpu: 137.3 s on this kind of host, docs/benchmarks.md)"
    SNARKFLOW_PARAMS_DIR=/tmp/pg timeout 200 "$sf" bench resident --kind sha256-chain --blocks 640 --no-cpu --partitions 1 \
        --runs 2 2>&1 | grep -E "^RESIDENT " | cut -c1-200
}

# the resident prover at 32 GiB, one step per device command: check, gen, prove, kernels
cmd_resident_32gib() {
    local step=${1:-} fixture extra=() input kind=${KIND:-porep-c2} size=${SIZE:-32GiB}
    case "$step" in
    check | gen | prove | kernels) ;;
    *) die "usage: device.sh resident-32gib check|gen|prove|kernels" ;;
    esac
    case "$kind" in
    porep-c2 | window-post | winning-post | snap-update) ;;
    *) die "KIND=$kind: the fixtures are porep-c2, window-post, winning-post and snap-update" ;;
    esac
    cli_prologue /tmp/sfres32 resident.tar.xz
    fixture="${FIXTURE:-$S/fixture}"
    if [ "$kind" = porep-c2 ]; then
        input=(--c1 "$fixture/c1.json" --miner-id "$MINER")
    else
        input=(--input "$fixture/$kind.json")
    fi
    # shellcheck disable=SC2034 # read by measure (device-lib.sh): peak device memory too
    MEASURE_DEVICE=1
    case "$step" in
    check)
        describe_host
        paramgen_check "$S"
        ;;
    gen)
        # a WindowPoSt partition of distinct sectors (fewer would be padded with the last)
        [ "$kind" = window-post ] && extra=(--sectors "${SECTORS:-2349}")
        # (snap-update: an empty replica updated with constant data, whatever DATA says)
        [ "$kind" = snap-update ] && DATA=zeros
        echo "fixture: $(measure "$S/fixture.log" "$sf" filecoin fixture --proof "$kind" --sector-size "$size" \
            --miner-id "$MINER" --data "${DATA:-zeros}" --out "$fixture" "${extra[@]}")"
        params_tmpfs "$P"
        echo "PARAMGEN $kind $size gpu: $(measure "$S/params.log" "$sf" params generate --kind "$kind" --sector-size "$size" \
            --seed 7 --device gpu --params-dir "$P")"
        tail -3 "$S/params.log"
        ls -la "$P"
        ;;
    prove)
        [ "${SUPRA:-0}" = 1 ] && extra=(--supraseal)
        echo "BENCH: $(SNARKFLOW_RESIDENT_TRACE="${TRACE:-0}" measure "$out/bench.log" "$sf" bench resident --kind "$kind" \
            "${input[@]}" --partitions 1 --runs "${RUNS:-3}" --no-cpu "${extra[@]}")"
        grep -E "^(RESIDENT|LANES|PROOF|COMPARE|shape|parameters)" "$out/bench.log" | cut -c1-400
        grep -vE "^(RESIDENT|LANES|PROOF|COMPARE)" "$out/bench.log" | tail -8
        ;;
    kernels)
        # one run, every kernel timed alone (ncu serialises them): what the device computes,
        # without the overlap, the host's waits and the launch gaps that the wall time includes
        ncu --metrics gpu__time_duration.sum --csv --print-units base --clock-control none --cache-control none \
            --log-file "$out/ncu.csv" "$sf" bench resident --kind "$kind" "${input[@]}" \
            --partitions 1 --runs 1 --no-cpu >"$out/kernels-bench.log" 2>&1
        echo "ncu exit $?"
        grep -E "^(RESIDENT|PROOF)" "$out/kernels-bench.log" | cut -c1-400
        python3 "$scripts/ncu-summary.py" "$out/ncu.csv" | tee "$out/kernels.txt"
        ;;
    esac
}

# the hop benchmark (raw vs compact, rebuild vs prove) per synthetic circuit on the GPU, then the
# same binary forced onto the CPU (BELLMAN_NO_GPU=1)
cmd_bench_hop() {
    local bin=${BIN:-target/gpu} args name
    params_dir "${SNARKFLOW_PARAMS_DIR:-/tmp/snarkflow-params}"
    describe_host
    for args in "--kind sha256-chain --blocks 16" "--kind sha256-chain --blocks 64" "--kind dense-chain --constraints 1048574"; do
        name=$(echo "$args" | tr -d ' -')
        echo "=== GPU: $args"
        # shellcheck disable=SC2086 # args is an argument list
        RUST_LOG=info "$bin/snarkflow" bench hop $args --prove --runs 3 2>"$out/$name-gpu.err" | tee "$out/$name-gpu.txt"
        grep -iE 'gpu|cuda|kernel|device' "$out/$name-gpu.err" | sort | uniq -c | sort -rn | head -5
        echo "=== CPU (BELLMAN_NO_GPU=1): $args"
        # shellcheck disable=SC2086
        BELLMAN_NO_GPU=1 "$bin/snarkflow" bench hop $args --prove --runs 1 2>/dev/null | grep -E '^\| prove|^\| rebuild' \
            | tee "$out/$name-cpu.txt"
    done
}

# CPU only: a sparse PoRep fixture of SIZE, then the hop benchmark of its partition 0 (shape,
# full vs witness-only synthesis, raw vs compact bytes, rebuild, a·b = c checked), peak RSS of each
cmd_32gib_hop() {
    local bin=${BIN:-target/device} size=${SIZE:-32GiB} m
    describe_host
    m=$(measure --stderr "$out/fixture.err" "$out/fixture.txt" "$bin/snarkflow" filecoin fixture --sector-size "$size" \
        --out /tmp/fixture)
    echo "fixture: $m" >>"$out/fixture.txt"
    cat "$out/fixture.txt"
    m=$(RUST_LOG=info measure --stderr "$out/hop.err" "$out/hop.txt" "$bin/snarkflow" bench hop --kind porep-c2 \
        --c1 /tmp/fixture/c1.json --miner-id "$MINER" --runs 1)
    echo "hop: $m" >>"$out/hop.txt"
    cat "$out/hop.txt"
    tail -5 "$out/hop.err"
}

# The GPU Debian packages (release.sh --gpu, carried in dist/), each installed as an operator
# installs it (dpkg -i: its users, directories, units), its `snarkflow doctor` probing the
# device as a gpu-worker does at start (this build's kernels against the device and driver, then
# a proof verified on it), its gpu-worker's start-up check, then removed; a host without dpkg
# unpacks them instead. DEBS names the packages (default every GPU one in dist/).
cmd_packages() {
    describe_host
    local deb name root=""
    for deb in ${DEBS:-dist/snarkflow-cuda1*_amd64.deb}; do
        [ -f "$deb" ] || die "no $deb: carry the packages (release.sh --gpu) in dist/"
        name=$(dpkg-deb -f "$deb" Package)
        echo "== $name $(dpkg-deb -f "$deb" Version), $(du -m "$deb" | cut -f1) MB"
        if command -v dpkg >/dev/null && [ "$(id -u)" = 0 ]; then
            dpkg -i "$deb" >"$out/$name-install.log" 2>&1 || { tail -5 "$out/$name-install.log"; continue; }
            echo "installed: $(dpkg -L "$name" | grep -c /) paths; users: $(getent passwd snarkflow-gpu | cut -d: -f1)"
        else
            root=/tmp/pkg-$name && rm -rf "$root" && dpkg-deb -x "$deb" "$root" && echo "unpacked into $root"
        fi
        "$root/usr/bin/snarkflow" --version
        SNARKFLOW_PARAMS_DIR=/tmp/pkg-params timeout 300 "$root/usr/bin/snarkflow" doctor --no-nats \
            >"$out/$name-doctor.txt" 2>&1
        echo "doctor exit $?: $(grep -E '^(ok|FAIL) +device' "$out/$name-doctor.txt" | cut -c1-300)"
        timeout 20 "$root/usr/lib/snarkflow/gpu-worker" --help >/dev/null 2>&1 && echo "gpu-worker --help ok"
        [ -z "$root" ] && dpkg -r "$name" >/dev/null 2>&1 && echo "removed"
    done
}
