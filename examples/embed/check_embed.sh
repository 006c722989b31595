#!/bin/sh
# examples/embed/check_embed.sh: runs the embed example on the shipped MLP
# and checks both runs print the hand-computed softmax [0.731059, 0.268941].
set -u
embed="$1"
models="$2"
out=$("$embed" "$models/mlp.kir" "x=$models/mlp_input.npy" 2>&1)
rc=$?
echo "$out"
if [ "$rc" -ne 0 ]; then
  echo "FAIL: embed exited with $rc"
  exit 1
fi
for run in 1 2; do
  if ! printf '%s\n' "$out" | grep -qx "run $run: y = 0.731059 0.268941"; then
    echo "FAIL: run $run did not print y = 0.731059 0.268941"
    exit 1
  fi
done
echo "PASS: embed example printed the expected outputs twice"
