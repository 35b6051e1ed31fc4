#!/usr/bin/env bash
# The cuda-resident backend on the lent GPU host, in one command: every case of CASES proved by
# the resident prover with the same r and s as the CPU prover and supraseal-c2, each proof
# checked byte for byte and verified, with per-phase device times; a table last.
#
#   bash deploy/scripts/pack-resident.sh          # here: build and pack .gpu-carry/resident.tar.xz
#   (device) bash deploy/scripts/device-resident.sh   # carry .gpu-carry
#
# CASES: ';'-separated `bench resident` argument lists; the default covers dense and SHA-256
# synthetic circuits and a real sealed 2 KiB PoRep. Random parameters are generated on the
# host's CPU (minutes past ~10 M constraints). Logs and the table land in $OUT.
set -uo pipefail
out="${OUT:-.}"
S=/tmp/sfres
mkdir -p "$S/bin" "$S/params"
# BINS: a tar.xz holding snarkflow-supraseal (pack-resident.sh, or pack-gpu.sh's bins.tar.xz)
[ -x "$S/bin/snarkflow-supraseal" ] || tar xJf "${BINS:-.gpu-carry/resident.tar.xz}" -C "$S/bin"
sf="$S/bin/snarkflow-supraseal"
export SNARKFLOW_PARAMS_DIR="$S/params" FIL_PROOFS_PARAMETER_CACHE="$S/params" RUST_LOG="${RUST_LOG:-warn}"
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader | tee "$out/gpu.txt"
echo "host: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB"

if [[ "${CASES:-}" == "" ]]; then
    if [ ! -f "$S/sectors/sector-1/c1.json" ]; then
        "$sf" filecoin seal --out "$S/sectors" --c1-only >"$out/seal.log" 2>&1 || echo "sealing failed: $(tail -3 "$out/seal.log")"
    fi
    CASES="--kind dense-chain --constraints 300 --supraseal --params-seed 1;\
--kind sha256-chain --blocks 1 --supraseal --params-seed 2;\
--kind dense-chain --constraints 65534 --supraseal;\
--kind sha256-chain --blocks 64 --supraseal;\
--kind porep-c2 --c1 $S/sectors/sector-1/c1.json --miner-id 1000 --partitions 1 --supraseal"
fi

: >"$out/table.txt"
IFS=';' read -ra cases <<<"$CASES"
for c in "${cases[@]}"; do
    name=$(echo "$c" | sed 's|.*/||' | tr -s ' -' '_' | cut -c1-60)
    echo "== $c"
    started=$(date +%s.%N)
    # shellcheck disable=SC2086
    timeout "${CASE_LIMIT:-400}" "$sf" bench resident $c >"$out/case$name.log" 2>&1
    rc=$?
    grep -E "^(RESIDENT|PROOF|COMPARE|shape|parameters)" "$out/case$name.log" | tee -a "$out/table.txt"
    python3 -c "print(f'exit $rc after {$(date +%s.%N) - $started:.1f} s')" | tee -a "$out/table.txt"
    [ $rc = 0 ] || tail -5 "$out/case$name.log"
done
echo; echo "== table"; cat "$out/table.txt"
