# tests/check.sh: the output check the shell test scripts share (sourced,
# not run). After `out=$(CMD 2>&1); rc=$?`, `check NAME EXPECTED_RC
# PATTERN...` counts a pass when the exit code is EXPECTED_RC and every
# PATTERN (a fixed string) appears in $out, else prints why and counts a
# failure; the script reports $pass and $fail at its end.
pass=0; fail=0

check() {
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
