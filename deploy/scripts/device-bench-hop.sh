#!/usr/bin/env bash
# Run on a GPU host (the lent H200) with binaries from build-gpu.sh in BIN (default target/gpu):
# the hop benchmark (raw vs compact, rebuild vs prove) per circuit, on the GPU and, for
# comparison, the same binary forced onto the CPU (BELLMAN_NO_GPU=1). Logs to ${OUT:-.}.
set -uo pipefail
bin="${BIN:-target/gpu}"
out="${OUT:-.}"
export SNARKFLOW_PARAMS_DIR="${SNARKFLOW_PARAMS_DIR:-/tmp/snarkflow-params}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
nproc | sed 's/^/cores: /' | tee -a "$out/gpu.txt"
for args in "--kind sha256-chain --blocks 16" "--kind sha256-chain --blocks 64" "--kind dense-chain --constraints 1048574"; do
    name=$(echo "$args" | tr -d ' -' )
    echo "=== GPU: $args"
    RUST_LOG=info "$bin/snarkflow" bench hop $args --prove --runs 3 2>"$out/$name-gpu.err" | tee "$out/$name-gpu.txt"
    grep -iE 'gpu|cuda|kernel|device' "$out/$name-gpu.err" | sort | uniq -c | sort -rn | head -5
    echo "=== CPU (BELLMAN_NO_GPU=1): $args"
    BELLMAN_NO_GPU=1 "$bin/snarkflow" bench hop $args --prove --runs 1 2>/dev/null | grep -E '^\| prove|^\| rebuild' | tee "$out/$name-cpu.txt"
done
