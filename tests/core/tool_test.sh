#!/bin/sh
# tests/core/tool_test.sh: checks the kiln command line: `kiln backends`
# (text and JSON) lists the interpreter and every refused test plugin with
# its reason, and the ABI 1.0 test plugin as loaded; `kiln compile
# --bundle` with that plugin is refused naming it; `kiln run` prints the MLP's hand-computed outputs, lists
# missing inputs, binds an ONNX model's symbolic dims from the arrays
# given, makes them with --random-inputs (seeded), writes .npy
# files; `kiln run --profile` prints the profile table and --profile-json
# writes a trace that parses, names every instruction of the table and
# counts the FLOPs and bytes worked out by hand for the CNN, on
# each backend present (one without a device is skipped, saying so); usage
# errors exit with 2; `kiln compile`/`kiln run` on cpu with --no-cache
# write nothing into the compile cache and without it one entry, which a
# second run uses with the same outputs (KILN_CACHE_DIR points at a fresh
# folder of the script's for every command, so no run reads or fills the
# user's cache). With the picky test plugin and a backend list
# (picky+interpreter): `kiln compile --stats` lists the regions with the
# bytes worked out by hand, `kiln dump --dot --backend` fills each node
# with its entry's legend color, `kiln run --profile` attributes the time
# to regions (and its trace lays them out in a chain) with outputs equal to
# the interpreter's, random placements (KILN_PARTITION_SEED) run and
# profile, and a wrong entry or memory cap is a one-line error.
# usage: tool_test.sh KILN BUILD_DIR SRC_DIR SOURCE_ROOT
set -u
kiln="$1"; build="$2"; src="$3"; root="$4"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KILN_CACHE_DIR="$tmp/cache-default"

. "$(dirname "$0")/../check.sh"

export KILN_PLUGIN_PATH="$build:$build/dup_a:$build/dup_b:$build/junk"
unset KILN_PLUGIN_PATH_ONLY

out=$("$kiln" backends 2>&1); rc=$?
check backends 0 "interpreter" "picky 0.0.1 (ABI 1.8)" "kinds: 1 of" \
  "abi10 1.0.0 (ABI 1.0)" \
  "plugin built for ABI 99.3, kiln has 1.8" \
  "missing entry symbol 'kiln_plugin_entry'" \
  "duplicate backend 'dup': kept $build/dup_a/kiln-dup.so" \
  "not a loadable shared object" \
  "entryerr: driver version 0.0 is too old" \
  "initerr: no accelerator attached" \
  "device 0: picky device (cpu, 1.0 MiB)"

out=$("$kiln" backends --json 2>&1); rc=$?
check backends-json 0 '"name": "interpreter"' '"name": "picky"' '"kinds": 1,' \
  '"reason": "plugin built for ABI 99.3, kiln has 1.8"' '"refused": ['

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

# Symbolic dims (add_batch.onnx: y = x + z, all f32[batch, 3]) take their
# size from the arrays given; arrays that disagree, or of another rank,
# are refused naming both; a --dim binding still wins (and a mismatching
# array is then the run's error); with no arrays, the load says what is
# unbound and both ways to bind it.
dyn="$src/data/add_batch.onnx"; a23="$src/data/f32_2x3.npy"; a03="$src/data/f32_empty.npy"
out=$("$kiln" run "$dyn" --backend interpreter --input "x=$a23" --input "z=$a23" 2>&1); rc=$?
check run-dims-from-inputs 0 "y : f32[2,3] = [0, 1, 2, 3, 4, 5]"
out=$("$kiln" run "$dyn" --backend interpreter --input "x=$a23" --input "z=$a03" 2>&1); rc=$?
check run-dims-disagree 1 "symbolic dim 'batch' is 2 in input 'x' (dim 0 of $a23)" \
  "but 0 in input 'z' (dim 0 of $a03)" "--dim batch=VALUE"
