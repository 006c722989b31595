#!/usr/bin/env bash
# scripts/test.sh: set up, build, and run every kiln test suite in two build
# configurations (gcc release-with-asserts, and clang-19 with ASan + UBSan),
# the unit suites under valgrind, and the ONNX conformance suites on every
# backend. Ends with one line "N passed, N failed, N skipped" summed over all.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
set +e
kiln_install_packages || exit 1

cd "$KILN_ROOT"
LOGDIR="$BUILD/test-logs"
ASAN_BUILD="${KILN_ASAN_BUILD:-$KILN_ROOT/build-asan}"
status=0
step() { echo; echo "=== $*"; }

step "build (gcc)"
kiln_build "$BUILD" || { echo "kiln test: build failed"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
mkdir -p "$LOGDIR"

# The backends' compile caches go to a fresh folder of this run, not the
# user's ~/.cache/kiln: every suite then also exercises the cache's writes.
export KILN_CACHE_DIR="$BUILD/test-cache"
rm -rf "$KILN_CACHE_DIR"

rm -f "$LOGDIR"/*.json "$LOGDIR"/fuzz-summary.txt "$LOGDIR"/conformance.txt \
  "$BUILD"/meson-logs/testlog*.json "$ASAN_BUILD"/meson-logs/testlog*.json

step "build (clang-19, ASan + UBSan)"
asan_ok=1
# Also the fuzzing build: libkiln gets coverage instrumentation for libFuzzer.
CC=clang-19 CFLAGS="-fno-sanitize-recover=all -fsanitize=fuzzer-no-link" \
  kiln_build "$ASAN_BUILD" -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=true ||
  { echo "kiln test: sanitizer build failed"; status=1; asan_ok=0; }

step "unit and integration suites (gcc build)"
meson test -C "$BUILD" --no-rebuild --print-errorlogs --num-processes 2 >"$LOGDIR/meson-gcc.txt" 2>&1
tail -n 25 "$LOGDIR/meson-gcc.txt"
cp "$BUILD/meson-logs/testlog.json" "$LOGDIR/gcc.json" 2>/dev/null

step "unit and integration suites (ASan + UBSan build)"
[ $asan_ok = 1 ] && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS=suppressions=$KILN_ROOT/tests/lsan.supp:print_suppressions=0 \
  meson test -C "$ASAN_BUILD" --no-rebuild --print-errorlogs --num-processes 2 \
  --timeout-multiplier 4 >"$LOGDIR/meson-asan.txt" 2>&1
tail -n 25 "$LOGDIR/meson-asan.txt"
cp "$ASAN_BUILD/meson-logs/testlog.json" "$LOGDIR/asan.json" 2>/dev/null

step "unit suites under valgrind (leak check)"
CK_FORK=no meson test -C "$BUILD" --no-rebuild --suite unit --num-processes 2 --timeout-multiplier 10 \
  --wrapper "valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --suppressions=$KILN_ROOT/tests/valgrind.supp" \
  >"$LOGDIR/meson-valgrind.txt" 2>&1
tail -n 15 "$LOGDIR/meson-valgrind.txt"
cp "$BUILD/meson-logs/testlog-valgrind.json" "$LOGDIR/valgrind.json" 2>/dev/null

# A fixed seed and run count make each run repeatable (a finding shows up in
# every run, not in one of many); longer random runs: docs/fuzzing.md.
# fuzz_target NAME BINARY RUNS SECONDS SEED_DIR...: one libFuzzer run over a
# fresh copy of the seed folders, reported as one passed or failed test.
fuzz_target() {
  local name=$1 bin=$ASAN_BUILD/tests/onnx/$2 runs=$3 secs=$4
  shift 4
  step "fuzzing $name (libFuzzer, ASan + UBSan, seed 1, $runs runs or ${secs} s)"
  if [ $asan_ok != 1 ] || [ ! -x "$bin" ]; then
    echo "FUZZ $name: 0 passed, 1 failed, 0 skipped   (fuzz target not built)" | tee -a "$LOGDIR/fuzz-summary.txt"
    return
  fi
  local corpus
  corpus=$(mktemp -d)
  for d in "$@"; do cp -r "$d"/. "$corpus"/ 2>/dev/null; done
  (cd "$corpus" && ASAN_OPTIONS=detect_leaks=1 "$bin" -seed=1 -runs="$runs" -max_total_time="$secs" \
    -max_len=65536 -rss_limit_mb=4096 -timeout=60 -print_final_stats=1 "$corpus" \
    >"$LOGDIR/fuzz-$name.txt" 2>&1)
  if [ $? = 0 ]; then
    echo "FUZZ $name: 1 passed, 0 failed, 0 skipped   ($(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$LOGDIR/fuzz-$name.txt"), $(grep -o 'cov: [0-9]*' "$LOGDIR/fuzz-$name.txt" | tail -n 1), no finding)"
  else
    echo "FUZZ $name: 0 passed, 1 failed, 0 skipped   (a finding: see $LOGDIR/fuzz-$name.txt)"
    tail -n 40 "$LOGDIR/fuzz-$name.txt"
  fi | tee -a "$LOGDIR/fuzz-summary.txt"
  rm -rf "$corpus"
}
# Seeds for the pipeline targets: the regression corpus plus every model of
# the ONNX node suite (one file per test, named after it).
node_seeds=$(mktemp -d)
for d in /usr/share/libonnx-testdata/data/node/*/; do
  [ -f "$d/model.onnx" ] && cp "$d/model.onnx" "$node_seeds/$(basename "$d").onnx"
done
kir_seeds=$(mktemp -d)
cp "$KILN_ROOT"/tests/passes/cases/*.kir "$KILN_ROOT"/tests/text/cases/*.kir \
  "$KILN_ROOT"/examples/models/*.kir "$kir_seeds"/ 2>/dev/null
fuzz_target onnx-loader fuzz_onnx "${KILN_FUZZ_RUNS:-5000000}" "${KILN_FUZZ_SECONDS:-120}" \
  "$KILN_ROOT/tests/fuzz/corpus"
fuzz_target pipeline-interpreter fuzz_pipeline_interpreter "${KILN_FUZZ_PIPELINE_RUNS:-300000}" \
  "${KILN_FUZZ_SECONDS:-120}" "$KILN_ROOT/tests/fuzz/corpus" "$node_seeds"
# The JIT compiles every input, so cpu starts from the small regression
# corpus and runs far fewer inputs.
fuzz_target pipeline-cpu fuzz_pipeline_cpu "${KILN_FUZZ_CPU_RUNS:-10000}" "${KILN_FUZZ_SECONDS:-120}" \
  "$KILN_ROOT/tests/fuzz/corpus"
fuzz_target kir-text fuzz_kir "${KILN_FUZZ_KIR_RUNS:-300000}" "${KILN_FUZZ_SECONDS:-120}" \
  "$KILN_ROOT/tests/fuzz/corpus_kir" "$kir_seeds"
rm -rf "$node_seeds" "$kir_seeds"

if [ -x "$KILN_ROOT/tests/run_conformance.sh" ]; then
  step "ONNX conformance"
  bash "$KILN_ROOT/tests/run_conformance.sh" "$BUILD" "$LOGDIR" 2>&1 | tee "$LOGDIR/conformance.txt"
fi

step "summary"
python3 "$KILN_ROOT/tests/summarize.py" "$LOGDIR"
rc=$?
[ $status = 0 ] || rc=1
exit $rc
