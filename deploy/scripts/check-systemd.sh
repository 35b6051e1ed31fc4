#!/usr/bin/env bash
# Check the systemd units in deploy/systemd with `systemd-analyze verify`, against a scratch
# root holding them in /etc/systemd/system and stand-ins for the binaries they run (verify
# checks that ExecStart names an executable), then what verify cannot see: credential names,
# users, paths, timeouts and status ports (deploy/scripts/check-systemd.py). Run by .ci/run;
# needs systemd-analyze (Debian: systemd), not a running systemd, and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v systemd-analyze >/dev/null && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null 2>&1 \
        || { sudo -n true 2>/dev/null && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null; } || true
fi
command -v systemd-analyze >/dev/null || { echo "check-systemd: systemd-analyze is missing (apt-get install systemd)" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/etc/systemd/system" "$root/usr/local/bin" "$root/etc/snarkflow" "$root/usr/lib/systemd"
# the distribution's units (targets the ours order against)
cp -r "$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)" "$root/usr/lib/systemd/system"
cp deploy/systemd/*.service "$root/etc/systemd/system/"
cp deploy/systemd/*.env "$root/etc/snarkflow/"
for bin in gateway synth-worker gpu-worker nats-server; do
    printf '#!/bin/sh\nexit 0\n' >"$root/usr/local/bin/$bin"
    chmod +x "$root/usr/local/bin/$bin"
done
units=(nats-server.service snarkflow-gateway.service snarkflow-synth-worker.service snarkflow-gpu-worker@0.service
    snarkflow-gpu-worker@3.service)
out=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no --root="$root" "${units[@]/#/$root/etc/systemd/system/}" 2>&1 || true)
# verify prints nothing for good units; anything else (an unknown key, a bad value) fails
if [ -n "$out" ]; then
    echo "$out" >&2
    echo "check-systemd: the units have problems (above)" >&2
    exit 1
fi
echo "check-systemd: ${#units[@]} units verified"
python3 deploy/scripts/check-systemd.py
