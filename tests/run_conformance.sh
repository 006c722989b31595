#!/usr/bin/env bash
# tests/run_conformance.sh BUILD LOGDIR: run the ONNX conformance suites on
# every backend that was built, and on the backend lists (partitioned
# configurations) that they make, against the expected outputs, with the
# checked-in expected-failure lists. Prints one line per suite and
# configuration:
#   CONFORMANCE suite/backend: N passed, N failed, N skipped
# where "failed" counts unexpected failures and unexpected passes, and
# "skipped" counts skips (with reasons, in the log) and expected failures.
# A list (opencl+cpu) has no lines of its own in the expected-failure
# files: it may fail only where the interpreter is listed, that is, it must
# pass every case the interpreter passes. (vendor+cpu is run by
# tests/vendor/run.sh, which builds the vendor plugin.)
# Exits nonzero when any run had an unexpected result.
set -uo pipefail
BUILD="$1"
LOGDIR="$2"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KILN="$BUILD/tools/kiln"
DATA=/usr/share/libonnx-testdata/data
SHARED_V122="$ROOT/../shared/onnx-node-v1.22"
JOBS="${KILN_CONFORMANCE_JOBS:-2}"
mkdir -p "$LOGDIR/conformance"

backends=(interpreter)
for b in cpu opencl; do
  [ -f "$BUILD/plugins/$b/kiln-$b.so" ] && backends+=("$b")
done
# Partitioned: what opencl declares runs there, the rest on cpu (on 2
# cores: node suite about 1 minute, pytorch 5 s, onnx-v1.22 2 minutes).
if [ -f "$BUILD/plugins/cpu/kiln-cpu.so" ] && [ -f "$BUILD/plugins/opencl/kiln-opencl.so" ]; then
  backends+=(opencl+cpu)
fi

rc=0
run_suite() { # name expected-failures-file dirs...
  local name="$1" xf="$2"; shift 2
  local suites=()
  for d in "$@"; do suites+=(--suite "$d"); done
  for b in "${backends[@]}"; do
    # A list's expected failures are the interpreter's.
    local bxf="$xf"
    if [[ "$b" == *+* ]]; then
      bxf="$LOGDIR/conformance/$name-$b.expected-failures.txt"
      awk -v b="$b" '$1 == "interpreter" { $1 = b; print }' "$xf" >"$bxf"
    fi
    local log="$LOGDIR/conformance/$name-$b.txt"
    "$KILN" conformance --backend "$b" "${suites[@]}" --jobs "$JOBS" \
      --expected-failures "$bxf" --json "$LOGDIR/conformance/$name-$b.json" >"$log" 2>&1
    local r=$?
    [ $r = 0 ] || rc=1
    local counts xline
    counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" | tail -n 1)
    xline=$(grep -E '^[0-9]+ expected failures?, ' "$log" | tail -n 1)
    if [ -z "$counts" ]; then
      echo "CONFORMANCE $name/$b: 0 passed, 1 failed, 0 skipped   (runner died, exit $r; see $log)"
      continue
    fi
    local p f s xf_n uf up
    read -r p f s <<<"$(echo "$counts" | sed -E 's/([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped/\1 \2 \3/')"
    read -r xf_n uf up <<<"$(echo "$xline" | sed -E 's/([0-9]+) expected failures?, ([0-9]+) unexpected failures?, ([0-9]+) unexpected pass(es)?/\1 \2 \3/')"
    xf_n=${xf_n:-0}; uf=${uf:-$f}; up=${up:-0}
    local total=$((p + f + s))
    echo "CONFORMANCE $name/$b: $((p - up)) passed, $((uf + up)) failed, $((s + xf_n)) skipped   ($p/$total pass, $xf_n expected failures, $s skips; log $log)"
    if [ $((uf + up)) != 0 ]; then
      sed -n '/^UNEXPECTED/,/^$/p' "$log" | head -n 40
    fi
  done
}

run_suite node "$ROOT/tests/conformance/expected-failures.txt" "$DATA/node"
run_suite pytorch "$ROOT/tests/conformance/expected-failures.txt" \
  "$DATA/pytorch-converted" "$DATA/pytorch-operator" "$DATA/simple"
if [ -d "$SHARED_V122" ]; then
  run_suite onnx-v1.22 "$ROOT/tests/conformance/expected-failures-onnx-1.22.txt" "$SHARED_V122"
else
  echo "onnx-node-v1.22: $SHARED_V122 is absent; that suite was not run"
fi
exit $rc
