#!/usr/bin/env bash
# The resident prover's memory plans on one lent H200 (issue 42): for each SIZE, one real PoRep
# partition (sparse fixture seed 7, parameters seed 3, fixed r and s) proved in every plan on the
# whole device (resident, partly resident, streamed: the proofs must be byte-identical, and equal
# the CPU prover's where CPU=1), then on simulated cards (CARDS, GiB: another process holds the
# rest of the device) with the plan `auto` chooses there. Every proof is verified; `bench
# resident` exits 1 if any differs or fails.
#
#   SNARKFLOW_GPU_BACKENDS=cuda-supraseal bash deploy/scripts/pack-gpu.sh   # here
#   (device, carry .gpu-carry) SIZES="2KiB 512MiB" CARDS="24 16" bash deploy/scripts/device-memory-plans.sh
#   (device) SIZES=32GiB RUNS=2 CARDS="80 48 32 24 16" bash deploy/scripts/device-memory-plans.sh
#
# Output: one summary per size on stdout (PLAN/RESIDENT/PLANS/CARD/PEAK lines), full logs in $OUT.
set -uo pipefail
out="${OUT:-.}"
S="${S:-/tmp/sfplans}"
mkdir -p "$S/bin" "$S/params"
[ -x "$S/bin/snarkflow-supraseal" ] || tar xJf "${BINS:-.gpu-carry/bins.tar.xz}" -C "$S/bin"
sf="$S/bin/snarkflow-supraseal"
export SNARKFLOW_PARAMS_DIR="$S/params" FIL_PROOFS_PARAMETER_CACHE="$S/params" RUST_LOG="${RUST_LOG:-warn}"
nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
[ -n "$nvcc" ] || { echo "no nvcc on this host"; exit 1; }

if [ ! -x "$S/ballast" ]; then
        "$nvcc" -o "$S/ballast" deploy/scripts/ballast.cu || { echo "ballast did not build"; exit 1; }
fi

for size in ${SIZES:-2KiB 512MiB}; do
    fx="$S/fixture-$size"
    log="$out/plans-$size.log"
    if [ ! -f "$fx/c1.json" ]; then
        "$sf" filecoin fixture --sector-size "$size" --miner-id 1000 --seed 7 --out "$fx" >"$out/fixture-$size.log" 2>&1 \
            || { echo "$size: fixture failed: $(tail -3 "$out/fixture-$size.log")"; continue; }
    fi
    # parameters made once per host on the GPU (32 GiB: minutes; `bench resident` would make
    # missing ones on the CPU)
    if [ ! -f "$S/params/.seed3-$size" ]; then
        "$sf" params generate --kind porep-c2 --sector-size "$size" --seed 3 --device gpu --force \
            >"$out/params-$size.log" 2>&1 || { echo "$size: params failed: $(tail -3 "$out/params-$size.log")"; continue; }
        touch "$S/params/.seed3-$size"
    fi
    cmp=(--no-cpu)
    [ "${CPU:-0}" = 1 ] && cmp=()
    [ "${SUPRA:-0}" = 1 ] && cmp+=(--supraseal)
    cards=()
    [ -n "${CARDS:-}" ] && cards=(--cards "$(echo "$CARDS" | tr ' ' ',')" --ballast "$S/ballast")
    started=$(date +%s)
    SNARKFLOW_RESIDENT_TRACE="${TRACE:-}" timeout "${CASE_LIMIT:-540}" "$sf" bench resident --kind porep-c2 \
        --c1 "$fx/c1.json" --miner-id 1000 --partitions 1 --runs "${RUNS:-2}" "${cmp[@]}" \
        --memory-plan "${PLANS:-resident,partly-resident,streamed}" "${cards[@]}" >"$log" 2>&1
    rc=$?
    echo "== $size: exit $rc in $(( $(date +%s) - started )) s"
    grep -E "^(PLAN|RESIDENT |PLANS|COMPARE|CARD|PEAK|RESIDENT-LOAD|USED|FAILED)" "$log" | sed 's/ | pcie/\n      pcie/'
    grep -iE "error|panic|failed" "$log" | head -5
done
