#!/usr/bin/env bash
# On the lent GPU host, CPU only: a sparse 32 GiB PoRep C1 fixture, then the hop benchmark of
# its partition 0 (shape, full vs witness-only synthesis, raw vs compact bytes, rebuild, and
# a·b = c checked for every constraint), with peak RSS. Binaries from `cargo build --release
# -p snarkflow-cli` in BIN (default target/device); logs to ${OUT:-.}.
set -uo pipefail
bin="${BIN:-target/device}"
out="${OUT:-.}"
size="${SIZE:-32GiB}"
{ nproc | sed 's/^/cores: /'; free -g | sed -n 2p; nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null; } | tee "$out/host.txt"
peak() { # pid: sample VmHWM (peak RSS) until the process ends, print it in GiB
    local pid=$1 hwm=0 v
    while kill -0 "$pid" 2>/dev/null; do
        v=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        [ -n "$v" ] && [ "$v" -gt "$hwm" ] && hwm=$v
        sleep 0.5
    done
    awk -v k="$hwm" 'BEGIN { printf "%.1f GiB\n", k / 1048576 }'
}
since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }
start=$(date +%s.%N)
"$bin/snarkflow" filecoin fixture --sector-size "$size" --out /tmp/fixture 2>"$out/fixture.err" | tee "$out/fixture.txt" &
echo "fixture peak RSS: $(peak $!)" | tee -a "$out/fixture.txt"
wait
echo "fixture wall: $(since "$start") s" | tee -a "$out/fixture.txt"
start=$(date +%s.%N)
RUST_LOG=info "$bin/snarkflow" bench hop --kind porep-c2 --c1 /tmp/fixture/c1.json --miner-id 1000 --runs 1 \
    >"$out/hop.txt" 2>"$out/hop.err" &
pid=$!
echo "hop peak RSS: $(peak $pid)" | tee -a "$out/hop.txt"
wait $pid; echo "hop exit: $?" | tee -a "$out/hop.txt"
echo "hop wall: $(since "$start") s" | tee -a "$out/hop.txt"
cat "$out/hop.txt"
tail -5 "$out/hop.err"