out=$("$kiln" run "$dyn" --backend interpreter --input "x=$src/data/bool_4.npy" 2>&1); rc=$?
check run-dims-rank 1 "input 'x' has 2 dims in $dyn ('batch' is dim 0) but $src/data/bool_4.npy holds"
out=$("$kiln" run "$dyn" --backend interpreter --dim batch=0 --input "x=$a23" --input "z=$a03" 2>&1)
rc=$?
check run-dims-explicit 1 "input 'x' is f32[0,3] but $a23 holds f32[2,3]"
out=$("$kiln" run "$dyn" --backend interpreter 2>&1); rc=$?
check run-dims-unbound 1 "2 unbound symbolic dims: 'batch' (input 'x' dim 0)" "--dim NAME=VALUE" \
  "--input"

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

# The compile cache on cpu (the backend that keeps object files).
count_entries() { # count_entries DIR: entries (*.o, no temporaries) in DIR
  find "$1" -maxdepth 1 -name '*.o' ! -name '*.tmp.*' 2>/dev/null | wc -l | tr -d ' '
}
out=$("$kiln" compile --help 2>&1); rc=$?
check help-compile-no-cache 0 "--no-cache" "KILN_CACHE_DIR=off"
out=$("$kiln" run --help 2>&1); rc=$?
check help-run-no-cache 0 "--no-cache"
if printf '%s\n' "$("$kiln" backends 2>&1)" | grep -q "^  cpu "; then
  cache="$tmp/cache-cpu"
  out=$(KILN_CACHE_DIR="$cache" "$kiln" compile "$mlp" --backend cpu --no-cache 2>&1); rc=$?
  check cache-compile-no-cache 0 "compiled $mlp for cpu"
  out=$(KILN_CACHE_DIR="$cache" "$kiln" run "$mlp" --backend cpu --no-cache --input "x=$x" 2>&1); rc=$?
  check cache-run-no-cache 0 "y : f32[1,2] = [0.731059, 0.268941]"
  if [ -e "$cache" ] && [ -n "$(ls -A "$cache")" ]; then
    echo "FAIL cache-no-cache-writes-nothing: $cache has $(ls -A "$cache")"; fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
  out=$(KILN_CACHE_DIR="$cache" "$kiln" compile "$mlp" --backend cpu 2>&1); rc=$?
  check cache-compile 0 "compiled $mlp for cpu"
  n=$(count_entries "$cache")
  if [ "$n" = 1 ] && [ -z "$(find "$cache" -name '*.tmp.*')" ]; then
    pass=$((pass + 1))
  else
    echo "FAIL cache-one-entry: $n entries in $cache: $(ls -A "$cache" 2>&1)"; fail=$((fail + 1))
  fi
  entry=$(find "$cache" -maxdepth 1 -name '*.o')
  before=$(cksum < "$entry")
  out=$(KILN_CACHE_DIR="$cache" "$kiln" run "$mlp" --backend cpu --input "x=$x" 2>&1); rc=$?
  check cache-run-from-cache 0 "y : f32[1,2] = [0.731059, 0.268941]"
  if [ "$(count_entries "$cache")" = 1 ] && [ "$(cksum < "$entry")" = "$before" ]; then
    pass=$((pass + 1))
  else
    echo "FAIL cache-entry-kept: the run changed $cache: $(ls -A "$cache" 2>&1)"; fail=$((fail + 1))
  fi
  # KILN_CACHE_DIR=off: no cache, and no folder named "off".
  out=$(cd "$tmp" && KILN_CACHE_DIR=off "$kiln" run "$mlp" --backend cpu --input "x=$x" 2>&1); rc=$?
  check cache-off 0 "y : f32[1,2] = [0.731059, 0.268941]"
  if [ -e "$tmp/off" ]; then
    echo "FAIL cache-off-no-folder: KILN_CACHE_DIR=off made $tmp/off"; fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
else
  echo "SKIP cache-cpu: backend cpu not built"
fi

