#!/usr/bin/env bash
# Pack what deploy/scripts/bench-gpu.sh runs into .gpu-carry/bins.tar.xz: nats-server, release
# gateway and synth-worker, and the gpu-worker and CLI of both GPU backends from `just build-gpu`.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x target/gpu/gpu-worker-supraseal ] && [ -x target/gpu/gpu-worker ] || bash deploy/scripts/build-gpu.sh
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/gpu-build}" cargo build --release -p snarkflow-gateway -p snarkflow-synth-worker
pack=$(mktemp -d)
cp "$(command -v nats-server)" target/gpu/gpu-worker-supraseal target/gpu/snarkflow-supraseal \
    target/gpu/gpu-worker target/gpu/snarkflow "$pack/"
cp "${CARGO_TARGET_DIR:-target/gpu-build}/release/gateway" "${CARGO_TARGET_DIR:-target/gpu-build}/release/synth-worker" "$pack/"
strip "$pack/gateway" "$pack/synth-worker"
mkdir -p .gpu-carry
tar cJf .gpu-carry/bins.tar.xz -C "$pack" .
rm -rf "$pack"
ls -la .gpu-carry/bins.tar.xz
