#!/usr/bin/env bash
# README command 2: the test suite (unit, property and end-to-end tests against a real
# nats-server started by the tests themselves).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash deploy/scripts/install-deps.sh
export PATH="$HOME/.local/bin:$HOME/.cargo/bin:$PATH"
cargo test --workspace
bash deploy/scripts/validate-compose.sh
