#!/bin/sh
# tests/vendor/run.sh: the out-of-tree plugin story, end to end. Installs
# kiln from a build folder into a temporary tree, builds
# examples/vendor-plugin against it with pkg-config only, and checks that
# `kiln backends` finds "vendor". The vendor declares only Conv, MatMul,
# Gemm, Relu and Add, so models run on the list `vendor+cpu` (the core
# places everything else on cpu; vendor+interpreter when the cpu plugin
# was not built): the shipped models are compared with the interpreter, a
# model of vendor kinds only runs on `vendor` alone, a model with nothing
# for the vendor still runs on the list, cnn.onnx is split between the
# two, and on the ONNX node suite the list must pass every case the
# interpreter passes (the vendor's kinds also under random placements).
#
# usage: tests/vendor/run.sh BUILD_DIR [SOURCE_ROOT]
# env:   KILN_ONNX_SUITE  folder of ONNX node cases (default: the first of
#        /usr/share/libonnx-testdata/data/node, /work/shared/onnx-node-v1.22)
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
# The cpu plugin's compile cache stays in the temporary tree.
export KILN_CACHE_DIR="$TMP/cache"
# The backend that takes what the vendor declines.
if [ -f "$PLUGINDIR/kiln-cpu.so" ]; then
  REST=cpu
else
  REST=interpreter
fi
LIST=vendor+$REST

# 3. `kiln backends` lists both.
if "$KILN" backends >"$TMP/backends.txt" 2>&1 && grep -q "^  vendor " "$TMP/backends.txt" &&
  grep -q "^  interpreter " "$TMP/backends.txt"; then
  pass "kiln backends lists vendor and interpreter"
else
  fail "kiln backends" "$TMP/backends.txt"
fi

# 4. Run models on a configuration and on the interpreter and compare
# every output. The first python3 on PATH may lack numpy (a pyenv shim,
# say): find one that has it.
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
# run_vs NAME CONFIG MODEL INPUT_ARGS...: CONFIG against the interpreter.
run_vs() {
  name=$1 config=$2 model=$3
  shift 3
  for be in interpreter "$config"; do
    dir="$TMP/$name/$(echo "$be" | tr '+:' '__')"
    mkdir -p "$dir"
    if ! "$KILN" run "$model" --backend "$be" "$@" --output-dir "$dir" >"$dir.log" 2>&1; then
      fail "run $name on $be" "$dir.log"
      return
    fi
  done
  if compare "$TMP/$name/$(echo "$config" | tr '+:' '__')" "$TMP/$name/interpreter" \
    >"$TMP/$name/cmp.log" 2>&1; then
    pass "$name: $config matches interpreter"
  else
    fail "$name: $config differs from interpreter" "$TMP/$name/cmp.log"
  fi
}
# A model with nothing for the vendor: Sigmoid, Mul, Softmax, Sub.
cat >"$TMP/none.kir" <<'KIR'
module @nothing_for_vendor
input %x : f32[2,5]
func @main {
  %s : f32[2,5] = Sigmoid(%x)
  %m : f32[2,5] = Mul(%s, %x)
  %p : f32[2,5] = Softmax(%m) {axis = -1}
  %d : f32[2,5] = Sub(%p, %s)
  output %y = %d
}
KIR
if [ -z "$PY" ]; then
  skip "output comparisons (no python3 with numpy)"
else
  run_vs vendor_only vendor "$HERE/vendor_only.kir" --random-inputs 7
  run_vs cnn "$LIST" "$SRC/examples/models/cnn.onnx" --input "x=$SRC/examples/models/cnn_input.npy"
  run_vs mlp "$LIST" "$SRC/examples/models/mlp.kir" --input "x=$SRC/examples/models/mlp_input.npy"
  run_vs mix "$LIST" "$HERE/graph.kir" --random-inputs 3
  run_vs nothing "$LIST" "$TMP/none.kir" --random-inputs 5
fi
# The list really splits cnn.onnx: `kiln compile --stats` has a row per
# region, "REGION PLACEMENT BACKEND ...": the vendor takes the convolutions
# and the Gemm, the rest (MaxPool, GlobalAveragePool, Softmax) goes on.
"$KILN" compile "$SRC/examples/models/cnn.onnx" --backend "$LIST" --stats >"$TMP/stats.txt" 2>&1
rc=$?
nv=$(awk '$1 ~ /^[0-9]+$/ && $2 == "vendor"' "$TMP/stats.txt" | wc -l)
nr=$(awk -v r="$REST" '$1 ~ /^[0-9]+$/ && $2 == r' "$TMP/stats.txt" | wc -l)
if [ $rc -ne 0 ]; then
  fail "compile --stats cnn.onnx on $LIST (exit $rc)" "$TMP/stats.txt"
elif ! grep -q "^regions: " "$TMP/stats.txt"; then
  skip "regions of cnn.onnx on $LIST (this kiln's compile --stats lists no regions)"
elif [ "$nv" -gt 0 ] && [ "$nr" -gt 0 ]; then
  pass "cnn.onnx on $LIST: $nv regions on vendor, $nr on $REST"
else
  fail "cnn.onnx on $LIST is not split between vendor and $REST" "$TMP/stats.txt"
