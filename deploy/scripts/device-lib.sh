# shellcheck shell=bash
# Sourced by device.sh, not run: the prologue every device subcommand shares (where results go,
# the carried binaries unpacked, the state and parameter directories, the host described) and
# the helpers several subcommands measure with. Defining things here starts no work.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    echo "device-lib.sh is sourced by device.sh; run: bash deploy/scripts/device.sh help" >&2
    exit 2
fi

scripts="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$scripts/../.." && pwd)"
# every subcommand writes its logs and results here (the device command's $OUT comes back)
out="${OUT:-.}"
mkdir -p "$out"
# the miner id of every fixture and job
MINER=1000

die() { echo "$*" >&2; exit 1; }

# carried NAME: the tarball of binaries a subcommand runs: BINS, else .gpu-carry/NAME (packed
# here by pack-gpu.sh, pack-resident.sh or `device.sh soak pack`, carried to the device)
carried() { echo "${BINS:-$root/.gpu-carry/$1}"; }

# unpack_bins DIR NAME PROBE: the carried tarball (`carried NAME`) unpacked into DIR, unless
# this very tarball was unpacked there already; without a tarball, what an earlier call of the
# same lease left in DIR. Fails unless DIR holds the executable PROBE afterwards.
unpack_bins() {
    local dir=$1 tarball probe=$3 id
    tarball=$(carried "$2")
    mkdir -p "$dir"
    if [ -f "$tarball" ]; then
        id="$(readlink -f "$tarball") $(stat -c '%s %Y' "$tarball")"
        if [ "$(cat "$dir/.unpacked" 2>/dev/null)" != "$id" ]; then
            tar xJf "$tarball" -C "$dir" || die "unpacking $tarball failed"
            echo "$id" >"$dir/.unpacked"
        fi
    fi
    [ -x "$dir/$probe" ] || die "no $dir/$probe: carry .gpu-carry with $tarball in it (or name another tarball in BINS)"
}

# params_dir DIR: where our provers and filecoin-proofs alike read and write parameters
params_dir() {
    mkdir -p "$1"
    export SNARKFLOW_PARAMS_DIR="$1" FIL_PROOFS_PARAMETER_CACHE="$1"
}

# params_tmpfs DIR: with PARAMS_TMPFS_GIB set, the parameters in memory instead of on the disk:
# a tmpfs of that size mounted at DIR (once), for files larger than the lent host's disk
# (WindowPoSt 32 GiB: ~68 GiB of parameters and a ~10 GB shape on a 64 GB disk)
params_tmpfs() {
    [ -n "${PARAMS_TMPFS_GIB:-}" ] || return 0
    mountpoint -q "$1" && return 0
    mount -t tmpfs -o "size=${PARAMS_TMPFS_GIB}G" tmpfs "$1" \
        || die "no tmpfs of ${PARAMS_TMPFS_GIB} GiB at $1 (mounting needs root); free memory: $(free -g | awk '/Mem:/ {print $7}') GiB"
    echo "parameters in memory: a tmpfs of ${PARAMS_TMPFS_GIB} GiB at $1"
}

# cli_prologue STATE NAME: the prologue of the subcommands that run the CLI in one process.
# S (default STATE) keeps bin/ (the carried NAME unpacked), the fixtures and, unless P says
# otherwise, params/; sets sf (the CLI, snarkflow-supraseal) and P; RUST_LOG defaults to warn.
cli_prologue() {
    S="${S:-$1}"
    P="${P:-$S/params}"
    unpack_bins "$S/bin" "$2" snarkflow-supraseal
    sf="$S/bin/snarkflow-supraseal"
    params_dir "$P"
    export RUST_LOG="${RUST_LOG:-warn}"
}

# describe_host: the GPUs and the host's cores, memory and free disk, also in $out/host.txt
describe_host() {
    {
        nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader 2>/dev/null \
            | sed 's/^/gpu: /'
        echo "host: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, disk free $(df -h /tmp | awk 'NR==2 {print $4}')"
    } | tee "$out/host.txt"
}

# seconds_since T [DIGITS]: seconds from T (date +%s.%N) to now, DIGITS decimals (default 1)
seconds_since() { awk -v s="$1" -v e="$(date +%s.%N)" -v d="${2:-1}" 'BEGIN { printf "%.*f", d, e - s }'; }

# http_get URL: the body, or nothing when the request fails (a 503 readiness answer included)
http_get() {
    python3 -c "import sys,urllib.request;print(urllib.request.urlopen(sys.argv[1]).read().decode())" "$1" 2>/dev/null
}

