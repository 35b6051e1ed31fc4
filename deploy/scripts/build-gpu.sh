#!/usr/bin/env bash
# Build the GPU binaries (gpu-worker, snarkflow CLI) for both GPU backends on a machine
# without a GPU or CUDA toolkit (environment: cuda-env.sh): `cuda` (bellperson's ec-gpu-gen
# kernels driven by our prover half) and `cuda-supraseal` (supraseal-c2, what Curio and lotus
# prove with; its `snarkflow` also runs the stock filecoin-proofs C2 on supraseal for
# `bench stock-c2`).
# The `cuda-supraseal` build also carries `cuda-resident` (snarkflow's own prover, parameters
# and constraint shape kept in GPU memory), which its gpu-worker uses unless told
# `--backend cuda-supraseal`.
# Output: target/gpu/{gpu-worker,snarkflow} (cuda) and target/gpu/{gpu-worker,snarkflow}-supraseal,
# stripped; SNARKFLOW_GPU_BACKENDS="cuda-supraseal" builds only one.
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/scripts/cuda-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/gpu-build}"
mkdir -p target/gpu
for backend in ${SNARKFLOW_GPU_BACKENDS:-cuda cuda-supraseal}; do
    features="snarkflow-gpu-worker/$backend,snarkflow-cli/$backend"
    [ "$backend" = cuda ] || features="$features,snarkflow-gpu-worker/cuda-resident,snarkflow-cli/cuda-resident"
    cargo build --release -p snarkflow-gpu-worker -p snarkflow-cli --features "$features"
    suffix=""
    [ "$backend" = cuda ] || suffix="-${backend#cuda-}"
    for bin in gpu-worker snarkflow; do
        cp "$CARGO_TARGET_DIR/release/$bin" "target/gpu/$bin$suffix"
        strip "target/gpu/$bin$suffix"
    done
done
ls -la target/gpu
