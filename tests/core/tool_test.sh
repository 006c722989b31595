#!/bin/sh
# tests/core/tool_test.sh: checks the kiln command line: `kiln backends`
# (text and JSON) lists the interpreter and every refused test plugin with
# its reason, and the ABI 1.0 test plugin as loaded; `kiln compile
# --bundle` with that plugin is refused naming it; `kiln run` prints the MLP's hand-computed outputs, lists
# missing inputs, makes them with --random-inputs (seeded), writes .npy
# files; usage errors exit with 2.
# usage: tool_test.sh KILN BUILD_DIR SRC_DIR SOURCE_ROOT
set -u
kiln="$1"; build="$2"; src="$3"; root="$4"
pass=0; fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() { # check NAME EXPECTED_RC PATTERN... (patterns are fixed strings, all must appear)
  name="$1"; want_rc="$2"; shift 2
  if [ "$rc" -ne "$want_rc" ]; then
    echo "FAIL $name: exit code $rc, wanted $want_rc"; echo "$out"; fail=$((fail + 1)); return
  fi
  for pat in "$@"; do
    if ! printf '%s\n' "$out" | grep -qF -- "$pat"; then
      echo "FAIL $name: output lacks '$pat'"; echo "$out"; fail=$((fail + 1)); return
    fi
  done
  pass=$((pass + 1))
}

export KILN_PLUGIN_PATH="$build:$build/dup_a:$build/dup_b:$build/junk"
unset KILN_PLUGIN_PATH_ONLY

out=$("$kiln" backends 2>&1); rc=$?
check backends 0 "interpreter" "picky 0.0.1 (ABI 1.2)" "kinds: 1 of" \
  "abi10 1.0.0 (ABI 1.0)" \
  "plugin built for ABI 99.3, kiln has 1.2" \
  "missing entry symbol 'kiln_plugin_entry'" \
  "duplicate backend 'dup': kept $build/dup_a/kiln-dup.so" \
  "not a loadable shared object" \
  "entryerr: driver version 0.0 is too old" \
  "initerr: no accelerator attached" \
  "device 0: picky device (cpu, 1.0 MiB)"

out=$("$kiln" backends --json 2>&1); rc=$?
check backends-json 0 '"name": "interpreter"' '"name": "picky"' '"kinds": 1,' \
  '"reason": "plugin built for ABI 99.3, kiln has 1.2"' '"refused": ['

out=$("$kiln" backends --bogus 2>&1); rc=$?
check backends-usage 2 "kiln backends: unknown option '--bogus'" "see kiln backends --help"

relu="$tmp/relu.kir"
printf 'module @r\ninput %%x : f32[4]\nfunc @main {\n  %%r : f32[4] = Relu(%%x)\n  output %%y = %%r\n}\n' > "$relu"
out=$("$kiln" compile "$relu" --backend abi10 2>&1); rc=$?
check compile-abi10 0 "compiled $relu for abi10"
out=$("$kiln" compile "$relu" --backend abi10 --bundle "$tmp/bundle" 2>&1); rc=$?
check compile-bundle-abi10 1 "backend 'abi10' does not make bundles" \
  "built for plugin ABI 1.0, which has no emit_bundle hook"

unset KILN_PLUGIN_PATH
mlp="$root/examples/models/mlp.kir"
x="$root/examples/models/mlp_input.npy"

out=$("$kiln" run "$mlp" --backend interpreter --input "x=$x" 2>&1); rc=$?
check run-print 0 "y : f32[1,2] = [0.731059, 0.268941]"

out=$("$kiln" run "$mlp" --backend interpreter 2>&1); rc=$?
check run-missing 1 "kiln: " "missing inputs: the model expects x f32[1,4] (missing)"

check run-missing-hint 1 "--random-inputs [SEED]"

# --random-inputs: a given input is used as given (the hand-computed
# outputs again); a missing one is made, named on stderr, and the same
# seed gives the same values while another seed does not.
out=$("$kiln" run "$mlp" --backend interpreter --input "x=$x" --random-inputs 2>&1); rc=$?
check run-random-keeps-given 0 "y : f32[1,2] = [0.731059, 0.268941]"
case "$out" in *random*) echo "FAIL run-random-keeps-given: a given input was named random"; fail=$((fail + 1)) ;; esac
out=$("$kiln" run "$mlp" --backend interpreter --random-inputs 5 2>&1); rc=$?
check run-random 0 "kiln run: input 'x' f32[1,4]: random (seed 5)" "y : f32[1,2] = ["
r5=$(echo "$out" | grep '^y :')
out=$("$kiln" run "$mlp" --backend interpreter --random-inputs=5 2>&1); rc=$?
check run-random-same-seed 0 "$r5"
out=$("$kiln" run "$mlp" --backend interpreter --random-inputs 6 2>&1); rc=$?
check run-random-other-seed 0 "random (seed 6)"
case "$out" in *"$r5"*) echo "FAIL run-random-other-seed: seed 6 gave seed 5's outputs"; fail=$((fail + 1)) ;; esac
out=$("$kiln" run "$mlp" --backend interpreter --random-inputs=x 2>&1); rc=$?
check run-random-bad-seed 2 "--random-inputs wants a number as SEED, got 'x'"

out=$("$kiln" run "$mlp" --backend interpreter --input "q=$x" 2>&1); rc=$?
check run-unknown-input 1 "the model has no input 'q' (it expects: x f32[1,4])"

out=$("$kiln" run "$mlp" --backend interpreter --input "x=$x" --output-dir "$tmp" --repeat 3 2>&1)
rc=$?
check run-output-dir 0 "latency over 3 runs: min"
if [ -f "$tmp/y.npy" ] && [ "$(wc -c < "$tmp/y.npy")" -eq 136 ] && [ ! -e "$tmp/y.npy.tmp" ]; then
  pass=$((pass + 1))
else
  echo "FAIL run-output-dir: $tmp/y.npy missing, wrong size or temp file left"; fail=$((fail + 1))
fi

out=$("$kiln" run "$mlp" --backend nope --input "x=$x" 2>&1); rc=$?
check run-no-backend 1 "no backend 'nope'"

out=$("$kiln" run 2>&1); rc=$?
check run-usage 2 "kiln run: missing FILE" "see kiln run --help"

out=$("$kiln" run "$mlp" --input 2>&1); rc=$?
check run-usage-value 2 "--input wants NAME=PATH"

out=$("$kiln" compile "$mlp" --backend interpreter --stats 2>&1); rc=$?
check compile-stats 0 "compiled $mlp for interpreter in" "peak RSS:" "weights: 92 bytes" \
  "instructions: " "activation arena: 128 bytes" "lower bound 128 bytes"

out=$("$kiln" compile "$mlp" --backend interpreter --threads x 2>&1); rc=$?
check compile-usage 2 "--threads wants a number"

out=$("$kiln" dump "$mlp" 2>&1); rc=$?
check dump 0 "module @mlp" "MatMul(%x, %w1)" "Softmax"

out=$("$kiln" dump "$mlp" --dot 2>&1); rc=$?
check dump-dot 0 "digraph"

out=$("$kiln" frobnicate 2>&1); rc=$?
check unknown-command 2 "kiln: unknown command 'frobnicate'"

for c in dump backends compile run; do
  out=$("$kiln" $c --help 2>&1); rc=$?
  check "help-$c" 0 "usage: kiln $c"
done

echo "tool tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
