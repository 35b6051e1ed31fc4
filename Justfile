# snarkflow task runner. `just --list` shows the recipes.
#
# State of a local stack (NATS store, logs, pids) lives in .state/ (git-ignored).

set shell := ["bash", "-euo", "pipefail", "-c"]

state := justfile_directory() / ".state"
bin := justfile_directory() / "target/debug"
nats_port := env_var_or_default("SNARKFLOW_NATS_PORT", "4222")
gateway_listen := env_var_or_default("SNARKFLOW_GATEWAY_LISTEN", "127.0.0.1:8080")
# cuzk's gRPC interface, for Curio's [Cuzk] Address (docs/curio.md): a Unix socket only this
# user and group may open (mode 660), unless SNARKFLOW_GRPC_LISTEN says otherwise
grpc_listen := env_var_or_default("SNARKFLOW_GRPC_LISTEN", "unix://" + justfile_directory() / ".state/cuzk.sock")
# an operator's FIL_PROOFS_PARAMETER_CACHE is where its real parameters are: it wins over our default
# where filecoin-proofs, lotus, Curio and every snarkflow binary look by default
params_dir := env_var_or_default("SNARKFLOW_PARAMS_DIR", env_var_or_default("FIL_PROOFS_PARAMETER_CACHE", "/var/tmp/filecoin-proof-parameters"))

# list recipes
default:
    @just --list

# build the service binaries and the CLI
build:
    cargo build -p snarkflow-gateway -p snarkflow-synth-worker -p snarkflow-gpu-worker -p snarkflow-cli

# start nats-server, gateway, one synth-worker and one gpu-worker (CPU) in the background
up: build
    #!/usr/bin/env bash
    set -euo pipefail
    mkdir -p "{{state}}/nats" "{{state}}/logs" "{{state}}/pids"
    # install-deps.sh links nats-server into ~/.local/bin, which a new shell may not have on PATH
    export PATH="$HOME/.local/bin:$PATH"
    if ! command -v nats-server >/dev/null; then
        echo "nats-server not found on PATH or in ~/.local/bin: run bash deploy/scripts/install-deps.sh" >&2
        exit 1
    fi
    export SNARKFLOW_NATS_URL="nats://127.0.0.1:{{nats_port}}"
    export SNARKFLOW_PARAMS_DIR="{{params_dir}}"
    start() { # name, command...
        local name=$1; shift
        if [ -f "{{state}}/pids/$name" ] && kill -0 "$(cat "{{state}}/pids/$name")" 2>/dev/null; then
            echo "$name already running"; return
        fi
        nohup "$@" >"{{state}}/logs/$name.log" 2>&1 &
        echo $! >"{{state}}/pids/$name"
        echo "started $name (pid $!, log .state/logs/$name.log)"
    }
    start nats nats-server -js -a 127.0.0.1 -p {{nats_port}} -sd "{{state}}/nats"
    # a local admin API token, made once: the CLI reads .state/api-token, curl can too. The
    # tokens file is the one compose-setup.sh makes for `docker compose` too, so one token
    # serves both local stacks (two files would leave .state/api-token valid for one only).
    mkdir -p "{{state}}/tokens"
    export SNARKFLOW_TOKENS_FILE="{{state}}/tokens/tokens.json"
    if [ ! -s "{{state}}/api-token" ] || [ ! -s "$SNARKFLOW_TOKENS_FILE" ]; then
        (umask 077; "{{bin}}/snarkflow" admin token create --tenant local --scopes admin --max-priority critical | tail -n 1 >"{{state}}/api-token")
        # the compose gateway container reads the file as another user
        chmod 644 "$SNARKFLOW_TOKENS_FILE"
        echo "created a local admin API token in .state/api-token"
    fi
    # a local development stack: the synthetic test kinds are on
    start gateway "{{bin}}/gateway" --listen {{gateway_listen}} --grpc-listen {{grpc_listen}} --enable-test-kinds --test-params
    # huge pages for the witness buffers where the kernel gives them on request (docs/operations.md)
    start synth-worker env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 "{{bin}}/synth-worker" --status-listen 127.0.0.1:9101
    start gpu-worker "{{bin}}/gpu-worker" --status-listen 127.0.0.1:9102 --generate-missing-params
    just _wait-ready http://{{gateway_listen}}/readyz gateway
    just _wait-ready http://127.0.0.1:9102/readyz gpu-worker
    echo "snarkflow is up: gateway http://{{gateway_listen}}, cuzk gRPC for Curio on {{grpc_listen}}"

# stop everything `just up` started
down:
    #!/usr/bin/env bash
    set -uo pipefail
    for name in gateway synth-worker gpu-worker nats; do
        f="{{state}}/pids/$name"
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        if kill "$pid" 2>/dev/null; then
            for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
            echo "stopped $name"
        fi
        rm -f "$f"
    done