# --profile / --profile-json on the CNN example (its ONNX node names are
# written in examples/models/make_cnn.py), on every backend present.
cnn="$root/examples/models/cnn.onnx"
backends=$("$kiln" backends 2>&1)
for b in interpreter cpu opencl; do
  if ! printf '%s\n' "$backends" | grep -q "^  $b "; then
    echo "SKIP profile-$b: backend $b not built"; continue
  fi
  devs=$(printf '%s\n' "$backends" | awk -v b="$b" '/^  [a-z]/ { on = ($1 == b) } on && /^    devices: / { print $2 }')
  if [ "${devs:-0}" = 0 ] && [ "$b" != interpreter ]; then
    echo "SKIP profile-$b: backend $b has no device"; continue
  fi
  json="$tmp/profile-$b.json"
  out=$("$kiln" run "$cnn" --backend $b --random-inputs --repeat 2 --profile \
    --profile-json "$json" 2>&1); rc=$?
  check "profile-$b" 0 "compile phases" "load (import)" "graph passes and lowering" \
    "instructions and memory plan" "backend compile" "run: 2 runs, wall time median" \
    "by kind" "by instruction (slowest first)" "calls    total ms   median us   share" \
    " conv1" "Conv " " GFLOP/s" " GB/s" " fc " " softmax "
  if [ "$b" = interpreter ]; then
    # Nothing fused: every node of the model is an instruction of its own,
    # the folded batch norm named after its conv ("conv2+1").
    check "profile-names-$b" 0 " relu1 " " pool1 " " conv2+1 " " relu2 " " gap "
  fi
  if [ -e "$json.tmp" ]; then
    echo "FAIL profile-json-$b: $json.tmp left behind"; fail=$((fail + 1))
  fi
  if ! command -v python3 >/dev/null 2>&1; then
    echo "SKIP profile-json-$b: no python3 to parse the trace"; continue
  fi
  # The table's instruction rows ("instr kind node calls ...") against the
  # trace's run events: the same instructions, the same names, and each
  # event a complete ("X") event with numbers for ts and dur.
  table="$tmp/profile-$b.txt"
  printf '%s\n' "$out" | sed -n '/^by instruction/,$p' | tail -n +3 > "$table"
  out=$(python3 - "$json" "$table" <<'PY' 2>&1
import json, sys
trace = json.load(open(sys.argv[1]))
rows = {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) >= 3 and f[0].isdigit():
        rows[int(f[0])] = f[2]
run = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("pid") == 1]
assert run, "no run events"
for e in run:
    assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
    assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
    assert "tid" in e and "cat" in e and "shapes" in e["args"], e
seen = {e["args"]["instr"]: e["name"] for e in run}
assert set(seen) == set(rows), "trace %s, table %s" % (sorted(seen), sorted(rows))
for i, name in rows.items():
    assert seen[i][:28] == name[:28], (i, seen[i], name)
# Work counted by hand from examples/models/make_cnn.py: conv1 makes
# 8x16x16 outputs of 3x3x3 multiply-adds, conv2 16x8x8 of 8x3x3, fc 10 of
# 16; pool1 reads 8x16x16 floats and writes 8x8x8.
work = {e["name"]: e["args"] for e in run}
def named(prefix):
    return [a for n, a in work.items() if n == prefix or n.startswith(prefix + "+")]
assert [a["flops"] for a in named("conv1")] == [2 * 8 * 16 * 16 * 27], named("conv1")
assert [a["flops"] for a in named("conv2")] == [2 * 16 * 8 * 8 * 72], named("conv2")
assert [a["flops"] for a in named("fc")] == [2 * 10 * 16], named("fc")
# (in the channel-blocked layout, passes/layout.c, the 8 channels fill
# half of a block of 16 and the pool moves the whole block)
assert [a["bytes"] for a in named("pool1")] in ([(8 * 16 * 16 + 8 * 8 * 8) * 4],
                                                [(16 * 16 * 16 + 16 * 8 * 8) * 4]), named("pool1")
if "relu1" in work:  # its own instruction (not fused): reads and writes 8x16x16 floats
    assert work["relu1"]["bytes"] == 2 * 8 * 16 * 16 * 4, work["relu1"]
phases = [e["name"] for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("pid") == 0]
assert "backend compile" in phases, phases
print("trace ok: %d instructions" % len(rows))
PY
); rc=$?
  check "profile-json-$b" 0 "trace ok:"
done

out=$("$kiln" run "$mlp" --backend interpreter --random-inputs --profile-json "$tmp/no/such/dir/p.json" 2>&1); rc=$?
check run-profile-json-unwritable 1 "no/such/dir/p.json"

out=$("$kiln" run "$mlp" --backend interpreter --profile-json 2>&1); rc=$?
check run-profile-json-usage 2 "--profile-json needs a FILE"

