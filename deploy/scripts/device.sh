#!/usr/bin/env bash
# The device tool: everything snarkflow runs on a lent GPU host, one subcommand per experiment,
# run from the repository root there. `bash deploy/scripts/device.sh help` lists them.
#
#   SNARKFLOW_GPU_BACKENDS=cuda-supraseal bash deploy/scripts/pack-gpu.sh   # here: .gpu-carry
#   (device, carry .gpu-carry) SIZES=512MiB bash deploy/scripts/device.sh memory-plans
#
# The shared prologue (results in $OUT, the carried binaries unpacked, state and parameter
# directories, the host described) and the measuring helpers are in device-lib.sh; the
# subcommands in device-bench.sh (the CLI in one process), device-stack.sh (the services) and
# device-soak.sh (the chaos soak).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/scripts/device-lib.sh
source "$here/device-lib.sh"
# shellcheck source=deploy/scripts/device-bench.sh
source "$here/device-bench.sh"
# shellcheck source=deploy/scripts/device-stack.sh
source "$here/device-stack.sh"
# shellcheck source=deploy/scripts/device-soak.sh
source "$here/device-soak.sh"

usage() {
    cat <<'EOF'
usage: bash deploy/scripts/device.sh <subcommand> [step]     (on the device, in the repo root)

Every subcommand writes its logs and results to OUT (default .; soak: /tmp/soak-out). BINS
names the tarball of binaries it unpacks (default the one named below, in .gpu-carry/, made
here by pack-gpu.sh = bins.tar.xz, pack-resident.sh = resident.tar.xz, or `soak pack`); a
tarball already unpacked into the state directory is not unpacked again. S is the state
directory (binaries, fixtures, params/), P the parameter directory (default $S/params), where
a subcommand shows them; RUST_LOG defaults to warn where one is shown.

The resident prover, the CLI in one process:
  resident            resident = CPU prover = supraseal-c2 (same r, s) on each case; a table
                      CASES (';'-separated `bench resident` args; default: synthetic cases, a
                      sealed 2 KiB PoRep) CASE_LIMIT=400 S=/tmp/sfres P BINS=resident.tar.xz RUST_LOG
  resident-batch      seeded exactness cases, sha256-chain per-phase times, hammer per backend
                      BLOCKS=640; state and binaries as `resident`
  resident-compare    `resident`'s default cases, then hammer per backend on 2 KiB PoRep, b64
                      state and binaries as `resident`
  resident-porep      real PoRep per size: resident vs CPU prover vs supraseal-c2, same r, s
                      SIZES="8MiB 512MiB" FIXTURE_SEED=7 PARAMS_SEED=3 PARTITIONS=1 RUNS=1 NO_CPU
                      CASE_LIMIT=300 SNARKFLOW_MSM_WBITS S=/tmp/sfporep P BINS=bins.tar.xz RUST_LOG
  resident-32gib STEP the resident prover at 32 GiB (KIND=porep-c2, window-post, winning-post or
                      snap-update; SIZE=32GiB or 64GiB), one step per command:
                      check    GPU vs CPU parameter generator on small circuits (files identical)
                      gen      the sparse fixture (WindowPoSt: SECTORS=2349 distinct sectors), then
                               GPU parameters (seed 7), timed
                      prove    `bench resident` on one partition: peak RSS and device memory
                      kernels  one prove under Nsight Compute, kernel times summed (ncu-summary.py)
                      RUNS=3 SUPRA=0 (1: also supraseal-c2, bytes compared) TRACE=0 FIXTURE=$S/fixture
                      DATA=zeros (random: gen makes a sector holding random data)
                      PARAMS_TMPFS_GIB (gen: the parameters in a tmpfs of that size at P, for
                      files larger than the disk: WindowPoSt 32 GiB with 80 on a 128 GiB host)
                      S=/tmp/sfres32 P BINS=resident.tar.xz RUST_LOG; S=/tmp/sf32 reuses `32gib`'s
  memory-plans        one PoRep partition per size in every plan, then on simulated cards
                      SIZES="2KiB 512MiB" PLANS=resident,partly-resident,streamed,lean (and compact)
                      DATA CARDS (GiB, e.g. "80 48 24 16 12") RUNS=2 CPU=0 SUPRA=0 TRACE CASE_LIMIT=540
                      S=/tmp/sfplans P BINS=bins.tar.xz RUST_LOG; SNARKFLOW_H_FRONT=1 keeps the
                      front of H on the device where H is streamed (SNARKFLOW_H_FRONT_POINTS caps it)
  msm-fallback        the H MSM with LEAVE MiB free: one pass, sppark's batched MSM, or a failure
                      SIZE=512MiB LEAVES="0 128 … 2048" RUNS=2 CASE_LIMIT=300 S=/tmp/sffallback P
                      BINS=bins.tar.xz RUST_LOG
  paramgen            GPU vs CPU parameter generator (files identical), b640 on the GPU, proved
                      S=/tmp/sfres P BINS=resident.tar.xz RUST_LOG (work in /tmp/pc, /tmp/pg)

The hop benchmark (no tarball: BIN is a directory of binaries carried or built there):
  bench-hop           raw vs compact hop, rebuild vs prove per synthetic circuit, GPU and CPU
                      BIN=target/gpu SNARKFLOW_PARAMS_DIR=/tmp/snarkflow-params
  32gib-hop           CPU only: sparse PoRep fixture, the hop of its partition 0, peak RSS
                      BIN=target/device SIZE=32GiB (fixture in /tmp/fixture)

The services on the device host (nats-server, gateway, synth-workers, gpu-workers, collector):
  32gib STEP          a 32 GiB PoRep (KIND=snap-update: SnapDeals, window-post: WindowPoSt of SECTORS=2349
                      distinct sectors, DATA=random; SIZE=64GiB) through the pipeline, one step per
                      command (state in /tmp/sf32; the calls of one lease follow each other within
                      its idle limit):
                      params   disk speed, GPU vs CPU parameter files, then the generators alone
                      gen      fixtures; parameters made in the background; the stack without
                               gpu-workers, its synth-workers ready with KIND's and WinningPoSt's
                               shapes recorded; JOBS jobs of KIND submitted (synthesized meanwhile)
                      up       gpu-workers once the parameters (and STAGED partitions) are there;
                               a WinningPoSt once the first partition is proved
                      wait     every job submitted so far, each timed from its submit
                      live     LIVE_SYNTH synth-workers kept, JOBS more jobs: synthesis live
                      stop     peak RSS and CPU per process (a synth-worker's per partition: after
                               it was ready), GPU busy, the stack stopped, the waterfall
                      stock    filecoin-proofs' seal_commit_phase2 on the same C1, peak RSS
                      prove    up, wait and stop in one command (small sizes, after gen)
                      KIND=porep-c2 SIZE=32GiB WAIT=540 (s, per step) JOBS=1 SYNTH=2 (window-post 1) CONC=4
                      SYNTH_BUDGET=20GiB DATA=zeros PARAMS_TMPFS_GIB (gen: the parameters in a tmpfs of
                      that size: WindowPoSt 32 GiB with 80, PoRep 64 GiB with 80 on a 64 GB disk)
                      GPUS=1 PREFETCH=2 GPU_BUDGET=60GiB STAGED WINNING=1 WINNING_AFTER=1
                      CARD_GIB (up: GPU 0 held down to a card of that size, the plan chosen there)
                      LIVE_SYNTH=1 STOCK_CAP_GIB (90% of RAM) PARAMGEN_DEVICE=gpu CAP_KIB
                      BINS=bins32.tar.xz (pack-gpu.sh's bins.tar.xz holds the same binaries)
  pipeline            JOBS sha256-chain jobs of PARTS x BLOCKS through one CUDA gpu-worker
                      BLOCKS=64 JOBS=4 PARTS=8 SYNTH=4 SNARKFLOW_PARAMS_DIR=/tmp/snarkflow-params
                      BINS=bins.tar.xz RUST_LOG
  soak STEP           the chaos suite as a soak with a supraseal gpu-worker
                      pack     here (needs Rust): the binaries into BINS
                      run      there (the default): JOBS jobs over SECS s, every process killed
                      JOBS=500 SECS=300 PARAMS=target/soak-params BINS=soak.tar.xz RUST_LOG

  packages            the GPU .debs in dist/ (release.sh --gpu) installed, `snarkflow doctor`
                      probing the device with each, removed. DEBS (default dist/snarkflow-cuda1*)

  help                this list
EOF
}

sub="${1:-help}"
[ $# -gt 0 ] && shift
case "$sub" in
help | -h | --help) usage ;;
resident) cmd_resident ;;
resident-batch) cmd_resident_batch ;;
resident-compare) cmd_resident_compare ;;
resident-porep) cmd_resident_porep ;;
resident-32gib) cmd_resident_32gib "$@" ;;
memory-plans) cmd_memory_plans ;;
msm-fallback) cmd_msm_fallback ;;
paramgen) cmd_paramgen ;;
bench-hop) cmd_bench_hop ;;
32gib-hop) cmd_32gib_hop ;;
32gib) cmd_32gib "$@" ;;
pipeline) cmd_pipeline ;;
soak) cmd_soak "$@" ;;
packages) cmd_packages ;;
*)
    echo "unknown subcommand: $sub" >&2
    usage >&2
    exit 2
    ;;
esac
