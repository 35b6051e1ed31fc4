# shellcheck shell=bash
# shellcheck disable=SC2154 # out, root: set by device-lib.sh, which device.sh sources first
# Sourced by device.sh, not run: `soak`, the chaos suite as a long soak on the device host.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    echo "device-soak.sh is sourced by device.sh; run: bash deploy/scripts/device.sh help" >&2
    exit 2
fi

# The chaos suite (crates/e2e/tests/e2e/chaos.rs) as a long soak with a supraseal gpu-worker:
# `pack` here (Rust needed), `run` on the device (none there). A subshell: it stops at the first
# failure (set -e) and works from the repository root.
cmd_soak() (
    set -e
    cd "$root"
    case "${1:-run}" in
    pack) soak_pack ;;
    run) soak_run ;;
    *) die "usage: device.sh soak pack|run" ;;
    esac
)

# the chaos test binary, e2e-gateway, e2e-synth-worker, gpu-worker-supraseal (build-gpu.sh) and
# nats-server (install-deps.sh's), stripped, packed into `carried soak.tar.xz`
soak_pack() {
    local chaos tarball pack
    tarball=$(carried soak.tar.xz)
    chaos="$(cargo test -p snarkflow-e2e --test e2e --no-run 2>&1 | sed -n 's/.*Executable tests\/e2e\/main.rs (\(.*\))/\1/p')"
    [ -x target/gpu/gpu-worker-supraseal ] || SNARKFLOW_GPU_BACKENDS=cuda-supraseal bash deploy/scripts/build-gpu.sh
    bash deploy/scripts/install-deps.sh >/dev/null
    pack="$(mktemp -d)"
    cp "$chaos" "$pack/chaos"
    cp target/debug/e2e-gateway target/debug/e2e-synth-worker target/gpu/gpu-worker-supraseal "$pack/"
    cp -L "$(PATH="$HOME/.local/bin:$PATH" command -v nats-server)" "$pack/nats-server"
    strip "$pack/chaos" "$pack/e2e-gateway" "$pack/e2e-synth-worker"
    mkdir -p "$(dirname "$tarball")"
    tar -C "$pack" -cJf "$tarball" .
    rm -rf "$pack"
    ls -la "$tarball"
}

# JOBS jobs of every kind over SECS seconds while every process is SIGKILLed and restarted at
# random; $OUT/soak.txt (the summary) and $OUT/logs.tgz (each service's log, when kept)
soak_run() {
    local d=/tmp/soak-bins status=0 kept
    out="${OUT:-/tmp/soak-out}"
    mkdir -p "$out"
    unpack_bins "$d" soak.tar.xz chaos
    export NATS_SERVER_BIN="$d/nats-server"
    export SNARKFLOW_TEST_PARAMS_DIR="${PARAMS:-$PWD/target/soak-params}"
    export SNARKFLOW_CHAOS_BIN_DIR="$d" SNARKFLOW_CHAOS_GPU_WORKER="$d/gpu-worker-supraseal"
    export SNARKFLOW_CHAOS_JOBS="${JOBS:-500}" SNARKFLOW_CHAOS_SECS="${SECS:-300}"
    export RUST_LOG="${RUST_LOG:-warn}"
    mkdir -p "$SNARKFLOW_TEST_PARAMS_DIR"
    nvidia-smi --query-gpu=name,memory.used --format=csv,noheader || true
    "$d/chaos" chaos:: --ignored --nocapture 2>&1 | grep --line-buffered -v "^\s*[0-9]*: \|^\s*at " | tee "$out/soak.txt" || status=$?
    kept="$(sed -n 's/^service logs kept in //p' "$out/soak.txt" | tail -1)"
    [ -n "$kept" ] && tar -C "$kept" -czf "$out/logs.tgz" . || true
    exit "$status"
}
