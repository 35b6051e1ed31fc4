#!/usr/bin/env bash
# Type-check (and lint) the GPU feature code paths without a GPU: `cargo clippy` of the
# gpu-worker and CLI with each GPU backend, in the environment build-gpu.sh builds with (the
# build scripts still run nvcc on the CUDA kernels). CI runs this after the test suite.
set -euo pipefail
cd "$(dirname "$0")/../.."
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v g++ >/dev/null || ! python3 -m pip --version >/dev/null 2>&1; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ python3-pip
fi
source deploy/scripts/cuda-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/gpu-check}"
for backend in ${SNARKFLOW_GPU_BACKENDS:-cuda cuda-supraseal}; do
    echo "== $backend"
    cargo clippy -p snarkflow-prover -p snarkflow-gpu-worker -p snarkflow-cli \
        --features "snarkflow-gpu-worker/$backend,snarkflow-cli/$backend" -- -D warnings
done