# prove one sha256-chain job through the running stack and verify the proof locally
demo-job:
    #!/usr/bin/env bash
    set -euo pipefail
    export SNARKFLOW_GATEWAY_URL="http://{{gateway_listen}}" SNARKFLOW_PARAMS_DIR="{{params_dir}}" SNARKFLOW_API_TOKEN_FILE="{{state}}/api-token"
    out=$("{{bin}}/snarkflow" submit --kind sha256-chain --blocks 1 --wait | tee /dev/stderr)
    id=$(echo "$out" | awk '/^job /{print $2; exit}')
    "{{bin}}/snarkflow" proof "$id" -o "{{state}}/proof-$id.bin" --verify

# seal a random 2 KiB sector with filecoin-proofs and prove its C1 envelope through the running
# stack (random test parameters are generated once, ~4 min on 2 cores; the gateway verifies the
# proof with verify_seal before reporting done)
demo-porep:
    #!/usr/bin/env bash
    set -euo pipefail
    export SNARKFLOW_GATEWAY_URL="http://{{gateway_listen}}" SNARKFLOW_PARAMS_DIR="{{params_dir}}" SNARKFLOW_API_TOKEN_FILE="{{state}}/api-token"
    "{{bin}}/snarkflow" params generate --proof porep-c2 --sector-size 2KiB
    rm -rf "{{state}}/sector" && "{{bin}}/snarkflow" filecoin seal --out "{{state}}/sector" --c1-only --sector-num 1
    "{{bin}}/snarkflow" submit --kind porep-c2 --c1 "{{state}}/sector/sector-1/c1.json" --miner-id 1000 --wait

# up, one proved job, and leave the stack running (`just down` stops it)
demo: up demo-job

# regenerate cuzk's gRPC code (crates/proto/src/generated) after changing its .proto
proto:
    cargo run -p snarkflow-proto-gen

# the test suite's fast tier (needs nats-server on PATH) and validate docker-compose.yml
test:
    cargo test --workspace --tests
    bash deploy/scripts/validate-compose.sh

# the slow tier, which CI runs after the fast one: chaos, the three-node NATS cluster, the CPU
# PoRep proofs beyond the one the fast tier keeps (tests marked `#[ignore = "slow tier: …"]`)
test-slow:
    cargo test --workspace --tests -- --ignored

# the chaos suite: random SIGKILLs and restarts of every service and of NATS cluster nodes
# while jobs of every kind run; asserts 0 lost, 0 objects left, every done proof verified
# (the test run has it at 5 jobs and 20 s; this is the longer run)
chaos jobs="60" secs="300":
    SNARKFLOW_CHAOS_JOBS={{jobs}} SNARKFLOW_CHAOS_SECS={{secs}} cargo test -p snarkflow-e2e --test e2e chaos:: -- --include-ignored --nocapture

# build the GPU binaries (cuda and cuda-supraseal) on a machine without a GPU: target/gpu/
build-gpu:
    bash deploy/scripts/build-gpu.sh

# release artifacts in dist/: a tarball and a Debian package per build, SHA256SUMS; `just release
# --gpu` adds the CUDA 13 and CUDA 12 GPU builds (every architecture; long)
release *args:
    bash deploy/scripts/release.sh {{args}}

# clippy with each GPU feature (no GPU needed; CI runs it)
check-gpu:
    bash deploy/scripts/check-gpu.sh

# the GPU benchmark on this (GPU) host: stock C2 vs parallel stock vs snarkflow (2 KiB PoRep), both backends
bench-gpu:
    bash deploy/scripts/pack-gpu.sh
    OUT="{{state}}/bench-gpu" N=96 STOCK_N=32 K=4 VARIANTS="6:4:nopin:live:1 4:4:nopin:live:2 6:4:nopin:staged:2" bash -c 'mkdir -p "$OUT" && bash deploy/scripts/bench-gpu.sh'

# validate docker-compose.yml against the Compose Specification
compose-check:
    bash deploy/scripts/validate-compose.sh

# the waterfall of one job from Jaeger (compose) or of a window: just waterfall --since 15m
waterfall *ARGS:
    "{{bin}}/snarkflow" waterfall {{ARGS}}

_wait-ready url name:
    #!/usr/bin/env bash
    for _ in $(seq 1 600); do
        if curl -fsS "{{url}}" >/dev/null 2>&1; then echo "{{name}} ready"; exit 0; fi
        sleep 0.5
    done
    echo "{{name}} not ready after 300 s; see .state/logs/{{name}}.log" >&2; exit 1