fi
# Alone, the vendor cannot run what it does not declare (Softmax, lowered
# into kinds it does not declare either): the compile fails naming it. This
# is what the list is for.
if "$KILN" run "$SRC/examples/models/mlp.kir" --backend vendor \
  --input "x=$SRC/examples/models/mlp_input.npy" >"$TMP/alone.log" 2>&1; then
  echo "mlp.kir (Softmax) ran on vendor alone" >>"$TMP/alone.log"
  fail "vendor alone refuses a node it does not declare" "$TMP/alone.log"
elif grep -q "backend 'vendor' does not run it" "$TMP/alone.log"; then
  pass "vendor alone refuses mlp.kir (Softmax), naming the backend"
else
  fail "vendor alone: the message names neither the node nor the backend" "$TMP/alone.log"
fi

# 5. The ONNX node suite on the list next to the interpreter, both against
# the stored outputs: every case the interpreter passes must pass on the
# list (a case the interpreter skips or fails is not the vendor's).
SUITE=${KILN_ONNX_SUITE:-}
if [ -z "$SUITE" ]; then
  for d in /usr/share/libonnx-testdata/data/node /work/shared/onnx-node-v1.22; do
    [ -d "$d" ] && SUITE=$d && break
  done
fi
if ! "$KILN" conformance --help >/dev/null 2>&1; then
  skip "conformance (this kiln has no conformance command)"
elif [ -z "$SUITE" ] || [ ! -d "$SUITE" ]; then
  skip "conformance (no ONNX node suite; set KILN_ONNX_SUITE)"
else
  # A typo in a list entry is one usage error naming it, before any case.
  "$KILN" conformance --backend "interpreter,vendr+$REST" --suite "$SUITE" >"$TMP/typo.txt" 2>&1
  rc=$?
  if [ $rc -ne 0 ] && grep -q "unknown backend 'vendr' in configuration 'vendr+$REST'" "$TMP/typo.txt" &&
    ! grep -q "^PASS" "$TMP/typo.txt"; then
    pass "conformance refuses an unknown list entry, naming it"
  else
    echo "(exit $rc)" >>"$TMP/typo.txt"
    fail "conformance with an unknown list entry" "$TMP/typo.txt"
  fi
  "$KILN" conformance --backend "interpreter,$LIST" --suite "$SUITE" --jobs 2 \
    --json "$TMP/conf.json" >"$TMP/conf.txt" 2>&1
  # One line per case and configuration: "PASS    CONFIG CASE".
  awk '$1 == "PASS" && $2 == "interpreter" { print $3 }' "$TMP/conf.txt" | sort >"$TMP/interp.pass"
  awk -v c="$LIST" '$1 == "PASS" && $2 == c { print $3 }' "$TMP/conf.txt" | sort >"$TMP/list.pass"
  comm -23 "$TMP/interp.pass" "$TMP/list.pass" >"$TMP/missing.txt"
  ni=$(wc -l <"$TMP/interp.pass")
  nl=$(wc -l <"$TMP/list.pass")
  echo "$ni cases pass on interpreter, $nl on $LIST"
  if ! grep -q "\"$LIST\": {\"status\": \"PASS\"" "$TMP/conf.json"; then
    fail "conformance --json has no PASS result for \"$LIST\"" "$TMP/conf.json"
  fi
  if [ "$ni" -gt 0 ] && [ ! -s "$TMP/missing.txt" ]; then
    pass "conformance: $LIST passes all $ni node cases the interpreter passes ($nl in all)"
  else
    { echo "passing on interpreter but not on $LIST:"; sed 's/^/  /' "$TMP/missing.txt"
      echo; grep -E "^(FAIL|CRASH|TIMEOUT|SKIP) +$LIST " "$TMP/conf.txt"; } >"$TMP/conf.bad"
    fail "conformance: $LIST misses cases the interpreter passes" "$TMP/conf.bad"
  fi
  # vendor+REST against the interpreter's own outputs on the same inputs
  # (no stored data involved), on the cases that reach the vendor's kinds.
  "$KILN" conformance --backend "$LIST" --against interpreter --suite "$SUITE" --jobs 2 \
    --filter '^test_(conv|matmul|gemm|relu|add)' >"$TMP/against.txt" 2>&1
  rc=$?
  npass=$(grep -c "^PASS" "$TMP/against.txt")
  if [ $rc -eq 0 ] && [ "$npass" -gt 0 ]; then
    pass "conformance: $LIST against interpreter on Conv/MatMul/Gemm/Relu/Add cases ($npass passed)"
  else
    fail "conformance: $LIST against interpreter (exit $rc)" "$TMP/against.txt"
  fi
  # The same cases with each node on a random entry that runs it (the
  # core's test seed), so that vendor and cpu regions interleave.
  KILN_PARTITION_SEED=5 "$KILN" conformance --backend "$LIST" --against interpreter \
    --suite "$SUITE" --jobs 2 --filter '^test_(conv|matmul|gemm|relu|add)' >"$TMP/seeded.txt" 2>&1
  rc=$?
  npass=$(grep -c "^PASS" "$TMP/seeded.txt")
  if [ $rc -eq 0 ] && [ "$npass" -gt 0 ]; then
    pass "conformance: $LIST with random placements (KILN_PARTITION_SEED=5) ($npass passed)"
  else
    fail "conformance: $LIST with random placements (exit $rc)" "$TMP/seeded.txt"
  fi
fi
finish
