#!/usr/bin/env bash
# The chaos suite (crates/e2e/tests/e2e/chaos.rs) as a long soak on a GPU host: a three-node
# nats-server cluster, a gateway, two synth-workers and one supraseal gpu-worker, all SIGKILLed
# and restarted at random every 1-3 s while JOBS jobs of every kind are submitted over SECS
# seconds; it prints and asserts jobs done, failed (with reasons), lost, proofs verified,
# objects left, duplicates.
#
# Runs on the device machine from the repo root (no Rust there). BINS is a tar.xz made here by
# `bash deploy/scripts/device-soak.sh pack`: the chaos test binary, e2e-gateway,
# e2e-synth-worker (the e2e test binary: cargo test -p snarkflow-e2e --test e2e --no-run), gpu-worker-supraseal
# (build-gpu.sh) and nats-server (install-deps.sh's 2.15.1), stripped.
#
#   bash deploy/scripts/device-soak.sh pack                       # here: .gpu-carry/soak.tar.xz
#   JOBS=5 SECS=20 bash deploy/scripts/device-soak.sh run         # there: parameters + a small run
#   JOBS=500 SECS=300 bash deploy/scripts/device-soak.sh run      # there: the soak
#
# Parameters go to PARAMS (default target/soak-params, kept between calls on a warm machine).
# Output: $OUT/soak.txt (the summary), $OUT/logs.tgz (each service's log, when the run kept them).
set -euo pipefail
cd "$(dirname "$0")/../.."
BINS="${BINS:-.gpu-carry/soak.tar.xz}"

case "${1:-run}" in
pack)
    chaos="$(cargo test -p snarkflow-e2e --test e2e --no-run 2>&1 | sed -n 's/.*Executable tests\/e2e\/main.rs (\(.*\))/\1/p')"
    [ -x target/gpu/gpu-worker-supraseal ] || SNARKFLOW_GPU_BACKENDS=cuda-supraseal bash deploy/scripts/build-gpu.sh
    bash deploy/scripts/install-deps.sh >/dev/null
    d="$(mktemp -d)"
    cp "$chaos" "$d/chaos"
    cp target/debug/e2e-gateway target/debug/e2e-synth-worker target/gpu/gpu-worker-supraseal "$d/"
    cp -L "$(PATH="$HOME/.local/bin:$PATH" command -v nats-server)" "$d/nats-server"
    strip "$d/chaos" "$d/e2e-gateway" "$d/e2e-synth-worker"
    mkdir -p "$(dirname "$BINS")"
    tar -C "$d" -cJf "$BINS" .
    rm -rf "$d"
    ls -la "$BINS"
    ;;
run)
    d=/tmp/soak-bins
    mkdir -p "$d" && tar -xJf "$BINS" -C "$d"
    out="${OUT:-/tmp/soak-out}"
    mkdir -p "$out"
    export NATS_SERVER_BIN="$d/nats-server"
    export SNARKFLOW_TEST_PARAMS_DIR="${PARAMS:-$PWD/target/soak-params}"
    export SNARKFLOW_CHAOS_BIN_DIR="$d" SNARKFLOW_CHAOS_GPU_WORKER="$d/gpu-worker-supraseal"
    export SNARKFLOW_CHAOS_JOBS="${JOBS:-500}" SNARKFLOW_CHAOS_SECS="${SECS:-300}"
    export RUST_LOG="${RUST_LOG:-warn}"
    mkdir -p "$SNARKFLOW_TEST_PARAMS_DIR"
    nvidia-smi --query-gpu=name,memory.used --format=csv,noheader || true
    status=0
    "$d/chaos" chaos:: --nocapture 2>&1 | grep --line-buffered -v "^\s*[0-9]*: \|^\s*at " | tee "$out/soak.txt" || status=$?
    logs="$(sed -n 's/^service logs kept in //p' "$out/soak.txt" | tail -1)"
    [ -n "$logs" ] && tar -C "$logs" -czf "$out/logs.tgz" . || true
    exit "$status"
    ;;
*)
    echo "usage: $0 pack|run" >&2
    exit 2
    ;;
esac
