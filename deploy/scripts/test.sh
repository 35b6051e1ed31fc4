#!/usr/bin/env bash
# README command 2: the test suite's fast tier (unit, property and end-to-end tests against a
# real nats-server started by the tests themselves). `--slow` runs the slow tier after it
# (chaos, the three-node NATS cluster, the CPU PoRep proofs beyond one: the tests marked
# `#[ignore = "slow tier: ..."]`), as CI does.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash deploy/scripts/install-deps.sh
export PATH="$HOME/.local/bin:$HOME/.cargo/bin:$PATH"
# built first, then run: the two times printed are what the suite costs. `--tests`: every
# target that has tests (libraries, test-mode binaries, integration tests), not the examples
# `cargo test` would also build (~30 CPU-s; CI builds them with `cargo build --examples`)
SECONDS=0
cargo test --workspace --tests --no-run
echo "test suite: built in ${SECONDS} s"
SECONDS=0
cargo test --workspace --tests
echo "test suite: fast tier ran in ${SECONDS} s"
if [ "${1:-}" = --slow ]; then
    SECONDS=0
    cargo test --workspace --tests -- --ignored
    echo "test suite: slow tier ran in ${SECONDS} s"
fi
bash deploy/scripts/validate-compose.sh
