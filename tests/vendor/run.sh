#!/bin/sh
# tests/vendor/run.sh: the out-of-tree plugin story, end to end. Installs
# kiln from a build folder into a temporary tree, builds
# examples/vendor-plugin against it with pkg-config only, checks that
# `kiln backends` finds "vendor", runs graphs on vendor and interpreter and
# compares the outputs, and runs `kiln conformance --against interpreter`
# on a few ONNX node cases (unsupported cases are SKIP, never a failure).
#
# usage: tests/vendor/run.sh BUILD_DIR [SOURCE_ROOT]
# env:   KILN_ONNX_SUITE  folder of ONNX node cases (default: the first of
#        /work/shared/onnx-node-v1.22, /usr/share/libonnx-testdata/data/node)
set -u

if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [SOURCE_ROOT]" >&2
  exit 2
fi
BUILD=$(cd "$1" && pwd) || exit 2
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=${2:-$(cd "$HERE/../.." && pwd)}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-vendor.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM

passed=0
failed=0
skipped=0
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; [ $# -gt 1 ] && sed 's/^/    /' "$2" | tail -n 30; }
skip() { skipped=$((skipped + 1)); echo "SKIP $1"; }
finish() {
  echo "$passed passed, $failed failed, $skipped skipped"
  [ "$failed" -eq 0 ]
  exit $?
}

# 1. Install into a temporary tree, then point a copy of kiln.pc at it (the
# .pc file names the configured prefix; --destdir moves files only).
DEST=$TMP/dest
if meson install -C "$BUILD" --destdir "$DEST" --no-rebuild --quiet >"$TMP/install.log" 2>&1; then
  pass "install"
else
  fail "install" "$TMP/install.log"
  finish
fi
PC=$(find "$DEST" -name kiln.pc | head -n 1)
if [ -z "$PC" ]; then
  echo "no kiln.pc installed" >"$TMP/pc.log"
  fail "install kiln.pc" "$TMP/pc.log"
  finish
fi
PREFIX=$(sed -n 's/^prefix=//p' "$PC")
mkdir -p "$TMP/pkgconfig"
sed "s|^prefix=.*|prefix=$DEST$PREFIX|" "$PC" >"$TMP/pkgconfig/kiln.pc"
export PKG_CONFIG_PATH="$TMP/pkgconfig"
LIBDIR=$(pkg-config --variable=libdir kiln)
PLUGINDIR=$(pkg-config --variable=plugindir kiln)
KILN=$DEST$PREFIX/bin/kiln
missing=""
for f in kiln.h status.h types.h ir.h instr.h plugin.h node_kinds.def instr_kinds.def; do
  [ -f "$(pkg-config --variable=includedir kiln)/kiln/$f" ] || missing="$missing include/kiln/$f"
done
[ -e "$LIBDIR/libkiln.so" ] || missing="$missing libkiln.so"
[ -f "$PLUGINDIR/kiln-interpreter.so" ] || missing="$missing plugindir/kiln-interpreter.so"
[ -x "$KILN" ] || missing="$missing bin/kiln"
if [ -z "$missing" ]; then
  pass "installed layout (headers, libkiln, interpreter plugin in plugindir, kiln tool)"
else
  echo "missing:$missing" >"$TMP/layout.log"
  fail "installed layout" "$TMP/layout.log"
fi

# 2. Build the vendor plugin as a separate project, with pkg-config only.
VB=$TMP/vendor-build
if meson setup "$VB" "$SRC/examples/vendor-plugin" >"$TMP/vsetup.log" 2>&1 &&
  ninja -C "$VB" -j2 >"$TMP/vbuild.log" 2>&1 && [ -f "$VB/kiln-vendor.so" ]; then
  pass "vendor plugin builds against the installed kiln"
else
  cat "$TMP/vsetup.log" "$TMP/vbuild.log" >"$TMP/vall.log" 2>/dev/null
  fail "vendor plugin build" "$TMP/vall.log"
  finish
fi

# Only the installed plugin folder and the vendor build: nothing from the
# build tree may be found.
export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KILN_PLUGIN_PATH="$PLUGINDIR:$VB"
export KILN_PLUGIN_PATH_ONLY=1

# 3. `kiln backends` lists both.
if "$KILN" backends >"$TMP/backends.txt" 2>&1 && grep -q "^  vendor " "$TMP/backends.txt" &&
  grep -q "^  interpreter " "$TMP/backends.txt"; then
  pass "kiln backends lists vendor and interpreter"
else
  fail "kiln backends" "$TMP/backends.txt"
fi

# 4. Run graphs on both backends and compare every output. The first
# python3 on PATH may lack numpy (a pyenv shim, say): find one that has it.
PY=""
for p in python3 /usr/bin/python3 /usr/local/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c "import numpy" >/dev/null 2>&1; then
    PY=$p
    break
  fi
done
compare() { # DIR_A DIR_B -> prints a report, status 0 when all match
  "$PY" - "$1" "$2" <<'PY'
import os, sys
import numpy as np
a, b = sys.argv[1], sys.argv[2]
names = sorted(f for f in os.listdir(b) if f.endswith(".npy"))
if not names or sorted(f for f in os.listdir(a) if f.endswith(".npy")) != names:
    print("output files differ:", os.listdir(a), os.listdir(b)); sys.exit(1)
bad = 0
for n in names:
    x, y = np.load(os.path.join(a, n)), np.load(os.path.join(b, n))
    if x.shape != y.shape or x.dtype != y.dtype or not np.allclose(x, y, rtol=1e-4, atol=1e-5, equal_nan=True):
        bad += 1
        print(n, "differs:", x.dtype, x.shape, y.dtype, y.shape, "max abs diff",
              float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) if x.shape == y.shape else "-")
sys.exit(1 if bad else 0)
PY
}
run_both() { # NAME MODEL INPUT_ARGS...
  name=$1 model=$2
  shift 2
  for be in interpreter vendor; do
    mkdir -p "$TMP/$name/$be"
    if ! "$KILN" run "$model" --backend $be "$@" --output-dir "$TMP/$name/$be" \
      >"$TMP/$name/$be.log" 2>&1; then
      fail "run $name on $be" "$TMP/$name/$be.log"
      return
    fi
  done
  if compare "$TMP/$name/vendor" "$TMP/$name/interpreter" >"$TMP/$name/cmp.log" 2>&1; then
    pass "$name: vendor matches interpreter"
  else
    fail "$name: vendor differs from interpreter" "$TMP/$name/cmp.log"
  fi
}
if [ -z "$PY" ]; then
  skip "output comparisons (no python3 with numpy)"
