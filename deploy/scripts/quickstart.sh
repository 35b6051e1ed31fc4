#!/usr/bin/env bash
# README command 1: from a fresh checkout to one verified proof through all services.
# Installs dependencies, builds, starts NATS + gateway + synth-worker + gpu-worker (CPU),
# proves one sha256-chain job, verifies it, and leaves the stack running (`just down`).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash deploy/scripts/install-deps.sh
export PATH="$HOME/.local/bin:$HOME/.cargo/bin:$PATH"
just demo
echo
echo "done. the stack is still running: try 'target/debug/snarkflow list' or 'just down'"
