#!/usr/bin/env bash
# Build the CLI with both supraseal-c2 and the GPU-resident prover (cuda-env.sh: nvcc from
# PyPI, a stub driver) and pack it into .gpu-carry/resident.tar.xz for the resident subcommands
# of deploy/scripts/device.sh (`resident`, `resident-32gib`, `paramgen`, …).
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/scripts/cuda-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/gpu-build}"
cargo build --release -p snarkflow-cli --features snarkflow-cli/cuda-supraseal,snarkflow-cli/cuda-resident
pack=$(mktemp -d)
cp "$CARGO_TARGET_DIR/release/snarkflow" "$pack/snarkflow-supraseal"
strip "$pack/snarkflow-supraseal"
mkdir -p .gpu-carry
tar cJf .gpu-carry/resident.tar.xz -C "$pack" .
rm -rf "$pack"
ls -la .gpu-carry/resident.tar.xz
