#!/bin/sh
# tests/quantize/quantize_test.sh: `kiln profile` and `kiln quantize` end to
# end on the shipped models (examples/models/cnn.onnx: two Conv and a Gemm,
# which quantizing splits into MatMul + Add; mlp.kir: two MatMul). The
# profile's counts are checked against the models' shapes, its histograms
# against its counts and the input range against the generator's [-1, 1);
# the quantized model's activation scale is recomputed from the profile's
# min and max; the report must name the Conv and MatMul nodes as int8 on
# the interpreter (a kept-float one with its reason); the quantized model
# runs and keeps the float model's class, and written as ONNX computes
# what the .kir computes. Error paths: no calibration data, NaN
# calibration data, a truncated profile, a profile of another model,
# --require-int8 that cannot hold (nothing written), bad options (usage,
# exit 2).
# usage: quantize_test.sh KILN SOURCE_ROOT PYTHON
set -u
kiln="$1"; root="$2"; py="$3"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KILN_CACHE_DIR="$tmp/cache"
cnn="$root/examples/models/cnn.onnx"
mlp="$root/examples/models/mlp.kir"

. "$(dirname "$0")/../check.sh"

# --- kiln profile ---
out=$("$kiln" profile "$cnn" --backend interpreter --random-inputs 4 -o "$tmp/cnn.prof" 2>&1); rc=$?
check profile 0 "profiled 12 values" "over 4 samples (random-inputs 4 seed 1)" "wrote $tmp/cnn.prof"

# cnn.onnx: input x [1,3,16,16] and eleven f32 node results (the Gemm
# split into MatMul + Add, as quantizing prepares it); every histogram
# holds its value's count; x is uniform in [-1, 1); Relu results are >= 0.
out=$("$py" - "$tmp/cnn.prof" <<'PY' 2>&1
import sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[0] == "kiln-profile 1", lines[0]
assert lines[-2] == "end 12" and lines[-1] == "", lines[-3:]
vals = {}
i = 7
assert lines[6] == "values 12", lines[6]
while lines[i].startswith("value "):
    f = lines[i].split(" ", 7)
    mn, mx, cnt, nonfinite, lo, hi, name = float(f[1]), float(f[2]), int(f[3]), int(f[4]), float(f[5]), float(f[6]), f[7]
    h = lines[i + 1].split()
    assert h[0] == "hist"
    total = sum(int(e.split(":")[1]) for e in h[1:])
    assert total == cnt, (name, total, cnt)
    assert lo == min(mn, 0) and hi == max(mx, 0), name
    vals[name] = (mn, mx, cnt)
    i += 2
assert len(vals) == 12, sorted(vals)
assert vals["x"][2] == 4 * 3 * 16 * 16, vals["x"]
assert -1 <= vals["x"][0] < -0.9 and 0.9 < vals["x"][1] < 1, vals["x"]
assert vals["r1"][0] >= 0 and vals["r2"][0] >= 0
assert vals["c1"][2] == 4 * 8 * 16 * 16 and vals["logits.matmul"][2] == 4 * 10
assert vals["logits.bias"][2] == 4 * 10
print("profile ok")
PY
); rc=$?
check profile-contents 0 "profile ok"

# Two samples from files: the shipped input, twice.
out=$("$kiln" profile "$cnn" --backend interpreter --input "x=$root/examples/models/cnn_input.npy" \
  --input "x=$root/examples/models/cnn_input.npy" -o "$tmp/files.prof" 2>&1); rc=$?
check profile-files 0 "over 2 samples (files 2 samples)"

out=$("$kiln" profile "$cnn" --backend interpreter -o "$tmp/none.prof" 2>&1); rc=$?
check profile-no-data 2 "no calibration data"
[ ! -e "$tmp/none.prof" ] && pass=$((pass + 1)) || { echo "FAIL profile-no-data wrote a file"; fail=$((fail + 1)); }

# A calibration tensor holding NaN is refused, naming the file and element.
"$py" - "$tmp/nan.npy" <<'PY'
import struct, sys
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 16, 16), }"
hdr += " " * (118 - len(hdr)) + "\n"
vals = [0.5] * 768
vals[5] = float("nan")
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<768f", *vals))
PY
out=$("$kiln" profile "$cnn" --backend interpreter --input "x=$tmp/nan.npy" -o "$tmp/nan.prof" 2>&1); rc=$?
check profile-nan 1 "$tmp/nan.npy: element 5 is nan; calibration data must be finite"
[ ! -e "$tmp/nan.prof" ] && pass=$((pass + 1)) || { echo "FAIL profile-nan wrote a file"; fail=$((fail + 1)); }

