#!/usr/bin/env bash
# Release artifacts for x86-64 Linux, into OUT (default dist/):
#   snarkflow-<version>-x86_64-linux-<variant>.tar.gz   binaries, units, example configuration,
#                                                       NATS configuration and scripts, docs
#   snarkflow[-<variant>]_<version>_amd64.deb           the same, installed the Debian way
#   SHA256SUMS                                          of everything above
# Variants: `cpu` (always); with --gpu also `cuda13` (CUDA 13 toolkit, driver R580+) and
# `cuda12` (CUDA 12.4, drivers from R535), each with kernels for sm_80, 86, 89, 90 (and 100,
# 120 with CUDA 13) plus PTX of the newest, their gpu-worker and snarkflow carrying the
# resident prover and supraseal-c2 (deploy/scripts/build-gpu.sh).
#
#   bash deploy/scripts/release.sh            # cpu: cargo build --release, then package
#   bash deploy/scripts/release.sh --gpu      # cpu, cuda13, cuda12 (long: three GPU builds)
#   FROM=target/debug bash deploy/scripts/release.sh   # package already built binaries (CI)
#   GPU_PREBUILT=1 bash deploy/scripts/release.sh --gpu # package target/gpu and target/gpu-cuda12
#                                                       # as built (e.g. one architecture, for a test)
#
# The Debian packages install the service binaries in /usr/lib/snarkflow (their names are too
# generic for /usr/bin), `snarkflow` in /usr/bin, the units in /lib/systemd/system (pointing at
# /usr/lib/snarkflow, the curio-proxy's at /usr/bin/snarkflow), the example environment files in /etc/snarkflow (conffiles, mode 600),
# and create the service users (docs/operations.md, "A fleet under systemd"). They enable and
# start nothing: the operator fills in /etc/snarkflow first. The three packages conflict with
# each other (one per host: `snarkflow` for CPU-only hosts, a GPU one on GPU hosts).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-dist}"
gpu=0
[ "${1:-}" = --gpu ] && gpu=1
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
services=(gateway synth-worker gpu-worker)

cpu_bin="${FROM:-}"
if [ -z "$cpu_bin" ]; then
    cargo build --release -p snarkflow-gateway -p snarkflow-synth-worker -p snarkflow-gpu-worker -p snarkflow-cli
    cpu_bin=target/release