# A backend list (docs/partitioning.md) with the picky test plugin, which
# runs only f32 Relu: Relu -> Exp -> Relu puts a and c on picky and b on
# the interpreter, three regions in a chain (levels 0, 1, 2), each reading
# and handing on one f32[4] (16 bytes); 32 bytes cross between regions.
export KILN_PLUGIN_PATH="$build"
chain="$tmp/chain.kir"
printf 'module @chain\ninput %%x : f32[4]\nfunc @main {\n  %%a : f32[4] = Relu(%%x)\n  %%b : f32[4] = Exp(%%a)\n  %%c : f32[4] = Relu(%%b)\n  output %%y = %%c\n}\n' > "$chain"
out=$("$kiln" compile "$chain" --backend picky+interpreter --stats 2>&1); rc=$?
check part-stats 0 "compiled $chain for picky+interpreter" \
  "regions: 3 (backend list picky+interpreter" "bytes in" "bytes out" \
  "per run 32 bytes cross between regions"
# region placement backend device level nodes instrs weights acts in out names
rows=$(printf '%s\n' "$out" | awk '$1 ~ /^[0-9]+$/ && NF >= 12 { print $1, $2, $3, $4, $5, $6, $10, $11, $12 }')
want="0 picky picky - 0 1 0 16 a
1 interpreter interpreter - 1 1 16 16 b
2 picky picky - 2 1 16 16 c"
if [ "$rows" = "$want" ]; then pass=$((pass + 1)); else
  echo "FAIL part-stats-rows: got"; echo "$rows"; echo "wanted"; echo "$want"; fail=$((fail + 1)); fi
case "$out" in *"activation arena:"*|*"instructions: "*)
  echo "FAIL part-stats-no-ir: the one-backend stats printed for a partitioned executable"
  fail=$((fail + 1)) ;; esac

# A cap picky cannot meet (8 bytes, each node makes 16): every node goes to
# the interpreter, one region, and so the one-backend stats.
out=$("$kiln" compile "$chain" --backend picky+interpreter --device-memory picky=8 --stats 2>&1); rc=$?
check part-memory-moves-all 0 "instructions: " "activation arena: " \
  "placed: the whole function on interpreter (one region, no partition)"
case "$out" in *"regions:"*) echo "FAIL part-memory-moves-all: still split"; fail=$((fail + 1)) ;; esac

# KILN_PARTITION_SEED places nodes at random and runs even one region
# through the partitioned executable: stats and the profile take either.
for seed in 1 2 3; do
  out=$(KILN_PARTITION_SEED=$seed "$kiln" run "$mlp" --backend interpreter+picky --random-inputs \
    --profile 2>&1); rc=$?
  check "part-seed-$seed" 0 "by region (backend list interpreter+picky" "outside regions" \
    "y : f32[1,2] = ["
done

# dump --dot colors each node with its entry's legend color.
out=$("$kiln" dump "$chain" --dot --backend picky+interpreter 2>&1); rc=$?
check part-dot 0 "subgraph cluster_legend" "placement (--backend picky+interpreter)"
legend_color() { printf '%s\n' "$out" | sed -n "s/.*legend[0-9]* .*fillcolor=\"\([^\"]*\)\", label=\"$1\".*/\1/p"; }
node_colors() { printf '%s\n' "$out" | grep "label=\"$1\\\\n" | sed -n 's/.*fillcolor="\([^"]*\)".*/\1/p' | sort -u; }
cp=$(legend_color picky); ci=$(legend_color interpreter)
if [ -n "$cp" ] && [ -n "$ci" ] && [ "$cp" != "$ci" ] && [ "$(node_colors Relu)" = "$cp" ] &&
   [ "$(node_colors Exp)" = "$ci" ] && [ "$(printf '%s\n' "$out" | grep -c "label=\"Relu")" = 2 ]; then
  pass=$((pass + 1))
else
  echo "FAIL part-dot-colors: picky '$cp' interpreter '$ci' Relu '$(node_colors Relu)' Exp '$(node_colors Exp)'"
  echo "$out"; fail=$((fail + 1))
