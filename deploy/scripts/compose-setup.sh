#!/usr/bin/env bash
# One-time setup for `docker compose`: NATS passwords per role (deploy/nats/auth.conf and
# deploy/nats/<role>.password, git-ignored; the services' copies in .state/compose-secrets)
# and an admin API token for the gateway
# (.state/tokens/tokens.json, which `just up` uses too; the token itself in .state/api-token,
# which the CLI reads). Safe to run again: what exists is kept.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -f deploy/nats/auth.conf ]; then
    bash deploy/scripts/nats-credentials.sh deploy/nats
fi
# The services' copies of their passwords, as compose secrets: compose bind-mounts a secret
# file with its host owner and mode, and the images run as uid 10001, which cannot read a
# mode-600 file of the host user. So the copies are mode 644 inside a directory only the host
# user may enter (700): other users of the host cannot reach them, the containers can read them.
secrets=.state/compose-secrets
mkdir -p "$secrets"
chmod 700 "$secrets"
for role in gateway synth-worker gpu-worker; do
    if [ ! -f "$secrets/$role.password" ] || ! cmp -s "deploy/nats/$role.password" "$secrets/$role.password"; then
        install -m 644 "deploy/nats/$role.password" "$secrets/$role.password"
    fi
done
mkdir -p .state/tokens
if [ ! -s .state/api-token ] || [ ! -s .state/tokens/tokens.json ]; then
    cli=target/debug/snarkflow
    [ -x "$cli" ] || cargo build -p snarkflow-cli
    (umask 077; "$cli" admin token create --tokens-file .state/tokens/tokens.json \
        --tenant local --scopes admin --max-priority critical | tail -n 1 >.state/api-token)
    # the gateway container reads the file as another user
    chmod 644 .state/tokens/tokens.json
    echo "admin API token in .state/api-token"
fi
