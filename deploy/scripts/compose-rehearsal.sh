#!/usr/bin/env bash
# docker-compose.yml's `cpu` profile run for real, with podman and podman-compose (Debian's), on
# a machine that reaches no image registry:
#   - `debian:bookworm-slim` is a Debian 12 root made here with debootstrap (the one
#     systemd-rehearsal.sh caches), imported and tagged under that name;
#   - `snarkflow:latest` is deploy/Dockerfile's runtime stage around binaries built outside
#     (BIN, default target/debug), because its build stage needs `rust:1-bookworm`;
#   - `nats:2.10-alpine` is that Debian root with this machine's nats-server (and wget, for the
#     compose file's health check);
#   - Jaeger cannot be had here (no registry, no package): its service runs `snarkflow traces
#     collect`, which takes the same OTLP/HTTP on :4318 and writes the spans to a file, so the
#     rehearsal checks that the job's spans arrived rather than looking them up in Jaeger's UI.
# Then: deploy/scripts/compose-setup.sh, `podman-compose up -d` of nats, jaeger, gateway,
# synth-worker and cpu-prover, a dense-chain job submitted from this host with the CLI, and its
# spans in the collector's file. This sandbox refuses setrlimit for a new container, so
# podman runs runc through a wrapper that drops the rlimits podman asks for (the containers
# keep the host's). Needs root. Not in CI (~3 minutes after the first image builds).
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/scripts/rehearsal-common.sh
need_binaries
need_packages podman:podman podman-compose:podman-compose runc:runc
root=$(debian_root)
work=$(mktemp -d)
# podman's settings for this run only: cgroupfs (PID 1 is not systemd), runc through the wrapper
cat >"$work/runc-keep-rlimits" <<'EOF'
#!/bin/sh
# `create --bundle DIR` (DIR/config.json's process) and `exec --process FILE` (the process)
bundle="" process="" prev=""
for a in "$@"; do
    case "$prev" in --bundle | -b) bundle="$a" ;; --process | -p) process="$a" ;; esac
    case "$a" in --bundle=*) bundle="${a#--bundle=}" ;; --process=*) process="${a#--process=}" ;; esac
    prev="$a"
done
drop() { python3 -c 'import json,sys; p,k=sys.argv[1],sys.argv[2]; c=json.load(open(p)); (c[k] if k else c).pop("rlimits", None); json.dump(c, open(p, "w"))' "$@"; }
if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then drop "$bundle/config.json" process; fi
if [ -n "$process" ] && [ -f "$process" ]; then drop "$process" ""; fi
exec runc "$@"
EOF
chmod +x "$work/runc-keep-rlimits"
cat >"$work/containers.conf" <<EOF
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "keep-rlimits"
[engine.runtimes]
keep-rlimits = ["$work/runc-keep-rlimits"]
EOF
export CONTAINERS_CONF="$work/containers.conf"
compose() { podman-compose -p sfrehearsal -f docker-compose.yml -f "$work/override.yml" "$@"; }
cleanup() {
    if [ -n "${KEEP:-}" ]; then
        echo "kept: CONTAINERS_CONF=$CONTAINERS_CONF podman-compose -p sfrehearsal -f docker-compose.yml -f $work/override.yml down -v"
        return
    fi
    compose down -v >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# --- the images
if ! podman image exists docker.io/library/debian:bookworm-slim; then
    tar -C "$root" -c . | podman import - docker.io/library/debian:bookworm-slim >/dev/null
fi
mkdir -p "$work/nats" "$work/app"
cp "$(command -v nats-server)" "$work/nats/"
cat >"$work/nats/Containerfile" <<'EOF'
FROM docker.io/library/debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends wget && rm -rf /var/lib/apt/lists/*
COPY nats-server /usr/local/bin/nats-server
ENTRYPOINT ["nats-server"]
EOF
podman build -q -t docker.io/library/nats:2.10-alpine "$work/nats" >/dev/null
for b in gateway synth-worker gpu-worker snarkflow; do strip -o "$work/app/$b" "$BIN/$b"; done
# deploy/Dockerfile's runtime stage, word for word, with the binaries from the context
sed -n '/^FROM debian:bookworm-slim/,$p' deploy/Dockerfile | sed 's|^COPY --from=build /out/ /usr/local/bin/|COPY gateway synth-worker gpu-worker snarkflow /usr/local/bin/|' \
    >"$work/app/Containerfile"
grep -q "^COPY gateway" "$work/app/Containerfile" || { echo "deploy/Dockerfile's runtime stage changed"; exit 1; }
podman build -q -t localhost/snarkflow:latest "$work/app" >/dev/null
echo "IMAGES $(podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E 'snarkflow|nats|debian' | xargs)"
# the services as docker-compose.yml has them (its `snarkflow:latest` is the image built above);
# only Jaeger differs
cat >"$work/override.yml" <<'EOF'
services:
  jaeger:
    image: localhost/snarkflow:latest
    user: root
    command: ["snarkflow", "traces", "collect", "--listen", "0.0.0.0:4318", "--out", "/spans/spans.jsonl"]
    volumes:
      - spans:/spans
volumes:
  spans:
EOF

# --- up, as the compose file's header says
bash deploy/scripts/compose-setup.sh >/dev/null
compose up -d nats jaeger gateway synth-worker cpu-prover >"$work/up.log" 2>&1 || { tail -20 "$work/up.log"; exit 1; }
ready=""
for _ in $(seq 90); do
    ready=$(curl -fsS http://127.0.0.1:8080/readyz 2>/dev/null || true)
    echo "$ready" | grep -q '"ready":true' && break
    sleep 2
done
echo "$ready" | grep -q '"ready":true' || {
    for s in gateway synth-worker cpu-prover nats; do echo "== $s"; podman logs "sfrehearsal_${s}_1" 2>&1 | tail -8; done
    echo "FAILED: the gateway never became ready"; exit 1
}
echo "CONTAINERS $(podman ps --format '{{.Names}}={{.Status}}' | xargs)"
t=$(date +%s.%N)
answer=$(SNARKFLOW_API_TOKEN="$(cat .state/api-token)" "$BIN/snarkflow" submit --kind dense-chain --constraints 1024 \
    --partitions 2 --wait --timeout-secs 300 2>&1 || true)
echo "JOB $(echo "$answer" | grep -E '^job ' | tail -1) ($(python3 -c "print(f'{$(date +%s.%N) - $t:.1f}')") s)"
echo "$answer" | grep -q " done" || {
    echo "$answer" | tail -5
    for s in gateway synth-worker cpu-prover; do echo "== $s"; podman logs "sfrehearsal_${s}_1" 2>&1 | tail -8; done
    echo "FAILED: the job did not finish"; exit 1
}
sleep 8   # the services export spans every few seconds
job=$(echo "$answer" | awk '/^job / {print $2; exit}')
spans=$(podman exec sfrehearsal_jaeger_1 sh -c 'cat /spans/spans.jsonl' 2>/dev/null || true)
services=$(echo "$spans" | grep -o '"service.name","value":{"stringValue":"[a-z-]*"' | sed 's/.*"\([a-z-]*\)"$/\1/' | sort -u | xargs)
echo "SPANS in the jaeger service's collector: $(echo "$spans" | grep -c . || true) batches, from: ${services:-none}; naming job $job: $(echo "$spans" | grep -c "$job" || true) batches"
echo "$spans" | grep -q "$job" || { echo "FAILED: no span of the job reached the collector"; exit 1; }
echo "compose rehearsal: OK"
