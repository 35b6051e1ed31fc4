# Sourced by build-gpu.sh and check-gpu.sh: a CUDA build environment on a machine without a
# GPU or CUDA toolkit, with a stub libcuda.so.1 to satisfy the link (the real driver library is
# used at run time; the stub is never shipped).
#
# SNARKFLOW_CUDA_TOOLKIT picks the toolkit, and so the oldest driver the binaries start on: the
# statically linked cudart refuses a driver of an older CUDA major version.
#   13 (default): CUDA 13.0 from NVIDIA's PyPI wheels (pinned, not newer than the H200's driver);
#                 needs driver R580 or newer.
#   12:           CUDA 12.4 from Debian trixie's non-free packages, unpacked (never installed)
#                 into a cache dir, because PyPI has no CUDA 12 nvcc; runs on drivers from R525
#                 (CUDA minor-version compatibility); its PTX JIT needs R550 (CUDA 12.4).
# SNARKFLOW_CUDA_ARCHS lists the compute capabilities to build SASS for; default: every
# architecture providers own that the toolkit knows (CUDA 12.4 has no sm_100/sm_120). The
# newest one is also embedded as PTX, for the driver to JIT on newer devices.
export SNARKFLOW_CUDA_TOOLKIT="${SNARKFLOW_CUDA_TOOLKIT:-13}"
toolkit="$SNARKFLOW_CUDA_TOOLKIT"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/snarkflow"

# CUDA 12.4 from Debian: nvcc, cicc, ptxas, fatbinary, nvlink, cudafe++ (nvidia-cuda-toolkit),
# the runtime headers and libcudart_static.a (nvidia-cuda-dev), thrust/cub/libcu++ (main).
# Debian's nvcc.profile names /usr paths, so the files are moved into the layout NVIDIA's own
# toolkit has and nvcc gets a profile relative to itself. A subshell with its own `set -e`: the
# first failure stops it, and a half-made tree is never left where nvcc is looked for.
cuda12_unpack() (
    set -euo pipefail
    local root="$1" apt="$1.apt" debs="$1.debs" tmp="$1.tmp"
    local o=(-qq "-oDir::Etc::SourceList=$apt/sources.list" -oDir::Etc::SourceParts=/dev/null
        "-oDir::State::Lists=$apt/lists" "-oDir::Cache=$apt/cache" -oAPT::Sandbox::User=root)
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$debs"
    echo "deb http://deb.debian.org/debian trixie main non-free" >"$apt/sources.list"
    apt-get "${o[@]}" update
    (cd "$debs" && apt-get "${o[@]}" download nvidia-cuda-toolkit nvidia-cuda-dev \
        libcub-dev libthrust-dev libcu++-dev)
    rm -rf "$tmp" && mkdir -p "$tmp/x" "$tmp/lib" "$tmp/nvvm/bin"
    for deb in "$debs"/*.deb; do
        case "$deb" in
            # 2.5 GB unpacked, almost all of it math libraries: take the headers and cudart
            */nvidia-cuda-dev_*) dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" ./usr/include \
                ./usr/lib/x86_64-linux-gnu/libcudart_static.a ./usr/lib/x86_64-linux-gnu/libcudadevrt.a ;;
            *) dpkg -x "$deb" "$tmp/x" ;;
        esac
    done
    local x="$tmp/x/usr" nv="$tmp/x/usr/lib/nvidia-cuda-toolkit"
    mv "$x/include" "$tmp/include"
    mkdir -p "$tmp/bin"
    for t in ptxas fatbinary nvlink cudafe++ bin2c cuobjdump nvdisasm nvprune; do mv "$x/bin/$t" "$tmp/bin/"; done
    mv "$nv/bin/nvcc" "$nv/bin/crt" "$tmp/bin/" # nvcc itself; usr/bin/nvcc is Debian's wrapper script
    mv "$nv/bin/cicc" "$tmp/nvvm/bin/"
    mv "$nv/libdevice" "$tmp/nvvm/"
    mv "$x"/lib/x86_64-linux-gnu/libcuda*.a "$tmp/lib/"
    cat >"$tmp/bin/nvcc.profile" <<'EOF'