# measure [--stderr FILE] LOG COMMAND...: COMMAND run with its output in LOG (its stderr in FILE
# with --stderr), then one line: "exit N, S s, peak RSS G GiB" (VmHWM sampled every 0.5 s),
# with ", device memory peak D GiB" when MEASURE_DEVICE=1 (nvidia-smi sampled as well). With
# CAP_KIB set, COMMAND is killed once its RSS passes that many KiB.
measure() {
    local err="" log t pid rc peak=0 dev=0 v g capped=""
    if [ "$1" = --stderr ]; then err=$2; shift 2; fi
    log=$1
    shift
    t=$(date +%s.%N)
    if [ -n "$err" ]; then "$@" >"$log" 2>"$err" & else "$@" >"$log" 2>&1 & fi
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        v=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null)
        [ -n "$v" ] && [ "$v" -gt "$peak" ] && peak=$v
        if [ "${MEASURE_DEVICE:-0}" = 1 ]; then
            g=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1)
            [ -n "$g" ] && [ "$g" -gt "$dev" ] && dev=$g
        fi
        if [ -n "${CAP_KIB:-}" ] && [ -n "$v" ] && [ "$v" -gt "$CAP_KIB" ]; then
            kill -9 "$pid"
            capped=" (killed: RSS passed the cap)"
        fi
        sleep 0.5
    done
    wait "$pid"
    rc=$?
    awk -v rc="$rc" -v s="$(seconds_since "$t")" -v p="$peak" -v d="$dev" -v show="${MEASURE_DEVICE:-0}" -v c="$capped" \
        'BEGIN { printf "exit %d, %s s, peak RSS %.1f GiB", rc, s, p / 1048576
                 if (show == 1) printf ", device memory peak %.1f GiB", d / 1024
                 print c }'
}

# build_ballast: $S/ballast, a CUDA program that holds all but argv[1] MiB of the device until
# killed (ballast.cu), built with the host's nvcc unless already built from this source
build_ballast() {
    [ "$S/ballast" -nt "$scripts/ballast.cu" ] && return 0
    local nvcc
    nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
    [ -n "$nvcc" ] || die "no nvcc on this host"
    "$nvcc" -o "$S/ballast" "$scripts/ballast.cu" || die "ballast did not build"
}

# porep_fixture SIZE SEED DIR LOG: a sparse PoRep C1 fixture of SIZE made from SEED, DIR/c1.json
# (DATA=random: a sector holding random data, whose witness repeats values as a sealed one's)
# the fixture directories' suffix for DATA (none for the default, zeros)
data_suffix() {
    [ "${DATA:-zeros}" = zeros ] || echo "-$DATA"
}

porep_fixture() {
    "$sf" filecoin fixture --sector-size "$1" --miner-id "$MINER" --seed "$2" --data "${DATA:-zeros}" --out "$3" >"$4" 2>&1 \
        || { echo "$1: fixture failed: $(tail -3 "$4")"; return 1; }
}

# porep_params SIZE SEED LOG: random PoRep parameters of SIZE from SEED, made on the GPU into $P
porep_params() {
    "$sf" params generate --kind porep-c2 --sector-size "$1" --seed "$2" --device gpu --force >"$3" 2>&1 \
        || { echo "$1: params failed: $(tail -3 "$3")"; return 1; }
}

# paramgen_check DIR: parameters from seed 5 made on the CPU and on the GPU for three small
# circuits, in DIR/pc and DIR/pg, timed; the files must be identical. 1 if a generator failed.
paramgen_check() {
    local dir=$1 c tc tg failed=0
    for c in "--kind dense-chain --constraints 300" "--kind sha256-chain --blocks 64" "--kind porep-c2 --sector-size 2KiB"; do
        rm -rf "$dir/pc" "$dir/pg"
        mkdir -p "$dir/pc" "$dir/pg"
        # shellcheck disable=SC2086 # c is an argument list
        tc=$(measure "$dir/pc.log" "$sf" params generate $c --seed 5 --force --device cpu --params-dir "$dir/pc")
        # shellcheck disable=SC2086
        tg=$(measure "$dir/pg.log" "$sf" params generate $c --seed 5 --force --device gpu --params-dir "$dir/pg")
        echo "PARAMGEN $c: cpu [$tc] gpu [$tg] files" \
            "$(cmp -s "$dir"/pc/*.params "$dir"/pg/*.params && echo identical || echo DIFFERENT)" \
            "($(du -ch "$dir"/pg/*.params 2>/dev/null | tail -1 | cut -f1))"
        grep -q "^exit 0" <<<"$tc" || { tail -3 "$dir/pc.log"; failed=1; }
        grep -q "^exit 0" <<<"$tg" || { tail -3 "$dir/pg.log"; failed=1; }
    done
    return "$failed"
}
