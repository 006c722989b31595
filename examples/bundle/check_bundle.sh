#!/bin/sh
# examples/bundle/check_bundle.sh KILN CC MODELS WORKDIR: make a bundle of
# the MLP with the kiln tool, build examples/bundle/main.c against its
# object with the C compiler alone (no libkiln), run it, and compare its
# output with `kiln run --backend cpu` on the same input.
set -eu
kiln=$1 cc=$2 models=$3 work=$4
here=$(dirname "$0")
rm -rf "$work" && mkdir -p "$work"
"$kiln" compile "$models/mlp.kir" --backend cpu --bundle "$work" --name model
"$cc" -std=c17 -O1 -I"$work" "$here/main.c" "$work/model.o" -o "$work/example" -lm -lpthread
got=$("$work/example" "$work/model.weights" "$models/mlp_input.npy")
echo "bundle: $got"
want=$("$kiln" run "$models/mlp.kir" --backend cpu --input x="$models/mlp_input.npy")
echo "kiln run: $want"
# both print the two probabilities; compare to 5 decimals
norm() { tr -c '0-9.e\n-' ' ' | tr -s ' ' '\n' | grep -E '^-?[0-9]' | tail -2 | xargs printf '%.5f\n'; }
a=$(echo "$got" | norm)
b=$(echo "$want" | norm)
[ "$a" = "$b" ] || { echo "mismatch: bundle '$a' vs kiln run '$b'"; exit 1; }
# and the values worked out by hand in mlp.kir
[ "$(echo "$a" | head -1)" = "0.73106" ] || { echo "unexpected output $a"; exit 1; }
echo "ok"