TOP                = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
PATH              += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES          +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES          =+ $(_SPACE_) "-L$(TOP)/lib"
EOF
    rm -rf "$tmp/x"
    # trixie's point releases may move the package; the docs and defaults are for 12.4
    [[ "$("$tmp/bin/nvcc" --version)" == *"release 12.4,"* ]] || { echo "cuda-env.sh: not CUDA 12.4" >&2; exit 1; }
    rm -rf "$root" && mv "$tmp" "$root"
    rm -rf "$debs" # the tree is the cache; the packages are ~1 GB
)

case "$toolkit" in
    13)
        cuda="$cache/cuda/nvidia/cu13"
        stub="$cache/cuda/stub"
        default_archs="80 86 89 90 100 120"
        if [ ! -x "$cuda/bin/nvcc" ]; then
            python3 -m pip install --quiet --disable-pip-version-check --target "$cache/cuda" \
                "nvidia-cuda-nvcc==13.0.*" "nvidia-cuda-runtime==13.0.*" "nvidia-cuda-cccl==13.0.*" \
                "nvidia-cuda-crt==13.0.*" "nvidia-nvvm==13.0.*"
        fi
        ;;
    12)
        cuda="$cache/cuda12/toolkit"
        stub="$cache/cuda12/stub"
        default_archs="80 86 89 90"
        if [ ! -x "$cuda/bin/nvcc" ]; then
            cuda12_unpack "$cuda" # not in an `||`: that would switch its `set -e` off
            [ -x "$cuda/bin/nvcc" ] || return 1
        fi
        ;;
    *)
        echo "cuda-env.sh: SNARKFLOW_CUDA_TOOLKIT must be 13 or 12, not '$toolkit'" >&2
        return 1
        ;;
esac
# the toolkit layout the build scripts expect: cuda-driver-sys looks in <base>/lib64, the cc
# crate for cudart in <nvcc>/../targets/x86_64-linux/lib
ln -sfn lib "$cuda/lib64"
mkdir -p "$cuda/targets"
ln -sfn .. "$cuda/targets/x86_64-linux"

# libcuda stub: every cu* driver entry point named in the toolkit's cuda.h, each failing if called
if [ ! -f "$stub/libcuda.so.1" ] || [ "$cuda/include/cuda.h" -nt "$stub/libcuda.so.1" ]; then
    mkdir -p "$stub"
    {
        echo '/* generated by deploy/scripts/cuda-env.sh: link-time stand-in for the CUDA driver */'
        grep -oE '\bcu[A-Z][A-Za-z0-9_]*\b' "$cuda/include/cuda.h" | sort -u \
            | awk '{ printf "int %s(void) { return 999; /* CUDA_ERROR_UNKNOWN */ }\n", $1 }'
    } >"$stub/libcuda_stub.c"
    gcc -shared -fPIC -w -Wl,-soname,libcuda.so.1 -o "$stub/libcuda.so.1" "$stub/libcuda_stub.c"
    ln -sfn libcuda.so.1 "$stub/libcuda.so"
fi

# crates/cuda-resident/build.rs reads the same variable with the same defaults
export SNARKFLOW_CUDA_ARCHS="${SNARKFLOW_CUDA_ARCHS:-$default_archs}"
gencode=""
for a in $SNARKFLOW_CUDA_ARCHS; do gencode="$gencode --generate-code=arch=compute_$a,code=sm_$a"; done
ptx=$(printf '%s\n' $SNARKFLOW_CUDA_ARCHS | sort -n | tail -1)
gencode="$gencode --generate-code=arch=compute_$ptx,code=compute_$ptx"
export PATH="$cuda/bin:$PATH"
export CUDA_PATH="$cuda" CUDA_HOME="$cuda"
export CUDA_LIBRARY_PATH="$stub"
export LIBRARY_PATH="$stub${LIBRARY_PATH:+:$LIBRARY_PATH}"
# without it ec-gpu-gen builds for sm_86/80/75 with no PTX and bellperson silently proves on the CPU
export EC_GPU_CUDA_NVCC_ARGS="--fatbin$gencode"
# sppark (supraseal-c2) has no sm_86/89/90 in its default architecture list
export NVCC_APPEND_FLAGS="$gencode"
export CXXSTDLIB_STATIC=1
