#!/usr/bin/env bash
# scripts/demo.sh: set up, build, and run kiln's main job on a model shipped
# in the repo: compile examples/models/mlp.onnx for the interpreter backend,
# run it on a shipped input, and print the outputs and the latency.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
kiln_install_packages
kiln_build "$BUILD"
cd "$KILN_ROOT"
model=examples/models/mlp.onnx
[ -f "$model" ] || model=examples/models/mlp.kir
echo "kiln run $model --backend interpreter"
"$BUILD/tools/kiln" run "$model" --backend interpreter \
  --input x=examples/models/mlp_input.npy --repeat 20
