#!/usr/bin/env bash
# One device call: exactness cases (seeded parameters, proofs printed for the CPU comparison
# made elsewhere), then sha256-chain at 16.7 M constraints: per-phase resident times, and the
# same partitions through `bench hammer` on supraseal-c2 and on the resident prover.
set -uo pipefail
out="${OUT:-.}"
S=/tmp/sfres sf=/tmp/sfres/bin/snarkflow-supraseal
export SNARKFLOW_PARAMS_DIR="$S/params" FIL_PROOFS_PARAMETER_CACHE="$S/params" RUST_LOG=warn
CASES="--kind dense-chain --constraints 300 --no-cpu --params-seed 1;--kind sha256-chain --blocks 1 --no-cpu --params-seed 2;--kind dense-chain --constraints 65534 --no-cpu --params-seed 3;--kind sha256-chain --blocks 64 --no-cpu" \
    bash deploy/scripts/device-resident.sh >"$out/small.log" 2>&1
grep -E "^(RESIDENT|exit)" "$out/table.txt"; grep "^PROOF" "$out/table.txt" >"$out/proofs.txt"
echo "== supraseal in the same process (diagnosis)"
SNARKFLOW_RESIDENT_TRACE=1 timeout 60 "$sf" bench resident --kind dense-chain --constraints 300 --no-cpu --supraseal --partitions 1 --runs 1 >"$out/diag.log" 2>&1; echo "exit $?"; grep -v WARN "$out/diag.log" | tail -4
B=${BLOCKS:-640}
echo "== sha256-chain b$B"
timeout 300 "$sf" bench resident --kind sha256-chain --blocks "$B" --no-cpu --partitions 2 --runs 3 2>&1 | grep -E "^(RESIDENT|shape|parameters)" | cut -c1-220
for b in cuda-supraseal cuda-resident; do
    echo "== hammer $b"
    SNARKFLOW_BACKEND=$b timeout 200 "$sf" bench hammer --kind sha256-chain --blocks "$B" --proofs 6 --partitions 2 --threads 1 2>&1 | grep -E "^(device|HAMMER)|error|INVALID" | cut -c1-300
done
