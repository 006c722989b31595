#!/bin/sh
# tests/graphgen/conformance_gen.sh: the generated suite end to end:
# `kiln conformance --generate 200 --seed 1` on the interpreter, and on the
# cpu backend at 1 and 2 threads and on opencl when those plugins were
# built in this build tree; then partitioned (issue 17): random placements
# (KILN_PARTITION_SEED) between the interpreter and cpu, and between opencl
# and cpu on the first 24 graphs (PoCL compiles every new kernel, so all 200
# would take minutes), and the graphs split by a capped cpu memory
# (--device-memory). Each run must close with "N passed, 0 failed, N
# skipped"; a failure's reproducer lands in BUILD_DIR/graphgen-repro.
# tests/graphgen/test_graphgen.c checks that such placements really split
# the graphs into regions.
# usage: conformance_gen.sh KILN BUILD_ROOT
set -u
kiln="$1"; build="$2"
repro="$build/graphgen-repro"
rm -rf "$repro"
status=0

run() { # run LABEL ARGS... (COUNT in the environment: graphs, default 200)
  label="$1"; shift
  out=$("$kiln" conformance --generate "${COUNT:-200}" --seed 1 --jobs 2 --timeout 120 \
        --repro-dir "$repro" "$@" 2>&1); rc=$?
  last=$(printf '%s\n' "$out" | tail -n 1)
  if [ "$rc" -eq 0 ] && printf '%s\n' "$last" | grep -Eq '^[0-9]+ passed, 0 failed, [0-9]+ skipped$'; then
    echo "PASS $label: $last"
  else
    printf '%s\n' "$out" | grep -v '^PASS' | tail -n 60
    echo "FAIL $label (exit $rc): $last"
    status=1
  fi
}

run "interpreter" --backend interpreter
if [ -f "$build/plugins/cpu/kiln-cpu.so" ]; then
  run "cpu --threads 1" --backend cpu --threads 1
  run "cpu --threads 2" --backend cpu --threads 2
else
  echo "SKIP cpu: $build/plugins/cpu/kiln-cpu.so not built"
fi
if [ -f "$build/plugins/opencl/kiln-opencl.so" ]; then
  run "opencl" --backend opencl
else
  echo "SKIP opencl: $build/plugins/opencl/kiln-opencl.so not built"
fi

# Partitioned. A seed makes every node go to a random entry among those
# that run it; the reference stays the interpreter alone.
if [ -f "$build/plugins/cpu/kiln-cpu.so" ]; then
  KILN_PARTITION_SEED=2 run "interpreter+cpu, placement seed 2" --backend interpreter+cpu
  # 256 bytes of cpu memory split 128 of the 200 graphs part-way (when written).
  run "cpu+interpreter --device-memory cpu=256" --backend cpu+interpreter \
    --device-memory cpu=256
  if [ -f "$build/plugins/opencl/kiln-opencl.so" ]; then
    COUNT=24 KILN_PARTITION_SEED=3 run "opencl+cpu, placement seed 3, 24 graphs" \
      --backend opencl+cpu
  fi
else
  echo "SKIP partitioned: $build/plugins/cpu/kiln-cpu.so not built"
fi
exit $status