out=$("$kiln" profile "$cnn" --backend interpreter --input "y=$tmp/nan.npy" -o "$tmp/y.prof" 2>&1); rc=$?
check profile-bad-input 1 "the model has no input 'y'"

# --- kiln quantize ---
out=$("$kiln" quantize "$cnn" --backend interpreter --profile "$tmp/cnn.prof" -o "$tmp/cnn_q.kir" \
  --target-sqnr off --report "$tmp/cnn_q.json" 2>&1); rc=$?
check quantize 0 "3 of 3 nodes run in int8 on interpreter" "wrote $tmp/cnn_q.kir and $tmp/cnn_q.json" \
  "held out: random-inputs 4 seed 1000004"

# The report: conv1 and conv2 int8, and fc too: the Gemm (with a bias, as
# no integer kind takes) was split into MatMul + Add and its MatMul runs
# in int8; the MAC shares from the shapes (conv1 1*8*16*16 * 3*3*3, conv2
# 1*16*8*8 * 8*3*3, fc 10*16); the input's scale in the model is
# (max - min) / 255 of the profile's x.
out=$("$py" - "$tmp/cnn_q.json" "$tmp/cnn.prof" "$tmp/cnn_q.kir" <<'PY' 2>&1
import json, re, sys
r = json.load(open(sys.argv[1]))
nodes = {n["name"]: n for n in r["nodes"]}
assert nodes["conv1"]["runs"] == "int8" and nodes["conv2"]["runs"] == "int8", nodes
assert nodes["fc"]["runs"] == "int8" and nodes["fc"]["kind"] == "MatMul", nodes["fc"]
macs = {"conv1": 8 * 16 * 16 * 27, "conv2": 16 * 8 * 8 * 72, "fc": 160}
for k, v in macs.items():
    assert nodes[k]["macs"] == v, (k, nodes[k]["macs"], v)
assert abs(sum(n["macs_share"] for n in r["nodes"]) - 1) < 1e-6
out = r["outputs"][0]
assert out["name"] == "y" and out["rows"] == 4 and out["top1"] <= 4
assert out["sqnr_db"] is None or out["sqnr_db"] > 10, out
assert 0.99 < out["cosine"] <= 1.0000001, out
prof = open(sys.argv[2]).read().split("\n")
xl = [l for l in prof if l.startswith("value ") and l.endswith(" x")][0].split()
mn, mx = float(xl[1]), float(xl[2])
kir = open(sys.argv[3]).read()
m = re.search(r"const %x\.scale : f32\[\] = \[([^\]]+)\]", kir)
scale = float(m.group(1))
assert abs(scale - (mx - mn) / 255) < 1e-7 * scale + 1e-9, (scale, (mx - mn) / 255)
assert "QuantizeLinear" in kir and "DequantizeLinear" in kir
assert re.search(r"const %w1\.quantized : i8\[8,3,3,3\]", kir), "weights not s8 per channel"
assert re.search(r"const %b1\.quantized : i32\[8\]", kir), "bias not int32"
print("report ok")
PY
); rc=$?
check quantize-report 0 "report ok"

# Calibrated on the shipped input (normal, not uniform), the quantized
# model runs and keeps the float model's class on it.
out=$("$kiln" quantize "$cnn" --backend interpreter --profile "$tmp/files.prof" -o "$tmp/cnn_qf.kir" \
  --target-sqnr off 2>&1); rc=$?
check quantize-files 0 "3 of 3 nodes run in int8 on interpreter"
out=$("$py" - "$kiln" "$cnn" "$tmp/cnn_qf.kir" "$root/examples/models/cnn_input.npy" <<'PY' 2>&1
import subprocess, sys
def run(model):
    o = subprocess.run([sys.argv[1], "run", model, "--backend", "interpreter", "--input",
                        "x=" + sys.argv[4]], capture_output=True, text=True, check=True).stdout
    nums = [float(t) for t in o.replace(",", " ").replace("[", " ").replace("]", " ").split()
            if t.replace(".", "").replace("-", "").replace("e", "").isdigit()]
    return nums[-10:]
f, q = run(sys.argv[2]), run(sys.argv[3])
assert f.index(max(f)) == q.index(max(q)), (f, q)
assert max(abs(a - b) for a, b in zip(f, q)) < 0.1, (f, q)
print("class kept")
PY
); rc=$?
check quantize-runs 0 "class kept"

