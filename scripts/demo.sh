#!/usr/bin/env bash
# scripts/demo.sh: set up, build, and run kiln's main job on a model shipped
# in the repo: compile examples/models/cnn.onnx (a small image classifier
# made by examples/models/make_cnn.py) for the best backend built (cpu when
# present, else the interpreter), run it on the shipped input, and print the
# outputs and the latency.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
kiln_install_packages
kiln_build "$BUILD"
cd "$KILN_ROOT"
backend=interpreter
[ -f "$BUILD/plugins/cpu/kiln-cpu.so" ] && backend=cpu
echo "kiln run examples/models/cnn.onnx --backend $backend --input x=examples/models/cnn_input.npy --repeat 100"
"$BUILD/tools/kiln" run examples/models/cnn.onnx --backend "$backend" \
  --input x=examples/models/cnn_input.npy --repeat 100
