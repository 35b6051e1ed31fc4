#!/usr/bin/env bash
# One device call: random parameters with the G1 products on the GPU (`params generate
# --device gpu`) against the CPU generator from the same seed — the files must be identical —
# with times; then the resident prover on GPU-made parameters (proofs must verify).
set -uo pipefail
S=/tmp/sfres sf=/tmp/sfres/bin/snarkflow-supraseal
mkdir -p "$S/bin"; [ -x "$sf" ] || tar xJf .gpu-carry/resident.tar.xz -C "$S/bin"
export RUST_LOG=warn
gen() { # dir device args...
    local dir=$1 dev=$2; shift 2
    local t; t=$(date +%s.%N)
    "$sf" params generate "$@" --seed 5 --force --device "$dev" --params-dir "$dir" >/dev/null 2>"$dir.err" || { echo "FAILED: $(tail -2 "$dir.err")"; return 1; }
    python3 -c "print(f'{$(date +%s.%N) - $t:.1f}')"
}
for c in "--kind dense-chain --constraints 300" "--kind sha256-chain --blocks 64" "--kind porep-c2 --sector-size 2KiB"; do
    rm -rf /tmp/pc /tmp/pg; mkdir -p /tmp/pc /tmp/pg
    # shellcheck disable=SC2086
    tc=$(gen /tmp/pc cpu $c); tg=$(gen /tmp/pg gpu $c)
    same=$(cmp -s /tmp/pc/*.params /tmp/pg/*.params && echo identical || echo DIFFERENT)
    echo "PARAMGEN $c: cpu $tc s, gpu $tg s, files $same ($(du -h /tmp/pg/*.params | cut -f1))"
done
rm -rf /tmp/pg; mkdir -p /tmp/pg
tg=$(gen /tmp/pg gpu --kind sha256-chain --blocks 640)
echo "PARAMGEN sha256-chain b640: gpu $tg s (cpu: 137.3 s on this kind of host, docs/benchmarks.md)"
SNARKFLOW_PARAMS_DIR=/tmp/pg timeout 200 "$sf" bench resident --kind sha256-chain --blocks 640 --no-cpu --partitions 1 --runs 2 2>&1 | grep -E "^RESIDENT " | cut -c1-200