# The same model written as ONNX loads back and computes what the .kir
# computes, on the shipped input.
out=$("$kiln" quantize "$cnn" --backend interpreter --profile "$tmp/files.prof" -o "$tmp/cnn_qf.onnx" \
  --target-sqnr off 2>&1); rc=$?
check quantize-onnx 0 "wrote $tmp/cnn_qf.onnx"
a=$("$kiln" run "$tmp/cnn_qf.kir" --backend interpreter --input "x=$root/examples/models/cnn_input.npy" 2>&1)
b=$("$kiln" run "$tmp/cnn_qf.onnx" --backend interpreter --input "x=$root/examples/models/cnn_input.npy" 2>&1)
out="$b"; rc=0
[ -n "$a" ] && [ "$a" = "$b" ] && check quantize-onnx-same 0 "y : f32[1,10]" || {
  echo "FAIL quantize-onnx-same: .kir gives '$a', .onnx gives '$b'"; fail=$((fail + 1)); }

# The same profile, other settings: s8 activations; --keep-float by name
# and by kind; the MatMul MLP quantizes both MatMul nodes.
out=$("$kiln" quantize "$cnn" --backend interpreter --profile "$tmp/cnn.prof" -o "$tmp/s8.kir" \
  --target-sqnr off --activations s8 2>&1); rc=$?
check quantize-s8 0 "3 of 3 nodes run in int8"
grep -q "%x.quantized : i8\[1,3,16,16\]" "$tmp/s8.kir" && pass=$((pass + 1)) || {
  echo "FAIL quantize-s8: x not quantized to i8"; fail=$((fail + 1)); }
out=$("$kiln" quantize "$cnn" --backend interpreter --profile "$tmp/cnn.prof" -o "$tmp/k.kir" \
  --target-sqnr off --keep-float conv1 --calibration percentile:99.9 --per-tensor 2>&1); rc=$?
check quantize-keep-name 0 "2 of 3 nodes run in int8" "--keep-float"
out=$("$kiln" quantize "$cnn" --backend interpreter --profile "$tmp/cnn.prof" -o "$tmp/k2.kir" \
  --target-sqnr off --keep-float Conv --calibration mse 2>&1); rc=$?
check quantize-keep-kind 0 "1 of 3 nodes run in int8"
out=$("$kiln" quantize "$mlp" --backend interpreter --random-inputs 8 -o "$tmp/mlp_q.kir" --target-sqnr off 2>&1); rc=$?
check quantize-matmul 0 "2 of 2 nodes run in int8"

