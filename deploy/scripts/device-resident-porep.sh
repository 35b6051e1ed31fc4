#!/usr/bin/env bash
# Real PoRep partitions at the test sector sizes on the lent GPU host: for each size of SIZES a
# sparse C1 fixture made from FIXTURE_SEED, random parameters from PARAMS_SEED made on the GPU,
# then `bench resident`: one partition proved by the resident prover, the CPU prover (bellperson,
# the host's cores; NO_CPU=1 skips it) and supraseal-c2 with the same r and s, each proof
# verified and compared byte for byte. RUNS proves each partition that many times (with
# SNARKFLOW_MSM_WBITS a list, each run its own H-MSM window width); every run must equal the first.
#
#   SNARKFLOW_GPU_BACKENDS=cuda-supraseal bash deploy/scripts/pack-gpu.sh   # here
#   (device, carry .gpu-carry) bash deploy/scripts/device-resident-porep.sh
set -uo pipefail
out="${OUT:-.}"
S="${S:-/tmp/sfporep}"
mkdir -p "$S/bin" "$S/params"
[ -x "$S/bin/snarkflow-supraseal" ] || tar xJf "${BINS:-.gpu-carry/bins.tar.xz}" -C "$S/bin"
sf="$S/bin/snarkflow-supraseal"
export SNARKFLOW_PARAMS_DIR="$S/params" FIL_PROOFS_PARAMETER_CACHE="$S/params" RUST_LOG="${RUST_LOG:-warn}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
echo "profilers: $(command -v nsys ncu nvprof 2>/dev/null | tr '\n' ' ')$(ls -d /usr/local/cuda*/bin 2>/dev/null | tr '\n' ' ')"
: >"$out/porep-table.txt"
for size in ${SIZES:-8MiB 512MiB}; do
    fx="$S/fixture-$size"
    "$sf" filecoin fixture --sector-size "$size" --miner-id 1000 --seed "${FIXTURE_SEED:-7}" --out "$fx" >"$out/fixture-$size.log" 2>&1 \
        || { echo "fixture $size failed: $(tail -3 "$out/fixture-$size.log")"; continue; }
    "$sf" params generate --kind porep-c2 --sector-size "$size" --seed "${PARAMS_SEED:-3}" --device gpu --force \
        >"$out/params-$size.log" 2>&1 || { echo "params $size failed: $(tail -3 "$out/params-$size.log")"; continue; }
    echo "== $size: fixture seed ${FIXTURE_SEED:-7}, parameters seed ${PARAMS_SEED:-3} ($(tail -1 "$out/params-$size.log" | grep -o '([0-9.]* s)'))"
    timeout "${CASE_LIMIT:-300}" "$sf" bench resident --kind porep-c2 --c1 "$fx/c1.json" --miner-id 1000 \
        --partitions "${PARTITIONS:-1}" --runs "${RUNS:-1}" ${NO_CPU:+--no-cpu} --supraseal >"$out/bench-$size.log" 2>&1
    echo "exit $?" >>"$out/bench-$size.log"
    grep -E "^(RUN|RESIDENT|PROOF|COMPARE|shape|exit)" "$out/bench-$size.log" | tee -a "$out/porep-table.txt"
done
