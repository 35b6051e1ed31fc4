#!/usr/bin/env bash
# Check what release.sh made in DIR (default dist/): the checksums hold; every tarball has the
# four binaries, the units and the example configuration; every Debian package has its
# binaries where its units point (ExecStart), its conffiles, maintainer scripts that parse,
# the conflicts that keep one variant per host, and a `snarkflow` that runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir="${1:-dist}"
fail() { echo "check-release: $*" >&2; exit 1; }
(cd "$dir" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for tarball in "$dir"/*.tar.gz; do
    list=$(tar -tzf "$tarball")
    for f in bin/gateway bin/synth-worker bin/gpu-worker bin/snarkflow systemd/snarkflow-gateway.service \
        systemd/snarkflow-gpu-worker@.service etc/snarkflow/snarkflow.env nats/nats-cluster.conf \
        scripts/nats-route-certs.sh docs/operations.md; do
        grep -q "/$f\$" <<<"$list" || fail "$(basename "$tarball") lacks $f"
    done
    n=$((n + 1))
done
for deb in "$dir"/*.deb; do
    name=$(dpkg-deb -f "$deb" Package)
    x="$tmp/$name"
    dpkg-deb -x "$deb" "$x" && dpkg-deb -e "$deb" "$x/DEBIAN"
    for unit in "$x"/lib/systemd/system/snarkflow-*.service; do
        exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
        [ -x "$x$exe" ] || fail "$name: $(basename "$unit") starts $exe, which the package does not install"
    done
    [ "$(ls "$x"/lib/systemd/system | wc -l)" = 4 ] || fail "$name: expected the four snarkflow units"
    [ -x "$x/usr/bin/snarkflow" ] || fail "$name: no /usr/bin/snarkflow"
    for f in snarkflow gateway synth-worker gpu-worker; do
        grep -q "^/etc/snarkflow/$f.env\$" "$x/DEBIAN/conffiles" || fail "$name: /etc/snarkflow/$f.env is not a conffile"
    done
    for s in postinst postrm; do sh -n "$x/DEBIAN/$s" || fail "$name: $s does not parse"; done
    conflicts=$(dpkg-deb -f "$deb" Conflicts)
    [ "$(tr ',' '\n' <<<"$conflicts" | grep -c snarkflow)" = 2 ] || fail "$name conflicts with: $conflicts"
    # what the binaries load: the C runtime, and (GPU packages only) the NVIDIA driver's
    # libcuda.so.1, which the driver installs; nothing the package leaves unmet
    for bin in "$x"/usr/bin/snarkflow "$x"/usr/lib/snarkflow/*; do
        for lib in $(readelf -d "$bin" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
            case "$lib" in
                libc.so.6 | libm.so.6 | libgcc_s.so.1 | ld-linux-x86-64.so.2 | libdl.so.2 | libpthread.so.0 | librt.so.1) ;;
                libcuda.so.1) [ "$name" != snarkflow ] || fail "$name: $(basename "$bin") needs the CUDA driver" ;;
                *) fail "$name: $(basename "$bin") needs $lib, which nothing installs" ;;
            esac
        done
    done
    # and a binary runs here when the driver is not what is missing (GPU packages on a host
    # without one: only the check above)
    if ! ldd "$x/usr/bin/snarkflow" | grep -q "libcuda.so.1 => not found"; then
        "$x/usr/bin/snarkflow" --version >/dev/null || fail "$name: its snarkflow does not run here"
    fi
    n=$((n + 1))
done
echo "check-release: $n artifacts in $dir good"
