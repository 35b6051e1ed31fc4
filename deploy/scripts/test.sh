#!/usr/bin/env bash
# README command 2: the test suite (unit, property and end-to-end tests against a real
# nats-server started by the tests themselves).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash deploy/scripts/install-deps.sh
export PATH="$HOME/.local/bin:$HOME/.cargo/bin:$PATH"
# built first, then run: the two times printed are what the suite costs
SECONDS=0
cargo test --workspace --no-run
echo "test suite: built in ${SECONDS} s"
SECONDS=0
cargo test --workspace
echo "test suite: ran in ${SECONDS} s"
bash deploy/scripts/validate-compose.sh