fi
out=$("$kiln" dump "$chain" --backend picky+interpreter 2>&1); rc=$?
check part-dot-usage 2 "--backend and the compile options need --dot"

# run --profile: the region table, each region's own table, and outputs
# that agree with the interpreter alone on the same random input.
out=$("$kiln" run "$chain" --backend interpreter --random-inputs 4 2>&1); rc=$?
check part-reference 0 "y : f32[4] = ["
ref=$(printf '%s\n' "$out" | grep '^y :')
json="$tmp/part-profile.json"
out=$("$kiln" run "$chain" --backend picky+interpreter --random-inputs 4 --repeat 2 --profile \
  --profile-json "$json" 2>&1); rc=$?
check part-profile 0 "$ref" "run: 2 runs, wall time median" \
  "the regions' times on the critical path add up to" \
  "by region (backend list picky+interpreter" "outside regions" \
  "region 0 on picky (nodes a)" "backend 'picky' reports no per-instruction timings" \
  "region 1 on interpreter (nodes b)" "region 2 on picky (nodes c)" " Exp "
# region placement level nodes calls ... bytes-in bytes-out names
rows=$(printf '%s\n' "$out" | sed -n '/^by region/,/outside regions/p' |
  awk '$1 ~ /^[0-9]+$/ { print $1, $2, $3, $4, $5, $(NF-2), $(NF-1), $NF }')
want="0 picky 0 1 2 0 16 a
1 interpreter 1 1 2 16 16 b
2 picky 2 1 2 16 16 c"
if [ "$rows" = "$want" ]; then pass=$((pass + 1)); else
  echo "FAIL part-profile-rows: got"; echo "$rows"; echo "wanted"; echo "$want"; fail=$((fail + 1)); fi
if command -v python3 >/dev/null 2>&1; then
  out=$(python3 - "$json" <<'PY' 2>&1
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
spans = sorted((e["args"]["region"], e["args"]["placement"], e["ts"], e["dur"])
               for e in ev if e.get("cat") == "region")
assert [(r, p) for r, p, _, _ in spans] == [(0, "picky"), (1, "interpreter"), (2, "picky")], spans
# a chain: each region starts where the one before it ends
for (_, _, t0, d0), (_, _, t1, _) in zip(spans, spans[1:]):
    assert abs(t0 + d0 - t1) < 0.01, spans
exp = [e for e in ev if e.get("ph") == "X" and e.get("name") == "b"]
assert len(exp) == 1 and exp[0]["pid"] == 3 and exp[0]["cat"] == "Exp", exp
assert spans[1][2] <= exp[0]["ts"], (spans, exp)
assert any(e.get("cat") == "outside" for e in ev)
print("partitioned trace ok")
PY
); rc=$?
  check part-profile-json 0 "partitioned trace ok"
fi

# Bad lists: one line each, naming what is wrong.
out=$("$kiln" compile "$chain" --backend picky+nosuch 2>&1); rc=$?
check part-bad-entry 1 "kiln: backend list 'picky+nosuch': no backend 'nosuch'"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && pass=$((pass + 1)) || {
  echo "FAIL part-bad-entry-one-line: $out"; fail=$((fail + 1)); }
out=$("$kiln" run "$chain" --backend picky+interpreter --random-inputs --device-memory picky=lots 2>&1); rc=$?
check part-bad-memory 1 "kiln: device memory 'picky=lots': write NAME=BYTES"
[ "$(printf '%s\n' "$out" | grep -vc '^kiln run: input')" = 1 ] && pass=$((pass + 1)) || {
  echo "FAIL part-bad-memory-one-line: $out"; fail=$((fail + 1)); }
out=$("$kiln" compile "$chain" --backend picky+interpreter --device-memory gpu=1K 2>&1); rc=$?
check part-memory-no-entry 1 "no entry 'gpu' in the backend list 'picky+interpreter'"
out=$("$kiln" compile "$chain" --backend picky+interpreter --device-memory= 2>&1); rc=$?
check part-memory-usage 2 "--device-memory wants NAME=BYTES"
unset KILN_PLUGIN_PATH

for c in dump backends compile run; do
  out=$("$kiln" $c --help 2>&1); rc=$?
  check "help-$c" 0 "usage: kiln $c"
done

echo "tool tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
