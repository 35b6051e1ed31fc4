#!/usr/bin/env bash
# One device call: resident vs supraseal-c2 in one process (byte-identical proofs, same r and
# s) on the synthetic kinds and a real sealed 2 KiB PoRep, then `bench hammer` on each backend.
set -uo pipefail
out="${OUT:-.}"
S=/tmp/sfres sf=/tmp/sfres/bin/snarkflow-supraseal
export SNARKFLOW_PARAMS_DIR="$S/params" FIL_PROOFS_PARAMETER_CACHE="$S/params" RUST_LOG=warn
bash deploy/scripts/device-resident.sh >"$out/cases.log" 2>&1   # default cases: --supraseal each
grep -E "^(RESIDENT |COMPARE|exit)" "$out/table.txt" | cut -c1-230
c1="--kind porep-c2 --c1 $S/sectors/sector-1/c1.json --miner-id 1000"
for b in cuda-supraseal cuda-resident; do
    for c in "$c1" "--kind sha256-chain --blocks 64"; do
        echo "== hammer $b $c" | cut -c1-80
        # shellcheck disable=SC2086
        SNARKFLOW_BACKEND=$b timeout 150 "$sf" bench hammer $c --proofs 12 --partitions 2 --threads 1 2>&1 | grep -E "^(device|HAMMER)|rror|INVALID" | cut -c1-300
    done
done
