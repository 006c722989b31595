#!/bin/sh
# tests/cpu/bundle_fault/check.sh KILN CC WORKDIR: bundle gather.kir with the
# kiln tool, build main.c against the object with the C compiler alone, and
# run it: the bundle's index faults come back through gather_run's result
# and gather_run_fault.
set -eu
kiln=$1 cc=$2 work=$3
here=$(dirname "$0")
rm -rf "$work" && mkdir -p "$work"
"$kiln" compile "$here/gather.kir" --backend cpu --bundle "$work" --name gather
"$cc" -std=c17 -O1 -I"$work" "$here/main.c" "$work/gather.o" -o "$work/bundle_fault" -lm -lpthread
"$work/bundle_fault" "$work/gather.weights"
