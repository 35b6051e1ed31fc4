#!/usr/bin/env bash
# The resident prover on a device with too little memory for the one-pass H MSM: another process
# (a small CUDA "ballast" program built here with nvcc) holds all but LEAVE MiB of the device,
# then `bench resident` proves one real PoRep partition of SIZE. For each LEAVE the log says
# whether the one-pass MSM fit, fell back to sppark's batched MSM (its stderr line), or the prove
# failed; every proof is verified and must equal the reference run's (no ballast, same r and s).
# LEAVE is in MiB above what the reference run used on the device (key, shape, context).
#
#   SNARKFLOW_GPU_BACKENDS=cuda-supraseal bash deploy/scripts/pack-gpu.sh   # here
#   (device, carry .gpu-carry) SIZE=512MiB bash deploy/scripts/device-msm-fallback.sh
set -uo pipefail
out="${OUT:-.}"
S="${S:-/tmp/sffallback}"
size="${SIZE:-512MiB}"
mkdir -p "$S/bin" "$S/params"
[ -x "$S/bin/snarkflow-supraseal" ] || tar xJf "${BINS:-.gpu-carry/bins.tar.xz}" -C "$S/bin"
sf="$S/bin/snarkflow-supraseal"
export SNARKFLOW_PARAMS_DIR="$S/params" FIL_PROOFS_PARAMETER_CACHE="$S/params" RUST_LOG="${RUST_LOG:-warn}"
nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
[ -n "$nvcc" ] || { echo "no nvcc on this host"; exit 1; }

"$nvcc" -o "$S/ballast" deploy/scripts/ballast.cu || { echo "ballast did not build"; exit 1; }

fx="$S/fixture-$size"
"$sf" filecoin fixture --sector-size "$size" --miner-id 1000 --seed 7 --out "$fx" >"$out/fixture.log" 2>&1 \
    || { echo "fixture failed: $(tail -3 "$out/fixture.log")"; exit 1; }
"$sf" params generate --kind porep-c2 --sector-size "$size" --seed 3 --device gpu --force >"$out/params.log" 2>&1 \
    || { echo "params failed: $(tail -3 "$out/params.log")"; exit 1; }
bench() {
    SNARKFLOW_RESIDENT_TRACE=1 timeout "${CASE_LIMIT:-300}" "$sf" bench resident --kind porep-c2 --c1 "$fx/c1.json" \
        --miner-id 1000 --partitions 1 --runs "${RUNS:-2}" --no-cpu >"$1" 2>&1
    echo "exit $?" >>"$1"
}
bench "$out/ref.log"
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
    bench "$log"
    kill "$pid"; wait "$pid" 2>/dev/null
    proof=$(grep '^PROOF' "$log" | awk '{print $NF}')
    fellback=$(grep -c "using sppark's batched MSM" "$log")
    same=no; [ "$proof" = "$ref" ] && same=yes
    echo "leave $leave MiB over $base: $(cat "$out/ballast-$leave.log") | fallback lines $fellback | proof equals reference: $same | $(grep -E '^(RESIDENT |exit)' "$log" | tr '\n' ' ')"
    grep -iE "error|failed|panic" "$log" | head -3
done
