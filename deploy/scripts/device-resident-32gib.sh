#!/usr/bin/env bash
# The GPU-resident prover at 32 GiB on one lent H200 host, in steps that each fit one device
# command (state in /tmp/sfres32; the calls of one lease follow each other within 30 s):
#   check   the GPU parameter generator (G1 and G2 sections) against the CPU one from the same
#           seed on small circuits: the files must be identical
#   gen     the sparse 32 GiB PoRep C1 fixture, then random 32 GiB PoRep parameters with
#           `params generate --device gpu` (timed, peak RSS)
#   prove   `bench resident` on one 32 GiB partition (RUNS runs, default 3; SUPRA=1 also proves it
#           with supraseal-c2 and compares the bytes), peak RSS and peak device memory
#   kernels one partition under Nsight Compute (ncu, durations only, boost clocks): every kernel
#           of the prove with its device time, summed by kernel (the parameter upload's
#           conversion kernels left out), against the prove's wall time
# Binaries from BINS (default .gpu-carry/resident.tar.xz: deploy/scripts/pack-resident.sh; pack-gpu.sh's
# bins.tar.xz does too); output in $OUT. S, P and FIXTURE override the state, parameter and fixture
# directories (e.g. those device-32gib.sh made in the same lease).
set -uo pipefail
step="${1:?usage: device-resident-32gib.sh check|gen|prove|kernels}"
out="${OUT:-.}"
S="${S:-/tmp/sfres32}"; P="${P:-$S/params}"; FIXTURE="${FIXTURE:-$S/fixture}"
mkdir -p "$S/bin" "$P"
[ -x "$S/bin/snarkflow-supraseal" ] || tar xJf "${BINS:-.gpu-carry/resident.tar.xz}" -C "$S/bin"
sf="$S/bin/snarkflow-supraseal"
export RUST_LOG="${RUST_LOG:-warn}"
# measure LOG COMMAND...: "exit N, S s, peak RSS G GiB, device memory peak D GiB"
measure() {
    local log=$1 t pid peak=0 dev=0 v g rc
    shift
    t=$(date +%s.%N)
    "$@" >"$log" 2>&1 & pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        v=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null)
        [ -n "$v" ] && [ "$v" -gt "$peak" ] && peak=$v
        g=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1)
        [ -n "$g" ] && [ "$g" -gt "$dev" ] && dev=$g
        sleep 0.5
    done
    wait "$pid"; rc=$?
    python3 -c "print(f'exit $rc, {$(date +%s.%N) - $t:.1f} s, peak RSS {$peak / 1048576:.1f} GiB, device memory peak {$dev / 1024:.1f} GiB')"
}
case "$step" in
check)
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    echo "host: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, disk free $(df -h /tmp | awk 'NR==2 {print $4}')"
    for c in "--kind dense-chain --constraints 300" "--kind sha256-chain --blocks 64" "--kind porep-c2 --sector-size 2KiB"; do
        rm -rf "$S/pc" "$S/pg"; mkdir -p "$S/pc" "$S/pg"
        # shellcheck disable=SC2086
        tc=$(measure "$S/pc.log" "$sf" params generate $c --seed 5 --force --device cpu --params-dir "$S/pc")
        # shellcheck disable=SC2086
        tg=$(measure "$S/pg.log" "$sf" params generate $c --seed 5 --force --device gpu --params-dir "$S/pg")
        same=$(cmp -s "$S"/pc/*.params "$S"/pg/*.params && echo identical || echo DIFFERENT)
        echo "PARAMGEN $c: cpu [$tc] gpu [$tg] files $same ($(du -h "$S"/pg/*.params | cut -f1))"
        grep -q "^exit 0" <<<"$tg" || tail -3 "$S/pg.log"
    done
    ;;
gen)
    echo "fixture: $(measure "$S/fixture.log" "$sf" filecoin fixture --sector-size 32GiB --miner-id 1000 --out "$FIXTURE")"
    echo "PARAMGEN porep-c2 32GiB gpu: $(measure "$S/params.log" "$sf" params generate --kind porep-c2 --sector-size 32GiB --seed 7 --device gpu --params-dir "$P")"
    tail -3 "$S/params.log"; ls -la "$P"
    ;;
prove)
    extra=""; [ "${SUPRA:-0}" = 1 ] && extra="--supraseal"
    echo "BENCH: $(SNARKFLOW_PARAMS_DIR=$P FIL_PROOFS_PARAMETER_CACHE=$P SNARKFLOW_RESIDENT_TRACE=${TRACE:-0} measure "$out/bench.log" \
        "$sf" bench resident --kind porep-c2 --c1 "$FIXTURE/c1.json" --miner-id 1000 --partitions 1 --runs "${RUNS:-3}" --no-cpu $extra)"
    grep -E "^(RESIDENT|PROOF|COMPARE|shape|parameters)" "$out/bench.log" | cut -c1-400
    grep -vE "^(RESIDENT|PROOF|COMPARE)" "$out/bench.log" | tail -8
    ;;
kernels)
    # one run, every kernel timed alone (ncu serialises them): what the device computes, without
    # the overlap, the host's waits and the launch gaps that the wall time includes
    SNARKFLOW_PARAMS_DIR=$P FIL_PROOFS_PARAMETER_CACHE=$P ncu --metrics gpu__time_duration.sum --csv --print-units base \
        --clock-control none --cache-control none --log-file "$out/ncu.csv" \
        "$sf" bench resident --kind porep-c2 --c1 "$FIXTURE/c1.json" --miner-id 1000 --partitions 1 --runs 1 --no-cpu \
        >"$out/kernels-bench.log" 2>&1
    echo "ncu exit $?"
    grep -E "^(RESIDENT|PROOF)" "$out/kernels-bench.log" | cut -c1-400
    python3 "$(dirname "$0")/ncu-summary.py" "$out/ncu.csv" | tee "$out/kernels.txt"
    ;;
esac
