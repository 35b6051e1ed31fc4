#!/usr/bin/env bash
# The GPU feature code paths without a GPU, in the environment build-gpu.sh builds with (the
# build scripts still run nvcc on the CUDA kernels): `cargo clippy -D warnings` of the prover,
# gpu-worker and CLI with each GPU build (`cuda`; `cuda-supraseal` with `cuda-resident`, our
# own kernels), then each backend's gpu-worker started against the stub driver must answer
# /readyz 503 "device unusable" (no silent CPU fallback). CI runs this after the test suite.
# Both toolkits (cuda-env.sh): CUDA 13 for sm_90 (the lent H200's), CUDA 12 for sm_86, one
# architecture each because every architecture is another full nvcc compile of every kernel.
# Clippy runs once (with CUDA 13: the Rust code is the same for both); the readiness builds run
# for both, since only a build links cudart and the stub driver of the toolkit.
set -euo pipefail
cd "$(dirname "$0")/../.."
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v g++ >/dev/null || ! python3 -m pip --version >/dev/null 2>&1; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ python3-pip
fi
export PATH="$HOME/.cargo/bin:$PATH"
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
target_dir="${CARGO_TARGET_DIR:-target/gpu-check}"
# No debug info in these builds: with it cc-rs passes nvcc `-G` (unoptimised device code with
# device debug info), which nobody runs and which made the kernels' compile the slowest and most
# memory-hungry step here (CI's CUDA 12 build of resident.cu failed once without a message,
# stop 47). Nothing below is a release build, so nothing shipped changes.
export CARGO_PROFILE_DEV_DEBUG=false
# …and no optimisation: these builds are started once, to read /readyz. At the workspace's
# opt-levels (1, and 3 for the proving crates) their Rust codegen was half of check-gpu's time.
# Clippy gets the same settings, so the dependencies' build-script runs (supraseal-c2's and
# sppark's nvcc, bellperson's kernels) can be shared with the build after it where their
# features agree; our own kernels are not compiled under clippy at all
# (crates/cuda-resident/build.rs).
export CARGO_PROFILE_DEV_OPT_LEVEL=0
mapfile -t unoptimised < <(python3 -c '
import tomllib
for name in tomllib.load(open("Cargo.toml", "rb"))["profile"]["dev"].get("package", {}):
    print(f"--config=profile.dev.package.\"{name}\".opt-level=0")')
[ "${#unoptimised[@]}" -gt 0 ] || { echo "check-gpu: could not read Cargo.toml's [profile.dev.package] (python3 ≥ 3.11 has tomllib)"; exit 1; }
# the features of one GPU build: `cuda-supraseal` builds carry the resident prover too
features() {
    case "$1" in
        cuda) echo "snarkflow-gpu-worker/cuda,snarkflow-cli/cuda" ;;
        *) echo "snarkflow-gpu-worker/$1,snarkflow-cli/$1,snarkflow-gpu-worker/cuda-resident,snarkflow-cli/cuda-resident" ;;
    esac
}
# A GPU build, and once more alone (one job) if it fails: in CI nvcc once exited 1 on a kernel
# that compiles here (stop 47), printing nothing. A real error fails both times.
gpu_cargo() {
    cargo "$@" && return 0
    echo "== the build failed; once more with one job, to tell a real error from a transient one"
    df -h . /tmp || true
    free -g || true
    cargo "$1" -j 1 "${@:2}"
}
clippy() {
    for build in ${SNARKFLOW_GPU_BACKENDS:-cuda cuda-supraseal}; do
        echo "== $build (CUDA $SNARKFLOW_CUDA_TOOLKIT, sm_$SNARKFLOW_CUDA_ARCHS)"
        gpu_cargo clippy "${unoptimised[@]}" -p snarkflow-prover -p snarkflow-gpu-worker -p snarkflow-cli -p snarkflow-cuda-resident \
            --features "$(features "$build")" -- -D warnings
    done
}

# A GPU build on a machine without a usable driver must be not ready and say why (never prove
# on the CPU): start each GPU gpu-worker against the stub driver and read its /readyz.
port=19102
readiness() {
    for backend in ${SNARKFLOW_GPU_BACKENDS:-cuda cuda-supraseal cuda-resident}; do
        echo "== $backend: readiness without a driver (CUDA $SNARKFLOW_CUDA_TOOLKIT, sm_$SNARKFLOW_CUDA_ARCHS)"
        build=$backend
        [ "$backend" = cuda-resident ] && build=cuda-supraseal
        gpu_cargo build "${unoptimised[@]}" -p snarkflow-gpu-worker --features "$(features "$build" | sed 's/,snarkflow-cli[^,]*//g; s/^snarkflow-cli[^,]*,//')"
        log=$(mktemp)
        LD_LIBRARY_PATH="$stub" RUST_LOG=warn "$CARGO_TARGET_DIR/debug/gpu-worker" --backend "$backend" \
            --status-listen "127.0.0.1:$port" --nats-url nats://127.0.0.1:1 >"$log" 2>&1 &
        pid=$!
        body=""
        for _ in $(seq 1 100); do
            body=$(curl -s -w ' HTTP %{http_code}' "http://127.0.0.1:$port/readyz" || true)
            case "$body" in *'"state":"device unusable"'*) break ;; esac
            sleep 0.2
        done
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        echo "$body"
        case "$body" in
            *'"ready":false'*'"state":"device unusable"'*'HTTP 503'* | *'"state":"device unusable"'*'"ready":false'*'HTTP 503'*) ;;
            *) echo "FAIL: the $backend gpu-worker without a driver did not report itself unusable"; cat "$log"; exit 1 ;;
        esac
        rm -f "$log"
    done
}

# GPU_CHECK_PRUNE=1 (CI): a toolkit's target dir is removed once its checks are done, so the
# two GPU builds never hold disk together (stop 51's CI ran out of disk in the second)
prune() {
    if [ "${GPU_CHECK_PRUNE:-0}" = 1 ]; then rm -rf "$CARGO_TARGET_DIR"; fi
}

# a subshell per toolkit: cuda-env.sh puts its nvcc first on PATH; a target dir per toolkit,
# since sppark's and ec-gpu-gen's build scripts do not rerun when only the toolkit changes
(
    export SNARKFLOW_CUDA_TOOLKIT=13 SNARKFLOW_CUDA_ARCHS=90 CARGO_TARGET_DIR="$target_dir"
    source deploy/scripts/cuda-env.sh
    clippy
    readiness
    prune
)
(
    export SNARKFLOW_CUDA_TOOLKIT=12 SNARKFLOW_CUDA_ARCHS=86 CARGO_TARGET_DIR="$target_dir-cuda12"
    source deploy/scripts/cuda-env.sh
    readiness
    prune
)