# Calibration methods on data with one outlier: 50 samples of the MLP's
# x [1,4] in [-1, 1] and a single 100. minmax stretches x's scale to the
# outlier (101/255); percentile:99 clips it (about 2/255); mse keeps it
# too: clipping 100 to 2 costs 98^2, far more than the rounding noise
# of 199 values at the wide scale (about 200 * 0.4^2 / 12).
"$py" - "$tmp" <<'PY'
import struct, sys
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4), }"
hdr += " " * (118 - len(hdr)) + "\n"
for k in range(50):
    vals = [((k * 4 + i) * 37 % 200) / 100.0 - 1.0 for i in range(4)]
    if k == 7:
        vals[2] = 100.0
    with open(f"{sys.argv[1]}/o{k}.npy", "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(struct.pack("<4f", *vals))
PY
oargs=""
for k in $(seq 0 49); do oargs="$oargs --input x=$tmp/o$k.npy"; done
# shellcheck disable=SC2086
"$kiln" profile "$mlp" --backend interpreter $oargs -o "$tmp/o.prof" >/dev/null 2>&1
for c in minmax percentile:99 mse; do
  "$kiln" quantize "$mlp" --backend interpreter --profile "$tmp/o.prof" -o "$tmp/o_$c.kir" \
    --target-sqnr off --calibration "$c" >/dev/null 2>&1
done
out=$("$py" - "$tmp" <<'PY' 2>&1
import re, sys
def xs(c):
    t = open(f"{sys.argv[1]}/o_{c}.kir").read()
    return float(re.search(r"const %x\.scale : f32\[\] = \[([^\]]+)\]", t).group(1))
mm, pc, ms = xs("minmax"), xs("percentile:99"), xs("mse")
assert abs(mm - 101 / 255) < 0.01 * mm, mm
assert pc < 0.03 and pc < mm / 10, (pc, mm)
assert ms == mm, (ms, mm)
print("calibration ok", mm, pc, ms)
PY
); rc=$?
check calibration-methods 0 "calibration ok"

# A target no quantized node can meet: every node falls back, worst first,
# and the all-float model meets it exactly.
out=$("$kiln" quantize "$cnn" --backend interpreter --profile "$tmp/cnn.prof" -o "$tmp/t.kir" \
  --target-sqnr 100 2>&1); rc=$?
check quantize-fallback 0 "fallback 1:" "fallback 3:" "0 of 3 nodes run in int8" "fell back to meet the target"

# --require-int8 that cannot hold: an error naming the node, nothing written.
out=$("$kiln" quantize "$cnn" --backend interpreter --profile "$tmp/cnn.prof" -o "$tmp/req.kir" \
  --target-sqnr off --keep-float conv2 --require-int8 Conv,MatMul --report "$tmp/req.json" 2>&1); rc=$?
check quantize-require 1 "--require-int8 Conv,MatMul: 1 node would not run in int8 on interpreter" \
  "conv2 (Conv): --keep-float"
[ ! -e "$tmp/req.kir" ] && [ ! -e "$tmp/req.json" ] && pass=$((pass + 1)) || {
  echo "FAIL quantize-require wrote a file"; fail=$((fail + 1)); }

# Profiles that do not fit: another model's; a truncated file; not a profile.
out=$("$kiln" quantize "$mlp" --backend interpreter --profile "$tmp/cnn.prof" -o "$tmp/m.kir" 2>&1); rc=$?
check quantize-fingerprint 1 "profile $tmp/cnn.prof was made for a different model" "kiln profile"
head -n 12 "$tmp/cnn.prof" > "$tmp/cut.prof"
out=$("$kiln" quantize "$cnn" --backend interpreter --profile "$tmp/cut.prof" -o "$tmp/c.kir" 2>&1); rc=$?
check quantize-truncated 1 "$tmp/cut.prof is truncated" "holds 2 of its 12 values"
head -c 3000 "$tmp/cnn.prof" > "$tmp/cut2.prof"
out=$("$kiln" quantize "$cnn" --backend interpreter --profile "$tmp/cut2.prof" -o "$tmp/c.kir" 2>&1); rc=$?
check quantize-truncated-midline 1 "$tmp/cut2.prof"
printf 'hello\n' > "$tmp/junk.prof"
out=$("$kiln" quantize "$cnn" --backend interpreter --profile "$tmp/junk.prof" -o "$tmp/c.kir" 2>&1); rc=$?
check quantize-not-profile 1 "is not a kiln profile"
[ ! -e "$tmp/c.kir" ] && pass=$((pass + 1)) || { echo "FAIL a bad profile wrote a model"; fail=$((fail + 1)); }

# Usage errors.
out=$("$kiln" quantize "$cnn" --backend interpreter --random-inputs 2 -o "$tmp/x.txt" 2>&1); rc=$?
check usage-ext 2 "written as .kir or .onnx"
out=$("$kiln" quantize "$cnn" --backend interpreter --random-inputs 2 -o "$tmp/x.kir" --calibration max 2>&1); rc=$?
check usage-calib 2 "expected minmax, percentile:P or mse"
out=$("$kiln" quantize "$cnn" --backend interpreter --profile "$tmp/cnn.prof" --random-inputs 2 -o "$tmp/x.kir" 2>&1); rc=$?
check usage-both 2 "give one or the other"
out=$("$kiln" quantize "$cnn" --random-inputs 2 -o "$tmp/x.kir" 2>&1); rc=$?
check usage-backend 2 "missing --backend"
out=$("$kiln" quantize "$cnn" --backend nosuch --random-inputs 2 -o "$tmp/x.kir" 2>&1); rc=$?
check bad-backend 1 "nosuch"
for c in profile quantize; do
  out=$("$kiln" $c --help 2>&1); rc=$?
  check "help-$c" 0 "usage: kiln $c"
done

echo "quantize tool tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