else
  "$PY" -c "import numpy as np; np.save('$TMP/x23.npy', np.array([[0.5, -1.25, 2], [-0.75, 1.5, 0.25]], np.float32))"
  run_both mlp "$SRC/examples/models/mlp.kir" --input "x=$SRC/examples/models/mlp_input.npy"
  run_both mix "$HERE/graph.kir" --input "x=$TMP/x23.npy"
fi

# 5. ONNX conformance cases, vendor against the interpreter.
SUITE=${KILN_ONNX_SUITE:-}
if [ -z "$SUITE" ]; then
  for d in /work/shared/onnx-node-v1.22 /usr/share/libonnx-testdata/data/node; do
    [ -d "$d" ] && SUITE=$d && break
  done
fi
if ! "$KILN" conformance --help >/dev/null 2>&1; then
  skip "conformance (this kiln has no conformance command)"
elif [ -z "$SUITE" ] || [ ! -d "$SUITE" ]; then
  skip "conformance (no ONNX node suite; set KILN_ONNX_SUITE)"
else
  FILTER='^test_(abs|neg|exp|log|sqrt|relu|tanh|sigmoid|reciprocal|add|sub|mul|div|max|min|sum|mean|matmul_2d|matmul_3d|gemm_default_.*|transpose_.*|reduce_sum_.*|reduce_max_.*|softmax_.*|layer_normalization_2d_axis(0|1|_negative_1|_negative_2)|leakyrelu.*|clip.*)$'
  "$KILN" conformance --backend vendor --against interpreter --suite "$SUITE" \
    --filter "$FILTER" --jobs 2 >"$TMP/conf.txt" 2>&1
  rc=$?
  # One line per case: count them, and require no failure of any kind.
  npass=$(grep -c "PASS" "$TMP/conf.txt")
  nbad=$(grep -Ec "FAIL|ERROR|TIMEOUT|CRASH" "$TMP/conf.txt")
  if [ $rc -eq 0 ] && [ "$nbad" -eq 0 ] && [ "$npass" -gt 0 ]; then
    pass "conformance vendor vs interpreter ($npass case lines passed)"
  else
    fail "conformance vendor vs interpreter (exit $rc)" "$TMP/conf.txt"
  fi
fi
finish
