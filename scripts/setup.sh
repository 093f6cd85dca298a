#!/usr/bin/env bash
# Installs what building and testing cachealloc needs, when it is missing. Idempotent.
# As root it installs with apt-get; otherwise it prints the exact command to run.
set -euo pipefail

# Debian packages: build tools, the C test framework, the real HIP headers and library,
# ncurses for cachealloc-top, tmux for its terminal test, valgrind for instruction counts,
# g++ for the CUB peer benchmark, clang's runtime for libFuzzer and the sanitizers,
# libmicrohttpd for cachealloc-top --serve, a Prometheus server (and promtool) for its tests,
# and the packaging tools: build and meson-python (which asks for patchelf) for the wheel, venv
# and pip to install it, debhelper, dpkg-dev and lintian for the Debian package (docs/install.md),
# and PyTorch (1.13, about 600 MB installed) whose memory viewer reads cachealloc-snapshot's
# files (docs/monitoring.md).
packages=(meson ninja-build pkg-config gcc g++ clang libclang-rt-14-dev python3 libcmocka-dev
          libamdhip64-dev libncurses-dev tmux valgrind libmicrohttpd-dev prometheus
          python3-build python3-mesonpy python3-venv python3-pip debhelper dpkg-dev lintian patchelf
          python3-torch)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "setup: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "setup: missing packages; run:"
        echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}"
        exit 1
    fi
fi

cuda="${CUDA_PATH:-/usr/local/cuda}"
if [ -f "$cuda/include/cuda_runtime_api.h" ] && [ -f "$cuda/lib64/libcudart.so.13" ]; then
    echo "setup: CUDA toolkit found at $cuda"
else
    echo "setup: no CUDA 13 toolkit at $cuda (set CUDA_PATH): the library still builds;" \
         "tests that need the CUDA headers are skipped"
fi