fi
rm -rf "$OUT" && mkdir -p "$OUT"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# stage_tree DIR BIN GPU_BIN: the release tree (what the tarball holds) in DIR
stage_tree() {
    local dir=$1 bin=$2 gpu_bin=$3 b
    install -d "$dir/bin" "$dir/systemd" "$dir/etc/snarkflow" "$dir/nats" "$dir/scripts" "$dir/docs" \
        "$dir/prometheus" "$dir/grafana"
    for b in gateway synth-worker; do install -m 755 "$bin/$b" "$dir/bin/"; done
    install -m 755 "$gpu_bin/gpu-worker" "$gpu_bin/snarkflow" "$dir/bin/"
    strip "$dir"/bin/* 2>/dev/null || true
    install -m 644 deploy/systemd/*.service "$dir/systemd/"
    install -m 600 deploy/systemd/*.env "$dir/etc/snarkflow/"
    install -m 644 deploy/nats/*.conf "$dir/nats/"
    install -m 755 deploy/scripts/nats-credentials.sh deploy/scripts/nats-route-certs.sh "$dir/scripts/"
    cp -r deploy/prometheus/. "$dir/prometheus/"
    install -m 644 deploy/grafana/snarkflow.json "$dir/grafana/"
    install -m 644 README.md docs/operations.md docs/configuration.md docs/curio.md docs/security.md \
        docs/gpu.md "$dir/docs/"
}

# package VARIANT: tarball and .deb of one variant from its staged tree
package() {
    local variant=$1
    local tree="$stage/snarkflow-$version-$variant" name=snarkflow
    [ "$variant" = cpu ] || name="snarkflow-$variant"
    tar -C "$stage" --owner=0 --group=0 -czf "$OUT/snarkflow-$version-x86_64-linux-$variant.tar.gz" \
        "snarkflow-$version-$variant"
    local deb="$stage/deb-$variant"
    install -d "$deb/DEBIAN" "$deb/usr/bin" "$deb/usr/lib/snarkflow" "$deb/lib/systemd/system" \
        "$deb/etc/snarkflow" "$deb/usr/share/snarkflow" "$deb/usr/share/doc/$name"
    install -m 755 "$tree/bin/snarkflow" "$deb/usr/bin/"
    for b in "${services[@]}"; do install -m 755 "$tree/bin/$b" "$deb/usr/lib/snarkflow/"; done
    for u in "$tree"/systemd/snarkflow-*.service; do
        sed -e 's#/usr/local/bin/snarkflow #/usr/bin/snarkflow #' -e 's#/usr/local/bin/#/usr/lib/snarkflow/#g' "$u" \
            >"$deb/lib/systemd/system/$(basename "$u")"
    done
    install -m 600 "$tree"/etc/snarkflow/*.env "$deb/etc/snarkflow/"
    cp -r "$tree/nats" "$tree/scripts" "$tree/prometheus" "$tree/grafana" "$deb/usr/share/snarkflow/"
    # nats-server is not packaged here (Debian's is too old): its unit is an example
    install -m 644 "$tree/systemd/nats-server.service" "$deb/usr/share/snarkflow/"
    install -m 644 "$tree"/docs/*.md "$deb/usr/share/doc/$name/"
    (cd "$deb" && find etc -type f | sed 's#^#/#' | sort) >"$deb/DEBIAN/conffiles"
    local others=() v
    for v in cpu cuda13 cuda12; do
        [ "$v" = "$variant" ] && continue
        [ "$v" = cpu ] && others+=(snarkflow) || others+=("snarkflow-$v")
    done
    local what="CPU proving (synthesis and gateway hosts, GPU-less tests)"
    [ "$variant" = cpu ] || what="GPU proving (resident prover, supraseal-c2), CUDA ${variant#cuda}; needs an NVIDIA driver's libcuda.so.1 ($([ "$variant" = cuda13 ] && echo R580 || echo R535) or newer)"
    cat >"$deb/DEBIAN/control" <<EOF
Package: $name
Version: $version
Architecture: amd64
Maintainer: snarkflow developers <snarkflow@localhost>
Section: net
Priority: optional
Depends: libc6 (>= 2.36), passwd
Conflicts: $(IFS=,; echo "${others[*]}" | sed 's/,/, /g')
Replaces: $(IFS=,; echo "${others[*]}" | sed 's/,/, /g')
Provides: snarkflow-binaries
Installed-Size: $(du -sk "$deb" | cut -f1)
Homepage: https://github.com/snarkflow/snarkflow
Description: distributed Groth16 proving for Filecoin storage providers ($variant)
 The gateway (HTTP and cuzk's gRPC interface for Curio), the synth-worker and
 the gpu-worker, their systemd units and the snarkflow command line.
 This build: $what.
 Enable the units once /etc/snarkflow is filled in
 (/usr/share/doc/$name/operations.md).
EOF
    install -m 755 deploy/debian/postinst deploy/debian/postrm "$deb/DEBIAN/"
    dpkg-deb --root-owner-group -Zxz --build "$deb" "$OUT/${name}_${version}_amd64.deb" >/dev/null
}

stage_tree "$stage/snarkflow-$version-cpu" "$cpu_bin" "$cpu_bin"
package cpu
if [ "$gpu" = 1 ]; then
    if [ "${GPU_PREBUILT:-0}" != 1 ]; then
        SNARKFLOW_GPU_BACKENDS=cuda-supraseal bash deploy/scripts/build-gpu.sh
        SNARKFLOW_CUDA_TOOLKIT=12 SNARKFLOW_GPU_BACKENDS=cuda-supraseal bash deploy/scripts/build-gpu.sh
    fi
    for t in 13 12; do
        g="$stage/gpu$t" && mkdir -p "$g"
        dir=target/gpu && [ "$t" = 13 ] || dir=target/gpu-cuda12
        cp "$dir/gpu-worker-supraseal" "$g/gpu-worker" && cp "$dir/snarkflow-supraseal" "$g/snarkflow"
        stage_tree "$stage/snarkflow-$version-cuda$t" "$cpu_bin" "$g"
        package "cuda$t"
    done
fi
(cd "$OUT" && sha256sum -- *.tar.gz *.deb >SHA256SUMS)
bash deploy/scripts/check-release.sh "$OUT"
ls -l "$OUT"
