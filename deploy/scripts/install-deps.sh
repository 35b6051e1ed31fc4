#!/usr/bin/env bash
# Install what snarkflow needs on a Debian 12 machine with Rust: nats-server (Debian) and
# `just` (PyPI's rust-just wheel). Safe to run repeatedly.
set -euo pipefail
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v nats-server >/dev/null; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server curl
fi
if ! command -v curl >/dev/null; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl
fi
if ! command -v just >/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check rust-just \
        || cargo install --locked just
fi
command -v nats-server >/dev/null && command -v just >/dev/null
