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
# Kernels for every architecture providers own (SNARKFLOW_CUDA_ARCHS narrows it). With
# SNARKFLOW_CUDA_TOOLKIT=12 (CUDA 12.4, for drivers older than R580; see cuda-env.sh) the
# binaries go to target/gpu-cuda12/ instead, built in their own target dir: sppark's and
# ec-gpu-gen's build scripts do not rerun when only the toolkit changes.
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/scripts/cuda-env.sh
out=target/gpu
[ "$SNARKFLOW_CUDA_TOOLKIT" = 13 ] || out="target/gpu-cuda$SNARKFLOW_CUDA_TOOLKIT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/gpu-build${out#target/gpu}}"
echo "CUDA $SNARKFLOW_CUDA_TOOLKIT, SASS for: $SNARKFLOW_CUDA_ARCHS (and PTX of the newest) -> $out"
mkdir -p "$out"
for backend in ${SNARKFLOW_GPU_BACKENDS:-cuda cuda-supraseal}; do
    features="snarkflow-gpu-worker/$backend,snarkflow-cli/$backend"
    [ "$backend" = cuda ] || features="$features,snarkflow-gpu-worker/cuda-resident,snarkflow-cli/cuda-resident"
    cargo build --release -p snarkflow-gpu-worker -p snarkflow-cli --features "$features"
    suffix=""
    [ "$backend" = cuda ] || suffix="-${backend#cuda-}"
    for bin in gpu-worker snarkflow; do
        cp "$CARGO_TARGET_DIR/release/$bin" "$out/$bin$suffix"
        strip "$out/$bin$suffix"
    done
done
ls -la "$out"
