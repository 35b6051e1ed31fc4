#!/usr/bin/env bash
# Pack what deploy/scripts/bench-gpu.sh runs into .gpu-carry/bins.tar.xz: nats-server, release
# gateway and synth-worker, and the gpu-worker and CLI of the GPU backends from `just build-gpu`
# (both, or those named in SNARKFLOW_GPU_BACKENDS, e.g. "cuda-supraseal": what bench-gpu.sh's
# sf phase needs).
set -euo pipefail
cd "$(dirname "$0")/../.."
bins=()
for backend in ${SNARKFLOW_GPU_BACKENDS:-cuda cuda-supraseal}; do
    suffix=""
    [ "$backend" = cuda ] || suffix="-${backend#cuda-}"
    bins+=("target/gpu/gpu-worker$suffix" "target/gpu/snarkflow$suffix")
done
for b in "${bins[@]}"; do [ -x "$b" ] || { bash deploy/scripts/build-gpu.sh; break; }; done
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/gpu-build}" cargo build --release -p snarkflow-gateway -p snarkflow-synth-worker
pack=$(mktemp -d)
cp "$(command -v nats-server)" "${bins[@]}" "$pack/"
cp "${CARGO_TARGET_DIR:-target/gpu-build}/release/gateway" "${CARGO_TARGET_DIR:-target/gpu-build}/release/synth-worker" "$pack/"
strip "$pack/gateway" "$pack/synth-worker"
mkdir -p .gpu-carry
tar cJf .gpu-carry/bins.tar.xz -C "$pack" .
rm -rf "$pack"
ls -la .gpu-carry/bins.tar.xz
