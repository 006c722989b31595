#!/usr/bin/env bash
# scripts/setup.sh: install what kiln needs (Debian packages) and build it.
# Sourced by demo.sh and test.sh. Idempotent: installs only missing packages,
# reconfigures an existing build folder instead of recreating it.
set -euo pipefail

KILN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export KILN_ROOT
BUILD="${KILN_BUILD:-$KILN_ROOT/build}"

KILN_PACKAGES=(meson ninja-build pkg-config gcc clang-19 libclang-rt-19-dev llvm-19-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd protobuf-c-compiler
  libprotobuf-c-dev libonnx-dev check libonnx-testdata python3 python3-numpy valgrind
  libc6-dev-arm64-cross)

kiln_install_packages() {
  local missing=()
  for p in "${KILN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "kiln setup: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# kiln_build DIR [meson options...]: configure (once) and build.
kiln_build() {
  local dir="$1"; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$KILN_ROOT" "$@" >/dev/null
  fi
  ninja -C "$dir" >/dev/null || ninja -C "$dir"
}
